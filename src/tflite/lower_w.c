/* Weights the ONNX -> TFLite lowering reorders (Conv OIHW -> OHWI or 1HWO,
 * MatMul [K, N] -> [N, K], FC columns in H, W, C order for a flattened NHWC
 * input): one strided description, used to permute into memory or, when the
 * source bytes outlive the write (a container tensor's), on the way out as a
 * generated buffer, so that a 100 MB model is never held whole. */
#include "core/sink.h"
#include "tflite/lower.h"

#include <stdlib.h>
#include <string.h>

/* Generated buffers are made in pieces of at most this (two of them: the
 * lowering's scratch, TIO_TL_PSCRATCH). */
#define PERM_CHUNK (TIO_TL_PSCRATCH / 2)
/* A weight whose bytes are read into memory to be permuted (perm_gen): from
 * a page up to this (the conversion's anonymous memory stays < 64 MiB). */
#define PERM_READ_MIN ((size_t)4 << 10)
#define PERM_READ_MAX ((size_t)16 << 20)

/* A transposing order's band: destination rows [a, a + k) of dimension 0
 * read a page of each source row (PERM_BAND bytes), see perm_rows; and the
 * destination bytes a generated buffer makes at once for it, at most. */
#define PERM_BAND ((size_t)4 << 10)
#define PERM_BAND_MAX ((size_t)16 << 20)
/* A tile: PERM_TILE source rows by PERM_TILE elements of each (a cache
 * line of float32), read whole into memory of its own and written out as
 * PERM_TILE destination rows of PERM_TILE elements. */
#define PERM_TILE 16

/* Destination elements per index of dimension 0. */
static uint64_t perm_row(const tio_tl_perm *p) {
    uint64_t m = 1;
    for (int k = 1; k < p->nd; k++) m *= (uint64_t)p->d[k];
    return m;
}

/* Whether p transposes: dimension 0 is contiguous in the source and the
 * innermost is not, so a destination row reads one element from each of
 * many source rows (MatMul's [K, N] -> [N, K]). Copied element by element
 * in destination order, each source row's cache line (and, under nested
 * paging, its page's translation) is fetched again for every destination
 * row: 83 % of a 1 GiB conversion. perm_rows reads it once per band. */
static bool perm_transposes(const tio_tl_perm *p) {
    return p->nd >= 2 && p->es <= 4 && p->s[0] == 1 && p->s[p->nd - 1] != 1 &&
           perm_row(p) >= PERM_TILE;
}

/* Moves a tile of rn source rows by in elements (tile row t at t *
 * PERM_TILE) to in destination rows of rn elements, m apart, at o. */
#define PERM_TILE_OUT(T)                                                                     \
    do {                                                                                     \
        const T *tt = (const T *)(const void *)tile;                                         \
        for (size_t ii = 0; ii < in; ii++) {                                                 \
            T row[PERM_TILE];                                                                \
            for (size_t t = 0; t < rn; t++) row[t] = tt[t * PERM_TILE + ii];                 \
            memcpy(o + ii * m * sizeof(T), row, rn * sizeof(T));                            \
        }                                                                                    \
    } while (0)

/* Destination rows [a, a + k) of a transposing p (perm_transposes) at dst:
 * in bands of PERM_BAND / es rows (a page of each source row), each band
 * by tiles. Source rows that lie a power of two apart share the cache's
 * sets, so neither side is read or written an element at a time across
 * rows: each tile reads whole lines of PERM_TILE source rows and writes
 * whole lines of PERM_TILE destination rows. */
static void perm_rows(const tio_tl_perm *p, size_t a, size_t k, uint8_t *dst) {
    const size_t es = p->es, m = (size_t)perm_row(p), band = PERM_BAND / es;
    uint64_t off[PERM_TILE];
    uint32_t tile[PERM_TILE * PERM_TILE]; /* es <= 4 */
    for (size_t b0 = 0; b0 < k; b0 += band) {
        size_t bn = k - b0 < band ? k - b0 : band;
        /* the source offset of destination column r, by its indices */
        int64_t idx[TIO_TL_PERM_DIMS] = {0};
        uint64_t at = 0;
        for (size_t r0 = 0; r0 < m; r0 += PERM_TILE) {
            size_t rn = m - r0 < PERM_TILE ? m - r0 : PERM_TILE;
            for (size_t t = 0; t < rn; t++) {
                off[t] = at + a + b0;
                for (int q = p->nd - 1; q > 0; q--) {
                    at += (uint64_t)p->s[q];
                    if (++idx[q] < p->d[q]) break;
                    at -= (uint64_t)p->d[q] * (uint64_t)p->s[q];
                    idx[q] = 0;
                }
            }
            for (size_t i0 = 0; i0 < bn; i0 += PERM_TILE) {
                size_t in = bn - i0 < PERM_TILE ? bn - i0 : PERM_TILE;
                uint8_t *tb = (uint8_t *)tile, *o = dst + ((b0 + i0) * m + r0) * es;
                for (size_t t = 0; t < rn; t++)
                    memcpy(tb + t * PERM_TILE * es, p->src + (off[t] + i0) * es, in * es);
                switch (es) {
                case 4: PERM_TILE_OUT(uint32_t); break;
                case 2: PERM_TILE_OUT(uint16_t); break;
                default: PERM_TILE_OUT(uint8_t); break;
                }
            }
        }
    }
}

/* cnt destination elements from j0, element by element in destination
 * order (runs along the innermost dimension). */
static void perm_run(const tio_tl_perm *p, uint64_t j0, size_t cnt, uint8_t *dst) {
    /* j0 as indices (outermost first) and its source element */
    int64_t idx[TIO_TL_PERM_DIMS] = {0};
    uint64_t rest = j0, src = 0;
    for (int k = p->nd - 1; k >= 0; k--) {
        idx[k] = (int64_t)(rest % (uint64_t)p->d[k]);
        rest /= (uint64_t)p->d[k];
        src += (uint64_t)idx[k] * (uint64_t)p->s[k];
    }
    const int in = p->nd - 1;
    const uint64_t inner = (uint64_t)p->d[in], step = (uint64_t)p->s[in];
    size_t done = 0;
    while (done < cnt) {
        /* a run along the innermost dimension */
        size_t run = (size_t)(inner - (uint64_t)idx[in]);
        if (run > cnt - done) run = cnt - done;
        const uint8_t *s = p->src + src * p->es;
        uint8_t *o = dst + done * p->es;
        switch (p->es) {
        case 4:
            for (size_t r = 0; r < run; r++) memcpy(o + 4 * r, s + 4 * step * r, 4);
            break;
        case 2:
            for (size_t r = 0; r < run; r++) memcpy(o + 2 * r, s + 2 * step * r, 2);
            break;
        default:
            for (size_t r = 0; r < run; r++) o[r] = s[step * r];
            break;
        }
        done += run;
        if (done == cnt) break;
        /* carry into the outer dimensions */
        src += step * run;
        idx[in] += (int64_t)run;
        for (int k = in; k > 0 && idx[k] == p->d[k]; k--) {
            src -= (uint64_t)p->d[k] * (uint64_t)p->s[k];
            idx[k] = 0;
            idx[k - 1]++;
            src += (uint64_t)p->s[k - 1];
        }
    }
}

void tio__tl_perm_copy(const tio_tl_perm *p, uint64_t j0, size_t cnt, uint8_t *dst) {
    if (!cnt) return;
    uint64_t m = perm_row(p);
    if (!perm_transposes(p) || cnt < 2 * m) {
        perm_run(p, j0, cnt, dst);
        return;
    }
    /* a part row, whole rows by bands, a part row */
    size_t head = (size_t)((m - j0 % m) % m), rows = (size_t)((cnt - head) / m);
    size_t tail = cnt - head - rows * (size_t)m;
    if (head) perm_run(p, j0, head, dst);
    perm_rows(p, (size_t)((j0 + head) / m), rows, dst + head * p->es);
    if (tail) perm_run(p, j0 + head + rows * m, tail, dst + (cnt - tail) * p->es);
}

/* Source elements per outermost destination index, when each index's are
 * one contiguous run of the source (OIHW -> OHWI: an output channel's
 * I * KH * KW); 0 otherwise (1HWO, a transposed matrix). */
static uint64_t outer_block(const tio_tl_perm *p) {
    uint64_t in = 1;
    for (int k = 1; k < p->nd; k++) in *= (uint64_t)p->d[k];
    return p->nd > 1 && (uint64_t)p->s[0] == in ? in : 0;
}

/* A generated buffer's writer: the permuted bytes in pieces.
 *
 * Read in the permutation's order, the file mapping cost a page fault (or a
 * populated page) per 4 KiB, which under a slow MMU was most of the
 * conversion. So the source is read by pread() instead: where the outermost
 * destination index takes one contiguous run of the source, a piece of
 * whole runs at a time (read, permuted and written while in the cache);
 * otherwise the whole weight, from a page up to PERM_READ_MAX (the memory
 * bound); above that, or when the source cannot be read, the mapping. */
/* Writes n permuted elements at b: as they are, or as float16 (p->to16)
 * through h (room for n of them). */
static int perm_put(const tio_tl_perm *p, tio_sink *s, const uint8_t *b, size_t n, uint8_t *h,
                    tio_error *err) {
    if (!p->to16) return tio__sink_write(s, b, n * p->es, err);
    tio__convert_elems(TIO_FLOAT32, TIO_FLOAT16, b, h, n);
    return tio__sink_write(s, h, n * 2, err);
}

static int perm_gen(void *ctx, tio_sink *s, size_t size, tio_error *err) {
    const tio_tl_perm *p = ctx;
    /* the buffer's size: es bytes an element, or 2 for float16 */
    size_t n = size / (p->to16 ? 2 : p->es), per = PERM_CHUNK / p->es;
    size = n * p->es; /* the source's bytes */
    uint64_t blk = outer_block(p);
    size_t bb = (size_t)blk * p->es;
    if (blk && bb <= PERM_READ_MAX && size >= PERM_READ_MIN && size / bb == (size_t)p->d[0] &&
        size % bb == 0) {
        /* whole outer indices per piece, a piece of about PERM_CHUNK */
        size_t rows = bb < PERM_CHUNK ? PERM_CHUNK / bb : 1, d0 = (size_t)p->d[0];
        /* the lowering's scratch, shared by its weights: a heap that grows
         * and shrinks per weight costs its page faults again each time */
        uint8_t *own = p->scratch && bb <= PERM_CHUNK ? NULL : malloc(2 * bb);
        uint8_t *rd = own ? own : p->scratch, *out = rd ? rd + rows * bb : NULL;
        uint8_t *h = p->to16 ? malloc(rows * (size_t)blk * 2) : NULL;
        int rc = rd && (h || !p->to16) ? TIO_OK : tio__nomem(err, "tflite");
        for (size_t a = 0; !rc && a < d0; a += rows) {
            size_t k = d0 - a < rows ? d0 - a : rows;
            tio_tl_perm q = *p;
            q.d[0] = (int64_t)k;
            q.src = p->src + a * bb;
            if (p->plan && tio__plan_pread(p->plan, q.src, k * bb, rd)) q.src = rd;
            tio__tl_perm_copy(&q, 0, k * (size_t)blk, out);
            rc = perm_put(p, s, out, k * (size_t)blk, h, err);
        }
        free(h);
        free(own);
        return rc;
    }
    if (perm_transposes(p)) {
        /* whole bands at a time (perm_rows), up to PERM_BAND_MAX bytes */
        size_t m = (size_t)perm_row(p), rows = PERM_BAND / p->es;
        if (rows > PERM_BAND_MAX / p->es / m) rows = PERM_BAND_MAX / p->es / m;
        if (rows * m > per) per = rows * m;
    }
    uint8_t *buf = malloc(n < per ? (n ? n * p->es : 1) : per * p->es);
    uint8_t *h = p->to16 ? malloc(n < per ? (n ? n * 2 : 1) : per * 2) : NULL;
    if (!buf || (p->to16 && !h)) {
        free(buf);
        free(h);
        return tio__nomem(err, "tflite");
    }
    tio_tl_perm q = *p;
    uint8_t *copy = NULL;
    size_t nb = size;
    if (p->plan && nb >= PERM_READ_MIN && nb <= PERM_READ_MAX && (copy = malloc(nb)) &&
        tio__plan_pread(p->plan, p->src, nb, copy))
        q.src = copy;
    int rc = TIO_OK;
    for (size_t j = 0; !rc && j < n; j += per) {
        size_t k = n - j < per ? n - j : per;
        tio__tl_perm_copy(&q, j, k, buf);
        rc = perm_put(p, s, buf, k, h, err);
    }
    free(copy);
    free(buf);
    free(h);
    return rc;
}

int tio__tl_pweights(tl *L, const char *name, const tio_tensor *w, const tio_tl_perm *p, int r,
                     const int64_t *d, int32_t *idx) {
    size_t n = 1; /* p's elements: w's, or a group's slice of them */
    for (int k = 0; k < p->nd; k++) n *= (size_t)p->d[k];
    bool to16 = tio__tl_cast16(L, w);
    size_t nb = n * (to16 ? 2 : p->es);
    if (!name) return tio__tl_nomem(L);
    uint32_t buf;
    int rc;
    if (w->owner == L->c && w->index < L->pr.nc && n) {
        /* the container's bytes outlive the write: permuted on the way */
        tio_tl_perm *q = tio__tl_al(L, sizeof *q);
        if (!q) return tio__tl_nomem(L);
        *q = *p;
        q->plan = L->plan;
        q->to16 = to16;
        if (!L->pscratch && !(L->pscratch = tio__tl_al(L, TIO_TL_PSCRATCH)))
            return tio__tl_nomem(L);
        q->scratch = L->pscratch;
        rc = tio__tfl_w_buffer_gen(L->m, nb, perm_gen, q, &buf, L->err);
    } else {
        size_t fb = n * p->es; /* the float32 bytes */
        uint8_t *b = tio__tl_al(L, fb ? fb : 1);
        uint8_t *b16 = to16 ? tio__tl_al(L, nb ? nb : 1) : b;
        if (!b || !b16) return tio__tl_nomem(L);
        if (n) tio__tl_perm_copy(p, 0, n, b);
        if (n && to16) tio__convert_elems(TIO_FLOAT32, TIO_FLOAT16, b, b16, n);
        rc = tio__tfl_w_buffer(L->m, -1, b16, nb, &buf, L->err);
    }
    return rc ? rc : tio__tl_weights_in(L, name, to16 ? TIO_FLOAT16 : w->dtype, buf, r, d, idx);
}
