/* tensio recv — receive messages from ZeroMQ, describe them, write them to files. */
#include "stream_common.h"
#include "recv_sync.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char recv_help[] =
    "Usage: tensio recv [OPTIONS] ENDPOINT\n"
    "\n"
    "Receive messages from ENDPOINT (ZIO TENS messages or tensorcom batches, told\n"
    "apart per message) and print one line per message; with -o write each one to\n"
    "a file. ENDPOINT is tcp://HOST:PORT, ipc://PATH, or a tensorcom URL (zpull://\n"
    "zsub:// zrpull:// zrsub://, +ipc, #TOPIC), which chooses the socket and bind\n"
    "or connect. When it binds, 'tensio recv: bound ENDPOINT' is printed on stderr\n"
    "(port * picks a free port).\n"
    "\n"
    "A message that cannot be decoded is reported on stderr as 'tensio recv:\n"
    "message N: ERROR', counted, and skipped; it never stops the receiver. At the\n"
    "end 'tensio recv: received X messages (Y malformed)' goes to stderr. Exit 0\n"
    "when every requested message arrived and none was malformed; 1 on a malformed\n"
    "message, a timeout before --count messages, or a write error.\n"
    "\n";

static const char recv_help_options[] =
    "Options:\n"
    "      --socket TYPE   pull (default), sub, router, dealer or pair\n"
    "      --bind          bind ENDPOINT (default: connect, or the URL scheme's choice)\n"
    "      --connect       connect to ENDPOINT, even where the scheme binds\n"
    "      --proto P       auto (default: decided per message), zio or tensorcom\n"
    "      --count N       stop after N valid messages (default: run until --timeout,\n"
    "                      or until interrupted)\n"
    "      --timeout SEC   give up when no message arrives for SEC seconds\n"
    "                      (fractions allowed; default: wait forever)\n"
    "      --topic T       SUB: receive only messages starting with T (default: the\n"
    "                      URL's #fragment, or everything)\n"
    "      --identity ID   the routing id this socket announces (DEALER, ROUTER)\n"
    "      --hwm N         high-water mark: at most N messages queued\n"
    "      --max-frame-bytes N\n"
    "                      drop a peer that sends a frame over N bytes (default\n"
    "                      4 GiB)\n"
    "      --strict        treat readable-but-invalid messages as malformed\n"
    "  -o, --output PATTERN\n"
    "                      write message i to the file PATTERN with %d (or %04d,\n"
    "                      ...) replaced by i, counted from 0 among valid messages;\n"
    "                      %% is a literal %; the format comes from the extension\n"
    "                      (.zmsg, .ten, .btf, ...) or --format\n"
    "      --format FMT    write the files as format FMT\n"
    "      --samples-per-shard N\n"
    "                      -o names WebDataset shards (.tar): write each message as\n"
    "                      a sample, member KEY.ten (KEY its index, %06d; --format\n"
    "                      for another member format), N samples per shard; the\n"
    "                      pattern's %d is the shard's index\n"
    "      --members       with --samples-per-shard: what send --members sent of a\n"
    "                      shard's members goes back to members of their own\n"
    "                      (uint8 tensors named by an extension no tensor format\n"
    "                      reads: KEY.EXT holding their bytes; int64 scalars named\n"
    "                      cls, id ...: their decimal text), the sample is named\n"
    "                      by the message's __key__, __epoch is dropped\n"
    "      --densify       write sparse (COO) tensors as dense tensors\n"
    CLI_MAX_DENSE_HELP
    CLI_PROGRESS_HELP
    "      --drop-names    drop tensor names the output format cannot hold\n"
    "      --drop-metadata\n"
    "                      drop metadata the output format cannot hold\n"
    "      --widen         store dtypes the output format lacks in a wider dtype\n"
    "                      that holds every value exactly\n"
    "      --sync-each     make each -o file durable before its line is printed\n"
    "                      (fsync of the file and its directory per message; slow)\n"
    "      --no-sync       never sync the -o files (default: no fsync per file; the\n"
    "                      file systems written to are synced once a second while\n"
    "                      files arrive, when none arrives, and at exit)\n"
    "      --json          one JSON object per line per message (see docs/cli.md)\n"
    "      --hash          add each tensor's SHA-256 (dense C-order bytes)\n"
    "  -h, --help          show this help and exit\n";

enum {
    OPT_HELP = 1,
    OPT_SOCKET,
    OPT_BIND,
    OPT_CONNECT,
    OPT_PROTO,
    OPT_COUNT,
    OPT_TIMEOUT,
    OPT_TOPIC,
    OPT_IDENTITY,
    OPT_HWM,
    OPT_MAX_FRAME,
    OPT_STRICT,
    OPT_OUTPUT,
    OPT_FORMAT,
    OPT_SYNC_EACH,
    OPT_NO_SYNC,
    OPT_JSON,
    OPT_HASH,
    OPT_SAMPLES_PER_SHARD,
    OPT_MEMBERS
};

static const cli_option recv_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"socket", 0, 1, OPT_SOCKET},
    {"bind", 0, 0, OPT_BIND},
    {"connect", 0, 0, OPT_CONNECT},
    {"proto", 0, 1, OPT_PROTO},
    {"count", 0, 1, OPT_COUNT},
    {"timeout", 0, 1, OPT_TIMEOUT},
    {"topic", 0, 1, OPT_TOPIC},
    {"identity", 0, 1, OPT_IDENTITY},
    {"hwm", 0, 1, OPT_HWM},
    {"max-frame-bytes", 0, 1, OPT_MAX_FRAME},
    {"strict", 0, 0, OPT_STRICT},
    {"output", 'o', 1, OPT_OUTPUT},
    {"format", 0, 1, OPT_FORMAT},
    {"sync-each", 0, 0, OPT_SYNC_EACH},
    {"no-sync", 0, 0, OPT_NO_SYNC},
    {"densify", 0, 0, CLI_STREAM_OPT_DENSIFY},
    {"drop-names", 0, 0, CLI_STREAM_OPT_DROP_NAMES},
    {"drop-metadata", 0, 0, CLI_STREAM_OPT_DROP_METADATA},
    {"widen", 0, 0, CLI_STREAM_OPT_WIDEN},
    {"json", 0, 0, OPT_JSON},
    {"hash", 0, 0, OPT_HASH},
    {"samples-per-shard", 0, 1, OPT_SAMPLES_PER_SHARD},
    {"members", 0, 0, OPT_MEMBERS},
    CLI_OPT_MAX_DENSE,
    CLI_OPT_PROGRESS,
};

#define RECV_SOCKETS                                                                    \
    (1u << TIO_SOCKET_PULL | 1u << TIO_SOCKET_SUB | 1u << TIO_SOCKET_ROUTER |           \
     1u << TIO_SOCKET_DEALER | 1u << TIO_SOCKET_PAIR)

/* How long one receive call waits at most, so that an interrupt or the end of
 * --timeout is noticed whatever the transport does with signals. */
#define RECV_SLICE_MS 200
/* Lines on a stdout that is not a terminal are written in batches, at most
 * this long after the last write while messages stream in, and at once when
 * the stream pauses (a write per line cost as much as 10% of a small
 * message's receive-and-save). */
#define LINE_FLUSH_MS 100

/* How the -o files are made durable. */
typedef enum {
    SYNC_BATCH = 0, /* saved without fsync; their file systems synced (recv_sync.h) */
    SYNC_EACH,      /* the library's default save: fsync of the file and directory */
    SYNC_NONE       /* never */
} sync_mode;

typedef struct recv_args {
    const char *endpoint;
    tio_socket_type socket;
    int bind, connect;
    tio_proto proto;
    uint64_t count; /* 0: no limit */
    int timeout_ms; /* 0: none */
    const char *topic;
    const char *identity;
    uint64_t hwm;
    uint64_t max_frame;
    int strict;
    const char *output;
    const char *format;
    unsigned flags;
    int json, hash;
    int progress; /* CLI_PROGRESS_* */
    tio_limits limits; /* for received messages (--max-dense-bytes) */
    sync_mode sync;
    int sync_set; /* --sync-each or --no-sync given */
    uint64_t per_shard; /* --samples-per-shard; 0: a file per message */
    int members;        /* --members */
} recv_args;

/* ------------------------------------------------------------ output names */

/* Checks an output pattern: literal text, %% and conversions %d / %0Nd / %Nd
 * (N up to 2 digits). Returns the number of conversions, or -1. */
static int pattern_conversions(const char *pat) {
    int n = 0;
    for (const char *p = pat; *p; p++) {
        if (*p != '%') continue;
        p++;
        if (*p == '%') continue;
        if (*p == '0') p++;
        int digits = 0;
        while (*p >= '0' && *p <= '9' && digits < 3) {
            p++;
            digits++;
        }
        if (digits > 2 || *p != 'd') return -1;
        n++;
    }
    return n;
}

/* The file name for message `index` (malloc'ed; NULL when out of memory). */
static char *pattern_name(const char *pat, uint64_t index) {
    size_t cap = strlen(pat) + 1, used = 0;
    for (const char *p = pat; *p; p++)
        if (*p == '%') cap += 120; /* a conversion prints at most 99 + 20 chars */
    char *out = malloc(cap);
    if (!out) return NULL;
    for (const char *p = pat; *p; p++) {
        if (*p != '%') {
            out[used++] = *p;
            continue;
        }
        p++;
        if (*p == '%') {
            out[used++] = '%';
            continue;
        }
        int zero = 0, width = 0;
        if (*p == '0') {
            zero = 1;
            p++;
        }
        while (*p >= '0' && *p <= '9') width = width * 10 + (*p++ - '0');
        /* *p is 'd' (pattern_conversions checked it) */
        int w = zero ? snprintf(out + used, cap - used, "%0*llu", width, (unsigned long long)index)
                     : snprintf(out + used, cap - used, "%*llu", width, (unsigned long long)index);
        if (w > 0) used += (size_t)w;
    }
    out[used] = '\0';
    return out;
}

/* -------------------------------------------------------------- arguments */

static int parse_args(int argc, char **argv, recv_args *a) {
    cli_parser p;
    int rc = cli_parser_init(&p, "recv", argc, argv, recv_opts,
                             sizeof recv_opts / sizeof recv_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    int id = 0;
    while (rc == CLI_EXIT_OK && (id = cli_parser_next(&p)) > 0) {
        const char *v = p.value;
        switch (id) {
        case OPT_HELP:
            fputs(recv_help, stdout);
            fputs(recv_help_options, stdout);
            cli_parser_free(&p);
            return -1;
        case OPT_SOCKET: rc = cli_parse_socket("recv", v, RECV_SOCKETS, &a->socket); break;
        case OPT_BIND: a->bind = 1; break;
        case OPT_CONNECT: a->connect = 1; break;
        case OPT_PROTO: rc = cli_parse_proto("recv", v, 1, &a->proto); break;
        case OPT_COUNT: rc = cli_parse_u64("recv", "--count", v, 1, UINT64_MAX, &a->count); break;
        case OPT_TIMEOUT: rc = cli_parse_seconds("recv", "--timeout", v, &a->timeout_ms); break;
        case OPT_TOPIC: a->topic = v; break;
        case OPT_IDENTITY: a->identity = v; break;
        case OPT_HWM: rc = cli_parse_u64("recv", "--hwm", v, 1, INT_MAX, &a->hwm); break;
        case OPT_MAX_FRAME:
            rc = cli_parse_u64("recv", "--max-frame-bytes", v, 1, UINT64_MAX, &a->max_frame);
            break;
        case OPT_STRICT: a->strict = 1; break;
        case OPT_OUTPUT: a->output = v; break;
        case OPT_FORMAT: a->format = v; break;
        case OPT_JSON: a->json = 1; break;
        case OPT_HASH: a->hash = 1; break;
        case OPT_MEMBERS: a->members = 1; break;
        case OPT_SAMPLES_PER_SHARD:
            rc = cli_parse_u64("recv", "--samples-per-shard", v, 1, UINT32_MAX, &a->per_shard);
            break;
        case CLI_OPT_MAX_DENSE_ID: rc = cli_parse_max_dense("recv", v, &a->limits); break;
        case CLI_OPT_PROGRESS_ID: a->progress = CLI_PROGRESS_ON; break;
        case CLI_OPT_NO_PROGRESS_ID: a->progress = CLI_PROGRESS_OFF; break;
        case OPT_SYNC_EACH:
        case OPT_NO_SYNC: {
            sync_mode m = id == OPT_SYNC_EACH ? SYNC_EACH : SYNC_NONE;
            if (a->sync_set && a->sync != m)
                rc = cli_usage_error("recv", "--sync-each and --no-sync exclude each other");
            a->sync = m;
            a->sync_set = 1;
            break;
        }
        default: a->flags |= cli_conversion_flag(id); break;
        }
    }
    if (rc == CLI_EXIT_OK && id == CLI_PARSE_ERROR) rc = CLI_EXIT_USAGE;
    if (rc == CLI_EXIT_OK) {
        if (p.npos == 0) rc = cli_usage_error("recv", "missing ENDPOINT");
        else if (p.npos > 1) rc = cli_usage_error("recv", "too many arguments (expected one ENDPOINT)");
        else a->endpoint = p.pos[0];
    }
    cli_parser_free(&p);
    return rc;
}

static int check_args(recv_args *a, int *binds) {
    cli_scheme sc;
    tio_socket_type sock;
    int rc = cli_stream_settle("recv", a->endpoint, a->bind, a->connect, RECV_SOCKETS,
                               TIO_SOCKET_PULL, "receive",
                               "zpull://, zsub://, zrpull:// or zrsub://", &a->socket, &sock,
                               binds, &sc);
    if (rc != CLI_EXIT_OK) return rc;
    if (a->topic && sock != TIO_SOCKET_SUB)
        return cli_usage_error("recv", "--topic needs a sub socket (this is %s)",
                               cli_socket_name(sock));
    if (a->identity && sock != TIO_SOCKET_DEALER && sock != TIO_SOCKET_ROUTER)
        return cli_usage_error("recv", "--identity needs a dealer or router socket (this is %s)",
                               cli_socket_name(sock));
    if (a->format && cli_check_format("recv", "--format", a->format) != CLI_EXIT_OK)
        return CLI_EXIT_USAGE;
    if (a->format && !a->output)
        return cli_usage_error("recv", "--format needs -o PATTERN (it is the output format)");
    if (a->flags && !a->output)
        return cli_usage_error("recv", "--densify, --drop-names, --drop-metadata and --widen "
                                       "apply to the files written with -o");
    if (a->sync_set && !a->output)
        return cli_usage_error("recv", "--sync-each and --no-sync apply to the files written "
                                       "with -o");
    if (a->per_shard && !a->output)
        return cli_usage_error("recv", "--samples-per-shard needs -o PATTERN (the shards)");
    if (a->members && !a->per_shard)
        return cli_usage_error("recv", "--members applies to --samples-per-shard");
    if (a->per_shard && !cli_is_shard_name(a->output))
        return cli_usage_error("recv", "--samples-per-shard: -o '%s' does not end in .tar",
                               a->output);
    if (a->per_shard && !a->format) a->format = "tenbin";
    if (a->output) {
        int n = pattern_conversions(a->output);
        if (n < 0)
            return cli_usage_error("recv",
                                   "-o: '%s': a %% must start %%d, %%0Nd or %%Nd (the message "
                                   "index) or be written %%%%",
                                   a->output);
        if (n == 0 && a->count != 1 && !(a->per_shard && a->count && a->count <= a->per_shard))
            return cli_usage_error("recv",
                                   "-o: '%s' has no %%d for the message index (needed unless "
                                   "--count 1)",
                                   a->output);
        if (!a->format) {
            char *first = pattern_name(a->output, 0);
            if (!first) return cli_error("out of memory");
            a->format = tio_format_for_path(first);
            free(first);
            if (!a->format) {
                char list[512];
                cli_format_list(list, sizeof list);
                return cli_usage_error("recv",
                                       "-o: cannot tell the output format from '%s'; use "
                                       "--format FMT (formats: %s)",
                                       a->output, list);
            }
        }
        /* a format that cannot hold received tensors at all */
        tio_container *empty = tio_container_new();
        if (!empty) return cli_error("out of memory");
        tio_save_options o;
        memset(&o, 0, sizeof o);
        o.format = a->format;
        o.flags = a->flags;
        tio_error err;
        tio_error_clear(&err);
        int st = tio_check_save(empty, &o, &err);
        tio_container_free(empty);
        if (st != TIO_OK)
            return cli_usage_error("recv", "cannot write received messages as %s: %s",
                                   a->format, cli_errmsg(&err));
    }
    return CLI_EXIT_OK;
}

/* ---------------------------------------------------------------- output */

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A decimal property as an integer JSON value (null when absent or not a number). */
static json_t *prop_integer(const tio_container *c, const char *key) {
    const char *v = tio_container_prop_get(c, key);
    if (!v || *v < '0' || *v > '9') return json_null();
    errno = 0;
    char *end = NULL;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno != 0 || *end != '\0' || n > (unsigned long long)INT64_MAX) return json_null();
    return json_integer((json_int_t)n);
}

/* The tensor's dense SHA-256 in hex; on failure (a sparse tensor whose dense
 * form exceeds --max-dense-bytes) prints why, fills *err and returns
 * CLI_EXIT_FAIL: the message is reported without that hash. */
static int tensor_hash(uint64_t index, size_t i, const tio_tensor *t,
                       cli_dense_budget *budget, char hex[65], tio_error *err) {
    uint8_t digest[32];
    if (cli_hash_dense(t, i, budget, digest, err) != TIO_OK) {
        const char *msg = cli_errmsg(err);
        if (strstr(msg, "tensor ")) /* the library's message names it */
            return cli_cmd_error("recv", "received %llu: %s", (unsigned long long)index, msg);
        return cli_cmd_error("recv", "received %llu: tensor %zu: %s",
                             (unsigned long long)index, i, msg);
    }
    cli_hex32(digest, hex);
    return CLI_EXIT_OK;
}

static int report_json(const recv_args *a, uint64_t index, const tio_container *c,
                       const char *file, int *unhashed) {
    json_t *o = json_object();
    json_t *props = json_object();
    json_t *tensors = json_array();
    if (!o || !props || !tensors) {
        json_decref(o);
        json_decref(props);
        json_decref(tensors);
        return cli_error("out of memory");
    }
    int bad = cli_json_set(o, "index", json_integer((json_int_t)index));
    bad |= cli_json_set(o, "proto", cli_json_str(tio_container_prop_get(c, "proto")));
    bad |= cli_json_set(o, "format", cli_json_str(tio_container_format(c)));
    bad |= cli_json_set(o, "frames", prop_integer(c, "frames"));
    bad |= cli_json_set(o, "bytes", prop_integer(c, "bytes"));
    bad |= cli_json_set(o, "props", props);
    bad |= cli_json_set(o, "tensors", tensors);
    for (size_t i = 0; !bad && i < tio_container_prop_count(c); i++) {
        const char *k = NULL, *v = NULL;
        if (tio_container_prop_at(c, i, &k, &v) != TIO_OK || !k) continue;
        bad |= cli_json_set(props, k, cli_json_str(v));
    }
    size_t n = tio_container_count(c);
    cli_dense_budget budget;
    cli_dense_budget_init(&budget, c);
    for (size_t i = 0; !bad && i < n; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        json_t *to = json_object();
        if (!to || json_array_append_new(tensors, to) != 0) {
            bad = 1;
            break;
        }
        bad |= cli_json_set(to, "name", cli_json_str(tio_tensor_name(t)));
        bad |= cli_json_set(to, "dtype", cli_json_str(cli_tensor_dtype_name(t)));
        bad |= cli_json_set(to, "shape", cli_json_shape(t));
        bad |= cli_json_set(to, "layout", json_string(cli_layout_name(tio_tensor_layout(t))));
        bad |= cli_json_set(to, "nbytes", json_integer((json_int_t)tio_tensor_nbytes(t)));
        if (!bad && a->hash) {
            char hex[65];
            tio_error err;
            if (tensor_hash(index, i, t, &budget, hex, &err) == CLI_EXIT_OK) {
                bad |= cli_json_set(to, "sha256", json_string(hex));
            } else {
                json_t *e = json_object();
                *unhashed = 1;
                bad |= cli_json_set(to, "sha256", json_null());
                bad |= cli_json_set(to, "sha256_error", e);
                if (!bad) {
                    bad |= cli_json_set(e, "code", json_string(tio_status_name(err.code)));
                    bad |= cli_json_set(e, "message", json_string(cli_errmsg(&err)));
                }
            }
        }
    }
    if (!bad && file) bad |= cli_json_set(o, "file", cli_json_str(file));
    if (bad) {
        json_decref(o);
        return cli_error("out of memory");
    }
    return cli_json_print(o);
}

/* At most this many tensors are described on a text line. */
#define TEXT_TENSORS 8

static int report_text(const recv_args *a, uint64_t index, const tio_container *c,
                       const char *file, int *unhashed) {
    const char *proto = tio_container_prop_get(c, "proto");
    const char *frames = tio_container_prop_get(c, "frames");
    const char *bytes = tio_container_prop_get(c, "bytes");
    const char *peer = tio_container_prop_get(c, "peer");
    size_t n = tio_container_count(c);
    printf("received %llu: %s, %s frame%s, %s bytes", (unsigned long long)index,
           proto ? proto : "?", frames ? frames : "?",
           frames && strcmp(frames, "1") == 0 ? "" : "s", bytes ? bytes : "?");
    if (peer) printf(", from peer 0x%s", peer);
    printf(", %zu tensor%s", n, n == 1 ? "" : "s");
    cli_dense_budget budget;
    cli_dense_budget_init(&budget, c);
    for (size_t i = 0; i < n && i < TEXT_TENSORS; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        const char *name = tio_tensor_name(t);
        char *ename = cli_name_escape(name);
        char *shape = cli_shape_string(t);
        const char *dt = cli_tensor_dtype_name(t);
        if ((name && !ename) || !shape) {
            free(ename);
            free(shape);
            putchar('\n');
            return cli_error("out of memory");
        }
        printf("%s %s %s %s", i ? "," : ":", ename ? ename : "-", dt ? dt : "?", shape);
        if (tio_tensor_layout(t) == TIO_LAYOUT_COO) fputs(" coo", stdout);
        free(ename);
        free(shape);
        if (a->hash) {
            char hex[65];
            tio_error err;
            if (tensor_hash(index, i, t, &budget, hex, &err) == CLI_EXIT_OK) {
                printf(" sha256=%s", hex);
            } else {
                fputs(" sha256=-", stdout);
                *unhashed = 1;
            }
        }
    }
    if (n > TEXT_TENSORS) printf(", ... (%zu more)", n - TEXT_TENSORS);
    if (file) printf(" -> %s", file);
    putchar('\n');
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------ the -o files */

/* What writing the -o files keeps: the directory last written to (cleaned of
 * stale temporary files once, when it changes: a save itself never lists its
 * directory) and, for SYNC_BATCH, the thread that syncs the files. */
typedef struct out_state {
    char *dir;           /* the directory of the last file, NULL before any */
    recv_syncer *sync;   /* SYNC_BATCH with -o */
    cli_shard_out shard; /* --samples-per-shard: the shard being written */
} out_state;

/* The directory part of path ("." when it has none), malloc'ed. */
static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

/* Before the first file of a directory (the pattern may spread messages over
 * several): removes the temporary files that killed savers left there, once
 * per directory and process; and, for SYNC_BATCH, has its file system synced.
 * The cleanup is best effort: a directory it cannot list fails the save. */
static int out_enter(const recv_args *a, out_state *o, const char *path) {
    char *dir = dir_of(path);
    if (!dir) return cli_error("out of memory");
    if (o->dir && strcmp(dir, o->dir) == 0) {
        free(dir);
        return CLI_EXIT_OK;
    }
    free(o->dir);
    o->dir = dir;
    tio_error err;
    tio_error_clear(&err);
    (void)tio_save_cleanup(dir, NULL, &err);
    (void)a;
    return o->sync ? recv_syncer_track(o->sync, dir) : CLI_EXIT_OK;
}

/* --samples-per-shard: adds message `index` to its shard (the shard is
 * committed when full); *path gets the shard's name. */
static int write_sample(const recv_args *a, out_state *out, uint64_t index,
                        const tio_container *c, char **path) {
    *path = pattern_name(a->output, index / a->per_shard);
    if (!*path) return cli_error("out of memory");
    int rc = out->shard.w ? CLI_EXIT_OK : out_enter(a, out, *path);
    tio_save_options o;
    memset(&o, 0, sizeof o);
    o.format = a->format;
    o.flags = a->flags | (a->sync == SYNC_EACH ? 0u : TIO_SAVE_NO_SYNC);
    if (rc == CLI_EXIT_OK) rc = cli_shard_out_add(&out->shard, *path, index, c, &o, a->members);
    if (rc == CLI_EXIT_OK && (index + 1) % a->per_shard == 0) {
        rc = cli_shard_out_close(&out->shard);
        if (rc == CLI_EXIT_OK && out->sync) recv_syncer_saved(out->sync);
    }
    if (rc != CLI_EXIT_OK) fflush(stdout);
    return rc;
}

/* Writes a received container to the file of its index; *path gets the name. */
static int write_message(const recv_args *a, out_state *out, uint64_t index,
                         const tio_container *c, char **path) {
    if (a->per_shard) return write_sample(a, out, index, c, path);
    *path = pattern_name(a->output, index);
    if (!*path) return cli_error("out of memory");
    int rc = out_enter(a, out, *path);
    if (rc != CLI_EXIT_OK) return rc;
    tio_save_options o;
    memset(&o, 0, sizeof o);
    o.format = a->format;
    o.flags = a->flags | (a->sync == SYNC_EACH ? 0u : TIO_SAVE_NO_SYNC);
    tio_error err;
    tio_error_clear(&err);
    if (tio_save(c, *path, &o, &err) != TIO_OK) {
        const char *msg = cli_errmsg(&err);
        fflush(stdout); /* the lines before, then the error */
        /* "received I" as on the message's own line; I/O messages name the file */
        if (strstr(msg, *path))
            return cli_cmd_error("recv", "received %llu: %s", (unsigned long long)index, msg);
        return cli_cmd_error("recv", "received %llu: %s: %s", (unsigned long long)index,
                             *path, msg);
    }
    if (out->sync) recv_syncer_saved(out->sync);
    return CLI_EXIT_OK;
}

/* ---------------------------------------------------------------- receive */

/* The library starts a bad message's error with "message N (K frames): ".
 * The tool prints its own "message N: " instead: returns the rest, and the
 * frames part ("K frames") in *frames (empty when there is none). */
static const char *strip_message_prefix(const char *msg, char *frames, size_t cap) {
    frames[0] = '\0';
    if (strncmp(msg, "message ", 8) != 0) return msg;
    const char *p = msg + 8;
    if (*p < '0' || *p > '9') return msg;
    while (*p >= '0' && *p <= '9') p++;
    if (p[0] == ':' && p[1] == ' ') return p + 2;
    if (p[0] != ' ' || p[1] != '(') return msg;
    const char *close = strchr(p, ')');
    if (!close || close[1] != ':' || close[2] != ' ') return msg;
    size_t n = (size_t)(close - (p + 2));
    if (n >= cap) n = cap - 1;
    memcpy(frames, p + 2, n);
    frames[n] = '\0';
    return close + 3;
}

static int run_recv(recv_args *a) {
    int binds = 0;
    int rc = check_args(a, &binds);
    if (rc != CLI_EXIT_OK) return rc;

    int slice = RECV_SLICE_MS;
    if (a->timeout_ms && a->timeout_ms < slice) slice = a->timeout_ms;
    tio_stream_options so;
    memset(&so, 0, sizeof so);
    so.socket = a->socket;
    so.proto = a->proto;
    so.flags = (a->bind ? TIO_STREAM_BIND : 0u) | (a->connect ? TIO_STREAM_CONNECT : 0u);
    so.timeout_ms = slice;
    so.linger_ms = -1; /* a receiver has nothing of its own to deliver */
    so.hwm = (int)a->hwm;
    so.max_frame_bytes = a->max_frame;
    so.topic = a->topic;
    so.identity = a->identity;
    so.open_flags = a->strict ? TIO_OPEN_STRICT : 0u;
    tio_limits lim;
    so.limits = cli_limits(&a->limits, &lim);
    tio_stream *s = NULL;
    rc = cli_stream_open("recv", a->endpoint, &so, binds, &s);
    if (rc != CLI_EXIT_OK) return rc;
    cli_stream_catch_signals();

    uint64_t valid = 0, malformed = 0, seen = 0, incomplete = 0;
    int timed_out = 0, interrupted = 0;
    uint64_t idle_since = now_ms();
    out_state out;
    memset(&out, 0, sizeof out);
    if (a->output && a->sync == SYNC_BATCH) rc = recv_syncer_start(&out.sync);
    if (rc != CLI_EXIT_OK) {
        tio_stream_close(s, NULL);
        return rc;
    }
    int tty = isatty(STDOUT_FILENO);
    /* messages received (of --count); automatic only when the per-message
     * lines do not go to the same terminal */
    cli_progress prog;
    cli_progress_init(&prog, a->progress == CLI_PROGRESS_AUTO && tty ? CLI_PROGRESS_OFF
                                                                    : a->progress,
                      "recv", "messages");
    uint64_t flushed_ms = idle_since;
    while (a->count == 0 || valid < a->count) {
        if (cli_stream_stopped()) {
            interrupted = 1;
            break;
        }
        tio_stream_stats before, after;
        tio_stream_get_stats(s, &before);
        tio_container *c = NULL;
        tio_error err;
        tio_error_clear(&err);
        int st = tio_stream_recv(s, &c, &err);
        if (st == TIO_E_TIMEOUT) {
            uint64_t now = now_ms();
            fflush(stdout);
            flushed_ms = now;
            if (out.sync) recv_syncer_kick(out.sync); /* paused: the files durable now */
            if (a->timeout_ms && now - idle_since >= (uint64_t)a->timeout_ms) {
                timed_out = 1;
                break;
            }
            continue;
        }
        tio_stream_get_stats(s, &after);
        cli_progress_pause(&prog); /* before a line or a message */
        if (st != TIO_OK && after.malformed > before.malformed) {
            char frames[32];
            fflush(stdout);
            const char *why = strip_message_prefix(cli_errmsg(&err), frames, sizeof frames);
            if (frames[0])
                cli_cmd_error("recv", "message %llu: %s (%s)", (unsigned long long)seen, why,
                              frames);
            else
                cli_cmd_error("recv", "message %llu: %s", (unsigned long long)seen, why);
            malformed++;
            seen++;
            idle_since = now_ms();
            continue;
        }
        if (st != TIO_OK) {
            if (cli_stream_stopped()) {
                interrupted = 1;
                break;
            }
            fflush(stdout);
            rc = cli_cmd_error("recv", "%s", cli_errmsg(&err));
            break;
        }
        seen++;
        idle_since = now_ms();
        char *path = NULL;
        if (a->output) rc = write_message(a, &out, valid, c, &path);
        int unhashed = 0;
        if (rc == CLI_EXIT_OK)
            rc = a->json ? report_json(a, valid, c, path, &unhashed)
                         : report_text(a, valid, c, path, &unhashed);
        incomplete += (uint64_t)unhashed;
        /* --hash: a line per write, so that a hash error on stderr comes
         * between the lines as before */
        if (tty || a->hash || rc != CLI_EXIT_OK || idle_since - flushed_ms >= LINE_FLUSH_MS) {
            fflush(stdout);
            flushed_ms = idle_since;
        }
        free(path);
        tio_container_free(c);
        if (rc != CLI_EXIT_OK) break;
        valid++;
        cli_progress_update(&prog, valid, a->count);
        if (out.sync && recv_syncer_failed(out.sync)) {
            rc = CLI_EXIT_FAIL; /* printed by the sync thread */
            break;
        }
    }
    fflush(stdout);
    cli_progress_end(&prog);
    tio_stream_close(s, NULL);
    if (out.shard.w) { /* the last shard, not full: every way out commits it */
        int cr = cli_shard_out_close(&out.shard);
        if (rc == CLI_EXIT_OK) rc = cr;
        if (cr == CLI_EXIT_OK && out.sync) recv_syncer_saved(out.sync);
    }
    free(out.shard.path);
    /* every way out (--count, --timeout, a signal, an error) syncs what was written */
    int sr = recv_syncer_finish(out.sync);
    if (rc == CLI_EXIT_OK) rc = sr;
    free(out.dir);

    if (timed_out && a->count)
        cli_cmd_error("recv", "timed out: no message for %d.%03d s (%llu of %llu received)",
                      a->timeout_ms / 1000, a->timeout_ms % 1000, (unsigned long long)valid,
                      (unsigned long long)a->count);
    if (interrupted) fputs("tensio recv: interrupted\n", stderr);
    fprintf(stderr, "tensio recv: received %llu message%s (%llu malformed)\n",
            (unsigned long long)seen, seen == 1 ? "" : "s", (unsigned long long)malformed);
    if (incomplete)
        fprintf(stderr, "tensio recv: %llu message%s reported without a tensor's hash\n",
                (unsigned long long)incomplete, incomplete == 1 ? "" : "s");
    if (rc == CLI_EXIT_OK && (malformed || incomplete || (a->count && valid < a->count)))
        rc = CLI_EXIT_FAIL;
    return rc;
}

int cli_cmd_recv(int argc, char **argv) {
    recv_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc == -1) return CLI_EXIT_OK; /* --help */
    if (rc != CLI_EXIT_OK) return rc;
    return run_recv(&a);
}
