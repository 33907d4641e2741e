/* WebDataset's notation for shard lists: "shard-{000..099}.tar", several
 * braces (every combination, the last varying fastest), "{a,b}" lists, and
 * "::" between lists. Bounded by max_shards before anything is made. */
#include "tar/tar.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FMT "shards"

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

static int parse_brace(const char *spec, brace *b, tio_error *err) {
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
        return tio__err(err, TIO_E_ARGUMENT, FMT, (int64_t)(b->at - spec),
                        "\"%.*s\" is neither a range ({000..099}) nor a list ({a,b})",
                        (int)(b->end - b->at), b->at);
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

/* The braces of the piece [p, e) into bs (at most cap); their product into
 * *count, bounded by max. */
static int scan(const char *spec, const char *p, const char *e, brace *bs, size_t cap,
                size_t *nb, uint64_t max, uint64_t *count, tio_error *err) {
    *nb = 0;
    *count = 1;
    for (const char *q = p; q < e; q++) {
        if (*q == '}')
            return tio__err(err, TIO_E_ARGUMENT, FMT, (int64_t)(q - spec), "a '}' without '{'");
        if (*q != '{') continue;
        const char *c = q + 1;
        while (c < e && *c != '}' && *c != '{') c++;
        if (c == e || *c == '{')
            return tio__err(err, TIO_E_ARGUMENT, FMT, (int64_t)(q - spec),
                            "a '{' without its '}' (braces do not nest)");
        if (*nb == cap)
            return tio__err(err, TIO_E_LIMIT, FMT, (int64_t)(q - spec),
                            "more than %zu braces in one list", cap);
        brace *b = &bs[(*nb)++];
        memset(b, 0, sizeof *b);
        b->at = q;
        b->end = c + 1;
        int rc = parse_brace(spec, b, err);
        if (rc) return rc;
        if (b->count > max / *count)
            return tio__err(err, TIO_E_LIMIT, FMT, (int64_t)(q - spec),
                            "the list names more than max_shards (%" PRIu64 ") shards", max);
        *count *= b->count;
        q = c;
    }
    return TIO_OK;
}

#define MAX_BRACES 16

int tio_shard_list_expand(const char *spec, const tio_limits *limits, char ***out, size_t *n,
                          tio_error *err) {
    if (!spec || !out || !n) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "NULL argument");
    *out = NULL;
    *n = 0;
    tio_limits lim = tio__limits_resolve(limits);
    uint64_t total = 0, longest = 0;
    brace bs[MAX_BRACES];
    size_t nb;
    /* first pass: count, bounded, and the longest name */
    for (const char *p = spec;;) {
        const char *sep = strstr(p, "::");
        const char *e = sep ? sep : p + strlen(p);
        uint64_t count;
        int rc = scan(spec, p, e, bs, MAX_BRACES, &nb, lim.max_shards, &count, err);
        if (rc) return rc;
        if (count > lim.max_shards - total)
            return tio__err(err, TIO_E_LIMIT, FMT, -1,
                            "the list names more than max_shards (%" PRIu32 ") shards",
                            lim.max_shards);
        total += count;
        uint64_t len = (uint64_t)(e - p) + 20 * nb; /* a number is at most 20 digits */
        if (len > longest) longest = len;
        if (!sep) break;
        p = sep + 2;
    }
    char **list = calloc(total ? (size_t)total : 1, sizeof *list);
    if (!list) return tio__nomem(err, FMT);
    size_t k = 0;
    for (const char *p = spec;;) {
        const char *sep = strstr(p, "::");
        const char *e = sep ? sep : p + strlen(p);
        uint64_t count;
        (void)scan(spec, p, e, bs, MAX_BRACES, &nb, lim.max_shards, &count, err);
        uint64_t idx[MAX_BRACES] = {0};
        for (uint64_t j = 0; j < count; j++) {
            char *s = malloc((size_t)longest + 1);
            if (!s) {
                tio_shard_list_free(list, k);
                return tio__nomem(err, FMT);
            }
            size_t o = 0;
            const char *q = p;
            for (size_t i = 0; i < nb; i++) {
                memcpy(s + o, q, (size_t)(bs[i].at - q));
                o += (size_t)(bs[i].at - q);
                o += put_alt(&bs[i], idx[i], s + o);
                q = bs[i].end;
            }
            memcpy(s + o, q, (size_t)(e - q));
            s[o + (size_t)(e - q)] = 0;
            list[k++] = s;
            for (size_t i = nb; i-- > 0;) { /* the last brace varies fastest */
                if (++idx[i] < bs[i].count) break;
                idx[i] = 0;
            }
        }
        if (!sep) break;
        p = sep + 2;
    }
    *out = list;
    *n = k;
    return TIO_OK;
}
