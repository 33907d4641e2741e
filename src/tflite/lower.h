/*
 * ONNX -> TensorFlow Lite lowering (src/tflite/lower.c, lower_ops.c): the
 * state and the helpers the two files share. lower.c: tensors, the forms of a
 * value (ONNX layout, NHWC) and the driver; lower_ops.c: one routine per kind
 * of the table (src/tflite/lowmap.c). Not for other modules.
 */
#ifndef TIO_TFLITE_LOWER_H
#define TIO_TFLITE_LOWER_H

#include "graph/prep.h"
#include "tflite/lowmap.h"
#include "tflite/write.h"

#define TFL "tflite"
#define LMAX 8
/* the fused activation the preparation records on a node */
#define ACT_ATTR "tflite.fused_activation_function"

static const int P4[4] = {0, 2, 3, 1}; /* NHWC dim i is NCHW dim P4[i] */
static const int Q4[4] = {0, 3, 1, 2}; /* NCHW dim a is NHWC dim Q4[a] */
/* A 5-D value is a 4-D one with its channels split in two ([N, g, C/g, H,
 * W], as channel shuffles make it): its form 1 is [N, H, W, g, C/g]. */
static const int P5[5] = {0, 3, 4, 1, 2}; /* its own inverse */

/* Form 1's dim order for a value of rank r (NULL: it has none). */
static inline const int *tio__tl_perm_of(int r) { return r == 4 ? P4 : r == 5 ? P5 : NULL; }

/* A value of a QDQ model (src/tflite/lower_q.c): quantized (q), of TFLite
 * type `type`; cv: the constant a DequantizeLinear views (-1: none); src:
 * the value a DequantizeLinear views, or the operator's result a
 * QuantizeLinear takes over (-1: none); deq: a DequantizeLinear output read
 * in float (a DEQUANTIZE). */
typedef struct tl_q {
    const tfl_wquant *q;
    int32_t type;
    int64_t cv, src;
    /* a quantized constant: cv's tensor, or a Transpose of one (made here) */
    const tio_tensor *ct;
    bool deq;
} tl_q;

typedef struct tl {
    tio_write_plan *plan;
    const tio_container *c;
    tio_gprepped pr;
    const tio_graph *g;
    tfl_wmodel *m;
    tio_error *err;
    int32_t (*t)[2];  /* per value: its tensor in the ONNX layout, in NHWC (-1: none) */
    uint8_t *nonneg;  /* per value: >= 0 (a Relu, Relu6 or Sigmoid made it) */
    /* per value: a flattened 4-D value [N, C*H*W] read only by fully connected
     * layers (flat_ok), and the 4-D value whose NHWC form it holds flattened
     * instead, the layers' weights permuted to match (nhwc_of; -1: none) */
    uint8_t *flat_ok;
    int64_t *nhwc_of;
    /* per value: the float16 constant it is the float32 Cast of (-1: none):
     * float16 weights, stored as such and DEQUANTIZEd where they are read */
    int64_t *deq;
    tl_q *q;          /* per value (QDQ models) */
    bool s8;          /* int8 weights: uint8 activations written as int8 */
    /* tio_save_options.cast makes float32 weights float16: stored so, each
     * DEQUANTIZEd to float32 (TensorFlow Lite's float16 quantization) */
    bool f16;
    bool nchw_io;
    int64_t opset;
    const tio_gnode *n; /* the node being lowered (for messages) */
    uint8_t *pscratch;  /* NULL, or TIO_TL_PSCRATCH bytes (arena) the permuted
                         * weights' writers share (lower_w.c) */
} tl;

typedef int (*lo_fn)(tl *L, const tio_tfl_lowmap *e);

/* helpers (lower.c) */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int tio__tl_nfail(tl *L, int code, const char *fmt, ...);
int tio__tl_nomem(tl *L);
void *tio__tl_al(tl *L, size_t n);
const tio_tensor *tio__tl_vconst(const tl *L, int64_t v);
const tio_tensor *tio__tl_wconst(const tl *L, int64_t v);
bool tio__tl_wfloat(const tio_tensor *t, uint64_t n);
float tio__tl_wat(const tio_tensor *t, size_t i);
bool tio__tl_vshape(const tl *L, int64_t v, int64_t *d, int *r);
int tio__tl_need_shape(tl *L, int64_t v, int64_t *d, int *r);
int tio__tl_vrank(const tl *L, int64_t v);
const tio_gattr *tio__tl_attr(const tio_gnode *n, const char *name);
int64_t tio__tl_attr_i(const tio_gnode *n, const char *name, int64_t dflt);
double tio__tl_attr_f(const tio_gnode *n, const char *name, double dflt);
bool tio__tl_attr_ints(const tio_gnode *n, const char *name, int64_t *out, size_t max,
                       size_t *cnt);
int64_t tio__tl_in_v(const tio_gnode *n, size_t k);
int tio__tl_add_tensor(tl *L, const char *name, int32_t type, int r, const int64_t *d,
                       uint32_t buf, int32_t *idx);
const char *tio__tl_form_name(tl *L, int64_t v, int lay);
int tio__tl_new_form(tl *L, int64_t v, int lay, int32_t *idx);
int tio__tl_const_i32(tl *L, const char *name, const int64_t *vals, size_t n, bool scalar,
                      int32_t *idx);
int tio__tl_const_f32(tl *L, const char *name, const float *vals, size_t n, int r,
                      const int64_t *d, int32_t *idx);
int tio__tl_emit(tl *L, int32_t builtin, uint8_t opt_type, const int32_t *in, size_t nin,
                 const int32_t *out, size_t nout, tfl_wop **op);
int tio__tl_dequantize(tl *L, int32_t h, const char *name, int32_t *idx);
/* y = op(x) for a one-input operator, in the form x is best had in. */
int tio__tl_emit_like(tl *L, int32_t code, uint8_t opt, int64_t x, int64_t y);
int tio__tl_weights(tl *L, const char *name, tio_dtype dt, const uint8_t *b, size_t n, int r,
                    const int64_t *d, int32_t *idx);
/* The tensor of weights whose bytes are buffer buf (tio__tl_weights' tail). */
int tio__tl_weights_in(tl *L, const char *name, tio_dtype dt, uint32_t buf, int r,
                       const int64_t *d, int32_t *idx);

/* Weights reordered (lower_w.c): destination element j, its indices over
 * d[0..nd) (outermost first), is source element sum(index_k * s[k]) of src
 * (es-byte elements). */
#define TIO_TL_PERM_DIMS 4
#define TIO_TL_PSCRATCH ((size_t)512 << 10)
typedef struct tio_tl_perm {
    tio_write_plan *plan; /* NULL, or the plan whose source file src may be read from */
    uint8_t *scratch;     /* NULL, or the lowering's TIO_TL_PSCRATCH bytes */
    const uint8_t *src;
    size_t es;
    int nd;
    int64_t d[TIO_TL_PERM_DIMS], s[TIO_TL_PERM_DIMS];
    bool to16; /* float32 elements written as float16 (the buffer: 2 bytes each) */
} tio_tl_perm;
/* Destination elements [j0, j0 + cnt) into dst. */
void tio__tl_perm_copy(const tio_tl_perm *p, uint64_t j0, size_t cnt, uint8_t *dst);
/* Float weights w (the elements p describes: all of w's, or a group's
 * slice) reordered by p as a constant of shape d[0..r) (float16:
 * with a DEQUANTIZE, as tio__tl_weights): a container tensor's bytes are
 * permuted on the way out (a generated buffer), others into the arena. */
int tio__tl_pweights(tl *L, const char *name, const tio_tensor *w, const tio_tl_perm *p, int r,
                     const int64_t *d, int32_t *idx);
/* Whether the lowering stores float weights t as float16 (L->f16: a
 * float32 constant the lowering made, or a container tensor the save casts;
 * not a Constant node's value, which the cast leaves). */
bool tio__tl_cast16(const tl *L, const tio_tensor *t);
const char *tio__tl_sub_name(tl *L, const char *what);
int tio__tl_scalar_f32(tl *L, const char *what, float f, int32_t *idx);
int tio__tl_const_form(tl *L, int64_t v, int lay, int32_t *idx);
bool tio__tl_only_ones_move(const int64_t *d, int r);
int tio__tl_reshape_to(tl *L, int32_t from, int64_t v, int lay, int32_t *idx);
int tio__tl_get(tl *L, int64_t v, int lay, int32_t *idx);
int tio__tl_pref_lay(const tl *L, int64_t v);
int tio__tl_set_act(tl *L, tfl_wop *op, int64_t out);

/* QDQ models (lower_q.c) */
int tio__tl_qscan(tl *L);
void tio__tl_qmark(tl *L, int64_t v, int32_t idx);
void tio__tl_like(tl *L, int32_t src, int32_t dst);
int tio__tl_qweights(tl *L, int64_t wv, const char *name, const uint8_t *b, size_t n, int r,
                     const int64_t *d, int32_t qdim, int32_t *idx);
int tio__tl_qbias(tl *L, int64_t x, int64_t wv, int64_t bv, int64_t N, int32_t *idx);
int tio__tl_lo_quant(tl *L, const tio_tfl_lowmap *e);
int tio__tl_lo_dequant(tl *L, const tio_tfl_lowmap *e);

/* operators (lower_ops.c) */
lo_fn tio__tl_lo_of(tio_tfl_lkind k);
bool tio__tl_cast_ok(const tl *L, const tio_gnode *n);

#endif /* TIO_TFLITE_LOWER_H */
