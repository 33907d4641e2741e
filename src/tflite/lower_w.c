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

void tio__tl_perm_copy(const tio_tl_perm *p, uint64_t j0, size_t cnt, uint8_t *dst) {
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
    uint8_t *buf = malloc(n < per ? (n ? n * p->es : 1) : PERM_CHUNK);
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
