/* tensio diff — compare two files tensor by tensor, and their model graphs. */
#include "cli.h"
#include "cli_values.h"
#include "diff_graph.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char diff_help[] =
    "Usage: tensio diff [OPTIONS] A B [TENSOR...]\n"
    "\n"
    "Compare files A and B (of any formats) tensor by tensor: by name when\n"
    "every tensor of both has one, else by index. Dtype and shape first, then\n"
    "the values, as numpy.allclose: |a - b| <= atol + rtol * |b| (floats as\n"
    "double, so float16 vs float32 compares the converted values; integers\n"
    "exactly; a sparse (COO) tensor as its dense form, without densifying\n"
    "it). One line per tensor: status, mismatched elements, max absolute\n"
    "and relative difference, the first mismatch's index; tensors only in A or\n"
    "B; then the model graphs (inputs, outputs, nodes with their ops,\n"
    "attributes, inputs and outputs; the first differences). TENSORs restrict\n"
    "the comparison to those tensors (a name, or an index of A).\n"
    "Pairs are compared on up to 8 threads (one per processor), the rows\n"
    "printed in order; two dense tensors of more than 4,194,304 elements in\n"
    "chunks of that many across them.\n"
    "Exit status: 0 equal within tolerance, 1 different (or a file that cannot\n"
    "be read, a TENSOR in neither file: a message on stderr), 2 usage error.\n"
    "\n"
    "Options:\n"
    "      --rtol X        relative tolerance (default 1e-05)\n"
    "      --atol X        absolute tolerance (default 1e-08)\n"
    "      --equal-nan     NaN equals NaN (the same bits always do)\n"
    "      --by-index      pair tensors by index even when they have names\n"
    "      --ignore-dtype  a dtype difference alone (equal values) is no difference\n"
    "      --tensors-only  do not compare the model graphs\n"
    "      --json          print one JSON object instead (see docs/cli.md)\n"
    "      --max-dense-bytes N\n"
    "                      dequantize a quantized tensor to at most N bytes of\n"
    "                      float32 (K, M, G, T suffixes; 'unlimited'; default 256M)\n"
    CLI_PROGRESS_HELP
    "  -h, --help          show this help and exit\n";

enum {
    OPT_HELP = 1, OPT_JSON, OPT_RTOL, OPT_ATOL, OPT_EQUAL_NAN, OPT_BY_INDEX, OPT_IGNORE_DTYPE,
    OPT_TENSORS_ONLY
};

static const cli_option diff_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"json", 0, 0, OPT_JSON},
    {"rtol", 0, 1, OPT_RTOL},
    {"atol", 0, 1, OPT_ATOL},
    {"equal-nan", 0, 0, OPT_EQUAL_NAN},
    {"by-index", 0, 0, OPT_BY_INDEX},
    {"ignore-dtype", 0, 0, OPT_IGNORE_DTYPE},
    {"tensors-only", 0, 0, OPT_TENSORS_ONLY},
    CLI_OPT_MAX_DENSE,
    CLI_OPT_PROGRESS,
};

typedef struct diff_opts_t {
    double rtol, atol;
    int equal_nan, by_index, ignore_dtype, tensors_only, json;
    int progress; /* CLI_PROGRESS_* */
} diff_conf;

/* Status of one pair, in the words the output uses. */
enum { ST_EQUAL, ST_VALUES, ST_DTYPE, ST_SHAPE, ST_ONLY_A, ST_ONLY_B, ST_ERROR };
static const char *const status_names[] = {"equal",  "values", "dtype", "shape",
                                           "only_a", "only_b", "error"};

typedef struct pair_result {
    int64_t ia, ib; /* -1 when absent */
    int status;
    int dtype_differs;
    int compared;   /* values were compared */
    uint64_t count, mismatched;
    double max_abs, max_rel;
    int has_first;
    uint64_t first;
    char first_a[64], first_b[64]; /* the values there, as text */
    json_t *ja, *jb;               /* and as JSON (owned) */
    char error[TIO_ERROR_MESSAGE_MAX];
} pair_result;

/* ------------------------------------------------------------- values */

/* The element as text and JSON: integers exactly, floats %.9g / %.17g. */
static void element_text(tio_dtype dt, const uint8_t *p, char *buf, size_t size, json_t **j) {
    cli_num_kind k = cli_dtype_kind(dt);
    if (k == CLI_NUM_INT) {
        int64_t v = cli_load_i64(dt, p);
        snprintf(buf, size, "%lld", (long long)v);
        *j = json_integer((json_int_t)v);
    } else if (k == CLI_NUM_UINT) {
        uint64_t v = cli_load_u64(dt, p);
        snprintf(buf, size, "%llu", (unsigned long long)v);
        *j = v > (uint64_t)INT64_MAX ? json_string(buf) : json_integer((json_int_t)v);
    } else if (cli_is_complex(dt)) { /* text re+imj, JSON [re, im] */
        double re, im;
        cli_load_complex(dt, p, &re, &im);
        int digits = dt == TIO_COMPLEX128 ? 17 : 9, neg = !isnan(im) && signbit(im);
        char r[26], i[26]; /* %.17g of a double: 24 characters at most */
        cli_format_double(r, sizeof r, re, digits);
        cli_format_double(i, sizeof i, neg ? -im : im, digits);
        snprintf(buf, size, "%s%c%sj", r, neg ? '-' : '+', i);
        *j = json_array();
        if (*j) {
            json_array_append_new(*j, cli_json_double(re));
            json_array_append_new(*j, cli_json_double(im));
        }
    } else {
        double v = cli_load_f64(dt, p);
        cli_format_double(buf, size, v, dt == TIO_FLOAT64 ? 17 : 9);
        *j = cli_json_double(v);
    }
}

/* Two elements as complex numbers (either side complex), as numpy.isclose
 * compares them: |a - b| <= atol + rtol * |b| with |.| the magnitude; a NaN
 * part makes the number NaN, an infinite one equals only the same number. */
static int complex_equal(const diff_conf *o, tio_dtype da, const uint8_t *a, tio_dtype db,
                         const uint8_t *b, double *d, double *rel) {
    double ar, ai, br, bi;
    cli_load_complex(da, a, &ar, &ai);
    cli_load_complex(db, b, &br, &bi);
    int na = isnan(ar) || isnan(ai), nb = isnan(br) || isnan(bi);
    *d = *rel = 0;
    if (na || nb) return na && nb && o->equal_nan;
    if (isinf(ar) || isinf(ai) || isinf(br) || isinf(bi)) return ar == br && ai == bi;
    double mag = hypot(br, bi);
    *d = hypot(ar - br, ai - bi);
    *rel = *d == 0 ? 0 : mag == 0 ? INFINITY : *d / mag;
    return *d <= o->atol + o->rtol * mag;
}

/* Two integers of any integer kinds: equal?, and |a - b| into *diff, |b| into *mag. */
static int int_equal(tio_dtype da, const uint8_t *pa, tio_dtype db, const uint8_t *pb,
                     long double *diff, long double *mag) {
    long double x, y;
    int eq;
    cli_num_kind ka = cli_dtype_kind(da), kb = cli_dtype_kind(db);
    if (ka == CLI_NUM_INT && kb == CLI_NUM_INT) {
        int64_t a = cli_load_i64(da, pa), b = cli_load_i64(db, pb);
        eq = a == b;
        x = (long double)a;
        y = (long double)b;
    } else if (ka == CLI_NUM_UINT && kb == CLI_NUM_UINT) {
        uint64_t a = cli_load_u64(da, pa), b = cli_load_u64(db, pb);
        eq = a == b;
        x = (long double)a;
        y = (long double)b;
    } else {
        /* one signed, one unsigned: equal when the signed one is >= 0 and
         * the two agree as uint64 */
        int64_t s = ka == CLI_NUM_INT ? cli_load_i64(da, pa) : cli_load_i64(db, pb);
        uint64_t u = ka == CLI_NUM_UINT ? cli_load_u64(da, pa) : cli_load_u64(db, pb);
        eq = s >= 0 && (uint64_t)s == u;
        x = ka == CLI_NUM_INT ? (long double)s : (long double)u;
        y = ka == CLI_NUM_INT ? (long double)u : (long double)s;
    }
    *diff = fabsl(x - y);
    *mag = fabsl(y);
    return eq;
}

/* Elements a (of dtype da) and b (db) at flat index i. */
static void compare_one(const diff_conf *o, tio_dtype da, const uint8_t *a, tio_dtype db,
                        const uint8_t *b, uint64_t i, int ints, pair_result *r) {
    int eq;
    double d = 0, rel = 0;
    if (da == db && memcmp(a, b, tio_dtype_size(da)) == 0) {
        eq = 1; /* the same bits are never a difference, NaN or not */
    } else if (ints) {
        long double ld, mag;
        eq = int_equal(da, a, db, b, &ld, &mag);
        d = (double)ld;
        rel = ld == 0 ? 0 : mag == 0 ? INFINITY : (double)(ld / mag);
    } else if (cli_is_complex(da) || cli_is_complex(db)) {
        eq = complex_equal(o, da, a, db, b, &d, &rel);
    } else {
        double x = cli_load_f64(da, a), y = cli_load_f64(db, b);
        if (isnan(x) || isnan(y)) {
            eq = isnan(x) && isnan(y) && o->equal_nan;
        } else if (isinf(x) || isinf(y)) {
            eq = x == y;
        } else {
            d = fabs(x - y);
            rel = d == 0 ? 0 : y == 0 ? INFINITY : d / fabs(y);
            eq = d <= o->atol + o->rtol * fabs(y);
        }
    }
    if (d > r->max_abs) r->max_abs = d;
    if (rel > r->max_rel) r->max_rel = rel;
    if (eq) return;
    if (r->mismatched++ == 0) {
        r->has_first = 1;
        r->first = i;
        element_text(da, a, r->first_a, sizeof r->first_a, &r->ja);
        element_text(db, b, r->first_b, sizeof r->first_b, &r->jb);
    }
}

/* Bytes compared at once before the elements are (a multiple of every
 * element size). */
#define DIFF_BLOCK 4096u

/* Elements [from, to) when either side is dense (its bytes back the work).
 * Both dense in one dtype: a block whose bytes match is passed over whole
 * (the same bits are equal: compare_one counts nothing); from is a multiple
 * of the block's elements. */
static void compare_range(const diff_conf *o, tio_dtype da, cli_elems *a, tio_dtype db,
                          cli_elems *b, uint64_t from, uint64_t to, int ints, pair_result *r) {
    int blocks = da == db && a->dense && b->dense && a->size && DIFF_BLOCK % a->size == 0;
    uint64_t step = blocks ? DIFF_BLOCK / a->size : to - from;
    for (uint64_t i = from; i < to; i += step) {
        uint64_t m = to - i < step ? to - i : step;
        if (blocks &&
            memcmp(a->dense + i * a->size, b->dense + i * a->size, (size_t)m * a->size) == 0)
            continue;
        for (uint64_t k = i; k < i + m; k++)
            compare_one(o, da, cli_elems_at(a, k), db, cli_elems_at(b, k), k, ints, r);
    }
}

/* Two dense sides of more than DIFF_CHUNK elements are compared in chunks
 * of that many on worker threads (cli_ahead), merged in order where the
 * listing reaches the pair (diff_skips): the first mismatch is the first
 * chunk's, counts add up, maxima are maxima. */
#define DIFF_CHUNK ((uint64_t)1 << 22)

typedef struct chunk_job {
    const diff_conf *o;
    tio_dtype da, db;
    cli_elems *a, *b; /* dense: only read */
    int ints;
} chunk_job;

static void chunk_one(const void *ctx, size_t k, void *slot) {
    const chunk_job *j = ctx;
    pair_result *c = slot;
    memset(c, 0, sizeof *c);
    uint64_t from = (uint64_t)k * DIFF_CHUNK, n = j->a->numel;
    compare_range(j->o, j->da, j->a, j->db, j->b, from,
                  n - from < DIFF_CHUNK ? n : from + DIFF_CHUNK, j->ints, c);
}

/* A result's JSON values, where they were not handed on. */
static void result_cleanup(const void *ctx, void *slot) {
    (void)ctx;
    json_decref(((pair_result *)slot)->ja);
    json_decref(((pair_result *)slot)->jb);
}

static void compare_chunks(const chunk_job *j, pair_result *r) {
    size_t nc = (size_t)(j->a->numel / DIFF_CHUNK + (j->a->numel % DIFF_CHUNK != 0));
    cli_ahead *ahead = cli_ahead_start(nc, sizeof(pair_result), 16, chunk_one, NULL,
                                       result_cleanup, j);
    pair_result mine;
    for (size_t k = 0; k < nc; k++) {
        pair_result *c = cli_ahead_next(ahead, k, chunk_one, j, &mine);
        r->mismatched += c->mismatched;
        if (c->max_abs > r->max_abs) r->max_abs = c->max_abs;
        if (c->max_rel > r->max_rel) r->max_rel = c->max_rel;
        if (c->has_first && !r->has_first) { /* its JSON values now r's */
            r->has_first = 1;
            r->first = c->first;
            memcpy(r->first_a, c->first_a, sizeof r->first_a);
            memcpy(r->first_b, c->first_b, sizeof r->first_b);
            r->ja = c->ja;
            r->jb = c->jb;
        } else {
            result_cleanup(j, c);
        }
    }
    cli_ahead_free(ahead); /* the slots taken were merged or cleaned up */
}

/* Every element when either side is dense; only the stored coordinates
 * when both are COO (elsewhere both are zero). */
static void compare_values(const diff_conf *o, tio_dtype da, cli_elems *a, tio_dtype db,
                           cli_elems *b, pair_result *r) {
    int ints = cli_dtype_kind(da) != CLI_NUM_FLOAT && cli_dtype_kind(db) != CLI_NUM_FLOAT;
    r->compared = 1;
    r->count = a->numel;
    if (a->dense && b->dense && a->numel > DIFF_CHUNK) {
        chunk_job j = {o, da, db, a, b, ints};
        compare_chunks(&j, r);
        return;
    }
    if (a->dense || b->dense) {
        compare_range(o, da, a, db, b, 0, a->numel, ints, r);
        return;
    }
    for (;;) {
        uint64_t na = cli_elems_next(a), nb = cli_elems_next(b), i = na < nb ? na : nb;
        if (i == UINT64_MAX) break;
        compare_one(o, da, cli_elems_at(a, i), db, cli_elems_at(b, i), i, ints, r);
        /* step past i on both sides */
        if (na == i) a->cursor++;
        if (nb == i) b->cursor++;
    }
}

/* A string element as text (quoted, control bytes \xNN, cut to fit) and
 * JSON (the string when UTF-8, else its escaped text). */
static void string_text(const tio_tensor *t, uint64_t i, char *buf, size_t size, json_t **j) {
    const char *p = "";
    size_t n = 0;
    (void)tio_tensor_string_at(t, i, &p, &n, NULL); /* i < numel */
    char *e = cli_bytes_escape(p, n);
    snprintf(buf, size, "\"%s\"", e ? e : "?");
    *j = json_stringn(p, n); /* NULL when not UTF-8 */
    if (!*j && e) *j = json_string(e);
    free(e);
}

/* Two string tensors of one shape: element by element, as bytes. */
static void compare_strings(const tio_tensor *ta, const tio_tensor *tb, pair_result *r) {
    r->compared = 1;
    r->count = tio_tensor_numel(ta);
    for (uint64_t i = 0; i < r->count; i++) {
        const char *a, *b;
        size_t na, nb;
        (void)tio_tensor_string_at(ta, i, &a, &na, NULL);
        (void)tio_tensor_string_at(tb, i, &b, &nb, NULL);
        if (na == nb && (na == 0 || memcmp(a, b, na) == 0)) continue;
        if (r->mismatched++ == 0) {
            r->has_first = 1;
            r->first = i;
            string_text(ta, i, r->first_a, sizeof r->first_a, &r->ja);
            string_text(tb, i, r->first_b, sizeof r->first_b, &r->jb);
        }
    }
    r->status = r->mismatched ? ST_VALUES : ST_EQUAL;
}

static int same_shape(const tio_tensor *a, const tio_tensor *b) {
    size_t rank = tio_tensor_rank(a);
    return rank == tio_tensor_rank(b) &&
           (rank == 0 ||
            memcmp(tio_tensor_shape(a), tio_tensor_shape(b), rank * sizeof(int64_t)) == 0);
}

static void compare_pair(const diff_conf *o, const tio_tensor *ta, const tio_tensor *tb,
                         uint64_t max_dense_a, uint64_t max_dense_b, pair_result *r) {
    tio_dtype da = tio_tensor_dtype(ta), db = tio_tensor_dtype(tb);
    r->dtype_differs = da != db;
    if (!same_shape(ta, tb)) {
        r->status = ST_SHAPE;
        return;
    }
    if (da == TIO_STRING && db == TIO_STRING) {
        compare_strings(ta, tb, r);
        return;
    }
    if (da == TIO_STRING || db == TIO_STRING) {
        r->status = ST_ERROR;
        snprintf(r->error, sizeof r->error, "a string tensor and a %s one: no values to compare",
                 tio_dtype_name(da == TIO_STRING ? db : da));
        return;
    }
    if (tio_tensor_layout(ta) == TIO_LAYOUT_QUANT && tio_tensor_layout(tb) == TIO_LAYOUT_QUANT &&
        tio_tensor_quant(ta) == tio_tensor_quant(tb) &&
        tio_tensor_nbytes(ta) == tio_tensor_nbytes(tb) &&
        memcmp(tio_tensor_data(ta), tio_tensor_data(tb), tio_tensor_nbytes(ta)) == 0) {
        r->compared = 1; /* the same blocks: the same values */
        r->count = tio_tensor_numel(ta);
        r->status = ST_EQUAL;
        return;
    }
    cli_elems ea, eb;
    tio_error err;
    int st = cli_elems_init(&ea, ta, max_dense_a, &err);
    if (st == TIO_OK) {
        st = cli_elems_init(&eb, tb, max_dense_b, &err);
        if (st != TIO_OK) cli_elems_free(&ea);
    }
    if (st != TIO_OK) {
        r->status = ST_ERROR;
        snprintf(r->error, sizeof r->error, "%s", cli_errmsg(&err));
        return;
    }
    compare_values(o, da, &ea, db, &eb, r);
    cli_elems_free(&ea);
    cli_elems_free(&eb);
    if (r->mismatched)
        r->status = ST_VALUES;
    else if (r->dtype_differs && !o->ignore_dtype)
        r->status = ST_DTYPE;
    else
        r->status = ST_EQUAL;
}

/* ------------------------------------------------------------- pairing */

static int all_named(const tio_container *c) {
    size_t n = tio_container_count(c);
    for (size_t i = 0; i < n; i++) {
        const char *name = tio_tensor_name(tio_container_tensor(c, i));
        if (!name) return 0; /* "" is a name */
    }
    return 1;
}

/* The pairs: by name (B's tensors of a name in order, each used once), or by
 * index; then those only in B. *out has at most count(A) + count(B) entries. */
static int make_pairs(const tio_container *a, const tio_container *b, int by_index,
                      pair_result **out, size_t *nout) {
    size_t na = tio_container_count(a), nb = tio_container_count(b), n = 0;
    pair_result *p = calloc(na + nb + 1, sizeof *p);
    diff_named *sorted = by_index ? NULL : calloc(nb + 1, sizeof *sorted);
    unsigned char *used = calloc(nb + 1, 1);
    if (!p || (!by_index && !sorted) || !used) {
        free(p);
        free(sorted);
        free(used);
        return cli_error("out of memory");
    }
    for (size_t j = 0; sorted && j < nb; j++) {
        sorted[j].name = tio_tensor_name(tio_container_tensor(b, j));
        sorted[j].index = j;
    }
    if (sorted) qsort(sorted, nb, sizeof *sorted, diff_named_cmp);
    for (size_t i = 0; i < na; i++) {
        pair_result *r = &p[n++];
        r->ia = (int64_t)i;
        r->ib = -1;
        if (by_index) {
            if (i < nb) r->ib = (int64_t)i;
        } else {
            /* the first unused tensor of this name in B */
            const char *name = tio_tensor_name(tio_container_tensor(a, i));
            for (size_t lo = diff_named_first(sorted, nb, name);
                 lo < nb && strcmp(sorted[lo].name, name) == 0; lo++) {
                if (!used[sorted[lo].index]) {
                    r->ib = (int64_t)sorted[lo].index;
                    break;
                }
            }
        }
        if (r->ib >= 0) used[r->ib] = 1;
    }
    for (size_t j = 0; j < nb; j++) {
        if (used[j]) continue;
        p[n].ia = -1;
        p[n++].ib = (int64_t)j;
    }
    free(sorted);
    free(used);
    *out = p;
    *nout = n;
    return CLI_EXIT_OK;
}

/* Whether TENSOR selects the pair: A's or B's name, or A's index (B's for a
 * tensor only in B). */
static int selects(const char *sel, const tio_container *a, const tio_container *b,
                   const pair_result *r) {
    const char *na = r->ia >= 0 ? tio_tensor_name(tio_container_tensor(a, (size_t)r->ia)) : NULL;
    const char *nb = r->ib >= 0 ? tio_tensor_name(tio_container_tensor(b, (size_t)r->ib)) : NULL;
    if ((na && strcmp(na, sel) == 0) || (nb && strcmp(nb, sel) == 0)) return 1;
    if (sel[0] < '0' || sel[0] > '9') return 0;
    errno = 0;
    char *end = NULL;
    unsigned long long k = strtoull(sel, &end, 10);
    if (errno || !end || *end) return 0;
    return r->ia >= 0 ? (uint64_t)r->ia == k : (uint64_t)r->ib == k;
}

/* -------------------------------------------------------------- output */

typedef struct diff_run {
    const diff_conf *o;
    const char *path_a, *path_b;
    const tio_container *a, *b;
    int named;
    pair_result *pairs;
    size_t npairs;
    diff_graph_result graph;
    int graph_compared;
    size_t counts[7]; /* pairs per status */
} diff_run;

static const tio_tensor *side(const tio_container *c, int64_t i) {
    return i >= 0 ? tio_container_tensor(c, (size_t)i) : NULL;
}

/* "float32" or "float16 | float32"; the same for shapes. */
static char *both(const char *x, const char *y) {
    if (!x) return cli_strdup_printf("%s", y ? y : "?");
    if (!y || strcmp(x, y) == 0) return cli_strdup_printf("%s", x);
    return cli_strdup_printf("%s | %s", x, y);
}

static int text_row(cli_table *tab, const diff_run *d, const pair_result *r) {
    const tio_tensor *ta = side(d->a, r->ia), *tb = side(d->b, r->ib);
    const tio_tensor *t = ta ? ta : tb;
    const char *name = tio_tensor_name(t);
    char *ename = cli_name_escape(name);
    char *sa = ta ? cli_shape_string(ta) : NULL, *sb = tb ? cli_shape_string(tb) : NULL;
    char *dtypes = both(ta ? tio_dtype_name(tio_tensor_dtype(ta)) : NULL,
                        tb ? tio_dtype_name(tio_tensor_dtype(tb)) : NULL);
    char *shapes = both(sa, sb);
    int bad = (name && !ename) || (ta && !sa) || (tb && !sb) || !dtypes || !shapes;
    if (!bad) {
        const char *st = r->status == ST_ONLY_A ? "only-A"
                         : r->status == ST_ONLY_B ? "only-B"
                                                  : status_names[r->status];
        cli_table_add(tab, "%s", st);
        if (d->named)
            cli_table_add(tab, "%s", ename);
        else
            cli_table_add(tab, "%lld%s%s", (long long)(r->ia >= 0 ? r->ia : r->ib),
                          ename ? " " : "", ename ? ename : "");
        cli_table_add(tab, "%s", dtypes);
        cli_table_add(tab, "%s", shapes);
        if (r->compared) {
            char ma[40], mr[40];
            cli_format_double(ma, sizeof ma, r->max_abs, 6);
            cli_format_double(mr, sizeof mr, r->max_rel, 6);
            cli_table_add(tab, "%llu/%llu", (unsigned long long)r->mismatched,
                          (unsigned long long)r->count);
            cli_table_add(tab, "%s", ma);
            cli_table_add(tab, "%s", mr);
        } else {
            for (int k = 0; k < 3; k++) cli_table_add(tab, "-");
        }
        if (r->has_first) {
            char idx[256];
            cli_multi_index(tio_tensor_shape(ta), tio_tensor_rank(ta), r->first, idx,
                            sizeof idx);
            cli_table_add(tab, "%s: %s vs %s", idx, r->first_a, r->first_b);
        } else if (r->status == ST_ERROR) {
            cli_table_add(tab, "%s", r->error);
        } else {
            cli_table_add(tab, "-");
        }
    }
    free(ename);
    free(sa);
    free(sb);
    free(dtypes);
    free(shapes);
    return bad ? cli_error("out of memory") : CLI_EXIT_OK;
}

static int differ(const diff_run *d) {
    return d->counts[ST_EQUAL] != d->npairs || d->graph.count != 0;
}

static int diff_text(const diff_run *d) {
    printf("--- A: %s (%s, %zu tensor%s)\n", d->path_a, tio_container_format(d->a),
           tio_container_count(d->a), tio_container_count(d->a) == 1 ? "" : "s");
    printf("+++ B: %s (%s, %zu tensor%s)\n", d->path_b, tio_container_format(d->b),
           tio_container_count(d->b), tio_container_count(d->b) == 1 ? "" : "s");
    int rc = CLI_EXIT_OK;
    if (d->npairs) {
        cli_table tab;
        cli_table_init(&tab, 8, 1u << 4 | 1u << 5 | 1u << 6);
        static const char *const head[] = {"STATUS", "TENSOR", "DTYPE", "SHAPE",
                                           "MISMATCHED", "MAX_ABS", "MAX_REL", "FIRST_MISMATCH"};
        for (size_t k = 0; k < 8; k++) cli_table_add(&tab, "%s", head[k]);
        for (size_t i = 0; i < d->npairs && rc == CLI_EXIT_OK; i++)
            rc = text_row(&tab, d, &d->pairs[i]);
        if (rc == CLI_EXIT_OK) rc = tab.nomem ? cli_error("out of memory")
                                              : cli_table_print(&tab, stdout);
        cli_table_free(&tab);
    }
    if (rc != CLI_EXIT_OK) return rc;
    if (d->graph_compared) {
        if (d->graph.count == 0) {
            printf("graph: equal");
        } else {
            printf("graph: %llu difference%s", (unsigned long long)d->graph.count,
                   d->graph.count == 1 ? "" : "s");
            if (d->graph.count > d->graph.nfirst) printf(", the first %zu", d->graph.nfirst);
        }
        if (d->graph.defaults)
            printf(" (%llu attribute%s written by one side only hold%s the ONNX default)",
                   (unsigned long long)d->graph.defaults, d->graph.defaults == 1 ? "" : "s",
                   d->graph.defaults == 1 ? "s" : "");
        fputs(d->graph.count ? ":\n" : "\n", stdout);
        for (size_t i = 0; i < d->graph.nfirst; i++) {
            char *e = cli_text_escape(d->graph.first[i]);
            printf("  %s\n", e ? e : d->graph.first[i]);
            free(e);
        }
    }
    size_t only = d->counts[ST_ONLY_A] + d->counts[ST_ONLY_B];
    size_t compared = d->npairs - only, ndiff = compared - d->counts[ST_EQUAL];
    printf("%s: %zu tensor%s compared, %zu differ, %zu only in A, %zu only in B",
           differ(d) ? "different" : "equal", compared, compared == 1 ? "" : "s", ndiff,
           d->counts[ST_ONLY_A], d->counts[ST_ONLY_B]);
    if (d->graph_compared)
        printf("; graph %s", d->graph.count ? "differs" : "equal");
    printf(" (rtol %g, atol %g%s)\n", d->o->rtol, d->o->atol,
           d->o->equal_nan ? ", NaN equals NaN" : "");
    return CLI_EXIT_OK;
}

static json_t *json_file(const char *path, const tio_container *c) {
    json_t *o = json_object();
    if (!o) return NULL;
    int bad = cli_json_set(o, "path", cli_json_str(path));
    bad |= cli_json_set(o, "format", cli_json_str(tio_container_format(c)));
    bad |= cli_json_set(o, "tensors", json_integer((json_int_t)tio_container_count(c)));
    bad |= cli_json_set(o, "graph", json_boolean(tio_container_graph(c) != NULL));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_side(const tio_tensor *t, int64_t index) {
    if (!t) return json_null();
    json_t *o = json_object();
    if (!o) return NULL;
    int bad = cli_json_set(o, "index", json_integer((json_int_t)index));
    bad |= cli_json_set(o, "name", cli_json_str(tio_tensor_name(t)));
    bad |= cli_json_set(o, "dtype", cli_json_str(tio_dtype_name(tio_tensor_dtype(t))));
    bad |= cli_json_set(o, "shape", cli_json_shape(t));
    bad |= cli_json_set(o, "layout", json_string(cli_layout_name(tio_tensor_layout(t))));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_pair(const diff_run *d, pair_result *r) {
    json_t *o = json_object();
    if (!o) return NULL;
    const tio_tensor *ta = side(d->a, r->ia), *tb = side(d->b, r->ib);
    int bad = cli_json_set(o, "status", json_string(status_names[r->status]));
    bad |= cli_json_set(o, "a", json_side(ta, r->ia));
    bad |= cli_json_set(o, "b", json_side(tb, r->ib));
    if (r->compared) {
        bad |= cli_json_set(o, "count", json_integer((json_int_t)r->count));
        bad |= cli_json_set(o, "mismatched", json_integer((json_int_t)r->mismatched));
        bad |= cli_json_set(o, "max_abs_diff", cli_json_double(r->max_abs));
        bad |= cli_json_set(o, "max_rel_diff", cli_json_double(r->max_rel));
    }
    if (r->has_first) {
        json_t *f = json_object();
        bad |= cli_json_set(o, "first_mismatch", f);
        if (f) {
            bad |= cli_json_set(f, "index", cli_json_multi_index(tio_tensor_shape(ta),
                                                                  tio_tensor_rank(ta), r->first));
            bad |= cli_json_set(f, "flat", json_integer((json_int_t)r->first));
            bad |= cli_json_set(f, "a", r->ja);
            bad |= cli_json_set(f, "b", r->jb);
            r->ja = r->jb = NULL; /* taken */
        }
    }
    if (r->status == ST_ERROR) bad |= cli_json_set(o, "error", cli_json_str(r->error));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int diff_json(const diff_run *d) {
    json_t *root = json_object(), *list = json_array(), *sum = json_object();
    int bad = !root || !list || !sum;
    if (bad) {
        json_decref(list);
        json_decref(sum);
    }
    if (!bad) {
        bad |= cli_json_set(root, "equal", json_boolean(!differ(d)));
        bad |= cli_json_set(root, "a", json_file(d->path_a, d->a));
        bad |= cli_json_set(root, "b", json_file(d->path_b, d->b));
        bad |= cli_json_set(root, "paired_by", json_string(d->named ? "name" : "index"));
        bad |= cli_json_set(root, "rtol", json_real(d->o->rtol));
        bad |= cli_json_set(root, "atol", json_real(d->o->atol));
        bad |= cli_json_set(root, "equal_nan", json_boolean(d->o->equal_nan));
        bad |= cli_json_set(root, "tensors", list);
        bad |= cli_json_set(root, "summary", sum);
    }
    for (size_t i = 0; i < d->npairs && !bad; i++) {
        json_t *o = json_pair(d, &d->pairs[i]);
        bad |= !o || json_array_append_new(list, o) != 0;
    }
    for (size_t s = 0; s < 7 && !bad; s++)
        bad |= cli_json_set(sum, status_names[s], json_integer((json_int_t)d->counts[s]));
    if (!bad && d->graph_compared) {
        json_t *g = json_object(), *first = json_array();
        bad |= cli_json_set(root, "graph", g) | !first;
        if (!bad) {
            bad |= cli_json_set(g, "equal", json_boolean(d->graph.count == 0));
            bad |= cli_json_set(g, "differences", json_integer((json_int_t)d->graph.count));
            bad |= cli_json_set(g, "defaults", json_integer((json_int_t)d->graph.defaults));
            bad |= cli_json_set(g, "first", first);
            first = NULL;
            json_t *arr = json_object_get(g, "first");
            for (size_t i = 0; i < d->graph.nfirst && arr && !bad; i++)
                bad |= json_array_append_new(arr, cli_json_str(d->graph.first[i])) != 0;
        }
        json_decref(first);
    } else if (!bad) {
        bad |= cli_json_set(root, "graph", json_null());
    }
    if (bad) {
        json_decref(root);
        return cli_error("out of memory");
    }
    return cli_json_print(root);
}

/* ------------------------------------------------------------- command */

static int parse_tol(const char *opt, const char *v, double *out) {
    errno = 0;
    char *end = NULL;
    double x = strtod(v, &end);
    if (errno || !end || end == v || *end || !isfinite(x) || x < 0)
        return cli_usage_error("diff", "--%s: '%s' is not a finite number >= 0", opt, v);
    *out = x;
    return CLI_EXIT_OK;
}

/* Pairs compared ahead of the listing (cli_ahead), but for those with a
 * quantized side, whose dequantized copy (up to max_dense_bytes) is made in
 * the listing, one at a time, and those compared in chunks. */
typedef struct diff_job {
    const diff_run *d;
    const pair_result *all;
    uint64_t max_dense_a, max_dense_b;
} diff_job;

static void diff_one(const void *ctx, size_t k, void *slot) {
    const diff_job *j = ctx;
    pair_result *r = slot;
    if (r != &j->all[k]) *r = j->all[k];
    if (r->ib < 0)
        r->status = ST_ONLY_A;
    else if (r->ia < 0)
        r->status = ST_ONLY_B;
    else
        compare_pair(j->d->o, side(j->d->a, r->ia), side(j->d->b, r->ib), j->max_dense_a,
                     j->max_dense_b, r);
}

/* Left to the listing: a pair with a quantized side, and one of more than
 * DIFF_CHUNK elements (its chunks on the workers). */
static int diff_skips(const void *ctx, size_t k) {
    const diff_job *j = ctx;
    const pair_result *r = &j->all[k];
    const tio_tensor *a = r->ia >= 0 ? side(j->d->a, r->ia) : NULL;
    const tio_tensor *b = r->ib >= 0 ? side(j->d->b, r->ib) : NULL;
    return (a && tio_tensor_layout(a) == TIO_LAYOUT_QUANT) ||
           (b && tio_tensor_layout(b) == TIO_LAYOUT_QUANT) ||
           (a && b && tio_tensor_numel(a) > DIFF_CHUNK);
}

static int run_diff(diff_run *d, const char *const *sel, size_t nsel) {
    const diff_conf *o = d->o;
    d->named = !o->by_index && all_named(d->a) && all_named(d->b);
    pair_result *all = NULL;
    size_t nall = 0;
    int rc = make_pairs(d->a, d->b, !d->named, &all, &nall);
    if (rc != CLI_EXIT_OK) return rc;
    /* keep the selected pairs; every TENSOR must select one */
    size_t n = 0;
    for (size_t i = 0; i < nall; i++) {
        int keep = nsel == 0;
        for (size_t k = 0; k < nsel && !keep; k++) keep = selects(sel[k], d->a, d->b, &all[i]);
        if (keep) all[n++] = all[i];
    }
    for (size_t k = 0; k < nsel && rc == CLI_EXIT_OK; k++) {
        int found = 0;
        for (size_t i = 0; i < n && !found; i++) found = selects(sel[k], d->a, d->b, &all[i]);
        if (!found) {
            char *e = cli_text_escape(sel[k]);
            rc = cli_error("diff: no tensor '%s' in %s or %s", e ? e : sel[k], d->path_a,
                           d->path_b);
            free(e);
        }
    }
    d->pairs = all;
    d->npairs = n;
    if (rc != CLI_EXIT_OK) return rc;
    cli_progress prog; /* pairs compared */
    cli_progress_init(&prog, o->progress, "diff", "tensors");
    tio_limits la, lb; /* dequantizing a side: within its container's max_dense_bytes */
    tio_container_get_limits(d->a, &la);
    tio_container_get_limits(d->b, &lb);
    diff_job job = {d, all, la.max_dense_bytes, lb.max_dense_bytes};
    cli_ahead *ahead = cli_ahead_start(n, sizeof(pair_result), 64, diff_one, diff_skips,
                                       result_cleanup, &job);
    for (size_t i = 0; i < n; i++) {
        cli_progress_update(&prog, i, n);
        const pair_result *made = cli_ahead_take(ahead, i);
        if (made)
            all[i] = *made; /* its JSON values now all[i]'s */
        else
            diff_one(&job, i, &all[i]);
        d->counts[all[i].status]++;
    }
    cli_ahead_free(ahead);
    cli_progress_update(&prog, n, n);
    cli_progress_end(&prog);
    if (!o->tensors_only && nsel == 0) {
        d->graph_compared = tio_container_graph(d->a) || tio_container_graph(d->b);
        diff_graph_compare(d->a, tio_container_graph(d->a), d->b, tio_container_graph(d->b),
                           &d->graph);
        if (d->graph.nomem) return cli_error("out of memory");
    }
    rc = o->json ? diff_json(d) : diff_text(d);
    if (rc == CLI_EXIT_OK && differ(d)) rc = CLI_EXIT_FAIL;
    return rc;
}

int cli_cmd_diff(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "diff", argc, argv, diff_opts,
                             sizeof diff_opts / sizeof diff_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    diff_conf o = {1e-5, 1e-8, 0, 0, 0, 0, 0, CLI_PROGRESS_AUTO};
    tio_limits olim; /* 0: the defaults */
    memset(&olim, 0, sizeof olim);
    int id = CLI_PARSE_END;
    while (rc == CLI_EXIT_OK && (id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(diff_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_JSON: o.json = 1; break;
        case CLI_OPT_PROGRESS_ID: o.progress = CLI_PROGRESS_ON; break;
        case CLI_OPT_NO_PROGRESS_ID: o.progress = CLI_PROGRESS_OFF; break;
        case OPT_RTOL: rc = parse_tol("rtol", p.value, &o.rtol); break;
        case OPT_ATOL: rc = parse_tol("atol", p.value, &o.atol); break;
        case OPT_EQUAL_NAN: o.equal_nan = 1; break;
        case OPT_BY_INDEX: o.by_index = 1; break;
        case OPT_IGNORE_DTYPE: o.ignore_dtype = 1; break;
        case OPT_TENSORS_ONLY: o.tensors_only = 1; break;
        case CLI_OPT_MAX_DENSE_ID: rc = cli_parse_max_dense("diff", p.value, &olim); break;
        default: break;
        }
    }
    if (rc == CLI_EXIT_OK && id == CLI_PARSE_ERROR) rc = CLI_EXIT_USAGE;
    if (rc == CLI_EXIT_OK && p.npos < 2)
        rc = cli_usage_error("diff", p.npos ? "missing B" : "missing A and B");
    if (rc != CLI_EXIT_OK) {
        cli_parser_free(&p);
        return rc;
    }
    diff_run d;
    memset(&d, 0, sizeof d);
    d.o = &o;
    d.path_a = p.pos[0];
    d.path_b = p.pos[1];
    tio_container *a = NULL, *b = NULL;
    rc = cli_open(d.path_a, NULL, &olim, &a);
    if (rc == CLI_EXIT_OK) rc = cli_open(d.path_b, NULL, &olim, &b);
    if (rc == CLI_EXIT_OK) {
        /* the tensors of both are compared: map each in one call (a hint) */
        (void)tio_container_prefetch(a, NULL);
        (void)tio_container_prefetch(b, NULL);
        d.a = a;
        d.b = b;
        rc = run_diff(&d, p.pos + 2, p.npos - 2);
    }
    for (size_t i = 0; i < d.npairs; i++) {
        json_decref(d.pairs[i].ja);
        json_decref(d.pairs[i].jb);
    }
    free(d.pairs);
    diff_graph_free(&d.graph);
    tio_container_free(a);
    tio_container_free(b);
    cli_parser_free(&p);
    return rc;
}
