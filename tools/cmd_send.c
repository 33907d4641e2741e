/* tensio send — send files as messages over ZeroMQ. */
#include "cmd_stream_common.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char send_help[] =
    "Usage: tensio send [OPTIONS] ENDPOINT FILE...\n"
    "\n"
    "Open each FILE and send it as one message to ENDPOINT: a ZIO TENS message\n"
    "(the default) or a tensorcom batch. ENDPOINT is tcp://HOST:PORT, ipc://PATH,\n"
    "or a tensorcom URL (zpush:// zpub:// zrpush:// zrpub://, +ipc), which\n"
    "chooses the socket, bind or connect, and the tensorcom protocol. When it\n"
    "binds, 'tensio send: bound ENDPOINT' is printed on stderr first (port * picks\n"
    "a free port). Prints one line per message sent.\n"
    "\n"
    "A FILE '-' reads standard input into memory (format probed, or --from).\n"
    "\n"
    "A WebDataset shard FILE (.tar) sends one message per sample: the tensors of\n"
    "its tensor members, in member order (samples without any are skipped); with\n"
    "--batch N, one message per N samples, each tensor the samples' tensors\n"
    "stacked along a new first axis, as tensorcom batches them.\n"
    "\n"
    "Options:\n"
    "      --socket TYPE   push (default), pub, dealer, router or pair\n"
    "      --bind          bind ENDPOINT (default: connect, or the URL scheme's choice)\n"
    "      --connect       connect to ENDPOINT, even where the scheme binds\n"
    "      --proto P       zio (default) or tensorcom (the default for a z* URL)\n"
    "      --single        send each message as one frame (the file encoding:\n"
    "                      zio: the .zmsg buffer; tensorcom: the .ten chunks)\n"
    "      --count N       send the FILE list N times (default 1)\n"
    "      --timeout SEC   fail when a send (or --subscribers) takes longer than SEC\n"
    "                      seconds (fractions allowed; default: wait forever); also\n"
    "                      how long the exit waits for queued messages to go out\n"
    "                      (messages it then drops are counted, and the exit\n"
    "                      status is 1)\n"
    "      --subscribers N\n"
    "                      PUB: wait until N subscribers have subscribed before the\n"
    "                      first send (a PUB drops messages nobody subscribed to)\n"
    "      --peer ID       ROUTER: the peer to send to, its routing id (a DEALER's\n"
    "                      --identity); 0xHEX for a binary id\n"
    "      --identity ID   the routing id this socket announces (DEALER, ROUTER)\n"
    "      --hwm N         high-water mark: at most N messages queued per peer\n"
    "      --format-option KEY=VALUE\n"
    "                      an option of the message format (repeatable); zio:\n"
    "                      level, form, origin, granule, seqno\n"
    "      --seqno-start N\n"
    "                      zio: number the messages N, N+1, ... (coordinate seqno)\n"
    "      --from FMT      read the FILEs as format FMT instead of detecting it\n"
    "      --batch N       shards: stack N samples into each message (the last\n"
    "                      message of a shard may hold fewer)\n"
    "      --densify       send sparse (COO) tensors as dense tensors\n"
    CLI_MAX_DENSE_HELP
    CLI_PROGRESS_HELP
    "      --drop-names    drop tensor names the protocol cannot carry\n"
    "      --drop-metadata\n"
    "                      drop metadata the protocol cannot carry\n"
    "      --widen         send dtypes the protocol lacks in a wider dtype that\n"
    "                      holds every value exactly (bool -> uint8,\n"
    "                      float16/bfloat16 -> float32)\n"
    "      --json          one JSON object per line per message (see docs/cli.md)\n"
    "  -h, --help          show this help and exit\n";

enum {
    OPT_HELP = 1,
    OPT_SOCKET,
    OPT_BIND,
    OPT_CONNECT,
    OPT_PROTO,
    OPT_SINGLE,
    OPT_COUNT,
    OPT_TIMEOUT,
    OPT_SUBSCRIBERS,
    OPT_PEER,
    OPT_IDENTITY,
    OPT_HWM,
    OPT_FORMAT_OPTION,
    OPT_SEQNO_START,
    OPT_FROM,
    OPT_JSON,
    OPT_BATCH
};

static const cli_option send_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"socket", 0, 1, OPT_SOCKET},
    {"bind", 0, 0, OPT_BIND},
    {"connect", 0, 0, OPT_CONNECT},
    {"proto", 0, 1, OPT_PROTO},
    {"single", 0, 0, OPT_SINGLE},
    {"count", 0, 1, OPT_COUNT},
    {"timeout", 0, 1, OPT_TIMEOUT},
    {"subscribers", 0, 1, OPT_SUBSCRIBERS},
    {"peer", 0, 1, OPT_PEER},
    {"identity", 0, 1, OPT_IDENTITY},
    {"hwm", 0, 1, OPT_HWM},
    {"format-option", 0, 1, OPT_FORMAT_OPTION},
    {"seqno-start", 0, 1, OPT_SEQNO_START},
    {"from", 0, 1, OPT_FROM},
    {"batch", 0, 1, OPT_BATCH},
    {"densify", 0, 0, CLI_STREAM_OPT_DENSIFY},
    {"drop-names", 0, 0, CLI_STREAM_OPT_DROP_NAMES},
    {"drop-metadata", 0, 0, CLI_STREAM_OPT_DROP_METADATA},
    {"widen", 0, 0, CLI_STREAM_OPT_WIDEN},
    {"json", 0, 0, OPT_JSON},
    CLI_OPT_MAX_DENSE,
    CLI_OPT_PROGRESS,
};

#define SEND_SOCKETS                                                                    \
    (1u << TIO_SOCKET_PUSH | 1u << TIO_SOCKET_PUB | 1u << TIO_SOCKET_DEALER |           \
     1u << TIO_SOCKET_ROUTER | 1u << TIO_SOCKET_PAIR)

typedef struct send_args {
    const char *endpoint;
    const char **files;
    size_t nfiles;
    tio_socket_type socket; /* TIO_SOCKET_DEFAULT: not given */
    int bind, connect;
    tio_proto proto;        /* TIO_PROTO_AUTO: not given */
    int single;
    uint64_t count;
    int timeout_ms;         /* 0: none */
    uint64_t subscribers;
    int have_subscribers;
    const char *peer;
    const char *identity;
    uint64_t hwm;
    cli_optlist options;
    uint64_t seqno_start;
    int have_seqno;
    const char *from;
    unsigned flags;         /* TIO_SAVE_* */
    int json;
    int progress; /* CLI_PROGRESS_* */
    tio_limits limits; /* for opening the files (--max-dense-bytes) */
    uint64_t batch;    /* --batch: samples per message of a shard; 0: one */
    /* the messages: one per file, or per sample (batch) of a shard */
    cli_shard_msgs msgs;
} send_args;

/* Decodes --peer: the bytes of ID, or of the hex digits after 0x. The
 * result is malloc'ed. Returns 0, or -1 for bad hex. */
static int decode_peer(const char *id, unsigned char **out, size_t *size) {
    size_t n = strlen(id);
    int hex = n > 2 && id[0] == '0' && (id[1] == 'x' || id[1] == 'X');
    size_t len = hex ? (n - 2) / 2 : n;
    if (hex && (n - 2) % 2 != 0) return -1;
    unsigned char *b = malloc(len ? len : 1);
    if (!b) return -2;
    if (!hex) {
        memcpy(b, id, n);
    } else {
        for (size_t i = 0; i < len; i++) {
            unsigned v = 0;
            for (size_t k = 0; k < 2; k++) {
                char c = id[2 + 2 * i + k];
                unsigned d;
                if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
                else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
                else if (c >= 'A' && c <= 'F') d = (unsigned)(c - 'A' + 10);
                else {
                    free(b);
                    return -1;
                }
                v = v * 16 + d;
            }
            b[i] = (unsigned char)v;
        }
    }
    *out = b;
    *size = len;
    return 0;
}

/* Parses the command line into *a. Returns CLI_EXIT_OK, a usage error, or -1
 * after printing --help. */
static int parse_args(int argc, char **argv, send_args *a) {
    cli_parser p;
    int rc = cli_parser_init(&p, "send", argc, argv, send_opts,
                             sizeof send_opts / sizeof send_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    a->count = 1;
    int id = 0;
    while (rc == CLI_EXIT_OK && (id = cli_parser_next(&p)) > 0) {
        const char *v = p.value;
        switch (id) {
        case OPT_HELP:
            fputs(send_help, stdout);
            cli_parser_free(&p);
            return -1;
        case OPT_SOCKET: rc = cli_parse_socket("send", v, SEND_SOCKETS, &a->socket); break;
        case OPT_BIND: a->bind = 1; break;
        case OPT_CONNECT: a->connect = 1; break;
        case OPT_PROTO: rc = cli_parse_proto("send", v, 0, &a->proto); break;
        case OPT_SINGLE: a->single = 1; break;
        case OPT_COUNT: rc = cli_parse_u64("send", "--count", v, 1, UINT32_MAX, &a->count); break;
        case OPT_TIMEOUT: rc = cli_parse_seconds("send", "--timeout", v, &a->timeout_ms); break;
        case OPT_SUBSCRIBERS:
            rc = cli_parse_u64("send", "--subscribers", v, 1, UINT_MAX, &a->subscribers);
            a->have_subscribers = 1;
            break;
        case OPT_PEER: a->peer = v; break;
        case OPT_IDENTITY: a->identity = v; break;
        case OPT_HWM: rc = cli_parse_u64("send", "--hwm", v, 1, INT_MAX, &a->hwm); break;
        case OPT_FORMAT_OPTION: rc = cli_optlist_add(&a->options, "send", v); break;
        case OPT_SEQNO_START:
            rc = cli_parse_u64("send", "--seqno-start", v, 0, UINT64_MAX, &a->seqno_start);
            a->have_seqno = 1;
            break;
        case OPT_FROM: a->from = v; break;
        case OPT_JSON: a->json = 1; break;
        case OPT_BATCH: rc = cli_parse_u64("send", "--batch", v, 1, UINT32_MAX, &a->batch); break;
        case CLI_OPT_MAX_DENSE_ID: rc = cli_parse_max_dense("send", v, &a->limits); break;
        case CLI_OPT_PROGRESS_ID: a->progress = CLI_PROGRESS_ON; break;
        case CLI_OPT_NO_PROGRESS_ID: a->progress = CLI_PROGRESS_OFF; break;
        default: a->flags |= cli_conversion_flag(id); break;
        }
    }
    if (rc == CLI_EXIT_OK && id == CLI_PARSE_ERROR) rc = CLI_EXIT_USAGE;
    if (rc == CLI_EXIT_OK) {
        if (p.npos == 0) rc = cli_usage_error("send", "missing ENDPOINT and FILE");
        else if (p.npos == 1) rc = cli_usage_error("send", "missing FILE");
    }
    if (rc == CLI_EXIT_OK) {
        a->endpoint = p.pos[0];
        a->nfiles = p.npos - 1;
        a->files = malloc(a->nfiles * sizeof *a->files);
        if (!a->files) rc = cli_error("out of memory");
        for (size_t i = 0; rc == CLI_EXIT_OK && i < a->nfiles; i++) a->files[i] = p.pos[i + 1];
    }
    cli_parser_free(&p);
    return rc;
}

/* Checks how the options fit together and settles the socket and protocol.
 * *binds tells whether the stream binds. */
static int check_args(send_args *a, int *binds) {
    cli_scheme sc;
    tio_socket_type sock;
    int rc = cli_stream_settle("send", a->endpoint, a->bind, a->connect, SEND_SOCKETS,
                               TIO_SOCKET_PUSH, "send",
                               "zpush://, zpub://, zrpush:// or zrpub://", &a->socket, &sock,
                               binds, &sc);
    if (rc != CLI_EXIT_OK) return rc;
    if (a->proto == TIO_PROTO_AUTO) a->proto = sc.tensorcom ? TIO_PROTO_TENSORCOM : TIO_PROTO_ZIO;
    if (a->have_subscribers && sock != TIO_SOCKET_PUB)
        return cli_usage_error("send", "--subscribers needs a pub socket (this is %s)",
                               cli_socket_name(sock));
    if (a->peer && sock != TIO_SOCKET_ROUTER)
        return cli_usage_error("send", "--peer needs a router socket (this is %s)",
                               cli_socket_name(sock));
    if (!a->peer && sock == TIO_SOCKET_ROUTER)
        return cli_usage_error("send", "a router socket needs --peer ID (which peer to send to)");
    if (a->identity && sock != TIO_SOCKET_DEALER && sock != TIO_SOCKET_ROUTER)
        return cli_usage_error("send", "--identity needs a dealer or router socket (this is %s)",
                               cli_socket_name(sock));
    if (a->have_seqno && a->proto != TIO_PROTO_ZIO)
        return cli_usage_error("send", "--seqno-start needs --proto zio (ZIO coordinates)");
    if (a->have_seqno && cli_optlist_has(&a->options, "seqno"))
        return cli_usage_error("send", "--seqno-start and --format-option seqno=... exclude "
                                       "each other");
    if (a->from && cli_check_format("send", "--from", a->from) != CLI_EXIT_OK)
        return CLI_EXIT_USAGE;
    return CLI_EXIT_OK;
}

/* The save options of message k (its seqno with --seqno-start). *buf holds
 * the options text, freed by the caller. */
static int message_options(const send_args *a, uint64_t k, tio_save_options *o, char **buf) {
    memset(o, 0, sizeof *o);
    o->format = NULL; /* the stream's protocol decides */
    o->flags = a->flags;
    *buf = NULL;
    if (a->have_seqno) {
        uint64_t seqno = a->seqno_start + k; /* wraps like a uint64 counter */
        *buf = a->options.text ? cli_strdup_printf("%s,seqno=%llu", a->options.text,
                                                   (unsigned long long)seqno)
                               : cli_strdup_printf("seqno=%llu", (unsigned long long)seqno);
        if (!*buf) return cli_error("out of memory");
        o->options = *buf;
    } else {
        o->options = a->options.text;
    }
    return CLI_EXIT_OK;
}

/* Before anything is sent: every file must encode under the options. A bad
 * --format-option is a usage error, a loss the flags do not allow a failure. */
static int precheck(const send_args *a, tio_container **cs) {
    for (size_t i = 0; i < a->msgs.n; i++) {
        tio_save_options o;
        char *buf = NULL;
        int rc = message_options(a, 0, &o, &buf);
        if (rc != CLI_EXIT_OK) return rc;
        o.format = cli_proto_format(a->proto);
        tio_error err;
        tio_error_clear(&err);
        int st = tio_check_save(cs[i], &o, &err);
        free(buf);
        if (st == TIO_E_ARGUMENT) return cli_usage_error("send", "%s", cli_errmsg(&err));
        if (st != TIO_OK)
            return cli_cmd_error("send", "%s: cannot send as %s: %s", a->msgs.labels[i],
                                 cli_proto_name(a->proto), cli_errmsg(&err));
    }
    return CLI_EXIT_OK;
}

static int report(const send_args *a, uint64_t index, size_t file, const tio_container *c,
                  uint64_t bytes) {
    const char *src = tio_container_format(c); /* NULL: a shard's sample(s), built here */
    if (!src) src = "tar";
    size_t n = tio_container_count(c);
    if (!a->json) {
        printf("sent %llu: %s (%s, %zu tensor%s) as %s%s, %llu bytes", (unsigned long long)index,
               a->msgs.labels[file], src, n, n == 1 ? "" : "s", cli_proto_name(a->proto),
               a->single ? " single-frame" : "", (unsigned long long)bytes);
        if (a->have_seqno)
            printf(", seqno %llu", (unsigned long long)(a->seqno_start + index));
        putchar('\n');
        fflush(stdout);
        return CLI_EXIT_OK;
    }
    json_t *o = json_object();
    if (!o) return cli_error("out of memory");
    int bad = cli_json_set(o, "index", json_integer((json_int_t)index));
    bad |= cli_json_set(o, "file", cli_json_str(a->msgs.labels[file]));
    bad |= cli_json_set(o, "format", cli_json_str(src));
    bad |= cli_json_set(o, "proto", json_string(cli_proto_name(a->proto)));
    bad |= cli_json_set(o, "single", json_boolean(a->single));
    bad |= cli_json_set(o, "tensors", json_integer((json_int_t)n));
    bad |= cli_json_set(o, "bytes", json_integer((json_int_t)bytes));
    if (a->have_seqno)
        bad |= cli_json_set(o, "seqno", json_integer((json_int_t)(a->seqno_start + index)));
    if (bad) {
        json_decref(o);
        return cli_error("out of memory");
    }
    int rc = cli_json_print(o);
    fflush(stdout);
    return rc;
}

static int run_send(send_args *a) {
    int binds = 0;
    int rc = check_args(a, &binds);
    if (rc != CLI_EXIT_OK) return rc;

    int shards = 0;
    for (size_t i = 0; rc == CLI_EXIT_OK && i < a->nfiles; i++) {
        if (cli_is_shard(a->files[i], a->from)) {
            shards = 1;
            rc = cli_shard_messages(a->files[i], (size_t)a->batch, &a->limits, &a->msgs);
            continue;
        }
        tio_container *c = NULL;
        rc = cli_open(a->files[i], a->from, &a->limits, &c);
        if (rc == CLI_EXIT_OK) rc = cli_shard_msgs_push(&a->msgs, c, a->files[i]);
    }
    if (rc == CLI_EXIT_OK && a->batch && !shards)
        rc = cli_usage_error("send", "--batch applies to shards (.tar FILEs)");
    tio_container **cs = a->msgs.containers;
    if (rc == CLI_EXIT_OK) rc = precheck(a, cs);

    unsigned char *peer = NULL;
    size_t peer_size = 0;
    if (rc == CLI_EXIT_OK && a->peer) {
        int d = decode_peer(a->peer, &peer, &peer_size);
        if (d == -1)
            rc = cli_usage_error("send", "--peer: '%s' is not 0x followed by pairs of hex digits",
                                 a->peer);
        else if (d != 0)
            rc = cli_error("out of memory");
        else if (peer_size == 0)
            rc = cli_usage_error("send", "--peer: the routing id is empty");
    }

    tio_stream *s = NULL;
    /* messages sent of the files given; automatic only when the per-message
     * lines do not go to the same terminal */
    cli_progress prog;
    cli_progress_init(&prog, a->progress == CLI_PROGRESS_AUTO && isatty(STDOUT_FILENO)
                                 ? CLI_PROGRESS_OFF : a->progress,
                      "send", "messages");
    if (rc == CLI_EXIT_OK) {
        tio_stream_options so;
        memset(&so, 0, sizeof so);
        so.socket = a->socket;
        so.proto = a->proto;
        so.flags = (a->bind ? TIO_STREAM_BIND : 0u) | (a->connect ? TIO_STREAM_CONNECT : 0u) |
                   (a->single ? TIO_STREAM_SINGLE : 0u);
        so.timeout_ms = a->timeout_ms;
        /* Closing waits for queued messages: as long as --timeout, or (like
         * a send without a timeout) as long as it takes; what it drops is an
         * error. */
        so.linger_ms = a->timeout_ms;
        so.hwm = (int)a->hwm;
        so.identity = a->identity;
        rc = cli_stream_open("send", a->endpoint, &so, binds, &s);
    }
    tio_error err;
    tio_error_clear(&err);
    if (rc == CLI_EXIT_OK && peer && tio_stream_set_peer(s, peer, peer_size, &err) != TIO_OK)
        rc = err.code == TIO_E_ARGUMENT ? cli_usage_error("send", "--peer: %s", cli_errmsg(&err))
                                        : cli_cmd_error("send", "--peer: %s", cli_errmsg(&err));
    if (rc == CLI_EXIT_OK && a->have_subscribers) {
        tio_error_clear(&err);
        if (tio_stream_wait_subscribers(s, (unsigned)a->subscribers, a->timeout_ms, &err) !=
            TIO_OK)
            rc = cli_cmd_error("send", "waiting for %llu subscriber%s: %s",
                               (unsigned long long)a->subscribers,
                               a->subscribers == 1 ? "" : "s", cli_errmsg(&err));
    }

    uint64_t index = 0;
    for (uint64_t pass = 0; rc == CLI_EXIT_OK && pass < a->count; pass++) {
        for (size_t i = 0; rc == CLI_EXIT_OK && i < a->msgs.n; i++, index++) {
            tio_save_options o;
            char *buf = NULL;
            rc = message_options(a, index, &o, &buf);
            if (rc != CLI_EXIT_OK) break;
            tio_stream_stats before, after;
            tio_stream_get_stats(s, &before);
            tio_error_clear(&err);
            int st = tio_stream_send(s, cs[i], &o, &err);
            free(buf);
            cli_progress_pause(&prog); /* before a line or a message */
            if (st != TIO_OK) {
                rc = cli_cmd_error("send", "message %llu (%s): %s", (unsigned long long)index,
                                   a->msgs.labels[i], cli_errmsg(&err));
                break;
            }
            tio_stream_get_stats(s, &after);
            rc = report(a, index, i, cs[i], after.bytes_sent - before.bytes_sent);
            fflush(stdout);
            cli_progress_update(&prog, (uint64_t)i + 1, (uint64_t)a->msgs.n);
        }
    }
    cli_progress_end(&prog);
    if (s) {
        tio_stream_stats st;
        tio_stream_get_stats(s, &st);
        tio_error_clear(&err);
        /* waits (linger) for what is still queued */
        int closed = tio_stream_close(s, &err);
        fprintf(stderr, "tensio send: sent %llu message%s (%llu bytes)\n",
                (unsigned long long)st.sent, st.sent == 1 ? "" : "s",
                (unsigned long long)st.bytes_sent);
        if (closed != TIO_OK) {
            int crc = cli_cmd_error("send", "%s", cli_errmsg(&err));
            if (rc == CLI_EXIT_OK) rc = crc;
        }
    }
    free(peer);
    cli_shard_msgs_free(&a->msgs);
    return rc;
}

int cli_cmd_send(int argc, char **argv) {
    send_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc == -1) {
        rc = CLI_EXIT_OK; /* --help */
    } else if (rc == CLI_EXIT_OK) {
        rc = run_send(&a);
    }
    free(a.files);
    cli_optlist_free(&a.options);
    return rc;
}
