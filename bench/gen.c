/* tio_bench gen: benchmark data, deterministic, written through the library.
 *
 *   gen --format F --size BYTES --tensors N --out PATH [--seed S]
 *       N float32 tensors "t000000".. of equal size (a multiple of 64 bytes)
 *       whose data add up to about BYTES. Model formats (rten, tmfile) get a
 *       graph: input x, then y_i = Add(y_{i-1}, t_i) for every constant;
 *       tflite a model of constants (one subgraph, no operators).
 *   gen --format F --graph conv --size BYTES --tensors N --out PATH
 *       a CNN of N Conv 3x3 (C -> C channels, pads 1) + Relu layers on an
 *       input [1, C, 8, 8], C the multiple of 8 whose float32 weights
 *       (C*C*9) and bias (C) make about BYTES / N each: what ONNX -> TFLite
 *       permutes (OIHW -> OHWI) on the way.
 *   gen --format F --graph mlp --size BYTES --tensors N --out PATH
 *       N MatMul + Relu layers on an input [1, K], float32 weights [K, K], K
 *       the multiple of 8 whose weights make about BYTES / N each: what ONNX
 *       -> TFLite transposes (a FULLY_CONNECTED's [N, K]) on the way.
 *   gen --format npy --size BYTES --out PATH
 *       one float32 array in NumPy's .npy format (written here, byte by byte).
 *   gen --data-bytes --size BYTES --tensors N
 *       prints the bytes of tensor data the first form writes (for a baseline
 *       writing the same bytes).
 */
#include "bench.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <tensio.h>

#include "gen.h"

static int tio_failed(const char *what, const tio_error *e) {
    return bn_fail("%s: %s: %s", what, tio_status_name(e->code), e->message);
}

void *bn_big_alloc(size_t n) {
    if (n == 0) n = 1;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void bn_big_free(void *p, size_t n) {
    if (p) munmap(p, n ? n : 1);
}

/* The graph: input x, then y_i = Add(y_{i-1}, t_i); with `nodes` false, the
 * constants' values only (tflite writes a graph without nodes as a model of
 * constants: the ONNX -> TFLite lowering is not there yet). */
static int add_graph(tio_container *c, size_t n, int64_t elems, bool nodes, tio_error *e) {
    tio_graph *g;
    int rc = tio_container_new_graph(c, &g, e);
    if (rc || !nodes) {
        for (size_t i = 0; !rc && i < n; i++) {
            tio_value_info cv = {0};
            size_t ci;
            cv.name = tio_tensor_name(tio_container_tensor(c, i));
            cv.tensor = (int64_t)i;
            rc = tio_graph_add_value(g, &cv, &ci, e);
        }
        return rc;
    }
    tio_dim d = {elems, NULL};
    tio_value_info vi = {0};
    vi.name = "x";
    vi.dtype = TIO_FLOAT32;
    vi.rank = 1;
    vi.dims = &d;
    vi.tensor = -1;
    size_t prev;
    if ((rc = tio_graph_add_value(g, &vi, &prev, e))) return rc;
    int64_t in = (int64_t)prev;
    if ((rc = tio_graph_set_inputs(g, &in, 1, e))) return rc;
    for (size_t i = 0; i < n; i++) {
        tio_value_info cv = {0};
        cv.name = tio_tensor_name(tio_container_tensor(c, i));
        cv.tensor = (int64_t)i;
        size_t ci, yi, ni;
        if ((rc = tio_graph_add_value(g, &cv, &ci, e))) return rc;

        char yname[32], nname[32];
        snprintf(yname, sizeof yname, "y%06zu", i);
        snprintf(nname, sizeof nname, "add%06zu", i);
        vi.name = yname;
        if ((rc = tio_graph_add_value(g, &vi, &yi, e))) return rc;
        int64_t ins[2] = {(int64_t)prev, (int64_t)ci};
        int64_t out = (int64_t)yi;
        tio_node_info nd = {0};
        nd.name = nname;
        nd.op = "Add";
        nd.native_id = -1;
        nd.inputs = ins;
        nd.input_count = 2;
        nd.outputs = &out;
        nd.output_count = 1;
        if ((rc = tio_graph_add_node(g, &nd, &ni, e))) return rc;
        prev = yi;
    }
    int64_t outv = (int64_t)prev;
    return tio_graph_set_outputs(g, &outv, 1, e);
}

int bn_build(const char *format, uint64_t size, uint64_t count, const void *data,
             tio_container **out) {
    tio_error e;
    if (count == 0) return bn_fail("--tensors must be at least 1");
    uint64_t per = (size / count) & ~UINT64_C(63);
    if (per == 0) per = 64;
    tio_container *c = tio_container_new();
    if (!c) return bn_fail("out of memory");
    const unsigned char *p = data;
    for (uint64_t i = 0; i < count; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%06" PRIu64, i);
        int64_t shape[1] = {(int64_t)(per / 4)};
        tio_tensor_desc d = {0};
        d.name = name;
        d.dtype = TIO_FLOAT32;
        d.rank = 1;
        d.shape = shape;
        d.data = p + i * per;
        d.nbytes = (size_t)per;
        if (tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e)) {
            tio_container_free(c);
            return tio_failed("add", &e);
        }
    }
    if (tio_format_caps(format) & TIO_CAP_GRAPH) {
        if (add_graph(c, (size_t)count, (int64_t)(per / 4), strcmp(format, "tflite") != 0,
                      &e)) {
            tio_container_free(c);
            return tio_failed("graph", &e);
        }
    }
    *out = c;
    return 0;
}

tio_save_options bn_save_options(const char *format) {
    tio_save_options so = {0};
    so.format = format;
    if (!(tio_format_caps(format) & TIO_CAP_NAMES)) so.flags |= TIO_SAVE_DROP_NAMES;
    return so;
}

uint64_t bn_data_bytes(uint64_t size, uint64_t count) {
    uint64_t per = (size / count) & ~UINT64_C(63);
    if (per == 0) per = 64;
    return per * count;
}

static int write_npy(const char *path, uint64_t size, uint64_t seed) {
    uint64_t n = size / 4;
    char dict[128];
    int len = snprintf(dict, sizeof dict,
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (%" PRIu64 ",), }", n);
    if (len < 0 || (size_t)len >= sizeof dict) return bn_fail("npy header");
    size_t hlen = 10 + (size_t)len + 1;
    size_t padded = (hlen + 63) & ~(size_t)63;
    unsigned char head[192];
    memcpy(head, "\x93NUMPY\x01\x00", 8);
    uint16_t hl = (uint16_t)(padded - 10);
    head[8] = (unsigned char)(hl & 0xff);
    head[9] = (unsigned char)(hl >> 8);
    memcpy(head + 10, dict, (size_t)len);
    memset(head + 10 + len, ' ', padded - 10 - (size_t)len - 1);
    head[padded - 1] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) return bn_fail("%s: cannot create", path);
    int bad = fwrite(head, 1, padded, f) != padded;
    size_t chunk = 1u << 20;
    unsigned char *buf = malloc(chunk);
    uint64_t left = n * 4;
    for (uint64_t k = 0; !bad && buf && left; k++) {
        size_t m = left < chunk ? (size_t)left : chunk;
        bn_fill(buf, m, seed + k);
        bad = fwrite(buf, 1, m, f) != m;
        left -= m;
    }
    free(buf);
    if (fclose(f) != 0 || bad || !buf) return bn_fail("%s: write failed", path);
    return 0;
}

/* The graphs of gen --graph (header): a value of the graph (a constant:
 * tensor >= 0, or a runtime value of shape dims). */
static int graph_value(tio_graph *g, const char *name, int64_t tensor, size_t rank,
                       const int64_t *dims, size_t *out, tio_error *e) {
    tio_dim d[4];
    for (size_t k = 0; k < rank; k++) d[k] = (tio_dim){dims[k], NULL};
    tio_value_info v = {0};
    v.name = name;
    v.dtype = TIO_FLOAT32;
    v.rank = tensor >= 0 ? -1 : (int)rank;
    v.dims = tensor >= 0 ? NULL : d;
    v.tensor = tensor;
    return tio_graph_add_value(g, &v, out, e);
}

/* Node `op` named `name`: inputs in[0..nin), one output. */
static int graph_node(tio_graph *g, const char *name, const char *op, const int64_t *in,
                      size_t nin, int64_t out, size_t *ni, tio_error *e) {
    tio_node_info nd = {0};
    nd.name = name;
    nd.op = op;
    nd.native_id = -1;
    nd.inputs = in;
    nd.input_count = nin;
    nd.outputs = &out;
    nd.output_count = 1;
    return tio_graph_add_node(g, &nd, ni, e);
}

/* Float32 weights of `bytes` (a multiple of 4), small values (a scaled
 * fill, in (-0.5, 0.5) / scale: activations stay finite through the
 * layers); NULL when they cannot be had. */
static unsigned char *graph_weights(size_t bytes, uint64_t seed, float scale) {
    unsigned char *data = bn_big_alloc(bytes);
    if (!data) return NULL;
    bn_fill(data, bytes, seed);
    float *f = (float *)(void *)data;
    for (size_t k = 0; k < bytes / 4; k++) {
        uint32_t u;
        memcpy(&u, &f[k], 4);
        f[k] = ((float)(u >> 8) / 16777216.0f - 0.5f) / scale;
    }
    return data;
}

/* A float32 constant of the container (its bytes borrowed) and its value
 * in the graph (index in *vi). */
static int graph_weight(tio_container *c, tio_graph *g, const char *name, size_t rank,
                        const int64_t *shape, const unsigned char *data, size_t nbytes,
                        size_t *vi, tio_error *e) {
    tio_tensor_desc d = {0};
    d.dtype = TIO_FLOAT32;
    d.name = name;
    d.rank = rank;
    d.shape = shape;
    d.data = data;
    d.nbytes = nbytes;
    size_t at = tio_container_count(c);
    int rc = tio_container_add(c, &d, TIO_ADD_BORROW, NULL, e);
    return rc ? rc : graph_value(g, name, (int64_t)at, 0, NULL, vi, e);
}

/* Relu after value `prev` into a new value like it; its index in *out. */
static int graph_relu(tio_graph *g, uint64_t i, size_t prev, size_t rank, const int64_t *dims,
                      size_t *out, tio_error *e) {
    char rn[32], yr[32];
    snprintf(rn, sizeof rn, "relu%03" PRIu64, i);
    snprintf(yr, sizeof yr, "r%03" PRIu64, i);
    size_t ni;
    int rc = graph_value(g, yr, -1, rank, dims, out, e);
    int64_t in = (int64_t)prev;
    return rc ? rc : graph_node(g, rn, "Relu", &in, 1, (int64_t)*out, &ni, e);
}

/* The graph's output `last`, the model saved; frees c and the weights. */
static int graph_save(tio_container *c, tio_graph *g, int rc, size_t last, const char *format,
                      const char *out, unsigned char *data, size_t bytes, tio_error *e) {
    int64_t outv = (int64_t)last;
    if (!rc) rc = tio_graph_set_outputs(g, &outv, 1, e);
    if (!rc) {
        tio_save_options so = bn_save_options(format);
        rc = tio_save(c, out, &so, e);
    }
    int ret = rc ? (c ? tio_failed(out, e) : bn_fail("out of memory")) : 0;
    tio_container_free(c);
    bn_big_free(data, bytes);
    return ret;
}

/* gen --graph conv: N Conv 3x3 + Relu layers of C channels (header). */
static int write_conv(const char *format, const char *out, uint64_t size, uint64_t count,
                      uint64_t seed) {
    if (count == 0) return bn_fail("gen: --tensors must be at least 1");
    uint64_t per = size / count, ch = 8;
    while ((ch + 8) * (ch + 8) * 36 + (ch + 8) * 4 <= per) ch += 8;
    size_t wn = (size_t)(ch * ch * 9), wb = wn * 4, bb = (size_t)ch * 4;
    size_t bytes = (size_t)count * (wb + bb);
    unsigned char *data = graph_weights(bytes, seed, (float)(ch * 3));
    if (!data) return bn_fail("gen: cannot allocate %zu bytes", bytes);
    tio_container *c = tio_container_new();
    tio_error e;
    tio_graph *g = NULL;
    int rc = c ? tio_container_new_graph(c, &g, &e) : -1;
    int64_t xd[4] = {1, (int64_t)ch, 8, 8}, wd[4] = {(int64_t)ch, (int64_t)ch, 3, 3},
            bd[1] = {(int64_t)ch};
    size_t prev = 0;
    if (!rc) rc = graph_value(g, "x", -1, 4, xd, &prev, &e);
    int64_t in = (int64_t)prev;
    if (!rc) rc = tio_graph_set_inputs(g, &in, 1, &e);
    for (uint64_t i = 0; !rc && i < count; i++) {
        char wn_[32], bn_[32], cn[32], yc[32];
        snprintf(wn_, sizeof wn_, "conv%03" PRIu64 ".weight", i);
        snprintf(bn_, sizeof bn_, "conv%03" PRIu64 ".bias", i);
        snprintf(cn, sizeof cn, "conv%03" PRIu64, i);
        snprintf(yc, sizeof yc, "c%03" PRIu64, i);
        size_t wi = 0, bi = 0, ci = 0, ni = 0;
        rc = graph_weight(c, g, wn_, 4, wd, data + i * (wb + bb), wb, &wi, &e);
        if (!rc) rc = graph_weight(c, g, bn_, 1, bd, data + i * (wb + bb) + wb, bb, &bi, &e);
        if (!rc) rc = graph_value(g, yc, -1, 4, xd, &ci, &e);
        int64_t cin[3] = {(int64_t)prev, (int64_t)wi, (int64_t)bi};
        if (!rc) rc = graph_node(g, cn, "Conv", cin, 3, (int64_t)ci, &ni, &e);
        static const int64_t k3[2] = {3, 3}, p1[4] = {1, 1, 1, 1};
        tio_attr a = {0};
        a.type = TIO_ATTR_INTS;
        a.name = "kernel_shape";
        a.ints = k3;
        a.count = 2;
        if (!rc) rc = tio_graph_add_attr(g, ni, &a, &e);
        a.name = "pads";
        a.ints = p1;
        a.count = 4;
        if (!rc) rc = tio_graph_add_attr(g, ni, &a, &e);
        if (!rc) rc = graph_relu(g, i, ci, 4, xd, &prev, &e);
    }
    return graph_save(c, g, rc, prev, format, out, data, bytes, &e);
}

/* gen --graph mlp: N MatMul + Relu layers of [K, K] float32 weights, the
 * largest K (a multiple of 8) whose weights fit the size per layer: the
 * lowering to TFLite transposes each into a FULLY_CONNECTED's [N, K]. */
static int write_mlp(const char *format, const char *out, uint64_t size, uint64_t count,
                     uint64_t seed) {
    if (count == 0) return bn_fail("gen: --tensors must be at least 1");
    uint64_t per = size / count, k = 8;
    while ((k + 8) * (k + 8) * 4 <= per) k += 8;
    size_t wb = (size_t)(k * k * 4), bytes = (size_t)count * wb;
    unsigned char *data = graph_weights(bytes, seed, (float)k);
    if (!data) return bn_fail("gen: cannot allocate %zu bytes", bytes);
    tio_container *c = tio_container_new();
    tio_error e;
    tio_graph *g = NULL;
    int rc = c ? tio_container_new_graph(c, &g, &e) : -1;
    int64_t xd[2] = {1, (int64_t)k}, wd[2] = {(int64_t)k, (int64_t)k};
    size_t prev = 0;
    if (!rc) rc = graph_value(g, "x", -1, 2, xd, &prev, &e);
    int64_t in = (int64_t)prev;
    if (!rc) rc = tio_graph_set_inputs(g, &in, 1, &e);
    for (uint64_t i = 0; !rc && i < count; i++) {
        char wn[32], mn[32], ym[32];
        snprintf(wn, sizeof wn, "fc%03" PRIu64 ".weight", i);
        snprintf(mn, sizeof mn, "matmul%03" PRIu64, i);
        snprintf(ym, sizeof ym, "m%03" PRIu64, i);
        size_t wi = 0, mi = 0, ni = 0;
        rc = graph_weight(c, g, wn, 2, wd, data + i * wb, wb, &wi, &e);
        if (!rc) rc = graph_value(g, ym, -1, 2, xd, &mi, &e);
        int64_t min[2] = {(int64_t)prev, (int64_t)wi};
        if (!rc) rc = graph_node(g, mn, "MatMul", min, 2, (int64_t)mi, &ni, &e);
        if (!rc) rc = graph_relu(g, i, mi, 2, xd, &prev, &e);
    }
    return graph_save(c, g, rc, prev, format, out, data, bytes, &e);
}

int bn_cmd_gen(bn_ctx *x, int argc, char **argv) {
    (void)x;
    const char *format = bn_opt(argc, argv, "--format", NULL);
    const char *out = bn_opt(argc, argv, "--out", NULL);
    uint64_t size = bn_parse_size(bn_opt(argc, argv, "--size", "0"));
    uint64_t count = strtoull(bn_opt(argc, argv, "--tensors", "1"), NULL, 10);
    uint64_t seed = strtoull(bn_opt(argc, argv, "--seed", "1"), NULL, 10);
    if (bn_flag(argc, argv, "--data-bytes") && size && count) {
        printf("%" PRIu64 "\n", bn_data_bytes(size, count));
        return 0;
    }
    if (!format || !out || size == 0) return bn_fail("gen: --format, --out and --size needed");
    if (strcmp(format, "npy") == 0) return write_npy(out, size, seed);
    const char *graph = bn_opt(argc, argv, "--graph", NULL);
    if (graph && strcmp(graph, "conv") == 0) return write_conv(format, out, size, count, seed);
    if (graph && strcmp(graph, "mlp") == 0) return write_mlp(format, out, size, count, seed);
    if (graph) return bn_fail("gen: --graph %s (expected conv or mlp)", graph);
    if (count == 0) return bn_fail("gen: --tensors must be at least 1");
    uint64_t bytes = bn_data_bytes(size, count);
    void *data = bn_big_alloc((size_t)bytes);
    if (!data) return bn_fail("gen: cannot allocate %" PRIu64 " bytes", bytes);
    bn_fill(data, (size_t)bytes, seed);
    tio_container *c = NULL;
    int rc = bn_build(format, size, count, data, &c);
    if (rc == 0) {
        tio_save_options so = bn_save_options(format);
        tio_error e;
        if (tio_save(c, out, &so, &e)) rc = tio_failed(out, &e);
    }
    tio_container_free(c);
    bn_big_free(data, (size_t)bytes);
    return rc;
}
