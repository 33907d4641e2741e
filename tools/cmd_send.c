/* tensio send — send files as messages over ZeroMQ. */
#include "stream_common.h"

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
    "its tensor members, in member order (samples without any are skipped;\n"
    "--members sends the others too); with\n"
    "--batch N, one message per N samples, each tensor the samples' tensors\n"
    "stacked along a new first axis, as tensorcom batches them. A shard FILE may\n"
    "be an http(s):// URL, pipe:COMMAND or a brace list ('shard-{000..009}.tar',\n"
    "quoted): those are read in one pass per pass of --count/--epochs, a batch\n"
    "at a time.\n"
    "\n"
    "Serving trainers (docs/streaming.md): with --epochs N, every message carries\n"
    "an int32 [1] tensor __epoch (0, 1, ...) and each pass ends with a marker, a\n"
    "message holding only __epoch, sent to every endpoint. A PUSH on several\n"
    "endpoints (zpush://host:{7880..7882}) has a socket per endpoint and sends\n"
    "each message to the next one with room, so a slow trainer does not hold up\n"
    "the others.\n"
    "\n";

static const char send_help_options[] =
    "Options:\n"
    "      --socket TYPE   push (default), pub, dealer, router or pair\n"
    "      --bind          bind ENDPOINT (default: connect, or the URL scheme's choice)\n"
    "      --connect       connect to ENDPOINT, even where the scheme binds\n"
    "      --proto P       zio (default) or tensorcom (the default for a z* URL)\n"
    "      --single        send each message as one frame (the file encoding:\n"
    "                      zio: the .zmsg buffer; tensorcom: the .ten chunks)\n"
    "      --count N       send the FILE list N times (default 1)\n"
    "      --epochs N      serve N passes over the FILEs, each ended by a marker\n"
    "                      on every endpoint (excludes --count)\n"
    "      --keys          shards: add a uint8 tensor __key__, the message's\n"
    "                      sample keys with a NUL byte between them\n"
    "      --members       shards: also send the members no tensor format reads,\n"
    "                      each as a tensor named by its extension, as WebDataset\n"
    "                      names a sample's fields: .cls, .cls2, .class, .count,\n"
    "                      .index, .inx, .id as an int64 scalar of their decimal\n"
    "                      text, any other (.json, .txt, .jpg ...) as uint8 [size]\n"
    "                      of its bytes (recv --members writes them back)\n"
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
    OPT_BATCH,
    OPT_EPOCHS,
    OPT_KEYS,
    OPT_MEMBERS
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
    {"epochs", 0, 1, OPT_EPOCHS},
    {"keys", 0, 0, OPT_KEYS},
    {"members", 0, 0, OPT_MEMBERS},
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
    uint64_t epochs;   /* --epochs: passes ended by markers; 0: none (--count) */
    int have_count;
    int keys;          /* --keys */
    int members;       /* --members */
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
            fputs(send_help_options, stdout);
            cli_parser_free(&p);
            return -1;
        case OPT_SOCKET: rc = cli_parse_socket("send", v, SEND_SOCKETS, &a->socket); break;
        case OPT_BIND: a->bind = 1; break;
        case OPT_CONNECT: a->connect = 1; break;
        case OPT_PROTO: rc = cli_parse_proto("send", v, 0, &a->proto); break;
        case OPT_SINGLE: a->single = 1; break;
        case OPT_COUNT:
            rc = cli_parse_u64("send", "--count", v, 1, UINT32_MAX, &a->count);
            a->have_count = 1;
            break;
        case OPT_EPOCHS:
            rc = cli_parse_u64("send", "--epochs", v, 1, INT32_MAX, &a->epochs);
            break;
        case OPT_KEYS: a->keys = 1; break;
        case OPT_MEMBERS: a->members = 1; break;
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
    if (a->epochs && a->have_count)
        return cli_usage_error("send", "--epochs and --count exclude each other");
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

static int report(const send_args *a, uint64_t index, const char *label, const tio_container *c,
                  uint64_t bytes) {
    const char *src = tio_container_format(c); /* NULL: a shard's sample(s), built here */
    if (!src) src = "tar";
    size_t n = tio_container_count(c);
    if (!a->json) {
        printf("sent %llu: %s (%s, %zu tensor%s) as %s%s, %llu bytes", (unsigned long long)index,
               label, src, n, n == 1 ? "" : "s", cli_proto_name(a->proto),
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
    bad |= cli_json_set(o, "file", cli_json_str(label));
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

/* The sending loop's state. */
typedef struct sender {
    const send_args *a;
    tio_stream *s;
    cli_progress *prog;
    uint64_t index; /* messages sent */
    uint64_t epoch; /* the pass */
    uint64_t total; /* messages to send (progress), 0: not known (streamed shards) */
} sender;

static void free_container(void *c) { tio_container_free(c); }

/* A tensor named name appended to w (copied). */
static int add_extra(tio_container *w, const char *name, tio_dtype dt, const void *data,
                     size_t nbytes) {
    int64_t n = (int64_t)(dt == TIO_INT32 ? nbytes / 4 : nbytes);
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.dtype = dt;
    d.rank = 1;
    d.shape = &n;
    d.data = data;
    d.nbytes = nbytes;
    tio_error err;
    tio_error_clear(&err);
    if (tio_container_add(w, &d, 0, NULL, &err) != TIO_OK)
        return cli_error("%s", cli_errmsg(&err));
    return CLI_EXIT_OK;
}

/* c with __key__ (--keys) and __epoch (--epochs) after its tensors, which
 * it borrows: own, c is freed when libzmq is done with them; otherwise c
 * outlives the stream. keys NULL: a marker (only __epoch) when c is NULL. */
static int with_extras(const sender *sd, tio_container *c, int own, const char *keys,
                       size_t keys_len, tio_container **out) {
    *out = tio_container_new();
    if (!*out) return cli_error("out of memory");
    tio_error err;
    tio_error_clear(&err);
    int rc = CLI_EXIT_OK;
    for (size_t k = 0; c && k < tio_container_count(c) && rc == CLI_EXIT_OK; k++) {
        const tio_tensor *t = tio_container_tensor(c, k);
        if (tio_tensor_layout(t) != TIO_LAYOUT_DENSE)
            rc = cli_error("--keys/--epochs: a sparse or quantized tensor cannot be sent with "
                           "them");
        else
            rc = cli_add_view(*out, t, tio_tensor_rank(t), tio_tensor_shape(t),
                              tio_tensor_data(t), tio_tensor_nbytes(t));
    }
    if (rc == CLI_EXIT_OK && keys && sd->a->keys)
        rc = add_extra(*out, "__key__", TIO_UINT8, keys, keys_len);
    int32_t e = (int32_t)sd->epoch;
    if (rc == CLI_EXIT_OK && sd->a->epochs) rc = add_extra(*out, "__epoch", TIO_INT32, &e, 4);
    if (rc == CLI_EXIT_OK && own && tio_container_on_release(*out, free_container, c, &err))
        rc = cli_error("%s", cli_errmsg(&err));
    if (rc != CLI_EXIT_OK) {
        tio_container_free(*out);
        *out = NULL;
    }
    return rc;
}

/* Sends message c (own: taken) and prints its line. */
static int send_one(sender *sd, tio_container *c, int own, const char *label, const char *keys,
                    size_t keys_len) {
    const send_args *a = sd->a;
    tio_container *w = NULL;
    int rc = CLI_EXIT_OK;
    if (a->epochs || (a->keys && keys)) {
        rc = with_extras(sd, c, own, keys, keys_len, &w);
        if (rc != CLI_EXIT_OK) {
            if (own) tio_container_free(c);
            return rc;
        }
        own = 0; /* w frees c */
    }
    tio_save_options o;
    char *buf = NULL;
    rc = message_options(a, sd->index, &o, &buf);
    tio_stream_stats before, after;
    tio_stream_get_stats(sd->s, &before);
    tio_error err;
    tio_error_clear(&err);
    int st = rc == CLI_EXIT_OK ? tio_stream_send(sd->s, w ? w : c, &o, &err) : TIO_OK;
    free(buf);
    cli_progress_pause(sd->prog); /* before a line or a message */
    if (rc == CLI_EXIT_OK && st != TIO_OK)
        rc = cli_cmd_error("send", "message %llu (%s): %s", (unsigned long long)sd->index,
                           label, cli_errmsg(&err));
    if (rc == CLI_EXIT_OK) {
        tio_stream_get_stats(sd->s, &after);
        rc = report(a, sd->index, label, c, after.bytes_sent - before.bytes_sent);
        sd->index++;
        fflush(stdout);
        cli_progress_update(sd->prog, sd->index, sd->total);
    }
    tio_container_free(w); /* (c with it, once libzmq is done, when own) */
    if (own) tio_container_free(c);
    return rc;
}

static int send_sink(void *ctx, tio_container *c, const char *label, const char *keys,
                     size_t keys_len) {
    return send_one(ctx, c, 1, label, keys, keys_len);
}

/* The end of pass sd->epoch: a marker (only __epoch) to every endpoint. */
static int send_marker(sender *sd) {
    tio_container *w = NULL;
    int rc = with_extras(sd, NULL, 0, NULL, 0, &w);
    if (rc != CLI_EXIT_OK) return rc;
    tio_save_options o; /* the format options, without a seqno: markers are not numbered */
    memset(&o, 0, sizeof o);
    o.flags = sd->a->flags;
    o.options = sd->a->options.text;
    tio_error err;
    tio_error_clear(&err);
    if (tio_stream_send_all(sd->s, w, &o, &err) != TIO_OK)
        rc = cli_cmd_error("send", "the end-of-epoch %llu marker: %s",
                           (unsigned long long)sd->epoch, cli_errmsg(&err));
    tio_container_free(w);
    if (rc == CLI_EXIT_OK) {
        size_t n = tio_stream_endpoint_count(sd->s);
        cli_progress_pause(sd->prog);
        fprintf(stderr, "tensio send: epoch %llu ended: marker sent to %zu endpoint%s\n",
                (unsigned long long)sd->epoch, n, n == 1 ? "" : "s");
    }
    return rc;
}

static int run_send(send_args *a) {
    int binds = 0;
    int rc = check_args(a, &binds);
    if (rc != CLI_EXIT_OK) return rc;

    int shards = 0;
    /* FILE i: messages [first[i], first[i + 1]) of a->msgs, made now; or,
     * streamed[i], a shard source read anew in each pass */
    size_t *first = calloc(a->nfiles + 1, sizeof *first);
    unsigned char *streamed = calloc(a->nfiles ? a->nfiles : 1, 1);
    if (!first || !streamed) rc = cli_error("out of memory");
    for (size_t i = 0; rc == CLI_EXIT_OK && i < a->nfiles; i++) {
        first[i] = a->msgs.n;
        if (!a->from && cli_shard_streamed(a->files[i])) {
            shards = 1;
            streamed[i] = 1;
        } else if (cli_is_shard(a->files[i], a->from)) {
            shards = 1;
            rc = cli_shard_messages(a->files[i], (size_t)a->batch, a->members, &a->limits,
                                    &a->msgs);
        } else {
            tio_container *c = NULL;
            rc = cli_open(a->files[i], a->from, &a->limits, &c);
            if (rc == CLI_EXIT_OK) rc = cli_shard_msgs_push(&a->msgs, c, a->files[i]);
        }
    }
    if (first) first[a->nfiles] = a->msgs.n;
    if (rc == CLI_EXIT_OK && a->batch && !shards)
        rc = cli_usage_error("send", "--batch applies to shards (.tar FILEs)");
    if (rc == CLI_EXIT_OK && a->keys && !shards)
        rc = cli_usage_error("send", "--keys applies to shards (.tar FILEs)");
    if (rc == CLI_EXIT_OK && a->members && !shards)
        rc = cli_usage_error("send", "--members applies to shards (.tar FILEs)");
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

    uint64_t passes = a->epochs ? a->epochs : a->count;
    sender sd = {a, s, &prog, 0, 0, a->msgs.n * passes};
    for (size_t f = 0; f < a->nfiles; f++)
        if (streamed && streamed[f]) sd.total = 0;
    for (uint64_t pass = 0; rc == CLI_EXIT_OK && pass < passes; pass++) {
        sd.epoch = pass;
        for (size_t f = 0; rc == CLI_EXIT_OK && f < a->nfiles; f++) {
            if (streamed[f]) {
                rc = cli_shard_stream_messages(a->files[f], (size_t)a->batch, a->members, &a->limits,
                                               send_sink, &sd);
                continue;
            }
            for (size_t i = first[f]; rc == CLI_EXIT_OK && i < first[f + 1]; i++) {
                rc = send_one(&sd, cs[i], 0, a->msgs.labels[i], a->msgs.keys[i],
                              a->msgs.keys_len[i]);
            }
        }
        if (rc == CLI_EXIT_OK && a->epochs) rc = send_marker(&sd);
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
    free(first);
    free(streamed);
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
