/* What `tensio send`, `recv` and `cat` share: schemes, sockets, protocols. */
#include "stream_common.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- schemes */

static const struct {
    const char *name;
    tio_socket_type socket;
    int bind;
} schemes[] = {
    {"zpush", TIO_SOCKET_PUSH, 0},  {"zpull", TIO_SOCKET_PULL, 1},
    {"zpub", TIO_SOCKET_PUB, 1},    {"zsub", TIO_SOCKET_SUB, 0},
    {"zrpush", TIO_SOCKET_PUSH, 1}, {"zrpull", TIO_SOCKET_PULL, 0},
    {"zrpub", TIO_SOCKET_PUB, 0},   {"zrsub", TIO_SOCKET_SUB, 1},
};

void cli_stream_scheme(const char *endpoint, cli_scheme *out) {
    memset(out, 0, sizeof *out);
    out->socket = TIO_SOCKET_DEFAULT;
    out->bind = -1;
    const char *sep = strstr(endpoint, "://");
    if (!sep) return;
    /* the scheme up to "://" or a "+transport" suffix, lowercased */
    size_t n = 0;
    for (const char *p = endpoint; p < sep && *p != '+'; p++) {
        if (n + 1 >= sizeof out->name) return; /* longer than any known scheme */
        out->name[n++] = (char)tolower((unsigned char)*p);
    }
    out->name[n] = '\0';
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        if (strcmp(out->name, schemes[i].name) == 0) {
            out->tensorcom = 1;
            out->socket = schemes[i].socket;
            out->bind = schemes[i].bind;
            return;
        }
    }
}

/* ------------------------------------------------------------ option values */

static const char *const socket_names[] = {"default", "push",   "pull",   "pub",
                                           "sub",     "dealer", "router", "pair"};
#define NSOCKETS (sizeof socket_names / sizeof socket_names[0])

const char *cli_socket_name(tio_socket_type t) {
    size_t i = (size_t)t;
    return i < NSOCKETS ? socket_names[i] : "?";
}

int cli_parse_socket(const char *cmd, const char *value, unsigned allowed,
                     tio_socket_type *out) {
    for (size_t i = 1; i < NSOCKETS; i++) {
        if ((allowed >> i & 1u) && strcmp(value, socket_names[i]) == 0) {
            *out = (tio_socket_type)i;
            return CLI_EXIT_OK;
        }
    }
    char list[96] = "";
    size_t used = 0;
    for (size_t i = 1; i < NSOCKETS; i++) {
        if (!(allowed >> i & 1u)) continue;
        int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                         socket_names[i]);
        if (w > 0 && (size_t)w < sizeof list - used) used += (size_t)w;
    }
    return cli_usage_error(cmd, "--socket: '%s' is not a socket type %s can use (%s)", value,
                           cmd, list);
}

const char *cli_proto_name(tio_proto p) {
    switch (p) {
    case TIO_PROTO_ZIO: return "zio";
    case TIO_PROTO_TENSORCOM: return "tensorcom";
    case TIO_PROTO_AUTO: break;
    }
    return "auto";
}

const char *cli_proto_format(tio_proto p) {
    return p == TIO_PROTO_TENSORCOM ? "tenbin" : "zio";
}

int cli_parse_seconds(const char *cmd, const char *option, const char *value, int *ms) {
    errno = 0;
    char *end = NULL;
    double s = strtod(value, &end);
    /* !(s > 0) also rejects NaN; the upper bound rejects infinity */
    if (end == value || *end != '\0' || errno != 0 || !(s > 0) || !(s < 1e15))
        return cli_usage_error(cmd, "%s: '%s' is not a number of seconds (> 0, e.g. 2 or 0.5)",
                               option, value);
    double v = s * 1000.0;
    if (v >= (double)INT_MAX) {
        *ms = INT_MAX;
    } else {
        *ms = (int)v; /* rounded up below, and at least 1 ms */
        if ((double)*ms < v) (*ms)++;
        if (*ms < 1) *ms = 1;
    }
    return CLI_EXIT_OK;
}

int cli_parse_u64(const char *cmd, const char *option, const char *value, uint64_t min,
                  uint64_t max, uint64_t *out) {
    int ok = value[0] >= '0' && value[0] <= '9';
    unsigned long long v = 0;
    if (ok) {
        errno = 0;
        char *end = NULL;
        v = strtoull(value, &end, 10);
        ok = errno == 0 && end && *end == '\0' && v >= min && v <= max;
    }
    if (!ok)
        return cli_usage_error(cmd, "%s: '%s' is not an integer from %llu to %llu", option,
                               value, (unsigned long long)min, (unsigned long long)max);
    *out = (uint64_t)v;
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------ format options */

int cli_optlist_add(cli_optlist *l, const char *cmd, const char *kv) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv || strchr(kv, ','))
        return cli_usage_error(cmd,
                               "--format-option: '%s' is not KEY=VALUE (one option each, "
                               "no commas)",
                               kv);
    size_t n = strlen(kv);
    char *t = realloc(l->text, l->len + n + 2);
    if (!t) return cli_error("out of memory");
    l->text = t;
    if (l->len) l->text[l->len++] = ',';
    memcpy(l->text + l->len, kv, n + 1);
    l->len += n;
    return CLI_EXIT_OK;
}

int cli_optlist_has(const cli_optlist *l, const char *key) {
    size_t kl = strlen(key);
    for (const char *p = l->text; p && *p;) {
        size_t len = strcspn(p, ",");
        if (len > kl && p[kl] == '=' && strncmp(p, key, kl) == 0) return 1;
        p += len;
        if (*p == ',') p++;
    }
    return 0;
}

void cli_optlist_free(cli_optlist *l) {
    free(l->text);
    l->text = NULL;
    l->len = 0;
}

unsigned cli_conversion_flag(int id) {
    switch (id) {
    case CLI_STREAM_OPT_DENSIFY: return TIO_SAVE_DENSIFY;
    case CLI_STREAM_OPT_DROP_NAMES: return TIO_SAVE_DROP_NAMES;
    case CLI_STREAM_OPT_DROP_METADATA: return TIO_SAVE_DROP_METADATA;
    case CLI_STREAM_OPT_WIDEN: return TIO_SAVE_WIDEN;
    default: return 0;
    }
}

/* ------------------------------------------------------------------ streams */

int cli_cmd_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tensio %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_EXIT_FAIL;
}

int cli_stream_open(const char *cmd, const char *endpoint, const tio_stream_options *o,
                    int binds, tio_stream **out) {
    tio_error err;
    tio_error_clear(&err);
    *out = NULL;
    int st = tio_stream_open(endpoint, o, out, &err);
    if (st != TIO_OK) {
        *out = NULL;
        if (st == TIO_E_ARGUMENT) return cli_usage_error(cmd, "%s", cli_errmsg(&err));
        return cli_cmd_error(cmd, "%s", cli_errmsg(&err));
    }
    if (binds) {
        const char *ep = tio_stream_endpoint(*out);
        fprintf(stderr, "tensio %s: bound %s\n", cmd, ep ? ep : endpoint);
        fflush(stderr);
    }
    return CLI_EXIT_OK;
}

static volatile sig_atomic_t stopped;

static void on_signal(int sig) {
    (void)sig;
    stopped = 1;
}

void cli_stream_catch_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: a blocking call returns with EINTR */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int cli_stream_stopped(void) { return stopped != 0; }

int cli_stream_settle(const char *cmd, const char *endpoint, int bind, int connect,
                      unsigned allowed, tio_socket_type dflt, const char *verb,
                      const char *hint, tio_socket_type *socket,
                      tio_socket_type *effective, int *binds, cli_scheme *sc) {
    cli_stream_scheme(endpoint, sc);
    if (bind && connect) return cli_usage_error(cmd, "--bind and --connect exclude each other");
    tio_socket_type sock = *socket;
    if (sock == TIO_SOCKET_DEFAULT) {
        if (sc->tensorcom && !(allowed >> sc->socket & 1u))
            return cli_usage_error(cmd, "%s:// is a %s socket, which cannot %s (use %s)",
                                   sc->name, cli_socket_name(sc->socket), verb, hint);
        sock = sc->tensorcom ? sc->socket : dflt;
        /* a tensorcom scheme names the socket itself (the library reads it) */
        if (!sc->tensorcom) *socket = sock;
    }
    *effective = sock;
    *binds = bind || (!connect && sc->bind == 1);
    return CLI_EXIT_OK;
}

int cli_parse_proto(const char *cmd, const char *value, int allow_auto, tio_proto *out) {
    if (allow_auto && strcmp(value, "auto") == 0) *out = TIO_PROTO_AUTO;
    else if (strcmp(value, "zio") == 0) *out = TIO_PROTO_ZIO;
    else if (strcmp(value, "tensorcom") == 0) *out = TIO_PROTO_TENSORCOM;
    else
        return cli_usage_error(cmd, "--proto: '%s' is not %szio or tensorcom", value,
                               allow_auto ? "auto, " : "");
    return CLI_EXIT_OK;
}
