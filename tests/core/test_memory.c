/* Memory bounded by the input: every allocation the library makes while
 * decoding goes through counting wrappers (the test links with
 * -Wl,--wrap=malloc,calloc,realloc,free; jansson's allocations through
 * json_set_alloc_funcs), and the peak of live bytes during tio_open_memory
 * must stay under TIO_MEM_FACTOR × the input size + TIO_MEM_SLACK, for every
 * vector, for every vector with TIO_OPEN_COPY, for thousands of mutated
 * vectors and random buffers, and for multipart messages. Prints the worst
 * ratio seen, per format. A save that widens holds pieces, not the tensor
 * (test_widen_streamed). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flatbuf/flatbuf.h"
#include "npylayout.h"
#include "rten/schema.h"
#include "tensio.h"
#include "tflshare.h"
#include "tpb.h"
#include "tvec.h"

/* The documented bound (docs/security.md). */
#define TIO_MEM_FACTOR 4
#define TIO_MEM_SLACK (256u << 10)
/* ONNX's: its graphs are charged against 20 x the input (src/graph/budget.h:
 * models whose weights lie in another file need 9-13 x), + 1 for
 * TIO_OPEN_COPY's copy; TFLite's budget is the same (references to one
 * table, each charged). */
#define TIO_MEM_FACTOR_ONNX 21
/* ... plus a container's record of each tensor (its struct, name, shape and
 * the decoder's per-tensor bookkeeping: 280 to 670 bytes measured), which a
 * file of many near-empty tensors (BTF and GGUF records of 24 to 40 bytes)
 * does not pay for at 4 x; zio parses its JSON label into a tree (jansson),
 * about 1.3 KB per tensor entry. */
#define TIO_MEM_PER_TENSOR 768u
#define TIO_MEM_PER_TENSOR_ZIO 1792u
/* torch: a tensor is a pickled call (some 14 pickle objects of 40 bytes and
 * their item lists) and a zip record of its own (a member, a storage, their
 * index slots); a checkpoint of tiny tensors has ~210 file bytes for each
 * (measured: 1,958 bytes per tensor, 9.3 x the input, at 5,000 empty ones). */
#define TIO_MEM_PER_TENSOR_TORCH 2048u

/* Tensors the input under test declares (set by the caller of measure() for
 * mutations of a file whose count is known; a successful open uses its
 * count when larger). */
static size_t declared;
/* Set by test_many_tiny: its decodes give the per-tensor figures. */
static int tiny;

static size_t factor(const char *format) {
    return format && (strcmp(format, "onnx") == 0 || strcmp(format, "tflite") == 0)
               ? TIO_MEM_FACTOR_ONNX
               : TIO_MEM_FACTOR;
}

static size_t bound(const char *format, size_t input, size_t tensors) {
    size_t per = !format || strcmp(format, "zio") == 0     ? TIO_MEM_PER_TENSOR_ZIO
                 : strcmp(format, "torch") == 0 ? TIO_MEM_PER_TENSOR_TORCH
                                                : TIO_MEM_PER_TENSOR;
    return factor(format) * input + TIO_MEM_SLACK + per * tensors;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t k);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t k);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

/* Single-threaded test: plain counters. */
static size_t live, peak;

static void *counted(void *p) {
    if (p) {
        live += malloc_usable_size(p);
        if (live > peak) peak = live;
    }
    return p;
}

void *__wrap_malloc(size_t n) { return counted(__real_malloc(n)); }
void *__wrap_calloc(size_t n, size_t k) { return counted(__real_calloc(n, k)); }
void *__wrap_realloc(void *p, size_t n) {
    size_t old = p ? malloc_usable_size(p) : 0;
    void *q = __real_realloc(p, n);
    if (!q) return NULL; /* p still live */
    live -= old;
    return counted(q);
}
void __wrap_free(void *p) {
    if (p) live -= malloc_usable_size(p);
    __real_free(p);
}
static void *json_malloc(size_t n) { return __wrap_malloc(n); }
static void json_free(void *p) { __wrap_free(p); }

/* Per format: the largest ratio peak/input among inputs of 4 KiB or more
 * (below that the container's fixed cost dominates), and the largest peak
 * for a smaller input. */
typedef struct worst {
    const char *format;
    size_t decodes;
    double ratio;
    size_t input, peak;
    char what[160];
    size_t small_peak, small_input;
    double per_tensor; /* test_many_tiny: the largest peak / tensors (>= 1,000) */
    size_t pt_tensors;
    double tiny_ratio; /* test_many_tiny: the largest peak / input */
} worst;

#define NW 16
static worst W[NW];

static void note(const char *format, size_t input, size_t pk, size_t tensors, const char *what) {
    for (size_t i = 0; i < NW; i++) {
        if (W[i].format && strcmp(W[i].format, format) != 0) continue;
        W[i].format = format;
        W[i].decodes++;
        if (tiny) { /* reported apart from the ratios below */
            if (input >= 4096 && (double)pk / (double)input > W[i].tiny_ratio)
                W[i].tiny_ratio = (double)pk / (double)input;
            if (tensors >= 1000 && (double)pk / (double)tensors > W[i].per_tensor) {
                W[i].per_tensor = (double)pk / (double)tensors;
                W[i].pt_tensors = tensors;
            }
            return;
        }
        if (input < 4096) {
            if (pk > W[i].small_peak) {
                W[i].small_peak = pk;
                W[i].small_input = input;
            }
            return;
        }
        double r = (double)pk / (double)input;
        if (r > W[i].ratio) {
            W[i].ratio = r;
            W[i].input = input;
            W[i].peak = pk;
            snprintf(W[i].what, sizeof W[i].what, "%s", what);
        }
        return;
    }
}

/* Decodes and checks the bound; returns the decode's status. */
/* Opens buf as format (NULL: probed) and checks the peak against the bound
 * of `as` (the format it is, NULL: any). */
static int measure_as(const uint8_t *buf, size_t len, const char *format, const char *as,
                      unsigned flags, const char *what) {
    tio_open_options o = {0};
    o.format = format;
    o.flags = flags;
    tio_container *c = NULL;
    tio_error e;
    size_t base = live;
    peak = live;
    int rc = tio_open_memory(buf, len, &o, &c, &e);
    size_t pk = peak - base;
    size_t n = declared;
    if (rc == TIO_OK) {
        if (tio_container_count(c) > n) n = tio_container_count(c);
        tio_container_free(c);
    }
    if (live != base) {
        fprintf(stderr, "%s: %zd bytes still allocated after free\n", what,
                (ssize_t)(live - base));
        fail();
    }
    note(format ? format : "probe", len, pk, n, what);
    if (pk > bound(as, len, n)) {
        fprintf(stderr,
                "%s (%s, %zu bytes, %zu tensors): peak %zu bytes allocated, above %zu x input + "
                "%u + %zu per tensor\n",
                what, format ? format : "probe", len, n, pk, factor(as), TIO_MEM_SLACK,
                (bound(as, len, 1) - bound(as, len, 0)));
        fail();
    }
    return rc;
}

static int measure(const uint8_t *buf, size_t len, const char *format, unsigned flags,
                   const char *what) {
    return measure_as(buf, len, format, format, flags, what);
}

static void vectors(const char *dir, const char *ext, const char *format, uint64_t *seed) {
    size_t n;
    char **names = tvec_list(dir, ext, &n);
    for (size_t i = 0; i < n; i++) {
        char rel[512];
        snprintf(rel, sizeof rel, "%s/%s", dir, names[i]);
        char *p = tvec_path(rel);
        uint8_t *buf = NULL;
        size_t len = 0;
        if (!p || tvec_read(p, &buf, &len) != 0) fail_msg("cannot read %s", rel);
        free(p);
        declared = 0;
        {
            tio_open_options o = {0};
            o.format = format;
            tio_container *c = NULL;
            tio_error e;
            if (tio_open_memory(buf, len, &o, &c, &e) == TIO_OK) {
                declared = tio_container_count(c);
                tio_container_free(c);
            }
        }
        measure(buf, len, format, 0, rel);
        measure(buf, len, format, TIO_OPEN_COPY, rel);
        measure_as(buf, len, NULL, format, 0, rel);
        /* mutations of the structure: counts, sizes and offsets grow */
        size_t lim = len < 1024 ? len : 1024;
        for (int m = 0; m < 200 && lim; m++) {
            size_t at = (size_t)(tvec_rand(seed) % lim);
            uint8_t orig = buf[at];
            static const uint8_t vals[] = {0xff, 0x7f, 0x80, 0x40, 0x01};
            buf[at] = m % 2 ? vals[tvec_rand(seed) % 5] : (uint8_t)tvec_rand(seed);
            char what[600];
            snprintf(what, sizeof what, "%s with byte %zu = 0x%02x", rel, at, buf[at]);
            measure(buf, len, format, 0, what);
            buf[at] = orig;
        }
        declared = 0;
        free(buf);
    }
    tvec_list_free(names, n);
}

static void test_vectors_and_mutations(void **state) {
    (void)state;
    uint64_t seed = 0x6d656d6f7279ull;
    for (const tvec_dir *d = tvec_dirs; d->dir; d++) vectors(d->dir, d->ext, d->format, &seed);
}

static void test_random_buffers(void **state) {
    (void)state;
    uint64_t s = 0x72616e646f6dull;
    static uint8_t buf[65536];
    for (int it = 0; it < 4000; it++) {
        size_t len = (size_t)(tvec_rand(&s) % sizeof buf);
        for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)(tvec_rand(&s) % 4 ? tvec_rand(&s) : 0xff);
        if (it % 3 == 0 && len >= 8) memcpy(buf, "~TenBin~", 8);
        if (it % 3 == 1 && len >= 32) memcpy(buf, "RTEN\2\0\0\0", 8);
        for (size_t f = 0; f < tio_format_count(); f++)
            measure(buf, len, tio_format_name(f), 0, "random buffer");
    }
}

/* Messages: the golden frames, each frame's header bytes mutated. */
static void test_messages(void **state) {
    (void)state;
    static const char *const stems[][2] = {{"zio", "tens_f32_3d"},
                                           {"zio", "tens_nopart_default"},
                                           {"zio/tensorcom", "tb_infos_f16_u8_i64"}};
    uint64_t s = 0x6d7367ull;
    for (size_t k = 0; k < 3; k++) {
        uint8_t *bufs[8];
        tio_part parts[8];
        size_t total = 0, n = 0;
        for (; n < 8; n++) {
            char rel[256];
            snprintf(rel, sizeof rel, "%s/%s.frame%zu.bin", stems[k][0], stems[k][1], n);
            char *p = tvec_path(rel);
            if (!p) break;
            free(p);
            bufs[n] = tvec_load(rel, &parts[n].size);
            parts[n].data = bufs[n];
            total += parts[n].size;
        }
        assert_true(n >= 2);
        for (int m = 0; m < 2000; m++) {
            size_t f = (size_t)(tvec_rand(&s) % n);
            size_t at = parts[f].size ? (size_t)(tvec_rand(&s) % (parts[f].size < 512 ? parts[f].size : 512)) : 0;
            uint8_t orig = parts[f].size ? bufs[f][at] : 0;
            if (parts[f].size) bufs[f][at] = (uint8_t)tvec_rand(&s);
            tio_open_options o = {0};
            tio_container *c = NULL;
            tio_error e;
            size_t base = live;
            peak = live;
            size_t nt = 0;
            if (tio_open_parts(parts, n, &o, &c, &e) == TIO_OK) {
                nt = tio_container_count(c);
                tio_container_free(c);
            }
            size_t pk = peak - base;
            assert_true(live == base);
            note("message", total, pk, nt, stems[k][1]);
            if (pk > bound("zio", total, nt)) {
                fprintf(stderr, "%s mutated: peak %zu for %zu bytes\n", stems[k][1], pk, total);
                fail();
            }
            if (parts[f].size) bufs[f][at] = orig;
        }
        for (size_t i = 0; i < n; i++) free(bufs[i]);
    }
}

/* ------------------------------------------- shared structures (issue 15)
 *
 * A model file may reference one table, vector or string from many places;
 * every reference becomes a copy in the graph. These inputs share one piece
 * many times, from a little to far past the decode's memory budget: every
 * decode must stay within the bound, and the heavy ones fail with
 * TIO_E_LIMIT. */

/* Both ways (mapped-like and TIO_OPEN_COPY) and probed; returns the status
 * of the plain decode. */
static int measure3(const uint8_t *buf, size_t len, const char *format, const char *what) {
    int rc = measure(buf, len, format, 0, what);
    assert_int_equal(measure(buf, len, format, TIO_OPEN_COPY, what), rc);
    measure_as(buf, len, NULL, format, 0, what);
    return rc;
}

/* The outcome expected: TIO_OK, or TIO_E_LIMIT with `msg` in the message. */
static void expect(const uint8_t *buf, size_t len, const char *format, int want,
                   const char *msg, const char *what) {
    int rc = measure3(buf, len, format, what);
    tio_open_options o = {0};
    o.format = format;
    tio_container *c = NULL;
    tio_error e;
    int rc2 = tio_open_memory(buf, len, &o, &c, &e);
    assert_int_equal(rc, rc2);
    if (rc2 == TIO_OK) tio_container_free(c);
    if (rc2 != want || (want != TIO_OK && msg && !strstr(e.message, msg)))
        fail_msg("%s (%zu bytes): expected %s%s%s, got %s: %s", what, len,
                 tio_status_name(want), msg ? " with " : "", msg ? msg : "",
                 tio_status_name(rc2), rc2 ? e.message : "");
}

typedef enum rshare {
    RS_NAME,   /* n nodes: one ValueNode Node with an x-byte name */
    RS_NAME2,  /* n distinct ValueNode Nodes naming one x-byte string */
    RS_INPUTS, /* n nodes: one operator with x inputs */
    RS_INREF,  /* one value, one operator whose x inputs all name it */
    RS_CONST,  /* n nodes: one ConstantNode of x int8 (its name: 8 bytes) */
    RS_ATTRS,  /* n nodes: one Conv operator with an empty ConvAttrs (defaults) */
    RS_IF,     /* n nodes: one If with two shared empty subgraphs */
    RS_DIMS,   /* n nodes: one ValueNode of 64 dims naming one x-byte string */
} rshare;

static tio_fb_off rs_str(tio_fb_builder *b, size_t n) {
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, 'a', n);
    s[n] = 0;
    tio_fb_off o;
    assert_int_equal(tio__fb_create_string(b, s, n, &o, NULL), TIO_OK);
    free(s);
    return o;
}

static tio_fb_off rs_table1(tio_fb_builder *b, unsigned id, tio_fb_off ref) {
    tio_fb_off o;
    tio__fb_start_table(b, NULL);
    tio__fb_add_offset(b, id, ref, NULL);
    assert_int_equal(tio__fb_end_table(b, &o, NULL), TIO_OK);
    return o;
}

static tio_fb_off rs_node(tio_fb_builder *b, tio_fb_off name, unsigned kind, tio_fb_off data) {
    tio_fb_off o;
    tio__fb_start_table(b, NULL);
    tio__fb_add_offset(b, RTEN_Node_name, name, NULL);
    tio__fb_add_scalar(b, RTEN_Node_data_type, kind, 1, NULL);
    tio__fb_add_offset(b, RTEN_Node_data, data, NULL);
    assert_int_equal(tio__fb_end_table(b, &o, NULL), TIO_OK);
    return o;
}

static tio_fb_off rs_op(tio_fb_builder *b, unsigned type, unsigned tag, tio_fb_off attrs,
                        const int32_t *ins, size_t nin) {
    tio_fb_off iv = 0, o;
    if (nin) assert_int_equal(tio__fb_create_vector(b, ins, nin, 4, 4, &iv, NULL), TIO_OK);
    tio__fb_start_table(b, NULL);
    tio__fb_add_scalar(b, RTEN_OperatorNode_type, type, 1, NULL);
    if (tag) {
        tio__fb_add_scalar(b, RTEN_OperatorNode_attrs_type, tag, 1, NULL);
        tio__fb_add_offset(b, RTEN_OperatorNode_attrs, attrs, NULL);
    }
    tio__fb_add_offset(b, RTEN_OperatorNode_inputs, iv, NULL);
    assert_int_equal(tio__fb_end_table(b, &o, NULL), TIO_OK);
    return o;
}

static tio_fb_off rs_value(tio_fb_builder *b) {
    tio_fb_off o;
    tio__fb_start_table(b, NULL);
    tio__fb_add_scalar(b, RTEN_ValueNode_dtype, RTEN_DataType_Float, 1, NULL);
    assert_int_equal(tio__fb_end_table(b, &o, NULL), TIO_OK);
    return o;
}

/* A V1 rten model of the kind, with `pad` bytes of unreferenced string (room
 * for the verifier's table budget, which is a quarter of the bytes);
 * malloc'ed, *len set. */
static uint8_t *rs_model(rshare kind, size_t n, size_t x, size_t pad, size_t *len) {
    tio_fb_builder *b = tio__fb_builder_new("test");
    assert_non_null(b);
    if (pad) rs_str(b, pad);
    size_t count = kind == RS_INREF ? 2 : n;
    tio_fb_off *nodes = malloc(count * sizeof *nodes), one = 0;
    assert_non_null(nodes);
    int32_t *ins = NULL;
    switch (kind) {
    case RS_NAME: one = rs_node(b, rs_str(b, x), RTEN_NodeKind_ValueNode, rs_value(b)); break;
    case RS_NAME2: {
        tio_fb_off nm = rs_str(b, x);
        for (size_t i = 0; i < n; i++)
            nodes[i] = rs_node(b, nm, RTEN_NodeKind_ValueNode, rs_value(b));
        break;
    }
    case RS_INPUTS:
    case RS_INREF:
        ins = calloc(x ? x : 1, sizeof *ins);
        assert_non_null(ins);
        for (size_t i = 0; kind == RS_INPUTS && i < x; i++) ins[i] = -1;
        if (kind == RS_INPUTS) {
            one = rs_node(b, 0, RTEN_NodeKind_OperatorNode, rs_op(b, 0, 0, 0, ins, x));
        } else {
            nodes[0] = rs_node(b, rs_str(b, n), RTEN_NodeKind_ValueNode, rs_value(b));
            nodes[1] = rs_node(b, 0, RTEN_NodeKind_OperatorNode, rs_op(b, 0, 0, 0, ins, x));
        }
        free(ins);
        break;
    case RS_CONST: {
        uint32_t shape[1] = {(uint32_t)x};
        uint8_t *data = calloc(x ? x : 1, 1);
        assert_non_null(data);
        tio_fb_off sv, dv, ct;
        tio__fb_create_vector(b, shape, 1, 4, 4, &sv, NULL);
        tio__fb_create_vector(b, data, x, 1, 1, &dv, NULL);
        free(data);
        tio_fb_off dt = rs_table1(b, RTEN_FloatData_data, dv);
        tio__fb_start_table(b, NULL);
        tio__fb_add_offset(b, RTEN_ConstantNode_shape, sv, NULL);
        tio__fb_add_scalar(b, RTEN_ConstantNode_data_type, RTEN_ConstantData_Int8Data, 1, NULL);
        tio__fb_add_offset(b, RTEN_ConstantNode_data, dt, NULL);
        assert_int_equal(tio__fb_end_table(b, &ct, NULL), TIO_OK);
        one = rs_node(b, rs_str(b, 8), RTEN_NodeKind_ConstantNode, ct);
        break;
    }
    case RS_ATTRS: {
        tio_fb_off at;
        tio__fb_start_table(b, NULL);
        assert_int_equal(tio__fb_end_table(b, &at, NULL), TIO_OK);
        one = rs_node(b, 0, RTEN_NodeKind_OperatorNode,
                      rs_op(b, 9, RTEN_OperatorAttrs_ConvAttrs, at, NULL, 0));
        break;
    }
    case RS_IF: {
        tio_fb_off sg, at;
        tio__fb_start_table(b, NULL);
        assert_int_equal(tio__fb_end_table(b, &sg, NULL), TIO_OK);
        tio__fb_start_table(b, NULL);
        tio__fb_add_offset(b, RTEN_IfAttrs_then_branch, sg, NULL);
        tio__fb_add_offset(b, RTEN_IfAttrs_else_branch, sg, NULL);
        assert_int_equal(tio__fb_end_table(b, &at, NULL), TIO_OK);
        one = rs_node(b, 0, RTEN_NodeKind_OperatorNode,
                      rs_op(b, 104, RTEN_OperatorAttrs_IfAttrs, at, NULL, 0));
        break;
    }
    case RS_DIMS: {
        tio_fb_off dim = rs_table1(b, RTEN_Dim_name, rs_str(b, x)), dv, vn;
        tio_fb_off dims[64];
        for (size_t i = 0; i < 64; i++) dims[i] = dim;
        tio__fb_create_offset_vector(b, dims, 64, &dv, NULL);
        vn = rs_table1(b, RTEN_ValueNode_shape, dv);
        one = rs_node(b, 0, RTEN_NodeKind_ValueNode, vn);
        break;
    }
    }
    if (kind != RS_NAME2 && kind != RS_INREF)
        for (size_t i = 0; i < n; i++) nodes[i] = one;
    tio_fb_off nv, root;
    assert_int_equal(tio__fb_create_offset_vector(b, nodes, count, &nv, NULL), TIO_OK);
    free(nodes);
    tio_fb_off g = rs_table1(b, RTEN_Graph_nodes, nv);
    tio__fb_start_table(b, NULL);
    tio__fb_add_scalar(b, RTEN_Model_schema_version, 1, 4, NULL);
    tio__fb_add_offset(b, RTEN_Model_graph, g, NULL);
    assert_int_equal(tio__fb_end_table(b, &root, NULL), TIO_OK);
    assert_int_equal(tio__fb_finish(b, root, NULL), TIO_OK);
    const uint8_t *p = tio__fb_buffer(b, len);
    uint8_t *out = malloc(*len);
    assert_non_null(out);
    memcpy(out, p, *len);
    tio__fb_builder_free(b);
    return out;
}

#define MEM_LIMIT_MSG "bytes of memory"
#define OBJ_LIMIT_MSG "graph objects"

static void test_rten_shared(void **state) {
    (void)state;
    static const struct {
        rshare kind;
        size_t n, x, pad;
        int want;
        const char *msg;
        const char *what;
    } cases[] = {
        /* the audit's inputs (/tmp/aud/gen_rten.py): 211 MB, 131 MB, ... before */
        {RS_NAME, 7000, 30000, 0, TIO_E_LIMIT, MEM_LIMIT_MSG, "7000 x one 30000-byte name"},
        {RS_NAME, 100, 300, 0, TIO_OK, NULL, "100 x one 300-byte name"},
        {RS_NAME2, 1000, 60000, 0, TIO_E_LIMIT, MEM_LIMIT_MSG, "1000 values naming one string"},
        {RS_NAME2, 50, 1000, 0, TIO_OK, NULL, "50 values naming one 1000-byte string"},
        {RS_INPUTS, 2000, 8000, 0, TIO_E_LIMIT, OBJ_LIMIT_MSG, "2000 x an op with 8000 inputs"},
        {RS_INPUTS, 30, 100, 0, TIO_OK, NULL, "30 x an op with 100 inputs"},
        {RS_INPUTS, 7000, 1, 56000, TIO_E_LIMIT, MEM_LIMIT_MSG, "7000 x an op with 1 input"},
        {RS_INPUTS, 16000, 1, 0, TIO_E_LIMIT, "table budget", "16000 x an op, unpadded"},
        {RS_INREF, 60000, 2, 0, TIO_OK, NULL, "an op with 2 inputs naming one 60000-byte value"},
        {RS_CONST, 4000, 64, 48000, TIO_E_LIMIT, MEM_LIMIT_MSG, "4000 x one constant"},
        {RS_CONST, 200, 64, 4000, TIO_OK, NULL, "200 x one constant"},
        {RS_ATTRS, 4000, 0, 48000, TIO_E_LIMIT, MEM_LIMIT_MSG, "4000 x one Conv (defaults)"},
        {RS_ATTRS, 30, 0, 1000, TIO_OK, NULL, "30 x one Conv (attr defaults)"},
        {RS_IF, 2000, 0, 40000, TIO_E_LIMIT, MEM_LIMIT_MSG, "2000 x one If (2 subgraphs)"},
        {RS_DIMS, 100, 1000, 28000, TIO_E_LIMIT, MEM_LIMIT_MSG, "100 x 64 dims naming a string"},
        {RS_DIMS, 4, 100, 1200, TIO_OK, NULL, "4 x 64 dims naming one 100-byte string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        uint8_t *buf = rs_model(cases[i].kind, cases[i].n, cases[i].x, cases[i].pad, &len);
        assert_true(len <= 96 * 1024);
        expect(buf, len, "rten", cases[i].want, cases[i].msg, cases[i].what);
        free(buf);
    }
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* A Tengine-lite tmfile: `nten` tensor entries pointing to one tensor (an
 * FP32 variable named by `name` bytes, `rank` dims), `nnode` node entries
 * pointing to one InputOp node whose inputs are `nin` x tensor 0 and whose
 * output is tensor 0. */
static uint8_t *tm_model(size_t nten, size_t name, size_t rank, size_t nnode, size_t nin,
                         size_t *len) {
    size_t soff = 12 + 16, vsubs = soff + 40, vtens = vsubs + 8;
    size_t vnodes = vtens + 4 + 4 * nten, toff = vnodes + 4 + 4 * nnode;
    size_t vdims = toff + 32, sn = vdims + 4 + 4 * rank, sdata = sn + 8;
    size_t noff = (sdata + name + 1 + 3) & ~(size_t)3, top = noff + 28, vin = top + 12;
    size_t vout = vin + 4 + 4 * nin, end = vout + 8;
    uint8_t *b = calloc(end, 1);
    assert_non_null(b);
#define P32(at, v) put32(b + (at), (uint32_t)(v))
    b[0] = 2;           /* ver_main 2 */
    P32(8, 12);         /* the model */
    P32(12 + 8, vsubs); /* its subgraphs */
    P32(vsubs, 1);
    P32(vsubs + 4, soff);
    P32(soff + 20, vnodes);
    P32(soff + 24, vtens);
    P32(vtens, nten);
    for (size_t i = 0; i < nten; i++) P32(vtens + 4 + 4 * i, toff);
    P32(vnodes, nnode);
    for (size_t i = 0; i < nnode; i++) P32(vnodes + 4 + 4 * i, noff);
    P32(toff + 8, rank ? vdims : 0);
    P32(toff + 12, name ? sn : 0);
    P32(toff + 24, 1); /* a variable */
    P32(vdims, rank);
    for (size_t i = 0; i < rank; i++) P32(vdims + 4 + 4 * i, 2);
    P32(sn, name + 1);
    P32(sn + 4, sdata);
    memset(b + sdata, 'a', name);
    P32(noff + 4, nin ? vin : 0);
    P32(noff + 8, vout);
    P32(noff + 12, top);
    P32(top, 1);
    P32(top + 4, 12); /* InputOp: no param */
    P32(vin, nin);
    P32(vout, 1);
#undef P32
    *len = end;
    return b;
}

static void test_tmfile_shared(void **state) {
    (void)state;
    static const struct {
        size_t nten, name, rank, nnode, nin;
        int want;
        const char *what;
    } cases[] = {
        /* the audit's (/tmp/aud/gen_tm.py 8000 0 30000, 8000 4 30000): 243 MB, 480 MB */
        {8000, 30000, 0, 0, 0, TIO_E_LIMIT, "8000 x one tensor named by 30000 bytes"},
        {8000, 30000, 4, 0, 0, TIO_E_LIMIT, "8000 x one tensor of 4 dims, 30000-byte name"},
        {40, 300, 4, 0, 0, TIO_OK, "40 x one tensor, 300-byte name"},
        {1500, 0, 0, 0, 0, TIO_OK, "1500 x one tensor (1499 findings)"},
        /* shared nodes: 16 objects per byte allowed ~1 M int64 before */
        {1, 0, 0, 14000, 1000, TIO_E_LIMIT, "14000 x one node with 1000 inputs"},
        {1, 0, 0, 8, 1000, TIO_OK, "8 x one node with 1000 inputs"},
        {1, 0, 0, 1000, 60, TIO_E_LIMIT, "1000 x one node with 60 inputs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        uint8_t *buf = tm_model(cases[i].nten, cases[i].name, cases[i].rank, cases[i].nnode,
                                cases[i].nin, &len);
        assert_true(len <= 96 * 1024);
        expect(buf, len, "tmfile", cases[i].want,
               cases[i].want == TIO_OK ? NULL : MEM_LIMIT_MSG, cases[i].what);
        free(buf);
    }
}

/* TFLite models whose references share one table (tests/support/tflshare.c):
 * operators that are one operator of many inputs, tensors that are one
 * constant with a long name or one quantization table. Refused past the
 * decode budget (20 x input), each within the bound either way. */
static void test_tflite_shared(void **state) {
    (void)state;
    static const struct {
        int kind;
        uint32_t n, m;
        int want;
        const char *what;
    } cases[] = {
        {0, 20000, 20000, TIO_E_LIMIT, "20000 x one operator with 20000 inputs"},
        {0, 5, 20000, TIO_OK, "5 x one operator with 20000 inputs"},
        {1, 3000, 60000, TIO_E_LIMIT, "3000 x one constant named by 60000 bytes"},
        {1, 2, 60000, TIO_OK, "2 x one constant named by 60000 bytes"},
        {1, 2000, 8, TIO_E_LIMIT, "2000 x one constant named by 8 bytes"},
        {2, 2000, 2047, TIO_E_LIMIT, "2000 x one constant with 2047 quantization floats"},
        {2, 2, 2047, TIO_OK, "2 x one constant with 2047 quantization floats"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len;
        uint8_t *buf = tfl_shared_model(cases[i].kind, cases[i].n, cases[i].m, &len);
        expect(buf, len, "tflite", cases[i].want,
               cases[i].want == TIO_OK ? NULL : "shared by too many references", cases[i].what);
        free(buf);
    }
}

/* ------------------------------------------------ dense ONNX (issue 16)
 *
 * Protobuf shares nothing, so an ONNX file's worst case is density: many
 * small objects, each a few bytes on the wire and a record, a string and an
 * array slot in the graph. Each kind from a few to past the budget; the
 * heavy ones fail with TIO_E_LIMIT, every one within the bound. */

typedef enum oxdense {
    OX_NODES,    /* n nodes Relu(x) -> "<i>" */
    OX_INPUTS,   /* one Sum with n inputs, all "x" */
    OX_ATTRS,    /* one custom-domain node with n INT attributes "<i>" */
    OX_INITS,    /* n empty float initializers "<i>" (dims [0]) */
    OX_PROPS,    /* n metadata_props "<i>" = "" */
    OX_VINFO,    /* n value_info "<i>": float, shape [1] */
    OX_OPSETS,   /* n opset_imports "d<i>" */
    OX_NESTED,   /* n nested If levels (then_branch), else_branch one Identity */
} oxdense;

/* then_branch: a graph holding the next level (an If) or, at depth 0, one
 * Identity; else_branch: always the Identity graph. */
static void ox_branch(tpb *node, const char *attr, size_t depth);

static void ox_if(tpb *node, size_t depth) {
    ox_branch(node, "then_branch", depth);
    ox_branch(node, "else_branch", 0);
}

static void ox_branch(tpb *node, const char *attr, size_t depth) {
    tpb g = {0}, a = {0}, n = {0}, out = {0}, tp = {0}, tt = {0};
    tpb_str(&n, 1, depth ? "c" : "x");
    tpb_str(&n, 2, "y");
    tpb_str(&n, 4, depth ? "If" : "Identity");
    if (depth) ox_if(&n, depth - 1);
    tpb_msg(&g, 1, &n);
    tpb_str(&g, 2, "g");
    tpb_int(&tt, 1, 1);
    tpb_msg(&tp, 1, &tt);
    tpb_str(&out, 1, "y");
    tpb_msg(&out, 2, &tp);
    tpb_msg(&g, 12, &out);
    tpb_str(&a, 1, attr);
    tpb_int(&a, 20, 5);
    tpb_msg(&a, 6, &g);
    tpb_msg(node, 5, &a);
}

/* A model: ir_version 8, opset 13, graph input x (float [1]) and c (bool),
 * output y, plus n objects of the kind. Malloc'ed, *len set. */
static uint8_t *ox_model(oxdense kind, size_t n, size_t *len) {
    tpb m = {0}, g = {0}, t = {0};
    char name[32];
    tpb_int(&m, 1, 8);
    tpb_int(&t, 2, 13);
    tpb_msg(&m, 8, &t);
    for (size_t i = 0; kind == OX_OPSETS && i < n; i++) {
        snprintf(name, sizeof name, "d%zu", i);
        tpb_str(&t, 1, name);
        tpb_int(&t, 2, 1);
        tpb_msg(&m, 8, &t);
    }
    for (size_t i = 0; kind == OX_PROPS && i < n; i++) {
        snprintf(name, sizeof name, "%zu", i);
        tpb_str(&t, 1, name);
        tpb_msg(&m, 14, &t);
    }
    tpb node = {0};
    switch (kind) {
    case OX_NODES:
        for (size_t i = 0; i < n; i++) {
            snprintf(name, sizeof name, "%zu", i);
            tpb_str(&node, 1, "x");
            tpb_str(&node, 2, name);
            tpb_str(&node, 4, "Relu");
            tpb_msg(&g, 1, &node);
        }
        break;
    case OX_INPUTS:
        for (size_t i = 0; i < n; i++) tpb_str(&node, 1, "x");
        tpb_str(&node, 2, "s");
        tpb_str(&node, 4, "Sum");
        tpb_msg(&g, 1, &node);
        break;
    case OX_ATTRS:
        tpb_str(&node, 1, "x");
        tpb_str(&node, 2, "s");
        tpb_str(&node, 4, "Custom");
        tpb_str(&node, 7, "my.domain");
        for (size_t i = 0; i < n; i++) {
            snprintf(name, sizeof name, "%zu", i);
            tpb_str(&t, 1, name);
            tpb_int(&t, 3, 1);
            tpb_int(&t, 20, 2);
            tpb_msg(&node, 5, &t);
        }
        tpb_msg(&g, 1, &node);
        break;
    case OX_NESTED:
        tpb_str(&node, 1, "c");
        tpb_str(&node, 2, "y");
        tpb_str(&node, 4, "If");
        ox_if(&node, n);
        tpb_msg(&g, 1, &node);
        break;
    default:
        break;
    }
    tpb_str(&g, 2, "dense");
    for (size_t i = 0; kind == OX_INITS && i < n; i++) {
        snprintf(name, sizeof name, "%zu", i);
        tpb_int(&t, 1, 0);
        tpb_int(&t, 2, 1);
        tpb_str(&t, 8, name);
        tpb_msg(&g, 5, &t);
    }
    static const char *const ins[2] = {"x", "c"};
    for (size_t k = 0; k < 2; k++) {
        tpb vi = {0}, tp = {0}, tt = {0}, sh = {0}, d = {0};
        tpb_int(&tt, 1, k ? 9 : 1);
        tpb_int(&d, 1, 1);
        tpb_msg(&sh, 1, &d);
        tpb_msg(&tt, 2, &sh);
        tpb_msg(&tp, 1, &tt);
        tpb_str(&vi, 1, ins[k]);
        tpb_msg(&vi, 2, &tp);
        tpb_msg(&g, 11, &vi);
    }
    for (size_t i = 0; kind == OX_VINFO && i < n; i++) {
        tpb vi = {0}, tp = {0}, tt = {0}, sh = {0}, d = {0};
        snprintf(name, sizeof name, "%zu", i);
        tpb_int(&tt, 1, 1);
        tpb_int(&d, 1, 1);
        tpb_msg(&sh, 1, &d);
        tpb_msg(&tt, 2, &sh);
        tpb_msg(&tp, 1, &tt);
        tpb_str(&vi, 1, name);
        tpb_msg(&vi, 2, &tp);
        tpb_msg(&g, 13, &vi);
    }
    tpb_msg(&m, 7, &g);
    *len = m.n;
    return m.b;
}

static void test_onnx_dense(void **state) {
    (void)state;
    /* each kind a few times (decoded) and many times (as listed: the budget
     * of 20 x refuses the densest), every one within the bound (measure3) */
    static const struct {
        oxdense kind;
        size_t few, many;
        const char *what;
        int many_rc;
    } cases[] = {
        {OX_NODES, 20, 20000, "nodes", TIO_E_LIMIT},
        {OX_INPUTS, 20, 40000, "inputs of a node", TIO_E_LIMIT},
        {OX_ATTRS, 20, 20000, "attributes", TIO_E_LIMIT},
        {OX_INITS, 20, 20000, "initializers", TIO_E_LIMIT},
        {OX_PROPS, 20, 20000, "metadata_props", TIO_OK},
        {OX_VINFO, 20, 20000, "value_info", TIO_OK},
        {OX_OPSETS, 20, 5000, "opset_imports", TIO_OK},
        {OX_NESTED, 3, 60, "nested Ifs", TIO_OK},
    };
    for (size_t i = 0; i < 2 * (sizeof cases / sizeof cases[0]); i++) {
        int many = (int)(i % 2);
        size_t n = many ? cases[i / 2].many : cases[i / 2].few, len;
        char what[64];
        snprintf(what, sizeof what, "%zu %s", n, cases[i / 2].what);
        uint8_t *buf = ox_model(cases[i / 2].kind, n, &len);
        int rc = measure3(buf, len, "onnx", what);
        if (rc != (many ? cases[i / 2].many_rc : TIO_OK))
            fail_msg("%s: %s", what, tio_status_name(rc));
        printf("onnx dense: %-24s %7zu bytes: %s\n", what, len, tio_status_name(rc));
        free(buf);
    }
}


/* Many tiny tensors: what a container costs per tensor (its record, name and
 * shape, and the decoder's bookkeeping) stays within TIO_MEM_PER_TENSOR where
 * the file describes a tensor in fewer bytes than 4 x would pay for. Every
 * format that writes a plain container; tensors of one uint8, one float32 or
 * none (shape [0]), names of 1 to 3 characters where the format keeps names;
 * whole, and cut in half (3 bytes into a record: the decode fails after building half of them). */
static void test_many_tiny(void **state) {
    (void)state;
    static const size_t counts[] = {100, 5000, 50000};
    static const tio_dtype dts[] = {TIO_UINT8, TIO_FLOAT32, TIO_DTYPE_INVALID};
    tiny = 1;
    for (size_t f = 0; f < tio_format_count(); f++) {
        const char *fmt = tio_format_name(f);
        unsigned caps = tio_format_caps(fmt);
        if (caps & TIO_CAP_GRAPH) continue; /* a model needs a graph */
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
            for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
                tio_container *c = tio_container_new();
                assert_non_null(c);
                static const uint8_t zero[8];
                tio_error e;
                for (size_t i = 0; i < counts[k]; i++) {
                    char name[16];
                    /* base-62 names: 1 to 3 characters */
                    static const char al[] =
                        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
                    size_t v = i, n = 0;
                    do {
                        name[n++] = al[v % 62];
                        v /= 62;
                    } while (v);
                    name[n] = 0;
                    tio_tensor_desc t = {0};
                    t.name = name;
                    /* TIO_DTYPE_INVALID: empty float32 tensors, shape [0] */
                    static const int64_t empty[1] = {0};
                    t.dtype = dts[d] == TIO_DTYPE_INVALID ? TIO_FLOAT32 : dts[d];
                    t.data = zero;
                    t.nbytes = dts[d] == TIO_DTYPE_INVALID ? 0 : tio_dtype_size(dts[d]);
                    if (dts[d] == TIO_DTYPE_INVALID) {
                        t.rank = 1;
                        t.shape = empty;
                    }
                    assert_int_equal(tio_container_add(c, &t, 0, NULL, &e), TIO_OK);
                }
                tio_save_options so = {0};
                so.format = fmt;
                so.flags = TIO_SAVE_DROP_NAMES;
                void *buf = NULL;
                size_t len = 0;
                int rc = tio_save_memory(c, &so, &buf, &len, &e);
                tio_container_free(c);
                if (rc != TIO_OK) continue; /* npy: one array */
                char what[96];
                snprintf(what, sizeof what, "%zu tiny %s tensors", counts[k],
                         dts[d] == TIO_DTYPE_INVALID ? "empty" : tio_dtype_name(dts[d]));
                assert_int_equal(measure(buf, len, fmt, 0, what), TIO_OK);
                measure(buf, len, fmt, TIO_OPEN_COPY, what);
                declared = counts[k];
                snprintf(what, sizeof what, "%zu tiny %s tensors, first half", counts[k],
                         dts[d] == TIO_DTYPE_INVALID ? "empty" : tio_dtype_name(dts[d]));
                assert_int_not_equal(measure(buf, len / 2 + 3, fmt, 0, what), TIO_OK);
                declared = 0;
                tio_free(buf);
            }
    }
    tiny = 0;
}

/* References for the widening test, from the formats' definitions. */
static float ref_half(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0    ? ldexpf((float)m, -24)
              : e == 31 ? (m ? NAN : INFINITY)
                        : ldexpf((float)(1024 + m), e - 25);
    return (h >> 15) ? -v : v;
}
static float ref_e4m3fn(uint8_t b) { /* bias 7, no infinities, S.1111.111 NaN */
    int e = (b >> 3) & 15, m = b & 7;
    float v = e == 15 && m == 7 ? NAN
              : e == 0          ? ldexpf((float)m, -9)
                                : ldexpf((float)(8 + m), e - 10);
    return (b >> 7) ? -v : v;
}
static float ref_e5m2(uint8_t b) { return ref_half((uint16_t)(b << 8)); }

/* The element i of the widening test's source (every bit pattern in turn). */
static uint32_t widen_want(tio_dtype dt, const uint8_t *src, size_t i) {
    float f;
    switch (dt) {
    case TIO_BFLOAT16: return (uint32_t)(src[2 * i] | src[2 * i + 1] << 8) << 16;
    case TIO_FLOAT16: f = ref_half((uint16_t)(src[2 * i] | src[2 * i + 1] << 8)); break;
    case TIO_FLOAT8_E4M3FN: f = ref_e4m3fn(src[i]); break;
    case TIO_FLOAT8_E5M2: f = ref_e5m2(src[i]); break;
    default: return src[i]; /* bool: the byte */
    }
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* A save that widens (TIO_SAVE_WIDEN: a dtype the format lacks stored as
 * float32 or uint8) converts a piece at a time: the live bytes the library
 * holds during the save stay under 4 MiB for 8 and 16 MiB widened (before,
 * a buffer of all of it: 18.9 MB for the 16), and each value is the exact
 * widening, across the pieces' joins: every bfloat16, float16 and float8
 * pattern in turn, and bool, to a format that lacks the dtype, read back
 * (strictly: an .npz member's CRC-32, taken piece by piece, checked). */
static void test_widen_streamed(void **state) {
    (void)state;
    static const struct {
        tio_dtype dt;
        const char *fmt;
        size_t numel;
    } cases[] = {
        {TIO_BFLOAT16, "npy", (size_t)4 << 20},      /* 8 MiB in, 16 MiB widened */
        {TIO_FLOAT16, "btf", ((size_t)2 << 20) + 7}, /* every pattern 32 times */
        {TIO_FLOAT8_E4M3FN, "npy", 700 * 256 + 3},
        {TIO_FLOAT8_E5M2, "tenbin", 700 * 256 + 3},
        {TIO_BOOL, "tenbin", 100003},
        {TIO_BFLOAT16, "npz", ((size_t)4 << 20) + 3}, /* a stored member: its CRC */
    };
    char dir[] = "/tmp/tio-widen-XXXXXX";
    assert_non_null(mkdtemp(dir));
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tio_dtype dt = cases[k].dt;
        size_t n = cases[k].numel, es = tio_dtype_size(dt);
        assert_false(tio_format_supports_dtype(cases[k].fmt, dt));
        uint8_t *src = malloc(n * es);
        assert_non_null(src);
        for (size_t i = 0; i < n; i++) {
            if (es == 2) {
                src[2 * i] = (uint8_t)i;
                src[2 * i + 1] = (uint8_t)(i >> 8);
            } else {
                src[i] = dt == TIO_BOOL ? (uint8_t)(i % 3 == 0) : (uint8_t)i;
            }
        }
        tio_container *c = tio_container_new();
        assert_non_null(c);
        tio_tensor_desc d = {0};
        int64_t shape[1] = {(int64_t)n};
        d.dtype = dt; /* unnamed: btf has no names */
        d.rank = 1;
        d.shape = shape;
        d.data = src;
        d.nbytes = n * es;
        tio_error e;
        assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
        char path[64];
        snprintf(path, sizeof path, "%s/w.%s", dir, strcmp(cases[k].fmt, "tenbin") ? cases[k].fmt
                                                                                   : "ten");
        tio_save_options so = {0};
        so.format = cases[k].fmt;
        so.flags = TIO_SAVE_WIDEN | TIO_SAVE_NO_SYNC;
        size_t out_es = dt == TIO_BOOL ? 1 : 4, before = live;
        peak = live;
        int rc = tio_save(c, path, &so, &e);
        size_t held = peak - before;
        if (rc) fail_msg("%s -> %s: %s", tio_dtype_name(dt), cases[k].fmt, e.message);
        /* the sink's buffer (2 MiB) and a piece (64 KiB), not the tensor */
        if (n * out_es >= ((size_t)8 << 20) && held >= ((size_t)4 << 20))
            fail_msg("%s -> %s: %zu bytes held during the save, for %zu widened",
                     tio_dtype_name(dt), cases[k].fmt, held, n * out_es);
        tio_container *r = NULL;
        tio_open_options oo = {0};
        oo.flags = TIO_OPEN_STRICT; /* .npz: the stored member's CRC-32 checked */
        if (tio_open(path, &oo, &r, &e) != TIO_OK) fail_msg("%s: %s", path, e.message);
        const tio_tensor *t = tio_container_tensor(r, 0);
        assert_int_equal(tio_tensor_dtype(t), dt == TIO_BOOL ? TIO_UINT8 : TIO_FLOAT32);
        assert_int_equal(tio_tensor_nbytes(t), n * out_es);
        const uint8_t *got = tio_tensor_data(t);
        for (size_t i = 0; i < n; i++) {
            uint32_t want = widen_want(dt, src, i), g;
            if (dt == TIO_BOOL) {
                g = got[i];
            } else {
                memcpy(&g, got + 4 * i, 4);
                float fw, fg;
                memcpy(&fw, &want, 4);
                memcpy(&fg, &g, 4);
                if (isnan(fw) && isnan(fg) && (want >> 31) == (g >> 31)) continue;
            }
            if (g != want)
                fail_msg("%s -> %s: element %zu is 0x%08x, expected 0x%08x", tio_dtype_name(dt),
                         cases[k].fmt, i, g, want);
        }
        printf("memory: widening %s -> %s, %zu elements: %zu bytes held during the save\n",
               tio_dtype_name(dt), cases[k].fmt, n, held);
        tio_container_free(r);
        tio_container_free(c);
        free(src);
        assert_int_equal(unlink(path), 0);
    }
    assert_int_equal(rmdir(dir), 0);
}

/* A .npy array with descr and order on n bytes of data, header version 1.0
 * padded as np.save pads it. */
static void npy_file(const char *path, const char *dict, const uint8_t *data, size_t n) {
    size_t len;
    uint8_t *f = npy_bytes(1, dict, data, n, &len);
    assert_int_equal(tvec_write(path, f, len), 0);
    free(f);
}

/* Big-endian and Fortran-order .npy arrays are views of the mapped file,
 * swapped and reordered on the way out: opening one holds none of its
 * bytes, a save streams them, and tio_tensor_data gives the C-order
 * little-endian copy. Each array's element i (C order) is a known value. */
static void test_npy_views(void **state) {
    (void)state;
    enum { BE_F4, F_I4, BE_F_F8, BE_C8, BE_I2 };
    static const struct {
        int kind;
        const char *dict;
        size_t es, rank;
        int64_t shape[3];
    } cases[] = {
        {BE_F4, "{'descr': '>f4', 'fortran_order': False, 'shape': (4194304,), }", 4, 1,
         {4194304}},
        {F_I4, "{'descr': '<i4', 'fortran_order': True, 'shape': (1000, 2099), }", 4, 2,
         {1000, 2099}},
        {BE_F_F8, "{'descr': '>f8', 'fortran_order': True, 'shape': (64, 33, 513), }", 8, 3,
         {64, 33, 513}},
        {BE_C8, "{'descr': '>c8', 'fortran_order': False, 'shape': (1048579,), }", 8, 1,
         {1048579}},
        {BE_I2, "{'descr': '>i2', 'fortran_order': False, 'shape': (3, 5), }", 2, 2, {3, 5}},
    };
    char dir[] = "/tmp/tio-npyview-XXXXXX";
    assert_non_null(mkdtemp(dir));
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        size_t es = cases[k].es, rank = cases[k].rank, n = 1;
        const int64_t *sh = cases[k].shape;
        for (size_t d = 0; d < rank; d++) n *= (size_t)sh[d];
        int fortran = strstr(cases[k].dict, "True") != NULL;
        int big = strchr(cases[k].dict, '>') != NULL;
        size_t unit = cases[k].kind == BE_C8 ? 4 : es;
        /* want: C order, little-endian, element i's bytes (i * 0x9E3779B97F4A7C15 >> 3) */
        uint8_t *want = malloc(n * es), *file = malloc(n * es);
        assert_non_null(want);
        assert_non_null(file);
        for (size_t i = 0; i < n; i++) {
            uint64_t v = ((uint64_t)i * 0x9E3779B97F4A7C15ull) >> 3;
            for (size_t b = 0; b < es; b++) want[i * es + b] = (uint8_t)(v >> (8 * (b % 8)));
        }
        npy_layout(want, file, n, es, sh, rank, fortran, big, unit);
        char path[64], out[64];
        snprintf(path, sizeof path, "%s/a.npy", dir);
        snprintf(out, sizeof out, "%s/b.npy", dir);
        npy_file(path, cases[k].dict, file, n * es);
        free(file);
        tio_container *c = NULL;
        tio_error e;
        size_t before = live;
        peak = live;
        if (tio_open(path, NULL, &c, &e) != TIO_OK) fail_msg("%s: %s", path, e.message);
        size_t held_open = peak - before;
        const tio_tensor *t = tio_container_tensor(c, 0);
        assert_int_equal(tio_tensor_nbytes(t), n * es);
        assert_int_equal(tio_tensor_rank(t), rank);
        tio_save_options so = {0};
        so.flags = TIO_SAVE_NO_SYNC;
        before = live;
        peak = live;
        if (tio_save(c, out, &so, &e) != TIO_OK) fail_msg("%s: %s", out, e.message);
        size_t held_save = peak - before;
        if (n * es >= ((size_t)8 << 20) && (held_open >= ((size_t)1 << 20) ||
                                            held_save >= ((size_t)4 << 20)))
            fail_msg("%s: %zu bytes held by open, %zu by the save, for %zu", cases[k].dict,
                     held_open, held_save, n * es);
        tio_container *r = NULL;
        if (tio_open(out, NULL, &r, &e) != TIO_OK) fail_msg("%s: %s", out, e.message);
        const tio_tensor *rt = tio_container_tensor(r, 0);
        assert_int_equal(tio_tensor_nbytes(rt), n * es);
        for (size_t d = 0; d < rank; d++) assert_int_equal(tio_tensor_shape(rt)[d], sh[d]);
        if (memcmp(tio_tensor_data(rt), want, n * es) != 0)
            fail_msg("%s: the saved .npy differs from the C-order little-endian array",
                     cases[k].dict);
        /* the hash of the values, walking the view; the copy on first use */
        uint8_t h1[32], h2[32];
        assert_int_equal(tio_tensor_sha256(t, TIO_HASH_VALUES, h1, &e), TIO_OK);
        assert_int_equal(tio_tensor_sha256(rt, TIO_HASH_VALUES, h2, &e), TIO_OK);
        assert_memory_equal(h1, h2, 32);
        if (memcmp(tio_tensor_data(t), want, n * es) != 0)
            fail_msg("%s: tio_tensor_data differs", cases[k].dict);
        printf("memory: %s: %zu bytes held by open, %zu by the save to .npy, for %zu\n",
               cases[k].dict, held_open, held_save, n * es);
        tio_container_free(r);
        tio_container_free(c);
        free(want);
        assert_int_equal(unlink(out), 0);
        assert_int_equal(unlink(path), 0);
    }
    assert_int_equal(rmdir(dir), 0);
}

static void test_report(void **state) {
    (void)state;
    for (size_t i = 0; i < NW && W[i].format; i++)
        printf("memory: %-11s %6zu decodes; inputs >= 4 KiB: worst peak %.3f x input (%zu bytes "
               "for %zu: %s); smaller inputs: worst peak %zu bytes (input %zu)\n",
               W[i].format, W[i].decodes, W[i].ratio, W[i].peak, W[i].input,
               W[i].what[0] ? W[i].what : "-", W[i].small_peak, W[i].small_input);
    for (size_t i = 0; i < NW && W[i].format; i++)
        if (W[i].pt_tensors)
            printf("memory: %-11s many tiny tensors: worst peak %.0f bytes per tensor (%zu "
                   "tensors), %.2f x input\n",
                   W[i].format, W[i].per_tensor, W[i].pt_tensors, W[i].tiny_ratio);
}

int main(void) {
    json_set_alloc_funcs(json_malloc, json_free);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_and_mutations),
        cmocka_unit_test(test_random_buffers),
        cmocka_unit_test(test_messages),
        cmocka_unit_test(test_rten_shared),
        cmocka_unit_test(test_tmfile_shared),
        cmocka_unit_test(test_tflite_shared),
        cmocka_unit_test(test_onnx_dense),
        cmocka_unit_test(test_many_tiny),
        cmocka_unit_test(test_widen_streamed),
        cmocka_unit_test(test_npy_views),
        cmocka_unit_test(test_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
