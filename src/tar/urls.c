/* WebDataset's notation for shard lists: "shard-{000..099}.tar", several
 * braces (every combination, the last varying fastest), "{a,b}" lists, and
 * "::" between lists; "@PATH" a list file, one such name per line. Bounded
 * by max_shards before anything is made. */
#include "tar/tar.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FMT "shards"

/* One list to expand: [p, e) of spec, or a line of a list file (whose
 * bytes start at base; file names it, line counts from 1). */
typedef struct piece {
    const char *p, *e, *base;
    const char *file;
    size_t line;
} piece;

/* Where an error is: "" in the spec, "list file PATH, line N: " in a file. */
static const char *where(const piece *pc, char *buf, size_t cap) {
    if (!pc->file) return "";
    snprintf(buf, cap, "list file %s, line %zu: ", pc->file, pc->line);
    return buf;
}

/* One brace: a numeric range (zero-padded to `width` when written so) or a
 * comma list of [p, p+len) pieces. */
typedef struct brace {
    const char *at, *end; /* '{' and after '}' */
    int range;
    uint64_t lo, count;   /* range: lo, lo+1 … (desc: lo, lo-1 …) */
    int desc;
    size_t width;
    size_t nalt;          /* list: alternatives */
} brace;

static int parse_num(const char *p, const char *e, uint64_t *v) {
    if (p == e || e - p > 19) return 0;
    uint64_t x = 0;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') return 0;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    *v = x;
    return 1;
}

static int parse_brace(const piece *pc, brace *b, tio_error *err) {
    const char *in = b->at + 1, *close = b->end - 1;
    const char *dots = NULL;
    for (const char *p = in; p + 1 < close; p++)
        if (p[0] == '.' && p[1] == '.') {
            dots = p;
            break;
        }
    uint64_t a, z;
    if (dots && parse_num(in, dots, &a) && parse_num(dots + 2, close, &z)) {
        b->range = 1;
        b->desc = z < a;
        b->lo = a;
        b->count = (b->desc ? a - z : z - a) + 1;
        size_t la = (size_t)(dots - in), lz = (size_t)(close - dots - 2);
        int padded = (la > 1 && in[0] == '0') || (lz > 1 && dots[2] == '0');
        b->width = padded ? (la > lz ? la : lz) : 0;
        return TIO_OK;
    }
    if (!memchr(in, ',', (size_t)(close - in)))
    {
        char wb[320];
        return tio__err(err, TIO_E_ARGUMENT, FMT, (int64_t)(b->at - pc->base),
                        "%s\"%.*s\" is neither a range ({000..099}) nor a list ({a,b})",
                        where(pc, wb, sizeof wb), (int)(b->end - b->at), b->at);
    }
    b->nalt = 1;
    for (const char *p = in; p < close; p++) b->nalt += *p == ',';
    b->count = b->nalt;
    return TIO_OK;
}

/* Alternative k of b, appended to out. */
static size_t put_alt(const brace *b, uint64_t k, char *out) {
    if (b->range) {
        uint64_t v = b->desc ? b->lo - k : b->lo + k;
        return (size_t)sprintf(out, "%0*" PRIu64, (int)b->width, v);
    }
    const char *p = b->at + 1;
    for (uint64_t i = 0; i < k; i++) p = (const char *)memchr(p, ',', (size_t)(b->end - 1 - p)) + 1;
    const char *e = memchr(p, ',', (size_t)(b->end - 1 - p));
    if (!e) e = b->end - 1;
    memcpy(out, p, (size_t)(e - p));
    return (size_t)(e - p);
}

void tio_shard_list_free(char **list, size_t n) {
    if (!list) return;
    for (size_t i = 0; i < n; i++) free(list[i]);
    free(list);
}

/* The braces of piece pc into bs (at most cap); their product into
 * *count, bounded by max. Error offsets are in pc->base (the spec or the
 * list file). */
static int scan(const piece *pc, brace *bs, size_t cap, size_t *nb, uint64_t max,
                uint64_t *count, tio_error *err) {
    *nb = 0;
    *count = 1;
    char wb[320];
    for (const char *q = pc->p; q < pc->e; q++) {
        int64_t at = (int64_t)(q - pc->base);
        if (*q == '}')
            return tio__err(err, TIO_E_ARGUMENT, FMT, at, "%sa '}' without '{'",
                            where(pc, wb, sizeof wb));
        if (*q != '{') continue;
        const char *c = q + 1;
        while (c < pc->e && *c != '}' && *c != '{') c++;
        if (c == pc->e || *c == '{')
            return tio__err(err, TIO_E_ARGUMENT, FMT, at,
                            "%sa '{' without its '}' (braces do not nest)",
                            where(pc, wb, sizeof wb));
        if (*nb == cap)
            return tio__err(err, TIO_E_LIMIT, FMT, at, "%smore than %zu braces in one list",
                            where(pc, wb, sizeof wb), cap);
        brace *b = &bs[(*nb)++];
        memset(b, 0, sizeof *b);
        b->at = q;
        b->end = c + 1;
        int rc = parse_brace(pc, b, err);
        if (rc) return rc;
        if (b->count > max / *count)
            return tio__err(err, TIO_E_LIMIT, FMT, at,
                            "%sthe list names more than max_shards (%" PRIu64 ") shards",
                            where(pc, wb, sizeof wb), max);
        *count *= b->count;
        q = c;
    }
    return TIO_OK;
}

#define MAX_BRACES 16

typedef struct pieces {
    piece *v;
    size_t n, cap;
    char **bufs; /* list files' contents and names, freed at the end */
    size_t nbufs, bufcap;
} pieces;

static void pieces_free(pieces *ps) {
    for (size_t i = 0; i < ps->nbufs; i++) free(ps->bufs[i]);
    free(ps->bufs);
    free(ps->v);
}

static int keep(pieces *ps, char *buf, tio_error *err) {
    if (ps->nbufs == ps->bufcap) {
        size_t nc = ps->bufcap ? 2 * ps->bufcap : 4;
        char **nb = realloc(ps->bufs, nc * sizeof *nb);
        if (!nb) {
            free(buf);
            return tio__nomem(err, FMT);
        }
        ps->bufs = nb;
        ps->bufcap = nc;
    }
    ps->bufs[ps->nbufs++] = buf;
    return TIO_OK;
}

/* Adds a piece: at most max_shards of them (each names a shard at least). */
static int add_piece(pieces *ps, piece pc, uint32_t max, tio_error *err) {
    if (ps->n >= max) {
        char wb[320];
        return tio__err(err, TIO_E_LIMIT, FMT, (int64_t)(pc.p - pc.base),
                        "%smore than max_shards (%" PRIu32 ") lists", where(&pc, wb, sizeof wb),
                        max);
    }
    if (ps->n == ps->cap) {
        size_t nc = ps->cap ? 2 * ps->cap : 8;
        piece *nv = realloc(ps->v, nc * sizeof *nv);
        if (!nv) return tio__nomem(err, FMT);
        ps->v = nv;
        ps->cap = nc;
    }
    ps->v[ps->n++] = pc;
    return TIO_OK;
}

/* The whole of list file `path` into a kept buffer (NUL-terminated): at
 * most max_header_bytes, refused by its size before a byte is read when
 * it is a regular file, by what arrives otherwise (a pipe, a device). */
static int read_list(pieces *ps, const char *path, uint64_t max, char **out, size_t *len,
                     tio_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tio__err(err, TIO_E_IO, FMT, -1, "list file %s: %s", path, strerror(errno));
    struct stat st;
    int rc = TIO_OK;
    if (fstat(fd, &st) != 0)
        rc = tio__err(err, TIO_E_IO, FMT, -1, "list file %s: %s", path, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        rc = tio__err(err, TIO_E_IO, FMT, -1, "list file %s: a directory", path);
    else if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max)
        rc = tio__err(err, TIO_E_LIMIT, FMT, -1,
                      "list file %s: %" PRIu64 " bytes, more than max_header_bytes (%" PRIu64
                      ")", path, (uint64_t)st.st_size, max);
    size_t cap = 0, n = 0;
    char *buf = NULL;
    uint64_t ceiling = max < UINT64_MAX ? max + 1 : max; /* a byte past the limit tells */
    while (rc == TIO_OK) {
        if (n == cap) {
            if (n > max) {
                rc = tio__err(err, TIO_E_LIMIT, FMT, -1,
                              "list file %s: more than max_header_bytes (%" PRIu64 ")",
                              path, max);
                break;
            }
            uint64_t nc = cap ? (uint64_t)cap * 2 : 4096;
            if (nc > ceiling) nc = ceiling;
            char *nb = nc < SIZE_MAX ? realloc(buf, (size_t)nc + 1) : NULL;
            if (!nb) {
                rc = tio__nomem(err, FMT);
                break;
            }
            buf = nb;
            cap = (size_t)nc;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            rc = tio__err(err, TIO_E_IO, FMT, (int64_t)n, "list file %s: read failed: %s",
                          path, strerror(errno));
            break;
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    if (rc == TIO_OK && !buf) buf = malloc(1);
    if (rc == TIO_OK && !buf) rc = tio__nomem(err, FMT);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return keep(ps, buf, err);
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* The lines of list file `path` as pieces: blank lines and those whose
 * first non-blank is '#' skipped, blanks around a name dropped. */
static int add_list_file(pieces *ps, const char *path, const tio_limits *lim, tio_error *err) {
    char *buf = NULL;
    size_t n = 0;
    int rc = read_list(ps, path, lim->max_header_bytes, &buf, &n, err);
    if (rc) return rc;
    const char *nul = memchr(buf, 0, n);
    size_t line = 1, before = ps->n;
    for (const char *p = buf; p < buf + n; line++) {
        const char *nl = memchr(p, '\n', (size_t)(buf + n - p));
        const char *end = nl ? nl : buf + n;
        if (nul && nul < end)
            return tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)(nul - buf),
                            "list file %s, line %zu: a NUL byte (a list is text: one name a "
                            "line)", path, line);
        if ((uint64_t)(end - p) > lim->max_name_bytes)
            return tio__err(err, TIO_E_LIMIT, FMT, (int64_t)(p - buf),
                            "list file %s, line %zu: %zu bytes, more than max_name_bytes (%"
                            PRIu32 ")", path, line, (size_t)(end - p), lim->max_name_bytes);
        const char *a = p, *z = end;
        while (a < z && is_blank(*a)) a++;
        while (z > a && is_blank(z[-1])) z--;
        p = nl ? nl + 1 : end;
        if (a == z || *a == '#') continue;
        if (*a == '@')
            return tio__err(err, TIO_E_ARGUMENT, FMT, (int64_t)(a - buf),
                            "list file %s, line %zu: a list file names no other list file",
                            path, line);
        /* a command from a file is never run: only the caller's own spec runs one */
        if ((size_t)(z - a) >= 5 && strncmp(a, "pipe:", 5) == 0)
            return tio__err(err, TIO_E_ARGUMENT, FMT, (int64_t)(a - buf),
                            "list file %s, line %zu: a command (pipe:) in a list file is not "
                            "run; give it on the command line", path, line);
        rc = add_piece(ps, (piece){a, z, buf, path, line}, lim->max_shards, err);
        if (rc) return rc;
    }
    if (ps->n == before)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "list file %s names no shard", path);
    return TIO_OK;
}

/* spec's lists ("::" between them), a list file's lines for each "@PATH". */
static int split_spec(const char *spec, const tio_limits *lim, pieces *ps, tio_error *err) {
    for (const char *p = spec;;) {
        const char *sep = strstr(p, "::");
        const char *e = sep ? sep : p + strlen(p);
        int rc;
        if (*p == '@') {
            if (e == p + 1)
                return tio__err(err, TIO_E_ARGUMENT, FMT, (int64_t)(p - spec),
                                "'@' names no list file");
            char *path = strndup(p + 1, (size_t)(e - p - 1));
            if (!path) return tio__nomem(err, FMT);
            rc = keep(ps, path, err);
            if (rc == TIO_OK) rc = add_list_file(ps, path, lim, err);
        } else {
            rc = add_piece(ps, (piece){p, e, spec, NULL, 0}, lim->max_shards, err);
        }
        if (rc) return rc;
        if (!sep) return TIO_OK;
        p = sep + 2;
    }
}

int tio_shard_list_expand(const char *spec, const tio_limits *limits, char ***out, size_t *n,
                          tio_error *err) {
    if (!spec || !out || !n) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "NULL argument");
    *out = NULL;
    *n = 0;
    tio_limits lim = tio__limits_resolve(limits);
    pieces ps;
    memset(&ps, 0, sizeof ps);
    int rc = split_spec(spec, &lim, &ps, err);
    uint64_t total = 0, longest = 0;
    brace bs[MAX_BRACES];
    size_t nb;
    /* first pass: count, bounded, and the longest name */
    for (size_t i = 0; rc == TIO_OK && i < ps.n; i++) {
        uint64_t count;
        rc = scan(&ps.v[i], bs, MAX_BRACES, &nb, lim.max_shards, &count, err);
        if (rc) break;
        if (count > lim.max_shards - total) {
            rc = tio__err(err, TIO_E_LIMIT, FMT, -1,
                          "the list names more than max_shards (%" PRIu32 ") shards",
                          lim.max_shards);
            break;
        }
        total += count;
        uint64_t len = (uint64_t)(ps.v[i].e - ps.v[i].p) + 20 * nb; /* a number: ≤ 20 digits */
        if (len > longest) longest = len;
    }
    char **list = rc == TIO_OK ? calloc(total ? (size_t)total : 1, sizeof *list) : NULL;
    if (rc == TIO_OK && !list) rc = tio__nomem(err, FMT);
    size_t k = 0;
    for (size_t i = 0; rc == TIO_OK && i < ps.n; i++) {
        const char *p = ps.v[i].p, *e = ps.v[i].e;
        uint64_t count;
        (void)scan(&ps.v[i], bs, MAX_BRACES, &nb, lim.max_shards, &count, NULL);
        uint64_t idx[MAX_BRACES] = {0};
        for (uint64_t j = 0; j < count; j++) {
            char *s = malloc((size_t)longest + 1);
            if (!s) {
                rc = tio__nomem(err, FMT);
                break;
            }
            size_t o = 0;
            const char *q = p;
            for (size_t b = 0; b < nb; b++) {
                memcpy(s + o, q, (size_t)(bs[b].at - q));
                o += (size_t)(bs[b].at - q);
                o += put_alt(&bs[b], idx[b], s + o);
                q = bs[b].end;
            }
            memcpy(s + o, q, (size_t)(e - q));
            s[o + (size_t)(e - q)] = 0;
            list[k++] = s;
            for (size_t b = nb; b-- > 0;) { /* the last brace varies fastest */
                if (++idx[b] < bs[b].count) break;
                idx[b] = 0;
            }
        }
    }
    pieces_free(&ps);
    if (rc) {
        tio_shard_list_free(list, k);
        return rc;
    }
    *out = list;
    *n = k;
    return TIO_OK;
}
