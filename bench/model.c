/* tio_bench model: open a model file and enumerate its graph and constants.
 *
 *   model [--case C] [--group-prefix P | --group G] PATH...
 *
 * Rows go to case C [model], group P + the file's name, or G.
 * One repetition = tio_open + every node (op, inputs, outputs, attributes)
 * + every value; for a constant its tensor's name, dtype, shape and size
 * (the data are not read) + tio_container_free. Reported per file with the
 * counts of nodes, values and constants, so the cost per node can be read,
 * and the process's RssAnon at the end of the walk, before the free: what
 * the open allocated (the constants' data stay in the mapped file). */
#include "bench.h"

#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <tensio.h>
#include <unistd.h>

typedef struct counts {
    uint64_t nodes, values, consts, attrs, const_bytes;
} counts;

static int walk(const char *path, counts *k, uint64_t *sink, bn_mem *mem) {
    tio_container *c;
    tio_error e;
    if (tio_open(path, NULL, &c, &e))
        return bn_fail("%s: %s: %s", path, tio_status_name(e.code), e.message);
    const tio_graph *g = tio_container_graph(c);
    memset(k, 0, sizeof *k);
    if (!g) {
        tio_container_free(c);
        return bn_fail("%s: no graph", path);
    }
    uint64_t acc = 0;
    size_t nn = tio_graph_node_count(g);
    for (size_t i = 0; i < nn; i++) {
        tio_node_info ni;
        if (tio_graph_node(g, i, &ni)) continue;
        acc += ni.op ? (unsigned char)ni.op[0] : 0;
        for (size_t j = 0; j < ni.input_count; j++) acc += (uint64_t)ni.inputs[j];
        for (size_t j = 0; j < ni.output_count; j++) acc += (uint64_t)ni.outputs[j];
        for (size_t j = 0; j < ni.attr_count; j++) {
            tio_attr a;
            if (tio_graph_attr(g, i, j, &a) == TIO_OK) acc += (uint64_t)a.type;
        }
        k->attrs += ni.attr_count;
    }
    size_t nv = tio_graph_value_count(g);
    for (size_t i = 0; i < nv; i++) {
        tio_value_info vi;
        if (tio_graph_value(g, i, &vi)) continue;
        if (vi.tensor >= 0) {
            const tio_tensor *t = tio_container_tensor(c, (size_t)vi.tensor);
            acc += (uint64_t)tio_tensor_dtype(t) + tio_tensor_rank(t);
            const int64_t *s = tio_tensor_shape(t);
            for (size_t d = 0; d < tio_tensor_rank(t); d++) acc += (uint64_t)s[d];
            k->consts++;
            k->const_bytes += tio_tensor_nbytes(t);
        } else {
            acc += (uint64_t)vi.rank;
        }
    }
    k->nodes = nn;
    k->values = nv;
    bn_mem_sample((int)getpid(), mem);
    tio_container_free(c);
    *sink += acc;
    return 0;
}

int bn_cmd_model(bn_ctx *x, int argc, char **argv) {
    const char *cas = bn_opt(argc, argv, "--case", "model");
    const char *prefix = bn_opt(argc, argv, "--group-prefix", "");
    const char *fixed = bn_opt(argc, argv, "--group", NULL);
    uint64_t sink = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) == 0) {
            i++; /* every option takes a value */
            continue;
        }
        const char *path = argv[i];
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        char group[256];
        snprintf(group, sizeof group, "%s%s", fixed ? "" : prefix, fixed ? fixed : base);
        struct stat st;
        uint64_t size = stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
        counts k;
        bn_mem mem = {0, 0, 0};
        for (int r = -x->warmup; r < x->reps; r++) {
            double t0 = bn_now();
            if (walk(path, &k, &sink, &mem)) return 1;
            double t1 = bn_now();
            if (r >= 0) bn_emit(cas, group, "tensio", t1 - t0, size, k.nodes + k.values);
        }
        bn_fact(cas, group, "tensio", "nodes", "%" PRIu64, k.nodes);
        bn_fact(cas, group, "tensio", "values", "%" PRIu64, k.values);
        bn_fact(cas, group, "tensio", "constants", "%" PRIu64, k.consts);
        bn_fact(cas, group, "tensio", "attributes", "%" PRIu64, k.attrs);
        bn_fact(cas, group, "tensio", "constant_bytes", "%" PRIu64, k.const_bytes);
        bn_fact(cas, group, "tensio", "file_bytes", "%" PRIu64, size);
        bn_fact(cas, group, "tensio", "anon_kib", "%" PRIu64, mem.anon);
    }
    return sink == 0 ? bn_fail("model: nothing enumerated") : 0;
}
