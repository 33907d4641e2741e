/*
 * Layout clean-up shared by the readers that raise a channels-last format to
 * ONNX's channels-first operators (src/tflite/raise.c; a future NHWC reader
 * or writer): Transpose pairs that cancel are removed, directly
 * (Transpose(Transpose(x, p), q) with p then q the identity) and across a
 * chain of elementwise operators of one input (Relu, Clip, Sigmoid, ...,
 * QuantizeLinear/DequantizeLinear with scalar parameters), which then run in
 * the first layout. One pass over the nodes; O(nodes + values).
 */
#include "graph/graph.h"

#include <stdlib.h>
#include <string.h>

#define GL_MAX_RANK 16

/* Operators that act elementwise on their first input, their other inputs
 * (if any) scalars: they commute with a Transpose. */
static bool gl_elementwise(const tio_graph *g, const tio_gnode *n) {
    static const char *const ops[] = {"Relu",      "Sigmoid",  "Tanh",     "LeakyRelu",
                                      "HardSwish", "Identity", "Clip",     "Abs",
                                      "Neg",       "Exp",      "Elu",      "HardSigmoid",
                                      "QuantizeLinear",        "DequantizeLinear"};
    if (n->domain || n->output_count != 1 || n->input_count < 1 || n->inputs[0] < 0) return false;
    bool known = false;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (strcmp(n->op, ops[k]) == 0) known = true;
    if (!known) return false;
    for (size_t k = 1; k < n->input_count; k++)
        if (n->inputs[k] >= 0 && g->values[n->inputs[k]].rank != 0) return false;
    for (size_t a = 0; a < n->attr_count; a++)
        if (strcmp(n->attrs[a].name, "axis") == 0) return false;
    return true;
}

/* The perm of a Transpose node (false if it is not one with a usable perm). */
static bool gl_perm(const tio_gnode *n, const int64_t **perm, size_t *rank) {
    if (n->domain || strcmp(n->op, "Transpose") != 0 || n->input_count != 1 ||
        n->output_count != 1 || n->inputs[0] < 0 || n->outputs[0] < 0)
        return false;
    for (size_t a = 0; a < n->attr_count; a++) {
        const tio_gattr *at = &n->attrs[a];
        if (strcmp(at->name, "perm") == 0 && at->type == TIO_ATTR_INTS && at->count &&
            at->count <= GL_MAX_RANK) {
            *perm = at->ints;
            *rank = at->count;
            return true;
        }
    }
    return false;
}

/* Whether q after p is the identity: out[k] = in[p[q[k]]]. */
static bool gl_cancel(const int64_t *p, const int64_t *q, size_t rank) {
    for (size_t k = 0; k < rank; k++) {
        if (q[k] < 0 || (size_t)q[k] >= rank) return false;
        if (p[q[k]] != (int64_t)k) return false;
    }
    return true;
}

int tio__graph_fold_transposes(tio_graph *g, size_t *removed, tio_error *err) {
    if (removed) *removed = 0;
    /* subgraphs may name this graph's values: left alone */
    if (g->sub_count || g->parent || !g->node_count) return TIO_OK;
    size_t nv = g->value_count, nn = g->node_count;
    int64_t *producer = malloc(nv * sizeof *producer);
    uint32_t *uses = calloc(nv, sizeof *uses);
    uint8_t *dead = calloc(nn, 1);
    if (!producer || !uses || !dead) {
        free(producer);
        free(uses);
        free(dead);
        return tio__nomem(err, NULL);
    }
    for (size_t v = 0; v < nv; v++) producer[v] = -1;
    for (size_t j = 0; j < nn; j++) {
        const tio_gnode *n = &g->nodes[j];
        for (size_t k = 0; k < n->input_count; k++)
            if (n->inputs[k] >= 0 && uses[n->inputs[k]] < UINT32_MAX) uses[n->inputs[k]]++;
        for (size_t k = 0; k < n->output_count; k++)
            if (n->outputs[k] >= 0 && producer[n->outputs[k]] < 0)
                producer[n->outputs[k]] = (int64_t)j;
    }
    /* graph outputs count as uses (their names are the model's interface) */
    for (size_t i = 0; i < g->output_count; i++)
        if (g->outputs[i] >= 0 && uses[g->outputs[i]] < UINT32_MAX) uses[g->outputs[i]]++;
    bool *isout = calloc(nv, sizeof *isout);
    int64_t *repl = malloc(nv * sizeof *repl);
    if (!isout || !repl) {
        free(isout);
        free(repl);
        free(producer);
        free(uses);
        free(dead);
        return tio__nomem(err, NULL);
    }
    for (size_t v = 0; v < nv; v++) repl[v] = -1;
    for (size_t i = 0; i < g->output_count; i++)
        if (g->outputs[i] >= 0) isout[g->outputs[i]] = true;
    size_t count = 0;
    for (size_t j = 0; j < nn; j++) {
        tio_gnode *t2 = &g->nodes[j];
        /* inputs that read a removed Transpose's output read its source */
        for (size_t a = 0; a < t2->input_count; a++)
            while (t2->inputs[a] >= 0 && repl[t2->inputs[a]] >= 0) t2->inputs[a] = repl[t2->inputs[a]];
        const int64_t *p2, *p1;
        size_t r2, r1;
        if (dead[j] || !gl_perm(t2, &p2, &r2)) continue;
        int64_t y = t2->outputs[0];
        /* walk back through one-use elementwise nodes to a Transpose */
        int64_t v = t2->inputs[0], first = -1, last = -1;
        size_t chain = 0;
        while (v >= 0 && producer[v] >= 0 && !dead[producer[v]] && uses[v] == 1 &&
               gl_elementwise(g, &g->nodes[producer[v]]) && chain < nn) {
            if (last < 0) last = producer[v];
            first = producer[v];
            v = g->nodes[producer[v]].inputs[0];
            chain++;
        }
        if (v < 0 || producer[v] < 0 || dead[producer[v]]) continue;
        size_t i1 = (size_t)producer[v];
        tio_gnode *t1 = &g->nodes[i1];
        if (!gl_perm(t1, &p1, &r1) || r1 != r2 || !gl_cancel(p1, p2, r1)) continue;
        int64_t x = t1->inputs[0];
        if (chain) {
            /* the chain runs on x, its last node writes y */
            tio_gnode *f = &g->nodes[first], *l = &g->nodes[last];
            /* the values between keep their contents in x's layout */
            for (int64_t k = last; k >= 0; k = k == first ? -1 : producer[g->nodes[k].inputs[0]]) {
                int64_t w = g->nodes[k].outputs[0];
                tio_gvalue *gv = &g->values[w];
                if (k != last && gv->rank == (int64_t)r1) {
                    tio_dim tmp[GL_MAX_RANK];
                    for (size_t d = 0; d < r1; d++) tmp[d] = gv->dims[p2[d]];
                    memcpy(gv->dims, tmp, r1 * sizeof *tmp);
                }
            }
            uses[l->outputs[0]]--;
            l->outputs[0] = y;
            producer[y] = last;
            uses[v]--;
            f->inputs[0] = x;
            uses[x]++;
            dead[j] = 1;
            count++;
        } else {
            /* Transpose(Transpose(x)): y's readers read x (not when y is a
             * graph output: its name is the interface) */
            if (isout[y]) continue;
            repl[y] = x;
            uses[x] += uses[y];
            uses[v]--;
            dead[j] = 1;
            count++;
        }
        if (uses[v] == 0 && !isout[v]) {
            dead[i1] = 1;
            uses[x]--;
            count++;
        }
    }
    if (count) {
        size_t m = 0;
        for (size_t j = 0; j < nn; j++) {
            if (dead[j]) tio__gnode_clear(g, &g->nodes[j]);
            else g->nodes[m++] = g->nodes[j];
        }
        g->node_count = m;
    }
    if (removed) *removed = count;
    free(producer);
    free(uses);
    free(dead);
    free(isout);
    free(repl);
    return TIO_OK;
}
