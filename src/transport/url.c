/* Endpoint URLs: libzmq endpoints and tensorcom's URL schemes, with brace
 * expansion ({a,b}, {1..3}) to several endpoints. */
#include "transport/transport.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ strings */

typedef struct strlist {
    char **v;
    size_t n, cap;
} strlist;

static void strlist_free(strlist *l) {
    for (size_t i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* Appends the concatenation of up to three byte ranges. */
static int strlist_push3(strlist *l, const char *a, size_t na, const char *b, size_t nb,
                         const char *c, size_t nc, tio_error *err) {
    size_t len = na + nb + nc; /* each < TIO_URL_MAX: cannot overflow */
    if (len > TIO_URL_MAX)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "endpoint URL expands to more than %d characters", TIO_URL_MAX);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        char **nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) return tio__nomem(err, NULL);
        l->v = nv;
        l->cap = cap;
    }
    char *s = malloc(len + 1);
    if (!s) return tio__nomem(err, NULL);
    if (na) memcpy(s, a, na);
    if (nb) memcpy(s + na, b, nb);
    if (nc) memcpy(s + na + nb, c, nc);
    s[len] = 0;
    l->v[l->n++] = s;
    return TIO_OK;
}

/* -------------------------------------------------------- brace expansion */

/* Parses an optionally signed decimal integer of at most 18 digits filling
 * [p, p+n). */
static int parse_int(const char *p, size_t n, long long *out) {
    size_t i = 0;
    int neg = 0;
    if (i < n && (p[i] == '-' || p[i] == '+')) {
        neg = p[i] == '-';
        i++;
    }
    if (i == n || n - i > 18) return 0;
    long long v = 0;
    for (; i < n; i++) {
        if (!isdigit((unsigned char)p[i])) return 0;
        v = v * 10 + (p[i] - '0');
    }
    *out = neg ? -v : v;
    return 1;
}

/* Whether the decimal text has a leading zero that asks for padding ("01", "-05"). */
static int zero_padded(const char *p, size_t n) {
    if (n && (p[0] == '-' || p[0] == '+')) {
        p++;
        n--;
    }
    return n > 1 && p[0] == '0';
}

typedef struct seq {
    int alpha;          /* letters instead of numbers */
    long long from, to; /* inclusive */
    long long step;     /* > 0 */
    int width;          /* zero padding (numbers) */
    uint64_t count;
} seq;

/* Recognises "x..y" or "x..y..step" (numbers or single letters). */
static int parse_seq(const char *p, size_t n, seq *s) {
    const char *dd = NULL;
    for (size_t i = 0; i + 1 < n; i++)
        if (p[i] == '.' && p[i + 1] == '.') {
            dd = p + i;
            break;
        }
    if (!dd) return 0;
    const char *x = p;
    size_t nx = (size_t)(dd - p);
    const char *y = dd + 2;
    size_t ny = n - nx - 2;
    const char *st = NULL;
    size_t nst = 0;
    for (size_t i = 0; i + 1 < ny; i++)
        if (y[i] == '.' && y[i + 1] == '.') {
            st = y + i + 2;
            nst = ny - i - 2;
            ny = i;
            break;
        }
    long long step = 1;
    if (st) {
        if (!parse_int(st, nst, &step)) return 0;
        if (step < 0) step = -step;
        if (step == 0) step = 1;
    }
    memset(s, 0, sizeof *s);
    s->step = step;
    if (nx == 1 && ny == 1 && isalpha((unsigned char)x[0]) && isalpha((unsigned char)y[0])) {
        s->alpha = 1;
        s->from = (unsigned char)x[0];
        s->to = (unsigned char)y[0];
    } else {
        if (!parse_int(x, nx, &s->from) || !parse_int(y, ny, &s->to)) return 0;
        if (zero_padded(x, nx) || zero_padded(y, ny)) s->width = (int)(nx > ny ? nx : ny);
    }
    uint64_t span = s->from <= s->to ? (uint64_t)(s->to - s->from)
                                     : (uint64_t)(s->from - s->to);
    s->count = span / (uint64_t)step + 1;
    return 1;
}

/* The i-th element of a sequence as text. */
static size_t seq_at(const seq *s, uint64_t i, char *buf, size_t cap) {
    long long d = (long long)(i * (uint64_t)s->step);
    long long v = s->from <= s->to ? s->from + d : s->from - d;
    if (s->alpha) {
        buf[0] = (char)v;
        buf[1] = 0;
        return 1;
    }
    /* printf's %0*lld pads after the sign, as braceexpand does */
    int w = snprintf(buf, cap, "%0*lld", s->width, v);
    return w > 0 ? (size_t)w : 0;
}

/* Finds the first brace group that expands: a matched {…} holding a comma at
 * its own level, or a sequence. Braces that do not expand stay literal. */
static int find_group(const char *s, size_t n, size_t *open, size_t *close, int *is_list) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '{') continue;
        size_t depth = 0, j;
        int comma = 0;
        for (j = i; j < n; j++) {
            if (s[j] == '{') {
                depth++;
            } else if (s[j] == '}') {
                if (--depth == 0) break;
            } else if (s[j] == ',' && depth == 1) {
                comma = 1;
            }
        }
        if (j == n) continue; /* unmatched: literal */
        seq sq;
        if (comma || parse_seq(s + i + 1, j - i - 1, &sq)) {
            *open = i;
            *close = j;
            *is_list = comma;
            return 1;
        }
    }
    return 0;
}

/* Brace groups may nest and follow each other this deep (recursion bound). */
#define MAX_DEPTH 32

static int expand(const char *s, size_t n, size_t max, int depth, strlist *out,
                  tio_error *err);

/* Appends prefix + each of alts + each of suffixes. */
static int cross(const char *pre, size_t npre, const strlist *alts, const strlist *suf,
                 size_t max, strlist *out, tio_error *err) {
    for (size_t a = 0; a < alts->n; a++) {
        for (size_t b = 0; b < suf->n; b++) {
            if (out->n >= max)
                return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                                "endpoint URL expands to more than %zu endpoints", max);
            int rc = strlist_push3(out, pre, npre, alts->v[a], strlen(alts->v[a]),
                                   suf->v[b], strlen(suf->v[b]), err);
            if (rc) return rc;
        }
    }
    return TIO_OK;
}

static int expand(const char *s, size_t n, size_t max, int depth, strlist *out,
                  tio_error *err) {
    if (depth > MAX_DEPTH)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "endpoint URL has more than %d brace groups in a row or nested",
                        MAX_DEPTH);
    size_t open, close;
    int is_list;
    if (!find_group(s, n, &open, &close, &is_list)) {
        if (out->n >= max)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "endpoint URL expands to more than %zu endpoints", max);
        return strlist_push3(out, s, n, NULL, 0, NULL, 0, err);
    }
    strlist alts = {0}, suf = {0};
    int rc = expand(s + close + 1, n - close - 1, max, depth + 1, &suf, err);
    const char *body = s + open + 1;
    size_t nbody = close - open - 1;
    if (rc == TIO_OK && is_list) {
        size_t start = 0, level = 0;
        for (size_t i = 0; rc == TIO_OK && i <= nbody; i++) {
            if (i < nbody && body[i] == '{') level++;
            else if (i < nbody && body[i] == '}') level--;
            else if (i == nbody || (body[i] == ',' && level == 0)) {
                rc = expand(body + start, i - start, max, depth + 1, &alts, err);
                start = i + 1;
            }
        }
    } else if (rc == TIO_OK) {
        seq sq;
        parse_seq(body, nbody, &sq); /* find_group checked it */
        if (sq.count > max) {
            rc = tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                          "endpoint URL expands to more than %zu endpoints", max);
        }
        for (uint64_t i = 0; rc == TIO_OK && i < sq.count; i++) {
            char num[32];
            size_t len = seq_at(&sq, i, num, sizeof num);
            rc = strlist_push3(&alts, num, len, NULL, 0, NULL, 0, err);
        }
    }
    if (rc == TIO_OK) rc = cross(s, open, &alts, &suf, max, out, err);
    strlist_free(&alts);
    strlist_free(&suf);
    return rc;
}

int tio__brace_expand(const char *s, size_t max, char ***out, size_t *count,
                      tio_error *err) {
    *out = NULL;
    *count = 0;
    size_t n = strlen(s);
    if (n > TIO_URL_MAX)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "endpoint URL longer than %d characters", TIO_URL_MAX);
    strlist l = {0};
    int rc = expand(s, n, max, 0, &l, err);
    if (rc) {
        strlist_free(&l);
        return rc;
    }
    *out = l.v;
    *count = l.n;
    return TIO_OK;
}

/* ------------------------------------------------------------ URL schemes */

static const struct {
    const char *name;
    tio_socket_type socket;
    int bind;
} tensorcom_schemes[] = {
    {"zpush", TIO_SOCKET_PUSH, 0},  {"zpull", TIO_SOCKET_PULL, 1},
    {"zpub", TIO_SOCKET_PUB, 1},    {"zsub", TIO_SOCKET_SUB, 0},
    {"zrpush", TIO_SOCKET_PUSH, 1}, {"zrpull", TIO_SOCKET_PULL, 0},
    {"zrpub", TIO_SOCKET_PUB, 0},   {"zrsub", TIO_SOCKET_SUB, 1},
};

static int ieq(const char *a, size_t na, const char *b) {
    size_t nb = strlen(b);
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (tolower((unsigned char)a[i]) != b[i]) return 0;
    return 1;
}

typedef struct one_url {
    tio_socket_type socket;
    int bind;
    int tensorcom;
    char *endpoint;
    char *topic; /* NULL when no '#' */
} one_url;

static char *dup_range(const char *p, size_t n) {
    char *s = malloc(n + 1);
    if (!s) return NULL;
    if (n) memcpy(s, p, n);
    s[n] = 0;
    return s;
}

static int parse_one(const char *url, one_url *o, tio_error *err) {
    memset(o, 0, sizeof *o);
    o->bind = -1;
    const char *sep = strstr(url, "://");
    if (!sep || sep == url)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "'%.200s' is not an endpoint URL (expected scheme://address)", url);
    const char *scheme = url;
    size_t nscheme = (size_t)(sep - url);
    const char *rest = sep + 3;
    const char *hash = strchr(rest, '#');
    size_t nrest = hash ? (size_t)(hash - rest) : strlen(rest);

    const char *plus = memchr(scheme, '+', nscheme);
    size_t nbase = plus ? (size_t)(plus - scheme) : nscheme;
    const char *transport = "tcp";
    int found = -1;
    for (size_t i = 0; i < sizeof tensorcom_schemes / sizeof tensorcom_schemes[0]; i++)
        if (ieq(scheme, nbase, tensorcom_schemes[i].name)) found = (int)i;

    if (found < 0) {
        if (plus || !(ieq(scheme, nscheme, "tcp") || ieq(scheme, nscheme, "ipc") ||
                      ieq(scheme, nscheme, "inproc")))
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "unsupported endpoint scheme '%.*s' in '%.200s' (expected tcp, "
                            "ipc, inproc, or a tensorcom scheme: zpush zpull zpub zsub "
                            "zrpush zrpull zrpub zrsub, optionally +ipc)",
                            (int)(nscheme > 64 ? 64 : nscheme), scheme, url);
        if (nrest == 0)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "'%.200s' has no address", url);
        size_t n = nscheme + 3 + nrest;
        o->endpoint = malloc(n + 1);
        if (!o->endpoint) return tio__nomem(err, NULL);
        for (size_t i = 0; i < nscheme; i++)
            o->endpoint[i] = (char)tolower((unsigned char)scheme[i]);
        memcpy(o->endpoint + nscheme, "://", 3);
        memcpy(o->endpoint + nscheme + 3, rest, nrest);
        o->endpoint[n] = 0;
    } else {
        o->tensorcom = 1;
        o->socket = tensorcom_schemes[found].socket;
        o->bind = tensorcom_schemes[found].bind;
        if (plus) {
            const char *t = plus + 1;
            size_t nt = nscheme - nbase - 1;
            if (ieq(t, nt, "tcp")) transport = "tcp";
            else if (ieq(t, nt, "ipc")) transport = "ipc";
            else if (ieq(t, nt, "inproc")) transport = "inproc";
            else
                return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                                "unsupported transport '+%.*s' in '%.200s' (expected +tcp, "
                                "+ipc or +inproc)",
                                (int)(nt > 64 ? 64 : nt), t, url);
        }
        /* tcp: host:port (the netloc; a path or query is ignored, as tensorcom
         * does); ipc/inproc: the path, up to a query. */
        size_t naddr = 0;
        if (strcmp(transport, "tcp") == 0) {
            while (naddr < nrest && rest[naddr] != '/' && rest[naddr] != '?') naddr++;
        } else {
            while (naddr < nrest && rest[naddr] != '?') naddr++;
        }
        if (naddr == 0)
            return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                            "'%.200s' has no %s", url,
                            strcmp(transport, "tcp") == 0 ? "host:port" : "path");
        size_t nt = strlen(transport);
        o->endpoint = malloc(nt + 3 + naddr + 1);
        if (!o->endpoint) return tio__nomem(err, NULL);
        memcpy(o->endpoint, transport, nt);
        memcpy(o->endpoint + nt, "://", 3);
        memcpy(o->endpoint + nt + 3, rest, naddr);
        o->endpoint[nt + 3 + naddr] = 0;
    }
    if (hash) {
        o->topic = dup_range(hash + 1, strlen(hash + 1));
        if (!o->topic) {
            free(o->endpoint);
            o->endpoint = NULL;
            return tio__nomem(err, NULL);
        }
    }
    return TIO_OK;
}

void tio__url_free(tio_url *u) {
    if (!u) return;
    for (size_t i = 0; i < u->count; i++) free(u->endpoints[i]);
    free(u->endpoints);
    free(u->topic);
    memset(u, 0, sizeof *u);
    u->bind = -1;
}

int tio__url_parse(const char *url, tio_url *out, tio_error *err) {
    memset(out, 0, sizeof *out);
    out->bind = -1;
    if (!url) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL endpoint");
    if (strlen(url) > TIO_URL_MAX)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "endpoint URL longer than %d characters", TIO_URL_MAX);
    char **list = NULL;
    size_t n = 0;
    int rc = tio__brace_expand(url, TIO_URL_MAX_ENDPOINTS, &list, &n, err);
    if (rc) return rc;
    out->endpoints = calloc(n, sizeof *out->endpoints);
    if (!out->endpoints) rc = tio__nomem(err, NULL);
    for (size_t i = 0; rc == TIO_OK && i < n; i++) {
        one_url o;
        rc = parse_one(list[i], &o, err);
        if (rc) break;
        out->endpoints[out->count++] = o.endpoint;
        if (i == 0) {
            out->socket = o.socket;
            out->bind = o.bind;
            out->tensorcom = o.tensorcom;
            out->topic = o.topic;
            continue;
        }
        int same_topic = (!o.topic && !out->topic) ||
                         (o.topic && out->topic && strcmp(o.topic, out->topic) == 0);
        free(o.topic);
        if (o.socket != out->socket || o.bind != out->bind || o.tensorcom != out->tensorcom)
            rc = tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                          "'%.200s' expands to endpoints of different kinds ('%.200s' and "
                          "'%.200s'): one stream is one socket",
                          url, list[0], list[i]);
        else if (!same_topic)
            rc = tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                          "'%.200s' expands to different #topics", url);
    }
    for (size_t i = 0; i < n; i++) free(list[i]);
    free(list);
    if (rc) tio__url_free(out);
    return rc;
}
