/* tensio stats — summary statistics and a histogram of each tensor's values. */
#include "cli.h"
#include "cli_values.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char stats_help[] =
    "Usage: tensio stats [OPTIONS] FILE [TENSOR...]\n"
    "\n"
    "Statistics of each tensor of FILE (or of the TENSORs named, by name or\n"
    "index): element count, min, max, mean, standard deviation (population),\n"
    "the number of zeros, NaNs and infinities, and a histogram. Min, max,\n"
    "mean, std and the histogram cover the finite values; integers give an\n"
    "exact min and max. float16, bfloat16 and float8 are converted on the fly;\n"
    "complex64/complex128 are summarised by their magnitude |z| (a NaN part\n"
    "counts as NaN).\n"
    "A sparse (COO) tensor is summarised over its stored values (COUNT shows\n"
    "them 'of' the dense element count). Two passes over the data: counts,\n"
    "min/max and the moments (blocks of 1,024 values merged in long double),\n"
    "then the histogram. Tensors are summarised on up to 8 threads (one per\n"
    "processor), the rows printed in order; a tensor of more than 4,194,304\n"
    "values in chunks of that many across them (the same figures on any\n"
    "number of processors).\n"
    "On a terminal the histogram is a sparkline; --json gives its bins.\n"
    "\n"
    "Options:\n"
    "      --json          print one JSON object instead (see docs/cli.md)\n"
    "      --bins N        histogram bins, 1..1000 (default 16)\n"
    "      --sparkline     show the sparkline even when stdout is not a terminal\n"
    "  -f, --format FMT    read FILE as format FMT instead of detecting it\n"
    "      --max-dense-bytes N\n"
    "                      dequantize a quantized tensor to at most N bytes of\n"
    "                      float32 (K, M, G, T suffixes; 'unlimited'; default 256M)\n"
    CLI_PROGRESS_HELP
    "  -h, --help          show this help and exit\n";

enum { OPT_HELP = 1, OPT_JSON, OPT_BINS, OPT_SPARK, OPT_FORMAT };

static const cli_option stats_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"json", 0, 0, OPT_JSON},
    {"bins", 0, 1, OPT_BINS},
    {"sparkline", 0, 0, OPT_SPARK},
    {"format", 'f', 1, OPT_FORMAT},
    CLI_OPT_MAX_DENSE,
    CLI_OPT_PROGRESS,
};

#define DEFAULT_BINS 16
#define MAX_BINS 1000

typedef struct tensor_stats {
    cli_num_kind kind;
    uint64_t count;  /* values looked at (COO: nnz) */
    uint64_t finite; /* of them finite (every integer is) */
    uint64_t zeros, nans, infs;
    double min, max; /* of the finite values */
    int64_t imin, imax;
    uint64_t umin, umax;
    long double mean, m2; /* of the finite values (blocks merged) */
    size_t nbins;
    double lo, hi;     /* histogram range */
    double scale;      /* 1, or 0.5 when hi - lo overflows: bins are found on
                          the halved values (exact) */
    uint64_t *counts;  /* nbins, or NULL when no finite value */
} tensor_stats;

/* Values are taken STATS_BLOCK at a time into doubles: the block's
 * counts, extremes and moments are found in plain double loops (the
 * compiler vectorizes them), and the blocks are merged in long double. One
 * element at a time, with a long double division each (Welford), took 25 ns
 * per element: 6.8 s for 1 GiB of float32. */
#define STATS_BLOCK 1024

/* Elements p[0..n) as doubles (cli_load_f64's values). */
static void load_block(tio_dtype dt, const uint8_t *p, size_t n, double *x) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (dt == TIO_FLOAT32) {
        for (size_t i = 0; i < n; i++) {
            float f;
            memcpy(&f, p + 4 * i, sizeof f);
            x[i] = (double)f;
        }
        return;
    }
    if (dt == TIO_FLOAT64) {
        memcpy(x, p, n * sizeof *x);
        return;
    }
    if (dt == TIO_BFLOAT16) {
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, sizeof h);
            uint32_t u = (uint32_t)h << 16; /* the upper half of a float */
            float f;
            memcpy(&f, &u, sizeof f);
            x[i] = (double)f;
        }
        return;
    }
#endif
    size_t es = tio_dtype_size(dt);
    for (size_t i = 0; i < n; i++) x[i] = cli_load_f64(dt, p + i * es);
}

/* A block's finite values: their count, zeros, extremes (the first of
 * equal ones), sum and sum of squared deviations from their mean. */
typedef struct block_moments {
    uint64_t finite, zeros, nans, infs;
    double min, max;
    long double mean, m2;
} block_moments;

/* The first element equal to v (+0 and -0 are equal): which of equal
 * extremes is kept, as one element at a time keeps it. */
static double first_equal(const double *x, size_t n, double v) {
    for (size_t i = 0; i < n; i++)
        if (x[i] == v) return x[i];
    return v;
}

static void block_add(block_moments *b, const double *x, size_t n) {
    memset(b, 0, sizeof *b);
    /* four of each, so that the adds and compares do not wait on each other */
    double sum[4] = {0, 0, 0, 0}, mn[4], mx[4], probe[4] = {0, 0, 0, 0};
    uint64_t zeros = 0;
    for (int k = 0; k < 4; k++) {
        mn[k] = INFINITY;
        mx[k] = -INFINITY;
    }
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) {
            double v = x[i + (size_t)k];
            sum[k] += v;
            probe[k] += v * 0.0; /* NaN from a NaN or an infinity */
            mn[k] = v < mn[k] ? v : mn[k];
            mx[k] = v > mx[k] ? v : mx[k];
            zeros += v == 0;
        }
    for (; i < n; i++) {
        double v = x[i];
        sum[0] += v;
        probe[0] += v * 0.0;
        mn[0] = v < mn[0] ? v : mn[0];
        mx[0] = v > mx[0] ? v : mx[0];
        zeros += v == 0;
    }
    double total = (sum[0] + sum[1]) + (sum[2] + sum[3]);
    uint64_t fin = n;
    if (isnan((probe[0] + probe[1]) + (probe[2] + probe[3]))) { /* not all finite */
        fin = zeros = 0;
        total = 0;
        mn[0] = INFINITY;
        mx[0] = -INFINITY;
        for (i = 0; i < n; i++) {
            double v = x[i];
            if (isnan(v)) {
                b->nans++;
            } else if (isinf(v)) {
                b->infs++;
            } else {
                fin++;
                zeros += v == 0;
                mn[0] = v < mn[0] ? v : mn[0];
                mx[0] = v > mx[0] ? v : mx[0];
                total += v;
            }
        }
    } else {
        for (int k = 1; k < 4; k++) {
            mn[0] = mn[k] < mn[0] ? mn[k] : mn[0];
            mx[0] = mx[k] > mx[0] ? mx[k] : mx[0];
        }
    }
    b->finite = fin;
    b->zeros = zeros;
    if (!fin) return;
    b->min = first_equal(x, n, mn[0]);
    b->max = first_equal(x, n, mx[0]);
    double mean = total / (double)fin, m2[4] = {0, 0, 0, 0}, c[4] = {0, 0, 0, 0};
    if (isfinite(mean)) {
        for (i = 0; i + 4 <= n; i += 4)
            for (int k = 0; k < 4; k++) {
                double v = x[i + (size_t)k];
                double d = isfinite(v) ? v - mean : 0.0;
                m2[k] += d * d;
                c[k] += d;
            }
        for (; i < n; i++) {
            double d = isfinite(x[i]) ? x[i] - mean : 0.0;
            m2[0] += d * d;
            c[0] += d;
        }
    }
    double sq = (m2[0] + m2[1]) + (m2[2] + m2[3]), cs = (c[0] + c[1]) + (c[2] + c[3]);
    if (isfinite(mean) && isfinite(sq)) {
        b->mean = mean;
        b->m2 = (long double)sq - (long double)cs * cs / (long double)fin;
        return;
    }
    /* float64 extremes overflow a double sum: the block again in long double */
    long double ls = 0, lm2 = 0, lc = 0;
    for (i = 0; i < n; i++)
        if (isfinite(x[i])) ls += x[i];
    long double lmean = ls / (long double)fin;
    for (i = 0; i < n; i++)
        if (isfinite(x[i])) {
            long double d = (long double)x[i] - lmean;
            lm2 += d * d;
            lc += d;
        }
    b->mean = lmean;
    b->m2 = lm2 - lc * lc / (long double)fin;
}

/* Merges a block into the running statistics (Chan, Golub and LeVeque). */
static void merge(tensor_stats *s, const block_moments *b) {
    s->nans += b->nans;
    s->infs += b->infs;
    if (!b->finite) return;
    s->zeros += b->zeros;
    if (s->finite == 0 || b->min < s->min) s->min = b->min;
    if (s->finite == 0 || b->max > s->max) s->max = b->max;
    long double na = (long double)s->finite, nb = (long double)b->finite, nt = na + nb;
    long double delta = b->mean - s->mean;
    s->mean += delta * (nb / nt);
    s->m2 += b->m2 + delta * delta * (na * nb / nt);
    s->finite += b->finite;
}

/* Pass 1 over one chunk (s zeroed): counts, min/max, moments. */
static void chunk_moments(tensor_stats *s, tio_dtype dt, const uint8_t *p, uint64_t n) {
    size_t es = tio_dtype_size(dt);
    s->kind = cli_dtype_kind(dt);
    s->count = n;
    double x[STATS_BLOCK];
    while (n) {
        size_t k = n < STATS_BLOCK ? (size_t)n : STATS_BLOCK;
        if (s->kind == CLI_NUM_INT) {
            for (size_t i = 0; i < k; i++) {
                int64_t v = cli_load_i64(dt, p + i * es);
                if ((s->finite == 0 && i == 0) || v < s->imin) s->imin = v;
                if ((s->finite == 0 && i == 0) || v > s->imax) s->imax = v;
                x[i] = (double)v;
            }
        } else if (s->kind == CLI_NUM_UINT) {
            for (size_t i = 0; i < k; i++) {
                uint64_t v = cli_load_u64(dt, p + i * es);
                if ((s->finite == 0 && i == 0) || v < s->umin) s->umin = v;
                if ((s->finite == 0 && i == 0) || v > s->umax) s->umax = v;
                x[i] = (double)v;
            }
        } else {
            load_block(dt, p, k, x);
        }
        block_moments b;
        block_add(&b, x, k);
        merge(s, &b);
        p += k * es;
        n -= k;
    }
}

/* Merges a chunk's pass 1 into the tensor's (the chunks in order). */
static void merge_chunk(tensor_stats *s, const tensor_stats *c) {
    if (c->kind == CLI_NUM_INT && c->count) {
        if (!s->count || c->imin < s->imin) s->imin = c->imin;
        if (!s->count || c->imax > s->imax) s->imax = c->imax;
    } else if (c->kind == CLI_NUM_UINT && c->count) {
        if (!s->count || c->umin < s->umin) s->umin = c->umin;
        if (!s->count || c->umax > s->umax) s->umax = c->umax;
    }
    s->kind = c->kind;
    s->count += c->count;
    block_moments b = {c->finite, c->zeros, c->nans, c->infs, c->min, c->max, c->mean, c->m2};
    merge(s, &b);
}

/* The bin of x as numpy.histogram(bins=n, range=(lo, hi)) on float64 finds
 * it: a first guess from the scaled offset, corrected against the edges
 * lo + i*step (the last bin is closed). The correction decides: a guess
 * within one bin of x's gives the same bin. */
typedef struct binner {
    double lo, hi, step;
    double inv; /* n / (hi - lo) */
    double tol; /* a guess this close to a whole number may be a bin off */
    size_t n;
    int near_only; /* correct only guesses within tol of a whole number */
} binner;

static binner binner_make(double lo, double hi, size_t n) {
    binner b = {lo, hi, (hi - lo) / (double)n, (double)n / (hi - lo), 0, n, 0};
    /* the guess's rounding (a few ulps of f < n) and the edges' (lo +
     * i*step: ulps of |lo|, |hi| and i*step), in bins, with room to spare */
    b.tol = 16 * DBL_EPSILON * ((double)n + (fabs(lo) + fabs(hi)) / b.step + 1);
    b.near_only = hi > lo && isfinite(b.inv) && isfinite(b.tol) && b.tol < 0.125;
    return b;
}

/* Moves the guess i to x's bin, without branches: where the values crowd
 * an edge (random bits as float32, over a range symmetric about 0: half of
 * them on either side of the middle edge) a branch here was mispredicted
 * every other value, 3.7x slower. */
static size_t bin_fix(const binner *b, double x, size_t i) {
    i -= (size_t)(x < (double)i * b->step + b->lo) & (size_t)(i > 0);
    i += (size_t)(x >= (double)(i + 1) * b->step + b->lo) & (size_t)(i + 1 < b->n);
    return i;
}

static size_t bin_of(const binner *b, double x) {
    if (b->near_only) {
        /* a multiplication where numpy divides, and the edges compared only
         * when the guess lies near one (otherwise the two agree) */
        double f = (x - b->lo) * b->inv;
        if (!(f > 0)) return 0;
        if (f >= (double)b->n) return b->n - 1;
        size_t i = (size_t)f;
        double r = f - (double)i;
        return r < b->tol || r > 1 - b->tol ? bin_fix(b, x, i) : i;
    }
    if (!(b->hi > b->lo)) return b->n / 2; /* a value too large for +-0.5 to widen */
    double f = (x - b->lo) / (b->hi - b->lo) * (double)b->n;
    if (!(f >= 0)) f = 0;
    return bin_fix(b, x, f >= (double)b->n ? b->n - 1 : (size_t)f);
}

/* Pass 2 over one chunk: its finite values' bins added to counts (nbins).
 * CLI_EXIT_FAIL: out of memory. */
static int chunk_histogram(const binner *bn, double scale, tio_dtype dt, const uint8_t *p,
                           uint64_t n, uint64_t *counts) {
    size_t nbins = bn->n, es = tio_dtype_size(dt);
    /* four sets of counts, element i into set i % 4: consecutive values in
     * the same bin do not wait on each other's increment */
    uint64_t *sets = calloc(4 * nbins, sizeof *sets);
    if (!sets) return CLI_EXIT_FAIL;
    double x[STATS_BLOCK];
    while (n) {
        size_t k = n < STATS_BLOCK ? (size_t)n : STATS_BLOCK;
        load_block(dt, p, k, x);
        for (size_t i = 0; i < k; i++)
            if (isfinite(x[i])) sets[(i & 3) * nbins + bin_of(bn, x[i] * scale)]++;
        p += k * es;
        n -= k;
    }
    for (size_t b = 0; b < nbins; b++)
        counts[b] += sets[b] + sets[nbins + b] + sets[2 * nbins + b] + sets[3 * nbins + b];
    free(sets);
    return CLI_EXIT_OK;
}

/* Pass 2's range: the finite values' [min, max] (numpy widens a single
 * value v to [v - 0.5, v + 0.5]), halved where its width overflows. */
static binner histogram_range(tensor_stats *s, size_t nbins) {
    s->nbins = nbins;
    s->lo = s->min;
    s->hi = s->max;
    if (s->lo == s->hi) {
        s->lo -= 0.5;
        s->hi += 0.5;
    }
    s->scale = isfinite(s->hi - s->lo) ? 1.0 : 0.5;
    return binner_make(s->lo * s->scale, s->hi * s->scale, nbins);
}

static double edge(const tensor_stats *s, size_t i) {
    if (i == s->nbins) return s->hi;
    double lo = s->lo * s->scale, hi = s->hi * s->scale;
    return ((double)i * ((hi - lo) / (double)s->nbins) + lo) / s->scale;
}

static double stats_std(const tensor_stats *s) {
    /* the root in long double: the variance of float64 extremes overflows double */
    /* m2 is a sum of squares less the square of a sum: below 0 by the
     * rounding where the squares underflow (subnormal deviations: NumPy's
     * std is 0 there) */
    return s->finite && s->m2 > 0 ? (double)sqrtl(s->m2 / (long double)s->finite) : 0.0;
}

/* The sparkline: one of ▁▂▃▄▅▆▇█ per bin, scaled to the fullest; a space
 * for an empty bin. */
static void sparkline(const tensor_stats *s, char *buf, size_t size) {
    static const char *const bars[8] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                        "\u2585", "\u2586", "\u2587", "\u2588"};
    uint64_t top = 0;
    for (size_t i = 0; i < s->nbins; i++)
        if (s->counts[i] > top) top = s->counts[i];
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->nbins && top; i++) {
        const char *c = " ";
        if (s->counts[i]) {
            /* ceil(8 * count / top) in 1..8, without overflow */
            long double lv = ceill(8.0L * (long double)s->counts[i] / (long double)top);
            size_t lvl = lv < 1 ? 1 : lv > 8 ? 8 : (size_t)lv;
            c = bars[lvl - 1];
        }
        size_t len = strlen(c);
        if (used + len + 1 > size) break;
        memcpy(buf + used, c, len + 1);
        used += len;
    }
}

/* A tensor is summarised STATS_CHUNK values at a time, each pass's chunks
 * merged in order: those of a tensor of more than one on worker threads
 * (cli_ahead), where the listing reaches it (stats_skips), so that one
 * large tensor is not left to one processor; the figures are the same on
 * any number of them. */
#define STATS_CHUNK ((uint64_t)1 << 22)
#define CHUNK_WINDOW 16

typedef struct chunk_job {
    tio_dtype dt;
    const uint8_t *p;
    uint64_t n;
    int pass; /* 1: the moments, 2: the histogram over bn */
    binner bn;
    double scale;
} chunk_job;

typedef struct chunk_slot {
    int rc;
    tensor_stats part;         /* pass 1 */
    uint64_t counts[MAX_BINS]; /* pass 2 */
} chunk_slot;

static void chunk_one(const void *ctx, size_t k, void *slot) {
    const chunk_job *j = ctx;
    chunk_slot *o = slot;
    uint64_t at = (uint64_t)k * STATS_CHUNK;
    uint64_t m = j->n - at < STATS_CHUNK ? j->n - at : STATS_CHUNK;
    const uint8_t *q = j->p + (size_t)at * tio_dtype_size(j->dt);
    o->rc = CLI_EXIT_OK;
    if (j->pass == 1) {
        memset(&o->part, 0, sizeof o->part);
        chunk_moments(&o->part, j->dt, q, m);
    } else {
        memset(o->counts, 0, j->bn.n * sizeof *o->counts);
        o->rc = chunk_histogram(&j->bn, j->scale, j->dt, q, m, o->counts);
    }
}

/* One pass over every chunk, merged into s. CLI_EXIT_FAIL: out of memory. */
static int run_chunks(const chunk_job *j, tensor_stats *s) {
    size_t nc = (size_t)(j->n / STATS_CHUNK + (j->n % STATS_CHUNK != 0));
    cli_ahead *a = cli_ahead_start(nc, sizeof(chunk_slot), CHUNK_WINDOW, chunk_one, NULL,
                                   NULL, j);
    chunk_slot mine;
    int rc = CLI_EXIT_OK;
    for (size_t k = 0; k < nc && rc == CLI_EXIT_OK; k++) {
        const chunk_slot *o = cli_ahead_next(a, k, chunk_one, j, &mine);
        if (j->pass == 1)
            merge_chunk(s, &o->part);
        else if ((rc = o->rc) == CLI_EXIT_OK)
            for (size_t b = 0; b < j->bn.n; b++) s->counts[b] += o->counts[b];
    }
    cli_ahead_free(a);
    return rc;
}

/* Both passes. CLI_EXIT_FAIL: out of memory. */
static int summarise(tensor_stats *s, tio_dtype dt, const uint8_t *p, uint64_t n,
                     size_t nbins) {
    s->kind = cli_dtype_kind(dt);
    chunk_job j = {dt, p, n, 1, binner_make(0, 1, 1), 1.0};
    run_chunks(&j, s);
    s->nbins = nbins;
    if (s->finite == 0) return CLI_EXIT_OK;
    s->counts = calloc(nbins, sizeof *s->counts);
    if (!s->counts) return CLI_EXIT_FAIL;
    j.pass = 2;
    j.bn = histogram_range(s, nbins);
    j.scale = s->scale;
    return run_chunks(&j, s);
}

/* A tensor's statistics; CLI_EXIT_FAIL with the reason in why (for
 * "tensio: " on stderr) when it cannot be summarised. Runs on the workers
 * (stats_slot) as well as in the listing. */
static int compute(const char *path, size_t index, const tio_tensor *t, size_t nbins,
                   uint64_t max_dense, tensor_stats *s, char *why, size_t why_size) {
    memset(s, 0, sizeof *s);
    tio_dtype dt = tio_tensor_dtype(t);
    const uint8_t *p = tio_tensor_data(t);
    uint64_t n = tio_tensor_layout(t) == TIO_LAYOUT_COO ? tio_tensor_nnz(t)
                                                        : tio_tensor_numel(t);
    cli_elems q; /* a quantized tensor: its values dequantized to float32 */
    memset(&q, 0, sizeof q);
    if (tio_tensor_layout(t) == TIO_LAYOUT_QUANT) {
        tio_error err;
        if (cli_elems_init(&q, t, max_dense, &err) != TIO_OK) {
            snprintf(why, why_size, "%s: tensor %zu: %s", path, index, cli_errmsg(&err));
            return CLI_EXIT_FAIL;
        }
        p = q.dense;
        dt = TIO_FLOAT32;
    }
    int rc = CLI_EXIT_FAIL;
    if (dt == TIO_STRING)
        snprintf(why, why_size,
                 "%s: tensor %zu is a string tensor: it has no numeric values to summarise",
                 path, index);
    else if (tio_dtype_size(dt) == 0 || (n && !p))
        snprintf(why, why_size, "%s: tensor %zu: no data to summarise", path, index);
    else if (summarise(s, dt, p, n, nbins) != CLI_EXIT_OK)
        snprintf(why, why_size, "out of memory");
    else
        rc = CLI_EXIT_OK;
    cli_elems_free(&q);
    return rc;
}

/* Statistics made ahead of the listing (cli_ahead): every tensor but the
 * quantized ones, whose dequantized copies (up to max_dense_bytes each) are
 * made one at a time, in the listing, and those split into chunks. */
typedef struct stats_job {
    const char *path;
    const tio_container *c;
    const size_t *sel;
    size_t nbins;
    uint64_t max_dense;
} stats_job;

typedef struct stats_slot {
    tensor_stats s;
    int rc;
    char why[TIO_ERROR_MESSAGE_MAX + 256];
} stats_slot;

static size_t job_index(const stats_job *j, size_t k) { return j->sel ? j->sel[k] : k; }

static void stats_one(const void *ctx, size_t k, void *slot) {
    const stats_job *j = ctx;
    stats_slot *o = slot;
    size_t i = job_index(j, k);
    o->rc = compute(j->path, i, tio_container_tensor(j->c, i), j->nbins, j->max_dense, &o->s,
                    o->why, sizeof o->why);
}

/* Left to the listing: quantized tensors, and those of more than one chunk
 * (their chunks on the workers). */
static int stats_skips(const void *ctx, size_t k) {
    const stats_job *j = ctx;
    const tio_tensor *t = tio_container_tensor(j->c, job_index(j, k));
    tio_layout l = tio_tensor_layout(t);
    return l == TIO_LAYOUT_QUANT ||
           (l == TIO_LAYOUT_COO ? tio_tensor_nnz(t) : tio_tensor_numel(t)) > STATS_CHUNK;
}

static void stats_cleanup(const void *ctx, void *slot) {
    (void)ctx;
    free(((stats_slot *)slot)->s.counts);
}

/* ----------------------------------------------------------------- text */

static void fmt_min_max(const tensor_stats *s, int max, char *buf, size_t size) {
    if (s->finite == 0)
        snprintf(buf, size, "-");
    else if (s->kind == CLI_NUM_INT)
        snprintf(buf, size, "%lld", (long long)(max ? s->imax : s->imin));
    else if (s->kind == CLI_NUM_UINT)
        snprintf(buf, size, "%llu", (unsigned long long)(max ? s->umax : s->umin));
    else
        cli_format_double(buf, size, max ? s->max : s->min, 7);
}

static void add_row(cli_table *tab, size_t index, const tio_tensor *t, const tensor_stats *s,
                    int spark) {
    const char *name = tio_tensor_name(t);
    char *ename = cli_name_escape(name);
    char *shape = cli_shape_string(t);
    const char *dtype = tio_dtype_name(tio_tensor_dtype(t));
    char lo[48], hi[48], mean[48], sd[48];
    fmt_min_max(s, 0, lo, sizeof lo);
    fmt_min_max(s, 1, hi, sizeof hi);
    if (s->finite) {
        cli_format_double(mean, sizeof mean, (double)s->mean, 7);
        cli_format_double(sd, sizeof sd, stats_std(s), 7);
    } else {
        snprintf(mean, sizeof mean, "-");
        snprintf(sd, sizeof sd, "-");
    }
    cli_table_add(tab, "%zu", index);
    cli_table_add(tab, "%s", ename ? ename : "-");
    cli_table_add(tab, "%s", dtype ? dtype : "?");
    cli_table_add(tab, "%s", shape ? shape : "?");
    if (tio_tensor_layout(t) == TIO_LAYOUT_COO)
        cli_table_add(tab, "%llu of %llu", (unsigned long long)s->count,
                      (unsigned long long)tio_tensor_numel(t));
    else
        cli_table_add(tab, "%llu", (unsigned long long)s->count);
    cli_table_add(tab, "%s", lo);
    cli_table_add(tab, "%s", hi);
    cli_table_add(tab, "%s", mean);
    cli_table_add(tab, "%s", sd);
    cli_table_add(tab, "%llu", (unsigned long long)s->zeros);
    cli_table_add(tab, "%llu", (unsigned long long)s->nans);
    cli_table_add(tab, "%llu", (unsigned long long)s->infs);
    if (spark) {
        char line[MAX_BINS * 3 + 1];
        if (s->counts) {
            sparkline(s, line, sizeof line);
            cli_table_add(tab, "%s", line);
        } else {
            cli_table_add(tab, "-");
        }
    }
    free(ename);
    free(shape);
}

/* ----------------------------------------------------------------- JSON */

static json_t *json_min_max(const tensor_stats *s, int max) {
    if (s->finite == 0) return json_null();
    if (s->kind == CLI_NUM_INT) return json_integer((json_int_t)(max ? s->imax : s->imin));
    if (s->kind == CLI_NUM_UINT) {
        uint64_t v = max ? s->umax : s->umin;
        /* jansson's integers are int64: a larger uint64 as its decimal string */
        if (v > (uint64_t)INT64_MAX) {
            char b[24];
            snprintf(b, sizeof b, "%llu", (unsigned long long)v);
            return json_string(b);
        }
        return json_integer((json_int_t)v);
    }
    return cli_json_double(max ? s->max : s->min);
}

static json_t *json_histogram(const tensor_stats *s) {
    if (!s->counts) return json_null();
    json_t *h = json_object(), *edges = json_array(), *counts = json_array();
    int bad = !h || !edges || !counts;
    bad |= h && cli_json_set(h, "edges", edges);
    bad |= h && cli_json_set(h, "counts", counts);
    for (size_t i = 0; i <= s->nbins && !bad; i++) {
        bad |= json_array_append_new(edges, cli_json_double(edge(s, i))) != 0;
        if (i < s->nbins)
            bad |= json_array_append_new(counts, json_integer((json_int_t)s->counts[i])) != 0;
    }
    if (bad) {
        if (!h) {
            json_decref(edges);
            json_decref(counts);
        }
        json_decref(h);
        return NULL;
    }
    return h;
}

static json_t *json_tensor(size_t index, const tio_tensor *t, const tensor_stats *s) {
    json_t *o = json_object();
    if (!o) return NULL;
    int coo = tio_tensor_layout(t) == TIO_LAYOUT_COO;
    int bad = cli_json_set(o, "index", json_integer((json_int_t)index));
    bad |= cli_json_set(o, "name", cli_json_str(tio_tensor_name(t)));
    bad |= cli_json_set(o, "dtype", cli_json_str(tio_dtype_name(tio_tensor_dtype(t))));
    bad |= cli_json_set(o, "shape", cli_json_shape(t));
    bad |= cli_json_set(o, "layout", json_string(cli_layout_name(tio_tensor_layout(t))));
    bad |= cli_json_set(o, "numel", json_integer((json_int_t)tio_tensor_numel(t)));
    if (coo) bad |= cli_json_set(o, "nnz", json_integer((json_int_t)tio_tensor_nnz(t)));
    bad |= cli_json_set(o, "count", json_integer((json_int_t)s->count));
    bad |= cli_json_set(o, "finite", json_integer((json_int_t)s->finite));
    bad |= cli_json_set(o, "min", json_min_max(s, 0));
    bad |= cli_json_set(o, "max", json_min_max(s, 1));
    bad |= cli_json_set(o, "mean", s->finite ? cli_json_double((double)s->mean) : json_null());
    bad |= cli_json_set(o, "std", s->finite ? cli_json_double(stats_std(s)) : json_null());
    bad |= cli_json_set(o, "zeros", json_integer((json_int_t)s->zeros));
    bad |= cli_json_set(o, "nan", json_integer((json_int_t)s->nans));
    bad |= cli_json_set(o, "inf", json_integer((json_int_t)s->infs));
    bad |= cli_json_set(o, "histogram", json_histogram(s));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* -------------------------------------------------------------- command */

static int parse_bins(const char *v, size_t *out) {
    errno = 0;
    char *end = NULL;
    unsigned long long n = v[0] >= '0' && v[0] <= '9' ? strtoull(v, &end, 10) : 0;
    if (errno || !end || *end || n < 1 || n > MAX_BINS)
        return cli_usage_error("stats", "--bins: '%s' is not a count from 1 to %d", v,
                               MAX_BINS);
    *out = (size_t)n;
    return CLI_EXIT_OK;
}

static int run_stats(const char *path, const tio_container *c, const size_t *sel,
                     size_t nsel, size_t nbins, int json, int spark, int progress) {
    size_t n = sel ? nsel : tio_container_count(c);
    /* bytes summarised, by tensor */
    cli_progress prog;
    cli_progress_init(&prog, progress, "stats", NULL);
    uint64_t done = 0, total = 0;
    for (size_t k = 0; k < n; k++)
        total += tio_tensor_nbytes(tio_container_tensor(c, sel ? sel[k] : k));
    json_t *root = NULL, *list = NULL;
    cli_table tab;
    cli_table_init(&tab, spark ? 13 : 12, 1u << 0 | 1u << 4 | 1u << 9 | 1u << 10 | 1u << 11);
    if (json) {
        root = json_object();
        list = json_array();
        if (!root || !list || cli_json_set(root, "file", cli_json_str(path)) ||
            cli_json_set(root, "format", cli_json_str(tio_container_format(c))) ||
            cli_json_set(root, "tensors", list)) {
            json_decref(root);
            if (!root) json_decref(list);
            cli_table_free(&tab);
            return cli_error("out of memory");
        }
    } else {
        static const char *const head[] = {"INDEX", "NAME", "DTYPE", "SHAPE", "COUNT",
                                           "MIN",   "MAX",  "MEAN",  "STD",   "ZEROS",
                                           "NAN",   "INF",  "HISTOGRAM"};
        for (size_t k = 0; k < tab.ncols; k++) cli_table_add(&tab, "%s", head[k]);
    }
    int rc = CLI_EXIT_OK, skipped = 0;
    tio_limits lim;
    tio_container_get_limits(c, &lim);
    stats_job job = {path, c, sel, nbins, lim.max_dense_bytes};
    cli_ahead *ahead = cli_ahead_start(n, sizeof(stats_slot), 16, stats_one, stats_skips,
                                       stats_cleanup, &job);
    stats_slot mine;
    for (size_t k = 0; k < n && rc == CLI_EXIT_OK; k++) {
        size_t i = sel ? sel[k] : k;
        const tio_tensor *t = tio_container_tensor(c, i);
        stats_slot *made = cli_ahead_next(ahead, k, stats_one, &job, &mine);
        tensor_stats s = made->s;
        /* a tensor that cannot be summarised (said on stderr) is left out;
         * the others are listed and the exit status is 1 */
        done += tio_tensor_nbytes(t);
        cli_progress_update(&prog, done, total);
        if (made->rc != CLI_EXIT_OK) {
            cli_progress_pause(&prog);
            cli_error("%s", made->why);
            skipped = 1;
            free(s.counts);
            continue;
        }
        {
            if (json) {
                json_t *o = json_tensor(i, t, &s);
                if (!o || json_array_append_new(list, o) != 0) rc = cli_error("out of memory");
            } else {
                add_row(&tab, i, t, &s, spark);
            }
        }
        free(s.counts);
    }
    cli_ahead_free(ahead);
    cli_progress_end(&prog);
    if (json) {
        if (rc == CLI_EXIT_OK) {
            rc = cli_json_print(root);
            return rc == CLI_EXIT_OK && skipped ? CLI_EXIT_FAIL : rc;
        }
        json_decref(root);
    } else if (rc == CLI_EXIT_OK) {
        rc = tab.nomem ? cli_error("out of memory") : cli_table_print(&tab, stdout);
    }
    cli_table_free(&tab);
    return rc == CLI_EXIT_OK && skipped ? CLI_EXIT_FAIL : rc;
}

int cli_cmd_stats(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "stats", argc, argv, stats_opts,
                             sizeof stats_opts / sizeof stats_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    int json = 0, spark = isatty(STDOUT_FILENO), progress = CLI_PROGRESS_AUTO, id;
    size_t nbins = DEFAULT_BINS;
    const char *format = NULL;
    tio_limits olim; /* 0: the defaults */
    memset(&olim, 0, sizeof olim);
    while (rc == CLI_EXIT_OK && (id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(stats_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_JSON: json = 1; break;
        case OPT_BINS: rc = parse_bins(p.value, &nbins); break;
        case OPT_SPARK: spark = 1; break;
        case CLI_OPT_PROGRESS_ID: progress = CLI_PROGRESS_ON; break;
        case CLI_OPT_NO_PROGRESS_ID: progress = CLI_PROGRESS_OFF; break;
        case OPT_FORMAT: format = p.value; break;
        case CLI_OPT_MAX_DENSE_ID: rc = cli_parse_max_dense("stats", p.value, &olim); break;
        default: break;
        }
    }
    if (rc == CLI_EXIT_OK && id == CLI_PARSE_ERROR) rc = CLI_EXIT_USAGE;
    if (rc == CLI_EXIT_OK && p.npos == 0) rc = cli_usage_error("stats", "missing FILE");
    if (rc == CLI_EXIT_OK && format) rc = cli_check_format("stats", "--format", format);
    if (rc != CLI_EXIT_OK) {
        cli_parser_free(&p);
        return rc;
    }
    tio_container *c = NULL;
    rc = cli_open(p.pos[0], format, &olim, &c);
    size_t *sel = NULL, nsel = p.npos - 1;
    /* every tensor is read: map the file in one call (a hint) */
    if (rc == CLI_EXIT_OK && !nsel) (void)tio_container_prefetch(c, NULL);
    if (rc == CLI_EXIT_OK && nsel) {
        sel = calloc(nsel, sizeof *sel);
        if (!sel) rc = cli_error("out of memory");
        for (size_t k = 0; k < nsel && rc == CLI_EXIT_OK; k++)
            rc = cli_select_tensor(p.pos[0], c, p.pos[k + 1], &sel[k]);
    }
    if (rc == CLI_EXIT_OK) rc = run_stats(p.pos[0], c, sel, nsel, nbins, json, spark, progress);
    free(sel);
    tio_container_free(c);
    cli_parser_free(&p);
    return rc;
}
