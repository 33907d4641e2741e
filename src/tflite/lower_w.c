/* Weights the ONNX -> TFLite lowering reorders (Conv OIHW -> OHWI or 1HWO,
 * MatMul [K, N] -> [N, K], FC columns in H, W, C order for a flattened NHWC
 * input): one strided description, used to permute into memory or, when the
 * source bytes outlive the write (a container tensor's), on the way out as a
 * generated buffer, so that a 100 MB model is never held whole. */
#include "core/sink.h"
#include "tflite/lower.h"

#include <stdlib.h>
#include <string.h>

/* Generated buffers are made in pieces of at most this. */
#define PERM_CHUNK ((size_t)256 << 10)
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

/* A generated buffer's writer: the permuted bytes in pieces. */
static int perm_gen(void *ctx, tio_sink *s, size_t size, tio_error *err) {
    const tio_tl_perm *p = ctx;
    size_t n = size / p->es, per = PERM_CHUNK / p->es;
    uint8_t *buf = malloc(n < per ? (n ? n * p->es : 1) : PERM_CHUNK);
    if (!buf) return tio__nomem(err, "tflite");
    /* the source read by pread() into memory, then permuted there: read in
     * the permutation's order, the file mapping cost a page fault (or a
     * populated page) per 4 KiB, which under a slow MMU was most of the
     * conversion; above PERM_READ_MAX, the mapping (the memory bound) */
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
        rc = tio__sink_write(s, buf, k * p->es, err);
    }
    free(copy);
    free(buf);
    return rc;
}

int tio__tl_pweights(tl *L, const char *name, const tio_tensor *w, const tio_tl_perm *p, int r,
                     const int64_t *d, int32_t *idx) {
    size_t n = (size_t)w->numel, nb = n * p->es;
    if (!name) return tio__tl_nomem(L);
    uint32_t buf;
    int rc;
    if (w->owner == L->c && w->index < L->pr.nc && n) {
        /* the container's bytes outlive the write: permuted on the way */
        tio_tl_perm *q = tio__tl_al(L, sizeof *q);
        if (!q) return tio__tl_nomem(L);
        *q = *p;
        q->plan = L->plan;
        rc = tio__tfl_w_buffer_gen(L->m, nb, perm_gen, q, &buf, L->err);
    } else {
        uint8_t *b = tio__tl_al(L, nb ? nb : 1);
        if (!b) return tio__tl_nomem(L);
        if (n) tio__tl_perm_copy(p, 0, n, b);
        rc = tio__tfl_w_buffer(L->m, -1, b, nb, &buf, L->err);
    }
    return rc ? rc : tio__tl_weights_in(L, name, w->dtype, buf, r, d, idx);
}
