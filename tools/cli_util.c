/* Option parsing, diagnostics, formatting helpers for the tensio tool. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* -------------------------------------------------------- option parsing */

int cli_parser_init(cli_parser *p, const char *cmd, int argc, char **argv,
                    const cli_option *opts, size_t nopts) {
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->argc = argc;
    p->argv = argv;
    p->next = 1; /* argv[0] is the command name */
    p->opts = opts;
    p->nopts = nopts;
    size_t n = argc > 0 ? (size_t)argc : 1;
    p->pos = calloc(n, sizeof *p->pos);
    if (!p->pos) return cli_error("out of memory");
    return CLI_EXIT_OK;
}

void cli_parser_free(cli_parser *p) {
    free(p->pos);
    p->pos = NULL;
    p->npos = 0;
}

static const cli_option *find_long(const cli_parser *p, const char *name, size_t len) {
    for (size_t i = 0; i < p->nopts; i++) {
        const char *ln = p->opts[i].long_name;
        if (ln && strlen(ln) == len && strncmp(ln, name, len) == 0) return &p->opts[i];
    }
    return NULL;
}

static const cli_option *find_short(const cli_parser *p, char c) {
    for (size_t i = 0; i < p->nopts; i++)
        if (p->opts[i].short_name != 0 && p->opts[i].short_name == c) return &p->opts[i];
    return NULL;
}

static int parse_short(cli_parser *p) {
    char c = *p->cluster++;
    const cli_option *o = find_short(p, c);
    if (!o) {
        p->cluster = NULL;
        cli_usage_error(p->cmd, "unknown option '-%c'", c);
        return CLI_PARSE_ERROR;
    }
    if (o->has_arg) {
        if (*p->cluster != '\0') {
            p->value = p->cluster;
        } else if (p->next < p->argc) {
            p->value = p->argv[p->next++];
        } else {
            p->cluster = NULL;
            cli_usage_error(p->cmd, "option '-%c' requires an argument", c);
            return CLI_PARSE_ERROR;
        }
        p->cluster = NULL;
    } else if (*p->cluster == '\0') {
        p->cluster = NULL;
    }
    return o->id;
}

int cli_parser_next(cli_parser *p) {
    p->value = NULL;
    if (p->cluster) return parse_short(p);
    while (p->next < p->argc) {
        const char *a = p->argv[p->next++];
        if (p->only_operands || a[0] != '-' || a[1] == '\0') {
            p->pos[p->npos++] = a;
            continue;
        }
        if (a[1] == '-') {
            if (a[2] == '\0') {
                p->only_operands = 1;
                continue;
            }
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            const cli_option *o = find_long(p, name, len);
            if (!o) {
                cli_usage_error(p->cmd, "unknown option '--%.*s'",
                                len > 200 ? 200 : (int)len, name);
                return CLI_PARSE_ERROR;
            }
            if (o->has_arg) {
                if (eq) {
                    p->value = eq + 1;
                } else if (p->next < p->argc) {
                    p->value = p->argv[p->next++];
                } else {
                    cli_usage_error(p->cmd, "option '--%s' requires an argument",
                                    o->long_name);
                    return CLI_PARSE_ERROR;
                }
            } else if (eq) {
                cli_usage_error(p->cmd, "option '--%s' does not take an argument",
                                o->long_name);
                return CLI_PARSE_ERROR;
            }
            return o->id;
        }
        p->cluster = a + 1;
        return parse_short(p);
    }
    return CLI_PARSE_END;
}

/* ----------------------------------------------------------- diagnostics */

int cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tensio: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_EXIT_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("tensio: ", stderr);
    if (cmd) fprintf(stderr, "%s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (cmd)
        fprintf(stderr, "Try 'tensio %s --help' for more information.\n", cmd);
    else
        fputs("Try 'tensio --help' for more information.\n", stderr);
    return CLI_EXIT_USAGE;
}

const char *cli_errmsg(const tio_error *err) {
    if (err->message[0] != '\0') return err->message;
    const char *s = tio_status_string(err->code);
    return s && *s ? s : "unknown error";
}

void cli_format_list(char *buf, size_t size) {
    size_t used = 0;
    if (size == 0) return;
    buf[0] = '\0';
    for (size_t i = 0; i < tio_format_count(); i++) {
        const char *name = tio_format_name(i);
        if (!name) break;
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", name);
        if (n < 0 || (size_t)n >= size - used) break;
        used += (size_t)n;
    }
    if (used == 0) snprintf(buf, size, "(none)");
}

int cli_check_format(const char *cmd, const char *option, const char *name) {
    for (size_t i = 0; i < tio_format_count(); i++) {
        const char *f = tio_format_name(i);
        if (f && strcmp(f, name) == 0) return CLI_EXIT_OK;
    }
    char list[512];
    cli_format_list(list, sizeof list);
    return cli_usage_error(cmd, "%s: unknown format '%s' (formats: %s)", option, name,
                           list);
}

int cli_open(const char *path, const char *format, const tio_limits *limits,
             tio_container **out) {
    return cli_open_flags(path, format, limits, 0, out);
}

int cli_open_opts(const char *path, const tio_open_options *opts, tio_container **out,
                  tio_error *err) {
    *out = NULL;
    tio_open_options mine = *opts;
    tio_limits lim;
    mine.limits = cli_limits(opts->limits, &lim);
    const tio_open_options *o = &mine;
    if (!cli_is_stdio(path)) return tio_open(path, o, out, err);
    const uint8_t *buf;
    size_t n;
    int rc = cli_stdin_bytes(&buf, &n, err);
    if (rc == TIO_OK) rc = tio_open_memory(buf, n, o, out, err);
    if (rc != TIO_OK) {
        tio_container_free(*out);
        *out = NULL;
    }
    return rc;
}

int cli_open_flags(const char *path, const char *format, const tio_limits *limits,
                   unsigned flags, tio_container **out) {
    tio_open_options o;
    tio_error err;
    memset(&o, 0, sizeof o);
    tio_error_clear(&err);
    o.format = format;
    o.limits = limits;
    o.flags = flags;
    int rc = cli_open_opts(path, &o, out, &err);
    if (cli_is_stdio(path)) path = "standard input";
    if (rc != TIO_OK) {
        *out = NULL;
        const char *msg = cli_errmsg(&err);
        /* I/O messages already name the file. */
        if (strstr(msg, path)) cli_error("%s", msg);
        else cli_error("%s: %s", path, msg);
        cli_limit_hint(&err);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

/* c saved in memory in o's format, then written to fd (named `name` in
 * messages): what standard output and a device or FIFO OUT get. */
static int save_to_fd(const tio_container *c, const tio_save_options *o, int fd,
                      const char *name, size_t *written, struct cli_progress *prog) {
    void *buf = NULL;
    size_t n = 0, done = 0;
    tio_error err;
    tio_error_clear(&err);
    int st = tio_save_memory(c, o, &buf, &n, &err);
    if (prog) cli_progress_end(prog);
    if (st != TIO_OK) return cli_error("%s: %s", name, cli_errmsg(&err));
    int e = 0;
    while (done < n) {
        ssize_t w = write(fd, (const char *)buf + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            e = w < 0 ? errno : EIO;
            break;
        }
        done += (size_t)w;
    }
    tio_free(buf);
    if (written) *written = done;
    if (e) return cli_error("%s: write failed: %s", name, strerror(e));
    return CLI_EXIT_OK;
}

int cli_save_stdout(const tio_container *c, const tio_save_options *o, int force,
                    const char *cmd, size_t *written, struct cli_progress *prog) {
    if (!force && isatty(STDOUT_FILENO))
        return cli_usage_error(cmd, "refusing to write %s data to a terminal (redirect "
                               "standard output, or --force)", o->format);
    if (fflush(stdout) != 0) /* what stdio holds goes first */
        return cli_error("standard output: write failed: %s", strerror(errno));
    return save_to_fd(c, o, STDOUT_FILENO, "standard output", written, prog);
}

int cli_is_stream_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

int cli_save_into(const tio_container *c, const tio_save_options *o, const char *path,
                  size_t *written, struct cli_progress *prog) {
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        if (prog) cli_progress_end(prog);
        return cli_error("%s: %s", path, strerror(errno));
    }
    int rc = save_to_fd(c, o, fd, path, written, prog);
    if (close(fd) != 0 && rc == CLI_EXIT_OK)
        rc = cli_error("%s: write failed: %s", path, strerror(errno));
    return rc;
}

/* A positive count: N, N with K, M, G or T (powers of 1024, "KiB" and "KB"
 * alike), or "unlimited" (UINT64_MAX); 0 if it is none. */
static int parse_count(const char *value, uint64_t *out) {
    if (strcmp(value, "unlimited") == 0) {
        *out = UINT64_MAX;
        return 1;
    }
    const char *q = value;
    uint64_t v = 0;
    int digits = 0, bad = 0;
    for (; *q >= '0' && *q <= '9'; q++, digits++)
        bad |= __builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, (unsigned)(*q - '0'), &v);
    static const char units[] = "KMGT";
    const char *u = *q ? strchr(units, *q >= 'a' ? *q - 32 : *q) : NULL;
    if (u && *q) {
        for (long k = 0; k <= u - units; k++) bad |= __builtin_mul_overflow(v, 1024u, &v);
        q++;
        if (strcasecmp(q, "iB") == 0 || strcasecmp(q, "B") == 0) q += strlen(q);
    }
    if (!digits || *q || bad || v == 0) return 0;
    *out = v;
    return 1;
}

int cli_parse_max_dense(const char *cmd, const char *value, tio_limits *lim) {
    if (!parse_count(value, &lim->max_dense_bytes))
        return cli_usage_error(cmd,
                               "--max-dense-bytes: '%s' is not a positive byte count (N, or N "
                               "with K, M, G or T; or 'unlimited')",
                               value);
    return CLI_EXIT_OK;
}

/* The fields of tio_limits by name, for TENSIO_LIMITS. */
#define LIMIT_FIELD(f) {#f, offsetof(tio_limits, f), sizeof(((tio_limits *)0)->f)}
static const struct limit_field {
    const char *name;
    size_t off, size;
} limit_fields[] = {
    LIMIT_FIELD(max_tensors),      LIMIT_FIELD(max_rank),          LIMIT_FIELD(max_header_bytes),
    LIMIT_FIELD(max_name_bytes),   LIMIT_FIELD(max_depth),         LIMIT_FIELD(max_objects),
    LIMIT_FIELD(max_dense_bytes),  LIMIT_FIELD(max_pickle_bytes),  LIMIT_FIELD(max_pickle_objects),
    LIMIT_FIELD(max_pickle_depth), LIMIT_FIELD(max_shards),        LIMIT_FIELD(max_remote_bytes),
    LIMIT_FIELD(max_redirects),    LIMIT_FIELD(max_retries),       LIMIT_FIELD(timeout_ms),
    LIMIT_FIELD(max_member_bytes),
};

int cli_env_limits(const tio_limits *given, tio_limits *out, tio_error *err) {
    const char *env = getenv("TENSIO_LIMITS");
    if (given) *out = *given;
    else memset(out, 0, sizeof *out);
    if (!env || !*env) return 0;
    const char *p = env;
    while (*p) {
        size_t n = strcspn(p, ","), k = strcspn(p, "=");
        const struct limit_field *f = NULL;
        for (size_t i = 0; k < n && i < sizeof limit_fields / sizeof limit_fields[0]; i++)
            if (strlen(limit_fields[i].name) == k && strncmp(limit_fields[i].name, p, k) == 0)
                f = &limit_fields[i];
        char value[32];
        uint64_t v = 0;
        int ok = f && n - k - 1 < sizeof value;
        if (ok) {
            memcpy(value, p + k + 1, n - k - 1);
            value[n - k - 1] = 0;
            ok = parse_count(value, &v);
        }
        if (!ok) {
            tio_error_clear(err);
            err->code = TIO_E_ARGUMENT;
            snprintf(err->message, sizeof err->message,
                     "TENSIO_LIMITS: '%.*s' is not NAME=VALUE with NAME a field of tio_limits "
                     "(max_objects, max_header_bytes, ...: docs/security.md) and VALUE a "
                     "positive count (K, M, G, T; or 'unlimited')",
                     (int)(n < 80 ? n : 80), p);
            return -1;
        }
        /* a value the command was given (its own option) stays */
        uint8_t *at = (uint8_t *)out + f->off;
        if (f->size == sizeof(uint32_t)) {
            uint32_t cur, w = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
            memcpy(&cur, at, sizeof cur);
            if (!cur) memcpy(at, &w, sizeof w);
        } else {
            uint64_t cur;
            memcpy(&cur, at, sizeof cur);
            if (!cur) memcpy(at, &v, sizeof v);
        }
        p += n;
        if (*p == ',') p++;
    }
    return 1;
}

const tio_limits *cli_limits(const tio_limits *given, tio_limits *buf) {
    tio_error err;
    return cli_env_limits(given, buf, &err) > 0 ? buf : given;
}

int cli_env_check(const char *cmd) {
    tio_limits lim;
    tio_error err;
    if (cli_env_limits(NULL, &lim, &err) >= 0) return 0;
    return cli_usage_error(cmd, "%s", err.message);
}

void cli_limit_hint(const tio_error *err) {
    if (err && err->code == TIO_E_LIMIT)
        cli_error("hint: TENSIO_LIMITS='NAME=VALUE,...' raises the limits of every "
                  "file tensio opens (e.g. TENSIO_LIMITS=max_objects=unlimited; "
                  "docs/cli.md)");
}

void cli_dense_budget_init(cli_dense_budget *b, const tio_container *c) {
    tio_limits lim;
    tio_container_get_limits(c, &lim);
    b->limit = lim.max_dense_bytes;
    b->spent = 0;
    b->prog = NULL;
    b->done = b->total = 0;
    b->ahead = NULL;
    for (size_t i = 0; i < tio_container_count(c); i++)
        b->total += tio_tensor_nbytes(tio_container_tensor(c, i));
}

typedef struct hash_slot {
    uint8_t digest[32];
    int st;
    tio_error err;
} hash_slot;

static void hash_one(const void *ctx, size_t k, void *slot) {
    hash_slot *h = slot;
    h->st = tio_tensor_sha256(tio_container_tensor(ctx, k), TIO_HASH_DENSE, h->digest, &h->err);
}

static int hash_skips(const void *ctx, size_t k) {
    return tio_tensor_layout(tio_container_tensor(ctx, k)) == TIO_LAYOUT_COO;
}

cli_ahead *cli_hash_ahead_start(const tio_container *c) {
    return cli_ahead_start(tio_container_count(c), sizeof(hash_slot), 64, hash_one, hash_skips,
                           NULL, c);
}

int cli_hash_dense(const tio_tensor *t, size_t index, cli_dense_budget *b, uint8_t out[32],
                   tio_error *err) {
    tio_error_clear(err);
    uint64_t dense = 0;
    int coo = tio_tensor_layout(t) == TIO_LAYOUT_COO, st = TIO_OK;
    const hash_slot *made = coo ? NULL : cli_ahead_take(b->ahead, index);
    if (made) {
        if (made->st == TIO_OK)
            memcpy(out, made->digest, sizeof made->digest);
        else
            *err = made->err;
        return made->st;
    }
    if (coo) {
        /* numel x size fits: containers refuse shapes whose byte size does not */
        dense = tio_tensor_numel(t) * tio_dtype_size(tio_tensor_dtype(t));
        if (dense <= b->limit && dense > b->limit - b->spent) {
            err->code = TIO_E_LIMIT;
            snprintf(err->message, sizeof err->message,
                     "tensor %zu: hashing it dense takes %llu bytes, and the sparse tensors "
                     "before it took %llu: over max_dense_bytes %llu for one input; raise "
                     "it with --max-dense-bytes",
                     index, (unsigned long long)dense, (unsigned long long)b->spent,
                     (unsigned long long)b->limit);
            return TIO_E_LIMIT;
        }
    }
    st = tio_tensor_sha256(t, TIO_HASH_DENSE, out, err);
    if (st == TIO_OK && coo) b->spent += dense;
    return st;
}

/* SHA-256 hex of a tensor. On failure prints "PATH: tensor I: reason" and
 * returns the library's status; the listing goes on without that hash. */
int cli_hash_hex(const char *path, size_t index, const tio_tensor *t, int what,
                 cli_dense_budget *budget, char out[65], tio_error *err) {
    uint8_t digest[32];
    tio_error_clear(err);
    int st = what == TIO_HASH_DENSE ? cli_hash_dense(t, index, budget, digest, err)
                                    : tio_tensor_sha256(t, what, digest, err);
    if (budget->prog && what == TIO_HASH_DENSE) {
        budget->done += tio_tensor_nbytes(t);
        cli_progress_update(budget->prog, budget->done, budget->total);
    }
    if (st != TIO_OK) {
        cli_progress_pause(budget->prog);
        const char *msg = cli_errmsg(err);
        if (strstr(msg, "tensor ")) /* the library's message names it */
            cli_error("%s: %s", path, msg);
        else
            cli_error("%s: tensor %zu: %s", path, index, msg);
        return st;
    }
    cli_hex32(digest, out);
    return TIO_OK;
}

/* key: the hex digest, or null plus KEY_error {code, message} when the hash
 * could not be made (*missing is then set). */
int cli_json_hash(json_t *o, const char *key, const char *path, size_t index,
                  const tio_tensor *t, int what, cli_dense_budget *budget, int *missing) {
    char hex[65];
    tio_error err;
    if (cli_hash_hex(path, index, t, what, budget, hex, &err) == TIO_OK)
        return cli_json_set(o, key, json_string(hex));
    *missing = 1;
    char ekey[32];
    snprintf(ekey, sizeof ekey, "%s_error", key);
    json_t *e = json_object();
    int bad = cli_json_set(o, key, json_null());
    bad |= cli_json_set(o, ekey, e);
    if (!bad) {
        bad |= cli_json_set(e, "code", json_string(tio_status_name(err.code)));
        bad |= cli_json_set(e, "message", json_string(cli_errmsg(&err)));
    }
    return bad;
}

char *cli_escaped_pair(const char *a, const char *sep, const char *b) {
    char *ea = cli_text_escape(a), *eb = cli_text_escape(b);
    size_t n = (ea ? strlen(ea) : 0) + strlen(sep) + (eb ? strlen(eb) : 0) + 1;
    char *s = ea && eb ? malloc(n) : NULL;
    if (s) snprintf(s, n, "%s%s%s", ea, sep, eb);
    free(ea);
    free(eb);
    return s;
}

static void hash_run_start(cli_hash_run *h, const tio_container *c) {
    if (h->set) return;
    cli_dense_budget_init(&h->budget, c);
    h->set = 1;
}

void cli_hash_cell(cli_table *tab, cli_hash_run *h, const char *label, const tio_container *c,
                   size_t index) {
    hash_run_start(h, c);
    char hex[65];
    tio_error err;
    if (cli_hash_hex(label, index, tio_container_tensor(c, index), TIO_HASH_DENSE, &h->budget,
                     hex, &err) == TIO_OK) {
        cli_table_add(tab, "%s", hex);
    } else {
        cli_table_add(tab, "-");
        h->missing = 1;
    }
}

int cli_hash_keys(json_t *o, cli_hash_run *h, const char *label, const tio_container *c,
                  size_t index) {
    hash_run_start(h, c);
    const tio_tensor *t = tio_container_tensor(c, index);
    int bad = 0;
    if (tio_tensor_layout(t) == TIO_LAYOUT_COO) {
        bad |= cli_json_hash(o, "indices_sha256", label, index, t, TIO_HASH_INDICES, &h->budget,
                             &h->missing);
        bad |= cli_json_hash(o, "values_sha256", label, index, t, TIO_HASH_VALUES, &h->budget,
                             &h->missing);
    }
    return bad | cli_json_hash(o, "sha256", label, index, t, TIO_HASH_DENSE, &h->budget,
                               &h->missing);
}

int cli_finish_output(int rc) {
    int bad = fflush(stdout) != 0;
    int e = errno;
    if (bad || ferror(stdout)) {
        if (bad)
            cli_error("error writing to standard output: %s", strerror(e));
        else
            cli_error("error writing to standard output");
        return rc != CLI_EXIT_OK ? rc : CLI_EXIT_FAIL;
    }
    return rc;
}

/* ------------------------------------------------------------ formatting */

const char *cli_layout_name(tio_layout layout) {
    switch (layout) {
    case TIO_LAYOUT_DENSE: return "dense";
    case TIO_LAYOUT_COO: return "coo";
    case TIO_LAYOUT_QUANT: return "quant";
    }
    return "unknown";
}

const char *cli_tensor_dtype_name(const tio_tensor *t) {
    const char *n = tio_tensor_layout(t) == TIO_LAYOUT_QUANT ? tio_quant_name(tio_tensor_quant(t))
                                                             : tio_dtype_name(tio_tensor_dtype(t));
    return n ? n : "?";
}

char *cli_vstrdup_printf(const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *s = NULL;
    if (n >= 0) {
        s = malloc((size_t)n + 1);
        if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
    }
    return s;
}

char *cli_strdup_printf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = cli_vstrdup_printf(fmt, ap);
    va_end(ap);
    return s;
}

/* The decimal digits of v, ending at the end of d[24] (no NUL); returns
 * the first. Without printf: a listing formats numbers per tensor. */
static const char *dec_digits(char d[24], uint64_t v) {
    char *b = d + 24;
    do
        *--b = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    return b;
}

size_t cli_shape_into(const tio_tensor *t, char *buf, size_t cap) {
    size_t rank = tio_tensor_rank(t);
    const int64_t *shape = tio_tensor_shape(t);
    /* "-9223372036854775808" is 20 chars; ", " adds 2. */
    size_t need = 3 + rank * 22;
    if (cap < need) return need;
    size_t used = 0;
    buf[used++] = '[';
    for (size_t i = 0; i < rank; i++) {
        if (i) {
            buf[used++] = ',';
            buf[used++] = ' ';
        }
        if (shape[i] < 0) buf[used++] = '-';
        char d[24];
        const char *b = dec_digits(d, shape[i] < 0 ? 0 - (uint64_t)shape[i] : (uint64_t)shape[i]);
        size_t k = (size_t)(d + sizeof d - b);
        memcpy(buf + used, b, k);
        used += k;
    }
    buf[used++] = ']';
    buf[used] = '\0';
    return 0;
}

char *cli_shape_string(const tio_tensor *t) {
    size_t cap = 3 + tio_tensor_rank(t) * 22;
    char *s = malloc(cap);
    if (s) (void)cli_shape_into(t, s, cap);
    return s;
}

int cli_text_plain(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f) return 0;
    return 1;
}

char *cli_text_escape(const char *s) { return cli_bytes_escape(s, strlen(s)); }

char *cli_bytes_escape(const char *s, size_t len) {
    size_t n = 0;
    const unsigned char *end = (const unsigned char *)s + len;
    for (const unsigned char *p = (const unsigned char *)s; p < end; p++)
        n += (*p < 0x20 || *p == 0x7f) ? 4 : 1;
    char *out = malloc(n + 1);
    if (!out) return NULL;
    char *o = out;
    static const char hex[] = "0123456789abcdef";
    for (const unsigned char *p = (const unsigned char *)s; p < end; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            *o++ = '\\';
            *o++ = 'x';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        } else {
            *o++ = (char)*p;
        }
    }
    *o = '\0';
    return out;
}

void cli_hex32(const uint8_t digest[32], char out[65]) {
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < 32; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[64] = '\0';
}

/* ------------------------------------------------------------ text tables */

void cli_table_init(cli_table *t, size_t ncols, unsigned right_align_mask) {
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    t->right = right_align_mask;
}

/* Room for `cap` cells in the offset and width arrays; 0, or -1 when out of
 * memory (the table unchanged but for a larger t->at). */
static int table_cells(cli_table *t, size_t cap) {
    size_t *at = realloc(t->at, cap * sizeof *at);
    if (at) t->at = at;
    size_t *w = at ? realloc(t->width, cap * sizeof *w) : NULL;
    if (!w) return -1;
    t->width = w;
    t->cap = cap;
    return 0;
}

void cli_table_reserve(cli_table *t, size_t rows, size_t bytes_per_row) {
    if (t->nomem || rows > SIZE_MAX / 2 / (t->ncols + 1) / (bytes_per_row + 1)) return;
    size_t cells = t->ncells + rows * t->ncols, text = t->used + rows * bytes_per_row + 1;
    /* a hint: when it fails, cli_table_add grows as before */
    if (cells > t->cap && table_cells(t, cells)) return;
    if (text > t->tcap) {
        char *b = realloc(t->text, text);
        if (!b) return;
        t->text = b;
        t->tcap = text;
    }
}

/* Display width: UTF-8 code points (continuation bytes do not count). */
static size_t display_width(const char *s, size_t n) {
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) w++;
    return w;
}

/* Appends n bytes of s as a cell (room for them and the NUL made first). */
static void table_put(cli_table *t, const char *s, size_t n) {
    if (t->tcap - t->used <= n) {
        size_t cap = t->tcap ? t->tcap : 4096;
        while (cap - t->used <= n) cap *= 2;
        char *text = realloc(t->text, cap);
        if (!text) {
            t->nomem = 1;
            return;
        }
        t->text = text;
        t->tcap = cap;
    }
    memcpy(t->text + t->used, s, n);
    t->text[t->used + n] = '\0';
    t->at[t->ncells] = t->used;
    t->width[t->ncells++] = display_width(s, n);
    t->used += n + 1;
}

/* Room for one more cell: 0, or -1 once an allocation has failed. */
static int table_room(cli_table *t) {
    if (t->nomem) return -1;
    if (t->ncells == t->cap && table_cells(t, t->cap ? t->cap * 2 : 64)) {
        t->nomem = 1;
        return -1;
    }
    return 0;
}

/* Cells go into one text buffer (formatted in place: one vsnprintf, a
 * second only when the buffer must grow; "%s", "%zu" and "%llu", most of
 * the cells, without printf), with their offsets and widths: a listing of
 * 10,000 tensors is not 70,000 allocations. */
void cli_table_add(cli_table *t, const char *fmt, ...) {
    if (table_room(t)) return;
    if (!strchr(fmt, '%')) { /* a literal cell ("-", a heading) */
        table_put(t, fmt, strlen(fmt));
        return;
    }
    int u = strcmp(fmt, "%zu") == 0 ? 1 : strcmp(fmt, "%llu") == 0 ? 2 : 0;
    if (u || strcmp(fmt, "%s") == 0) {
        va_list ap;
        va_start(ap, fmt);
        if (u == 1) cli_table_add_u64(t, va_arg(ap, size_t));
        else if (u == 2) cli_table_add_u64(t, va_arg(ap, unsigned long long));
        else cli_table_add_str(t, va_arg(ap, const char *));
        va_end(ap);
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = t->tcap - t->used;
        int n = vsnprintf(t->text ? t->text + t->used : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) break;
        if ((size_t)n < room) {
            t->at[t->ncells] = t->used;
            t->width[t->ncells++] = display_width(t->text + t->used, (size_t)n);
            t->used += (size_t)n + 1;
            return;
        }
        size_t cap = t->tcap ? t->tcap : 4096;
        while (cap - t->used <= (size_t)n) cap *= 2;
        char *text = realloc(t->text, cap);
        if (!text) break;
        t->text = text;
        t->tcap = cap;
    }
    t->nomem = 1;
}

/* One cell of text, without a format (a listing's hot path). */
void cli_table_add_str(cli_table *t, const char *s) {
    if (table_room(t)) return;
    if (!s) s = "(null)"; /* as glibc's printf shows it */
    table_put(t, s, strlen(s));
}

/* One cell holding the decimal digits of v. */
void cli_table_add_u64(cli_table *t, uint64_t v) {
    if (table_room(t)) return;
    char buf[24];
    const char *b = dec_digits(buf, v);
    table_put(t, b, (size_t)(buf + sizeof buf - b));
}

int cli_table_print(const cli_table *t, FILE *f) {
    if (t->nomem) return cli_error("out of memory");
    if (t->ncols == 0 || t->ncells == 0) return CLI_EXIT_OK;
    size_t *width = calloc(t->ncols, sizeof *width);
    if (!width) return cli_error("out of memory");
    /* A cell wider than CLI_TABLE_MAX_PAD sets no width (it sticks out):
     * padding every row to one long name would make the output rows x that
     * name. */
    for (size_t i = 0; i < t->ncells; i++) {
        size_t w = t->width[i];
        if (w > width[i % t->ncols] && w <= CLI_TABLE_MAX_PAD) width[i % t->ncols] = w;
    }
    /* one line at a time into a buffer, one fwrite each */
    size_t cap = 256, len = 0;
    char *line = malloc(cap);
    int rc = line ? CLI_EXIT_OK : cli_error("out of memory");
    for (size_t i = 0, col = 0; i < t->ncells && rc == CLI_EXIT_OK;
         i++, col = col + 1 == t->ncols ? 0 : col + 1) {
        const char *cell = t->text + t->at[i];
        /* the cells lie one after the other, each with its NUL */
        size_t n = (i + 1 < t->ncells ? t->at[i + 1] : t->used) - t->at[i] - 1;
        size_t pad = t->width[i] < width[col] ? width[col] - t->width[i] : 0;
        int last = col + 1 == t->ncols || i + 1 == t->ncells;
        int right = col < 32 && (t->right >> col) & 1u;
        if (!right && last) pad = 0;
        if (len + n + pad + 3 > cap) {
            while (len + n + pad + 3 > cap) cap *= 2;
            char *nl = realloc(line, cap);
            if (!nl) {
                rc = cli_error("out of memory");
                break;
            }
            line = nl;
        }
        if (col > 0) {
            memcpy(line + len, "  ", 2);
            len += 2;
        }
        if (right) {
            memset(line + len, ' ', pad);
            len += pad;
        }
        memcpy(line + len, cell, n);
        len += n;
        if (!right) {
            memset(line + len, ' ', pad);
            len += pad;
        }
        if (last) {
            line[len++] = '\n';
            fwrite(line, 1, len, f);
            len = 0;
        }
    }
    free(line);
    free(width);
    return rc;
}

void cli_table_free(cli_table *t) {
    free(t->at);
    free(t->width);
    free(t->text);
    memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------------ JSON */

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *p) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (p[1] < lo || p[1] > hi) return 0;
        return (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (p[1] < lo || p[1] > hi) return 0;
        if ((p[2] & 0xC0) != 0x80) return 0;
        return (p[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* A malloc'ed copy of s[0..len) (NUL bytes included; s[len] is NUL) with
 * every invalid UTF-8 byte replaced by U+FFFD; *out_len its length. The
 * checks stop at the terminating NUL (a continuation test fails on it). */
static char *utf8_sanitize(const char *s, size_t len, size_t *out_len) {
    if (len > (SIZE_MAX - 1) / 3) return NULL;
    char *out = malloc(len * 3 + 1);
    if (!out) return NULL;
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    char *o = out;
    while (p < end) {
        size_t n = utf8_seq(p);
        if (n == 0) {
            *o++ = (char)0xEF;
            *o++ = (char)0xBF;
            *o++ = (char)0xBD;
            p++;
        } else {
            memcpy(o, p, n);
            o += n;
            p += n;
        }
    }
    *o = '\0';
    *out_len = (size_t)(o - out);
    return out;
}

json_t *cli_json_error(const tio_error *e) {
    json_t *o = json_object();
    if (!o) return NULL;
    int bad = cli_json_set(o, "code", json_string(tio_status_name(e->code)));
    bad |= cli_json_set(o, "format", e->format[0] ? cli_json_str(e->format) : json_null());
    bad |= cli_json_set(o, "offset", e->offset >= 0 ? json_integer((json_int_t)e->offset)
                                                    : json_null());
    bad |= cli_json_set(o, "message", cli_json_str(cli_errmsg(e)));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *cli_json_strn(const char *s, size_t len) {
    if (!s) return json_null();
    json_t *j = json_stringn(s, len);
    if (j) return j;
    size_t n = 0;
    char *clean = utf8_sanitize(s, len, &n);
    if (!clean) return NULL;
    j = json_stringn(clean, n);
    free(clean);
    return j;
}

json_t *cli_json_str(const char *s) { return s ? cli_json_strn(s, strlen(s)) : json_null(); }

int cli_json_setn(json_t *obj, const char *key, size_t key_len, json_t *value) {
    if (!value) return -1;
    size_t n = 0;
    char *clean = utf8_sanitize(key, key_len, &n);
    if (!clean) {
        json_decref(value);
        return -1;
    }
    int rc = json_object_setn_new(obj, clean, n, value); /* releases value on failure */
    free(clean);
    return rc == 0 ? 0 : -1;
}

int cli_json_set(json_t *obj, const char *key, json_t *value) {
    return cli_json_setn(obj, key, strlen(key), value);
}

int cli_json_print(json_t *value) {
    if (!value) return cli_error("out of memory");
    int rc = json_dumpf(value, stdout, 0);
    json_decref(value);
    if (rc != 0) return cli_error("cannot write JSON output");
    fputc('\n', stdout);
    return CLI_EXIT_OK;
}

int cli_json_write_string(FILE *f, const char *s) {
    json_t *j = cli_json_str(s);
    if (!j) return -1;
    int rc = json_dumpf(j, f, JSON_ENCODE_ANY);
    json_decref(j);
    return rc == 0 ? 0 : -1;
}

json_t *cli_json_shape(const tio_tensor *t) {
    json_t *a = json_array();
    if (!a) return NULL;
    size_t rank = tio_tensor_rank(t);
    const int64_t *shape = tio_tensor_shape(t);
    for (size_t i = 0; i < rank; i++) {
        if (json_array_append_new(a, json_integer((json_int_t)shape[i])) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

int cli_one_file(cli_parser *p, int last_id, const char *cmd, const char *format,
                 const char **path) {
    int rc = CLI_EXIT_OK;
    if (last_id == CLI_PARSE_ERROR)
        rc = CLI_EXIT_USAGE;
    else if (p->npos == 0)
        rc = cli_usage_error(cmd, "missing FILE");
    else if (p->npos > 1)
        rc = cli_usage_error(cmd, "too many arguments (expected one FILE)");
    else if (format)
        rc = cli_check_format(cmd, "--format", format);
    if (rc == CLI_EXIT_OK) *path = p->pos[0];
    cli_parser_free(p);
    return rc;
}

static int hexdigit(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

char *cli_bytes_unescape(const char *s, size_t *len) {
    size_t n = strlen(s), o = 0;
    char *out = malloc(n + 1);
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        int hi = -1, lo = -1;
        if (s[i] == '\\' && i + 3 < n && s[i + 1] == 'x') {
            hi = hexdigit(s[i + 2]);
            lo = hi < 0 ? -1 : hexdigit(s[i + 3]);
        }
        if (lo >= 0) {
            out[o++] = (char)(hi * 16 + lo);
            i += 3;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = 0;
    *len = o;
    return out;
}

char *cli_name_escape(const char *name) {
    if (!name) return NULL;
    return cli_text_escape(name[0] ? name : "\"\"");
}

int cli_table_tensor(cli_table *tab, size_t t, const tio_tensor *x) {
    const char *name = tio_tensor_name(x);
    char *ename = cli_name_escape(name);
    char *shape = cli_shape_string(x);
    int rc = (name && !ename) || !shape ? cli_error("out of memory") : CLI_EXIT_OK;
    cli_table_add(tab, "%zu", t);
    cli_table_add(tab, "%s", ename ? ename : "-");
    cli_table_add(tab, "%s", cli_tensor_dtype_name(x));
    cli_table_add(tab, "%s", shape ? shape : "?");
    cli_table_add(tab, "%zu", tio_tensor_nbytes(x));
    free(ename);
    free(shape);
    return rc;
}

json_t *cli_validate_json_file(json_t *files, const char *path, json_t **errors) {
    json_t *fo = json_object();
    *errors = json_array();
    if (!fo || !*errors || json_array_append_new(files, fo) != 0) {
        json_decref(*errors);
        *errors = NULL;
        return NULL;
    }
    cli_json_set(fo, "file", cli_json_str(path));
    return fo;
}

void cli_validate_finding(const char *path, json_t *errors, const tio_error *e) {
    if (errors) {
        json_array_append_new(errors, cli_json_error(e));
        return;
    }
    char *ep = cli_text_escape(path);
    char *em = cli_text_escape(cli_errmsg(e));
    printf("%s: error: %s\n", ep ? ep : path, em ? em : cli_errmsg(e));
    free(ep);
    free(em);
}
