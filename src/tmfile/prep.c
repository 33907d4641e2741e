/*
 * Tengine tmfile: the steps of the preparation (src/graph/prep.c) that only
 * Tengine needs, as the graph layer's hooks: MaxPool's ceil_mode as caffe
 * rounding, Flatten's end axis and a Reduce's rank as params, a Reshape's
 * shape as convert_tool keeps it. See prep.h and docs/formats/tmfile.md.
 */
#include "tmfile/prep.h"

#include "tmfile/tmfile.h"

#include <string.h>

/* the bound graph/prep.c keeps shape values and attributes within */
#define TP_BIG ((int64_t)1 << 40)

/* MaxPool ceil_mode: dropped where it does not change the output (floor and
 * ceil agree), else Tengine's caffe rounding (caffe_flavor 1) for symmetric
 * pads, which computes the same size. Anything else stays for the writer to
 * refuse. */
static int pool_ceil(tio_gprep *x, tio_gnode *n) {
    if (tio__gp_attr_i(n, "ceil_mode", 0) == 0) return TIO_OK;
    int ri, ro;
    const int64_t *si, *so;
    if (!tio__gp_shape(x, n->inputs[0], &ri, &si) || !tio__gp_shape(x, n->outputs[0], &ro, &so) ||
        ri != 4)
        return TIO_OK;
    int64_t k[2], s[2] = {1, 1}, pd[4] = {0, 0, 0, 0};
    size_t cnt;
    if (!tio__gp_const_ints(x, n, 99, "kernel_shape", k, 2, &cnt) || cnt != 2) return TIO_OK;
    if (tio__gp_const_ints(x, n, 99, "strides", s, 2, &cnt) && cnt != 2) return TIO_OK;
    if (tio__gp_const_ints(x, n, 99, "pads", pd, 4, &cnt) && cnt != 4) return TIO_OK;
    if (tio__gp_attr(n, "dilations")) return TIO_OK;
    for (int j = 0; j < 2; j++)
        if (s[j] < 1 || s[j] > TP_BIG || k[j] < 1 || k[j] > TP_BIG || pd[j] < 0 ||
            pd[j] > TP_BIG || pd[j + 2] < 0 || pd[j + 2] > TP_BIG)
            return TIO_OK; /* bounded before the sums below */
    bool floor_same = true;
    for (int j = 0; j < 2; j++) {
        int64_t span = si[2 + j] + pd[j] + pd[j + 2] - k[j];
        if (span < 0 || span / s[j] + 1 != so[2 + j]) floor_same = false;
    }
    int rc;
    if (floor_same) return tio__gp_set_i(x, n, "ceil_mode", 0);
    if (!tio__gp_op_is(n, "MaxPool") || pd[0] != pd[2] || pd[1] != pd[3]) return TIO_OK;
    /* Tengine's caffe size: 2 + (in - k + 2p - 1) / s, less one when the last
     * window starts past the input and p > 0: ONNX's ceil_mode size */
    for (int j = 0; j < 2; j++) {
        int64_t iv = si[2 + j], o = 2 + (iv - k[j] + 2 * pd[j] - 1) / s[j];
        if (pd[j] > 0 && (o - 1) * s[j] >= iv + pd[j]) o--;
        if (o != so[2 + j]) return TIO_OK;
    }
    if ((rc = tio__gp_del_attr(x, n, "ceil_mode"))) return rc;
    return tio__gp_set_i(x, n, "tmfile.caffe_flavor", 1);
}

static int tm_node(tio_gprep *x, size_t j, void *ctx) {
    (void)ctx;
    tio_gnode *n = tio__gp_node(x, j);
    int r, rc;
    const int64_t *d;
    if ((tio__gp_op_is(n, "MaxPool") || tio__gp_op_is(n, "AveragePool")) &&
        (rc = pool_ceil(x, n)))
        return rc;
    if (tio__gp_op_is(n, "Flatten") && tio__gp_shape(x, n->inputs[0], &r, &d) &&
        (rc = tio__gp_set_i(x, n, "tmfile.end_axis", r - 1)))
        return rc;
    if (strncmp(n->op, "Reduce", 6) == 0 && tio__gp_shape(x, n->inputs[0], &r, &d) &&
        (rc = tio__gp_set_i(x, n, "tmfile.rank", r)))
        return rc;
    return TIO_OK;
}

/* A Reshape's int64 shape constant: its values as the attribute
 * tmfile.re_shape (the writer's re_shape param), the constant itself as
 * convert_tool keeps it: int32, the first 4n bytes of the int64 data. */
static int tm_late(tio_gprep *x, size_t j, void *ctx) {
    (void)ctx;
    tio_gnode *n = tio__gp_node(x, j);
    if (!tio__gp_op_is(n, "Reshape") || n->input_count != 2 || n->inputs[1] < 0) return TIO_OK;
    const tio_tensor *t = tio__gp_const(x, n->inputs[1]);
    int64_t vals[TM_MAX_DIMS];
    size_t cnt;
    if (!t || t->dtype != TIO_INT64 || !tio__gp_ld_ints(t, vals, TM_MAX_DIMS, &cnt)) return TIO_OK;
    for (size_t k = 0; k < cnt; k++)
        if (vals[k] < INT32_MIN || vals[k] > INT32_MAX) return TIO_OK;
    int rc = tio__gp_set_ints(x, n, "tmfile.re_shape", vals, cnt);
    if (rc) return rc;
    return tio__gp_const_input(x, n, 1, TIO_INT32, (int)t->rank, t->shape, t->data, cnt * 4);
}

int tio__tmfile_prep(const tio_container *c, const tio_graph *src, bool fuse, const char *dims,
                     tm_prep *p, tio_error *err) {
    static const char *const act_ops[] = {"Conv", NULL};
    tio_gprep_opts o = {.fmt = TM_FMT,
                        .fuse_matmul_add = fuse,
                        .fold_bn = fuse,
                        .fuse_hardswish = fuse,
                        .split_slice = true,
                        .act_attr = fuse ? "tmfile.activation" : NULL,
                        .act_ops = act_ops,
                        .act_relu = 0,
                        .act_relu6 = 6,
                        .dims = dims,
                        .node_hook = tm_node,
                        .late_hook = tm_late};
    return tio__gprep(c, src, &o, p, err);
}
