/* tensio info — summarise a file. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char info_help[] =
    "Usage: tensio info [OPTIONS] FILE\n"
    "\n"
    "Summarise FILE: format, file size, tensor count, total data bytes, tensors\n"
    "per dtype and per layout, container metadata and the validation findings\n"
    "(readable-but-invalid details; 'tensio validate' reports them as errors).\n"
    "Then, when the format records them, details of the file's layout; for a\n"
    "PyTorch checkpoint the object it stores, as an indented outline (dicts,\n"
    "lists, scalars, tensors by index, opaque objects by module.name and byte\n"
    "offset; cut at 200 lines, --json has all of it); and for a model its\n"
    "graph: metadata, inputs, outputs and every operator with its inputs,\n"
    "outputs and attributes (subgraphs indented below their operator).\n"
    "\n"
    "FILE '-' reads standard input into memory (format probed, or --format);\n"
    "a tar shard on it is read as a shard (a redirected file as a stream).\n"
    "A WebDataset tar shard (FILE.tar): samples, members per extension, tensors\n"
    "per dtype and bytes; one at an http(s):// URL or from 'pipe:COMMAND' is read\n"
    "as a stream, and a shard list ('shard-{000..009}.tar', '::' between lists)\n"
    "gives each shard in turn under its name (--json: an array). An LMDB store (DIR with data.mdb, FILE.lmdb, FILE.mdb):\n"
    "its records' format, records, tensors and bytes.\n"
    "\n"
    "Options:\n"
    "      --json          print one JSON object instead (see docs/cli.md)\n"
    "      --native        show a model's graph as the file stores it, not in ONNX\n"
    "                      form (tmfile: Const and InputOp nodes, Tengine's param\n"
    "                      fields)\n"
    "  -f, --format FMT    read FILE as format FMT instead of detecting it\n"
    "  -h, --help          show this help and exit\n";

enum { OPT_HELP = 1, OPT_JSON, OPT_FORMAT, OPT_NATIVE };

static const cli_option info_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"json", 0, 0, OPT_JSON},
    {"format", 'f', 1, OPT_FORMAT},
    {"native", 0, 0, OPT_NATIVE},
};

typedef struct info_stats {
    uint64_t data_bytes;
    size_t per_dtype[TIO_DTYPE_COUNT];
    size_t per_quant[64]; /* by tio_quant */
    size_t dense, coo, quant;
} info_stats;

static void collect(const tio_container *c, info_stats *s) {
    memset(s, 0, sizeof *s);
    size_t n = tio_container_count(c);
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        s->data_bytes += tio_tensor_nbytes(t);
        size_t d = (size_t)tio_tensor_dtype(t);
        size_t q = (size_t)tio_tensor_quant(t);
        if (tio_tensor_layout(t) == TIO_LAYOUT_QUANT) {
            s->quant++;
            if (q < 64) s->per_quant[q]++;
            continue;
        }
        if (d < TIO_DTYPE_COUNT) s->per_dtype[d]++;
        if (tio_tensor_layout(t) == TIO_LAYOUT_COO)
            s->coo++;
        else
            s->dense++;
    }
}

/* ------------------------------------------------------- format details */

/* A tensor's name, "(root)" for the unnamed one (a checkpoint of one tensor). */
static const char *tname(const tio_tensor *t) {
    return tio_tensor_name(t) ? tio_tensor_name(t) : "(root)";
}

/* Tied weights: each alias and the tensor it aliases (tio_tensor_alias). */
static int aliases_text(const tio_container *c) {
    size_t n = tio_container_count(c), na = 0;
    for (size_t i = 0; i < n; i++) na += tio_tensor_alias(tio_container_tensor(c, i)) != NULL;
    if (!na) return CLI_EXIT_OK;
    printf("tied weights: %zu (aliases of an earlier tensor: one storage)\n", na);
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(c, i), *a = tio_tensor_alias(t);
        if (!a) continue;
        char *et = cli_text_escape(tname(t));
        char *ea = cli_text_escape(tname(a));
        if (et && ea) printf("  %s -> %s\n", et, ea);
        free(et);
        free(ea);
        if (!et || !ea) return cli_error("out of memory");
    }
    return CLI_EXIT_OK;
}

static int props_text(const tio_container *c) {
    size_t np = tio_container_prop_count(c);
    if (np == 0) return CLI_EXIT_OK;
    printf("format details: %zu\n", np);
    for (size_t i = 0; i < np; i++) {
        const char *k = NULL, *v = NULL;
        if (tio_container_prop_at(c, i, &k, &v) != TIO_OK || !k) continue;
        char *ek = cli_text_escape(k);
        char *ev = cli_text_escape(v ? v : "");
        if (!ek || !ev) {
            free(ek);
            free(ev);
            return cli_error("out of memory");
        }
        printf("  %s = %s\n", ek, ev);
        free(ek);
        free(ev);
    }
    return CLI_EXIT_OK;
}

/* ---------------------------------------------------------- graph, text */

/* A growable string: one line of output. An allocation failure is recorded
 * and makes every later append a no-op. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
    int nomem;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->nomem) return;
    if (n >= SIZE_MAX / 2 - b->len) {
        b->nomem = 1;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 128;
        while (cap < b->len + n + 1) cap *= 2;
        char *np = realloc(b->p, cap);
        if (!np) {
            b->nomem = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static void sb_printf(sbuf *b, const char *fmt, ...) CLI_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = cli_vstrdup_printf(fmt, ap);
    va_end(ap);
    if (!s) {
        b->nomem = 1;
        return;
    }
    sb_str(b, s);
    free(s);
}

/* s with control characters as \xNN. */
static void sb_esc(sbuf *b, const char *s) {
    char *e = cli_text_escape(s);
    if (!e) {
        b->nomem = 1;
        return;
    }
    sb_str(b, e);
    free(e);
}

/* Where a value is only referred to (an operator's inputs and outputs, a
 * value listed again), a name longer than NAME_CUT bytes is cut to its first
 * NAME_CUT bytes + "...": a file can refer to one long name from everywhere,
 * and the output must stay proportional to the file. */
#define NAME_CUT 128

/* Copies s into cut (NAME_CUT + 1 bytes) when it is longer than NAME_CUT
 * bytes, cut at a UTF-8 character boundary; false when it is not that long.
 * Reads at most NAME_CUT + 1 bytes of s. */
static int name_cut(const char *s, char *cut) {
    size_t n = 0;
    while (n <= NAME_CUT && s[n]) n++;
    if (n <= NAME_CUT) return 0;
    n = NAME_CUT;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    memcpy(cut, s, n);
    cut[n] = '\0';
    return 1;
}

/* A name, cut unless `full`. */
static void sb_name(sbuf *b, const char *s, int full) {
    char cut[NAME_CUT + 1];
    if (!full && name_cut(s, cut)) {
        sb_esc(b, cut);
        sb_str(b, "...");
    } else {
        sb_esc(b, s);
    }
}

/* A value by name; "#index" when unnamed, "-" when absent (-1). Unless
 * `full`, a long name is cut and followed by the index: "prefix...#index". */
static void sb_value(sbuf *b, const tio_graph *g, int64_t v, int full) {
    tio_value_info vi;
    char cut[NAME_CUT + 1];
    if (v < 0) {
        sb_str(b, "-");
    } else if (tio_graph_value(g, (size_t)v, &vi) == TIO_OK && vi.name) {
        if (!full && name_cut(vi.name, cut)) {
            sb_esc(b, cut);
            sb_printf(b, "...#%lld", (long long)v);
        } else {
            sb_esc(b, vi.name);
        }
    } else {
        sb_printf(b, "#%lld", (long long)v);
    }
}

static void sb_values(sbuf *b, const tio_graph *g, const int64_t *v, size_t n) {
    sb_str(b, "(");
    for (size_t k = 0; k < n; k++) {
        if (k) sb_str(b, ", ");
        sb_value(b, g, v[k], 0);
    }
    sb_str(b, ")");
}

/* Marks value v seen in *seen (a bitmap of the graph's values, allocated on
 * first use); returns whether it was already. Out of memory counts as seen,
 * which only shortens names. */
static int seen_before(unsigned char **seen, const tio_graph *g, int64_t v) {
    if (v < 0) return 0;
    if (!*seen) *seen = calloc(tio_graph_value_count(g) / 8 + 1, 1);
    if (!*seen) return 1;
    size_t i = (size_t)v;
    int was = ((*seen)[i / 8] >> (i % 8)) & 1;
    (*seen)[i / 8] = (unsigned char)((*seen)[i / 8] | (1u << (i % 8)));
    return was;
}

/* "[batch, 3, ?]": symbolic dims by name (cut unless `full`), unknown dims
 * as "?"; "?" when even the rank is unknown. */
static void sb_shape(sbuf *b, const tio_value_info *vi, int full) {
    if (vi->rank < 0) {
        sb_str(b, "?");
        return;
    }
    sb_str(b, "[");
    for (int64_t k = 0; k < vi->rank; k++) {
        if (k) sb_str(b, ", ");
        if (vi->dims[k].name)
            sb_name(b, vi->dims[k].name, full);
        else if (vi->dims[k].value < 0)
            sb_str(b, "?");
        else
            sb_printf(b, "%lld", (long long)vi->dims[k].value);
    }
    sb_str(b, "]");
}

static void sb_attr(sbuf *b, const tio_container *c, const tio_attr *a) {
    switch (a->type) {
    case TIO_ATTR_INT:
        if (a->label) sb_printf(b, "%s(%lld)", a->label, (long long)a->i);
        else sb_printf(b, "%lld", (long long)a->i);
        break;
    case TIO_ATTR_FLOAT: sb_printf(b, "%.9g", a->f); break;
    case TIO_ATTR_STRING:
        sb_str(b, "\"");
        sb_esc(b, a->s ? a->s : "");
        sb_str(b, "\"");
        break;
    case TIO_ATTR_TYPE: sb_esc(b, a->s ? a->s : ""); break;
    case TIO_ATTR_INTS:
    case TIO_ATTR_FLOATS:
    case TIO_ATTR_STRINGS:
        sb_str(b, "[");
        for (size_t k = 0; k < a->count; k++) {
            if (k) sb_str(b, ", ");
            if (a->type == TIO_ATTR_INTS) {
                sb_printf(b, "%lld", (long long)a->ints[k]);
            } else if (a->type == TIO_ATTR_FLOATS) {
                sb_printf(b, "%.9g", a->floats[k]);
            } else {
                sb_str(b, "\"");
                sb_esc(b, a->strings[k] ? a->strings[k] : "");
                sb_str(b, "\"");
            }
        }
        sb_str(b, "]");
        break;
    case TIO_ATTR_TENSOR: {
        const tio_tensor *t =
            a->i >= 0 ? tio_container_tensor(c, (size_t)a->i) : NULL;
        if (t && tio_tensor_name(t))
            sb_esc(b, tio_tensor_name(t));
        else
            sb_printf(b, "<tensor %lld>", (long long)a->i);
        break;
    }
    case TIO_ATTR_GRAPH:
        sb_printf(b, "<subgraph: %zu nodes>", tio_graph_node_count(a->graph));
        break;
    case TIO_ATTR_TENSORS:
        sb_str(b, "[");
        for (size_t k = 0; k < a->count; k++) {
            const tio_tensor *t = tio_container_tensor(c, (size_t)a->tensors[k]);
            if (k) sb_str(b, ", ");
            if (t && tio_tensor_name(t)) sb_esc(b, tio_tensor_name(t));
            else sb_printf(b, "<tensor %lld>", (long long)a->tensors[k]);
        }
        sb_str(b, "]");
        break;
    case TIO_ATTR_GRAPHS:
        sb_str(b, "[");
        for (size_t k = 0; k < a->count; k++)
            sb_printf(b, "%s<subgraph: %zu nodes>", k ? ", " : "",
                      tio_graph_node_count(a->graphs[k]));
        sb_str(b, "]");
        break;
    default: sb_str(b, "?"); break;
    }
}

static size_t constant_count(const tio_graph *g) {
    size_t n = 0, nv = tio_graph_value_count(g);
    for (size_t i = 0; i < nv; i++) {
        tio_value_info vi;
        if (tio_graph_value(g, i, &vi) == TIO_OK && vi.tensor >= 0) n++;
    }
    return n;
}

/* Prints line b (indented) and empties it; CLI_EXIT_FAIL when out of memory. */
static int sb_line(sbuf *b, int indent) {
    if (b->nomem) return cli_error("out of memory");
    printf("%*s%s\n", indent, "", b->p ? b->p : "");
    b->len = 0;
    if (b->p) b->p[0] = '\0';
    return CLI_EXIT_OK;
}

/* "  name  dtype  shape" rows for graph inputs or outputs. A value listed
 * again shows cut names. */
static int value_rows(const tio_graph *g, const int64_t *list, size_t n, int indent) {
    cli_table t;
    cli_table_init(&t, 3, 0);
    sbuf b = {0};
    unsigned char *seen = NULL;
    for (size_t k = 0; k < n; k++) {
        tio_value_info vi;
        memset(&vi, 0, sizeof vi);
        vi.rank = -1;
        if (list[k] >= 0) tio_graph_value(g, (size_t)list[k], &vi);
        int full = !seen_before(&seen, g, list[k]);
        sb_value(&b, g, list[k], full);
        cli_table_add(&t, "%*s%s", indent + 2, "", b.nomem ? "" : b.p);
        b.len = 0;
        const char *dn = tio_dtype_name(vi.dtype);
        if (vi.type) { /* a sequence, optional, map ... (ONNX's notation) */
            sb_esc(&b, vi.type);
            cli_table_add(&t, "%s", b.nomem ? "" : b.p);
            cli_table_add(&t, "%s", "");
            b.len = 0;
            continue;
        }
        cli_table_add(&t, "%s", dn ? dn : "?");
        sb_shape(&b, &vi, full);
        cli_table_add(&t, "%s", b.nomem ? "" : b.p);
        b.len = 0;
    }
    int rc = b.nomem ? cli_error("out of memory") : cli_table_print(&t, stdout);
    free(seen);
    free(b.p);
    cli_table_free(&t);
    return rc;
}

/* The graph as the file stores it (TIO_OPEN_NATIVE_GRAPH), beside the ONNX
 * form: its nodes by name, so that each operator shows its native params
 * (a tmfile's Tengine fields). */
typedef struct named_node {
    const char *name;
    size_t index;
} named_node;

typedef struct native_map {
    const tio_container *c;
    const tio_graph *g;
    named_node *order; /* the nodes sorted by name */
    size_t n;
} native_map;

static int by_node_name(const void *a, const void *b) {
    return strcmp(((const named_node *)a)->name, ((const named_node *)b)->name);
}

/* The native node named `name`, or -1. */
static int64_t native_find(const native_map *nm, const char *name) {
    if (!nm || !name) return -1;
    size_t lo = 0, hi = nm->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int k = strcmp(nm->order[mid].name, name);
        if (k == 0) return (int64_t)nm->order[mid].index;
        if (k < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* Native node k of nat, when its attributes are not ONNX node i's of g by
 * name (a tmfile's Tengine fields; an rten graph's are the same): -1 else. */
static int64_t native_other(const native_map *nat, const tio_graph *g, size_t i,
                            const char *name) {
    int64_t k = native_find(nat, name);
    tio_node_info a, b;
    if (k < 0 || tio_graph_node(g, i, &a) != TIO_OK ||
        tio_graph_node(nat->g, (size_t)k, &b) != TIO_OK || !b.attr_count)
        return -1;
    if (a.attr_count != b.attr_count) return k;
    for (size_t j = 0; j < a.attr_count; j++) {
        tio_attr x, y;
        if (tio_graph_attr(g, i, j, &x) != TIO_OK ||
            tio_graph_attr(nat->g, (size_t)k, j, &y) != TIO_OK || strcmp(x.name, y.name) != 0)
            return k;
    }
    return -1;
}

static int graph_text(const tio_container *c, const tio_graph *g, int ind, int root,
                      const native_map *nat) {
    size_t nm = tio_graph_meta_count(g);
    if (root || nm) printf("%*s%s %zu\n", ind, "", root ? "model metadata:" : "metadata:", nm);
    for (size_t i = 0; i < nm; i++) {
        const char *k = NULL, *v = NULL;
        if (tio_graph_meta_at(g, i, &k, &v) != TIO_OK || !k) continue;
        sbuf b = {0};
        sb_esc(&b, k);
        sb_str(&b, " = ");
        sb_esc(&b, v ? v : "");
        int rc = sb_line(&b, ind + 2);
        free(b.p);
        if (rc != CLI_EXIT_OK) return rc;
    }
    size_t n = tio_graph_input_count(g);
    printf("%*sinputs:      %zu\n", ind, "", n);
    if (value_rows(g, tio_graph_inputs(g), n, ind) != CLI_EXIT_OK) return CLI_EXIT_FAIL;
    n = tio_graph_output_count(g);
    printf("%*soutputs:     %zu\n", ind, "", n);
    if (value_rows(g, tio_graph_outputs(g), n, ind) != CLI_EXIT_OK) return CLI_EXIT_FAIL;
    n = tio_graph_capture_count(g);
    if (n) {
        printf("%*scaptures:    %zu\n", ind, "", n);
        if (value_rows(g, tio_graph_captures(g), n, ind) != CLI_EXIT_OK) return CLI_EXIT_FAIL;
    }
    size_t nn = tio_graph_node_count(g);
    printf("%*soperators:   %zu\n", ind, "", nn);
    sbuf b = {0};
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < nn && rc == CLI_EXIT_OK; i++) {
        tio_node_info ni;
        if (tio_graph_node(g, i, &ni) != TIO_OK) continue;
        sb_printf(&b, "%zu  ", i);
        sb_esc(&b, ni.name ? ni.name : "-");
        sb_str(&b, "  ");
        if (ni.domain) {
            sb_esc(&b, ni.domain);
            sb_str(&b, ":");
        }
        sb_esc(&b, ni.op ? ni.op : "?");
        if (ni.native_op || ni.native_id >= 0) {
            sb_str(&b, " [");
            if (ni.native_op) sb_esc(&b, ni.native_op);
            if (ni.native_op && ni.native_id >= 0) sb_str(&b, ", ");
            if (ni.native_id >= 0) sb_printf(&b, "id %lld", (long long)ni.native_id);
            sb_str(&b, "]");
        }
        sb_str(&b, "  ");
        sb_values(&b, g, ni.inputs, ni.input_count);
        sb_str(&b, " -> ");
        sb_values(&b, g, ni.outputs, ni.output_count);
        for (size_t j = 0; j < ni.attr_count; j++) {
            tio_attr a;
            if (tio_graph_attr(g, i, j, &a) != TIO_OK) continue;
            sb_str(&b, j ? " " : "  ");
            sb_esc(&b, a.name);
            sb_str(&b, "=");
            sb_attr(&b, c, &a);
        }
        rc = sb_line(&b, ind + 2);
        /* the params the file stores, where they are not the ONNX attributes */
        int64_t nk = native_other(nat, g, i, ni.name);
        tio_node_info nn2;
        if (rc == CLI_EXIT_OK && nk >= 0 && tio_graph_node(nat->g, (size_t)nk, &nn2) == TIO_OK &&
            nn2.attr_count) {
            sb_str(&b, tio_graph_native_format(nat->g));
            sb_str(&b, ":");
            for (size_t j = 0; j < nn2.attr_count; j++) {
                tio_attr a;
                if (tio_graph_attr(nat->g, (size_t)nk, j, &a) != TIO_OK) continue;
                sb_str(&b, " ");
                sb_esc(&b, a.name);
                sb_str(&b, "=");
                sb_attr(&b, nat->c, &a);
            }
            rc = sb_line(&b, ind + 6);
        }
        /* Subgraphs below their operator. */
        for (size_t j = 0; j < ni.attr_count && rc == CLI_EXIT_OK; j++) {
            tio_attr a;
            if (tio_graph_attr(g, i, j, &a) != TIO_OK) continue;
            size_t ns = a.type == TIO_ATTR_GRAPH ? (a.graph != NULL)
                        : a.type == TIO_ATTR_GRAPHS ? a.count
                                                    : 0;
            for (size_t k = 0; k < ns && rc == CLI_EXIT_OK; k++) {
                tio_graph *sg = a.type == TIO_ATTR_GRAPH ? a.graph : a.graphs[k];
                sb_esc(&b, a.name);
                if (a.type == TIO_ATTR_GRAPHS) sb_printf(&b, "[%zu]", k);
                sb_printf(&b, ": subgraph, %zu values (%zu constants), %zu operators",
                          tio_graph_value_count(sg), constant_count(sg),
                          tio_graph_node_count(sg));
                rc = sb_line(&b, ind + 4);
                if (rc == CLI_EXIT_OK) rc = graph_text(c, sg, ind + 6, 0, NULL);
            }
        }
    }
    free(b.p);
    return rc;
}

static int model_text(const tio_container *c, const native_map *nat) {
    const tio_graph *g = tio_container_graph(c);
    if (!g) return CLI_EXIT_OK;
    printf("model:       %zu values (%zu constants), %zu operators\n",
           tio_graph_value_count(g), constant_count(g), tio_graph_node_count(g));
    return graph_text(c, g, 0, 1, nat);
}

/* ---------------------------------------------------------- graph, JSON */

/* A value reference: its name, its index when unnamed, null when absent.
 * Unless `full`, a name longer than NAME_CUT bytes gives the index too. */
static json_t *json_value_ref(const tio_graph *g, int64_t v, int full) {
    tio_value_info vi;
    char cut[NAME_CUT + 1];
    if (v < 0) return json_null();
    if (tio_graph_value(g, (size_t)v, &vi) == TIO_OK && vi.name &&
        (full || !name_cut(vi.name, cut)))
        return cli_json_str(vi.name);
    return json_integer((json_int_t)v);
}

/* A name as a JSON string, cut (+ "...") unless `full`. */
static json_t *json_name(const char *s, int full) {
    char cut[NAME_CUT + 4];
    if (full || !name_cut(s, cut)) return cli_json_str(s);
    strcat(cut, "...");
    return cli_json_str(cut);
}

static json_t *json_value_refs(const tio_graph *g, const int64_t *v, size_t n) {
    json_t *a = json_array();
    for (size_t k = 0; k < n && a; k++) {
        if (json_array_append_new(a, json_value_ref(g, v[k], 0)) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* Dims: integers, symbolic names as strings (cut unless `full`), unknown as
 * null; null when the rank is unknown. */
static json_t *json_vshape(const tio_value_info *vi, int full) {
    if (vi->rank < 0) return json_null();
    json_t *a = json_array();
    for (int64_t k = 0; k < vi->rank && a; k++) {
        const tio_dim *d = &vi->dims[k];
        json_t *e = d->name ? json_name(d->name, full)
                    : d->value < 0 ? json_null()
                                   : json_integer((json_int_t)d->value);
        if (json_array_append_new(a, e) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* [{"name", "dtype", "shape"[, "type"]}] for graph inputs or outputs. A value listed
 * again has its long names cut. */
static json_t *json_value_list(const tio_graph *g, const int64_t *list, size_t n) {
    json_t *a = json_array();
    unsigned char *seen = NULL;
    for (size_t k = 0; k < n && a; k++) {
        tio_value_info vi;
        memset(&vi, 0, sizeof vi);
        vi.rank = -1;
        if (list[k] >= 0) tio_graph_value(g, (size_t)list[k], &vi);
        int full = !seen_before(&seen, g, list[k]);
        json_t *o = json_object();
        int bad = json_array_append_new(a, o) != 0;
        if (!bad) {
            bad |= cli_json_set(o, "name", json_value_ref(g, list[k], full));
            bad |= cli_json_set(o, "dtype", cli_json_str(tio_dtype_name(vi.dtype)));
            bad |= cli_json_set(o, "shape", json_vshape(&vi, full));
            if (vi.type) bad |= cli_json_set(o, "type", cli_json_str(vi.type));
        }
        if (bad) {
            json_decref(a);
            a = NULL;
        }
    }
    free(seen);
    return a;
}

static json_t *json_float(double f) {
    if (isnan(f)) return json_string("nan");
    if (isinf(f)) return json_string(f < 0 ? "-inf" : "inf");
    return json_real(f);
}

static json_t *json_graph(const tio_container *c, const tio_graph *g, const native_map *nat);

static json_t *json_attr(const tio_container *c, const tio_attr *a) {
    json_t *v = NULL;
    switch (a->type) {
    case TIO_ATTR_INT: return json_integer((json_int_t)a->i);
    case TIO_ATTR_FLOAT: return json_float(a->f);
    case TIO_ATTR_STRING:
    case TIO_ATTR_TYPE: return cli_json_str(a->s ? a->s : "");
    case TIO_ATTR_INTS:
    case TIO_ATTR_FLOATS:
    case TIO_ATTR_STRINGS:
        v = json_array();
        for (size_t k = 0; k < a->count && v; k++) {
            json_t *e = a->type == TIO_ATTR_INTS     ? json_integer((json_int_t)a->ints[k])
                        : a->type == TIO_ATTR_FLOATS ? json_float(a->floats[k])
                                                     : cli_json_str(a->strings[k]);
            if (json_array_append_new(v, e) != 0) {
                json_decref(v);
                return NULL;
            }
        }
        return v;
    case TIO_ATTR_TENSOR: {
        const tio_tensor *t = a->i >= 0 ? tio_container_tensor(c, (size_t)a->i) : NULL;
        v = json_object();
        int bad = cli_json_set(v, "tensor", json_integer((json_int_t)a->i));
        bad |= cli_json_set(v, "name", cli_json_str(t ? tio_tensor_name(t) : NULL));
        if (bad) {
            json_decref(v);
            return NULL;
        }
        return v;
    }
    case TIO_ATTR_GRAPH:
        v = json_object();
        if (cli_json_set(v, "graph", a->graph ? json_graph(c, a->graph, NULL) : json_null())) {
            json_decref(v);
            return NULL;
        }
        return v;
    case TIO_ATTR_TENSORS:
    case TIO_ATTR_GRAPHS: {
        json_t *arr = json_array();
        v = json_object();
        int bad = !arr || !v;
        for (size_t k = 0; k < a->count && !bad; k++) {
            json_t *e;
            if (a->type == TIO_ATTR_GRAPHS) {
                e = json_graph(c, a->graphs[k], NULL);
            } else {
                const tio_tensor *t = tio_container_tensor(c, (size_t)a->tensors[k]);
                e = json_object();
                bad |= !e || cli_json_set(e, "tensor", json_integer((json_int_t)a->tensors[k]));
                bad |= !e || cli_json_set(e, "name", cli_json_str(t ? tio_tensor_name(t) : NULL));
            }
            bad |= json_array_append_new(arr, e) != 0;
        }
        if (!bad) {
            bad = cli_json_set(v, a->type == TIO_ATTR_GRAPHS ? "graphs" : "tensors", arr);
            arr = NULL;
        }
        if (bad) {
            json_decref(arr);
            json_decref(v);
            return NULL;
        }
        return v;
    }
    default: return json_null();
    }
}

static json_t *json_node(const tio_container *c, const tio_graph *g, size_t i,
                         const native_map *nat) {
    tio_node_info ni;
    if (tio_graph_node(g, i, &ni) != TIO_OK) return json_null();
    json_t *o = json_object();
    int bad = cli_json_set(o, "index", json_integer((json_int_t)i));
    bad |= cli_json_set(o, "name", cli_json_str(ni.name));
    bad |= cli_json_set(o, "op", cli_json_str(ni.op));
    if (ni.domain) bad |= cli_json_set(o, "domain", cli_json_str(ni.domain));
    if (ni.native_op) bad |= cli_json_set(o, "native_op", cli_json_str(ni.native_op));
    if (ni.native_id >= 0)
        bad |= cli_json_set(o, "native_id", json_integer((json_int_t)ni.native_id));
    bad |= cli_json_set(o, "inputs", json_value_refs(g, ni.inputs, ni.input_count));
    bad |= cli_json_set(o, "outputs", json_value_refs(g, ni.outputs, ni.output_count));
    json_t *attrs = json_object();
    bad |= cli_json_set(o, "attrs", attrs);
    for (size_t j = 0; j < ni.attr_count && !bad; j++) {
        tio_attr a;
        if (tio_graph_attr(g, i, j, &a) != TIO_OK) continue;
        bad |= cli_json_set(attrs, a.name, json_attr(c, &a));
    }
    int64_t nk = native_other(nat, g, i, ni.name);
    tio_node_info nn2;
    if (!bad && nk >= 0 && tio_graph_node(nat->g, (size_t)nk, &nn2) == TIO_OK && nn2.attr_count) {
        json_t *na = json_object();
        bad |= cli_json_set(o, "native_attrs", na);
        for (size_t j = 0; j < nn2.attr_count && !bad; j++) {
            tio_attr a;
            if (tio_graph_attr(nat->g, (size_t)nk, j, &a) != TIO_OK) continue;
            bad |= cli_json_set(na, a.name, json_attr(nat->c, &a));
        }
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* {"metadata", "inputs", "outputs", "values", "constants", "nodes", "captures"} */
static json_t *json_graph(const tio_container *c, const tio_graph *g, const native_map *nat) {
    json_t *o = json_object();
    json_t *meta = json_object();
    int bad = cli_json_set(o, "metadata", meta);
    size_t nm = tio_graph_meta_count(g);
    for (size_t i = 0; i < nm && !bad; i++) {
        const char *k = NULL, *v = NULL;
        if (tio_graph_meta_at(g, i, &k, &v) != TIO_OK || !k) continue;
        bad |= cli_json_set(meta, k, cli_json_str(v ? v : ""));
    }
    bad |= cli_json_set(o, "inputs",
                        json_value_list(g, tio_graph_inputs(g), tio_graph_input_count(g)));
    bad |= cli_json_set(o, "outputs",
                        json_value_list(g, tio_graph_outputs(g), tio_graph_output_count(g)));
    bad |= cli_json_set(o, "values", json_integer((json_int_t)tio_graph_value_count(g)));
    bad |= cli_json_set(o, "constants", json_integer((json_int_t)constant_count(g)));
    json_t *nodes = json_array();
    bad |= cli_json_set(o, "nodes", nodes);
    size_t nn = tio_graph_node_count(g);
    for (size_t i = 0; i < nn && !bad; i++)
        bad |= json_array_append_new(nodes, json_node(c, g, i, nat)) != 0;
    bad |= cli_json_set(o, "captures", json_value_refs(g, tio_graph_captures(g),
                                                       tio_graph_capture_count(g)));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int info_json(const char *path, const tio_container *c, const info_stats *s,
                     const native_map *nat) {
    json_t *root = json_object();
    if (!root) return cli_error("out of memory");
    int bad = cli_json_set(root, "file", cli_json_str(path));
    bad |= cli_json_set(root, "format", cli_json_str(tio_container_format(c)));
    bad |= cli_json_set(root, "file_size",
                        json_integer((json_int_t)tio_container_source_size(c)));
    bad |= cli_json_set(root, "tensor_count",
                        json_integer((json_int_t)tio_container_count(c)));
    bad |= cli_json_set(root, "data_bytes", json_integer((json_int_t)s->data_bytes));

    json_t *dtypes = json_object();
    bad |= cli_json_set(root, "dtypes", dtypes);
    for (size_t d = 0; d < TIO_DTYPE_COUNT && !bad; d++) {
        const char *name = tio_dtype_name((tio_dtype)d);
        if (s->per_dtype[d] && name)
            bad |= cli_json_set(dtypes, name, json_integer((json_int_t)s->per_dtype[d]));
    }
    for (size_t q = 0; q < 64 && !bad; q++) {
        const char *name = tio_quant_name((tio_quant)q);
        if (s->per_quant[q] && name)
            bad |= cli_json_set(dtypes, name, json_integer((json_int_t)s->per_quant[q]));
    }
    json_t *layouts = json_object();
    bad |= cli_json_set(root, "layouts", layouts);
    if (!bad) {
        bad |= cli_json_set(layouts, "dense", json_integer((json_int_t)s->dense));
        bad |= cli_json_set(layouts, "coo", json_integer((json_int_t)s->coo));
        if (s->quant) bad |= cli_json_set(layouts, "quant", json_integer((json_int_t)s->quant));
    }

    json_t *meta = json_object();
    bad |= cli_json_set(root, "metadata", meta);
    size_t nm = tio_container_meta_count(c);
    for (size_t i = 0; i < nm && !bad; i++) {
        const char *k = NULL, *v = NULL;
        size_t kl = 0, vl = 0; /* byte strings: a NUL is \u0000 */
        if (tio_container_meta_at_n(c, i, &k, &kl, &v, &vl) != TIO_OK || !k) continue;
        bad |= cli_json_setn(meta, k, kl, cli_json_strn(v ? v : "", v ? vl : 0));
    }
    /* typed metadata (GGUF): the type of each typed key */
    json_t *types = NULL;
    for (size_t i = 0; i < nm && !bad; i++) {
        const char *k = NULL, *ty;
        size_t kl = 0;
        if (tio_container_meta_at_n(c, i, &k, &kl, NULL, NULL) != TIO_OK || !k ||
            !(ty = tio_container_meta_type_n(c, k, kl)))
            continue;
        if (!types) {
            types = json_object();
            bad |= cli_json_set(root, "metadata_types", types);
        }
        if (!bad) bad |= cli_json_setn(types, k, kl, cli_json_str(ty));
    }

    size_t nw = tio_container_warning_count(c);
    bad |= cli_json_set(root, "finding_count", json_integer((json_int_t)nw));
    json_t *findings = json_array();
    bad |= cli_json_set(root, "findings", findings);
    for (size_t i = 0; i < nw && !bad; i++) {
        const tio_error *w = tio_container_warning(c, i);
        if (!w) continue;
        json_t *o = json_object();
        if (!o || json_array_append_new(findings, o) != 0) {
            bad = 1;
            break;
        }
        bad |= cli_json_set(o, "code", json_string(tio_status_name(w->code)));
        bad |= cli_json_set(o, "offset", w->offset >= 0 ? json_integer((json_int_t)w->offset)
                                                         : json_null());
        bad |= cli_json_set(o, "message", cli_json_str(cli_errmsg(w)));
    }

    /* Added after the original keys, and only when there is something. */
    size_t np = tio_container_prop_count(c);
    if (np && !bad) {
        json_t *props = json_object();
        bad |= cli_json_set(root, "props", props);
        for (size_t i = 0; i < np && !bad; i++) {
            const char *k = NULL, *v = NULL;
            if (tio_container_prop_at(c, i, &k, &v) != TIO_OK || !k) continue;
            bad |= cli_json_set(props, k, cli_json_str(v ? v : ""));
        }
    }
    /* tied weights: alias name -> the tensor it aliases (tio_tensor_alias) */
    json_t *aliases = NULL;
    for (size_t i = 0; i < tio_container_count(c) && !bad; i++) {
        const tio_tensor *t = tio_container_tensor(c, i), *a = tio_tensor_alias(t);
        if (!a) continue;
        if (!aliases) bad |= cli_json_set(root, "aliases", aliases = json_object());
        if (!bad) bad |= cli_json_set(aliases, tname(t), cli_json_str(tname(a)));
    }
    const tio_graph *g = tio_container_graph(c);
    if (g && !bad) bad |= cli_json_set(root, "graph", json_graph(c, g, nat));
    if (!bad) bad |= cli_tree_json(c, root) != 0;
    if (bad) {
        json_decref(root);
        return cli_error("out of memory");
    }
    return cli_json_print(root);
}

#define META_SHOWN 96 /* characters of a long array's text that info shows */

/* Elements of typed metadata's JSON array text (top level). */
static size_t array_len(const char *v) {
    size_t n = 0, depth = 0;
    int in_str = 0, any = 0;
    for (const char *p = v; *p; p++) {
        if (in_str) {
            if (*p == '\\' && p[1]) p++;
            else if (*p == '"') in_str = 0;
            continue;
        }
        if (*p == '"') in_str = 1;
        if (*p == '[') depth++;
        else if (*p == ']') depth--;
        else if (*p == ',' && depth == 1) n++;
        if (depth >= 1 && *p != '[' && *p != ' ') any = 1;
        if (depth > 1) any = 1;
    }
    return any ? n + 1 : 0;
}

static int print_escaped(const char *label, const char *s) {
    char *e = cli_text_escape(s);
    if (!e) return cli_error("out of memory");
    printf("%s%s\n", label, e);
    free(e);
    return CLI_EXIT_OK;
}

static int info_text(const char *path, const tio_container *c, const info_stats *s,
                     const native_map *nat) {
    const char *fmt = tio_container_format(c);
    if (print_escaped("file:        ", path) != CLI_EXIT_OK) return CLI_EXIT_FAIL;
    printf("format:      %s\n", fmt ? fmt : "-");
    printf("file size:   %llu bytes\n",
           (unsigned long long)tio_container_source_size(c));
    printf("tensors:     %zu (%zu dense, %zu coo", tio_container_count(c), s->dense, s->coo);
    if (s->quant) printf(", %zu quantized", s->quant);
    fputs(")\n", stdout);
    printf("data bytes:  %llu\n", (unsigned long long)s->data_bytes);
    fputs("dtypes:      ", stdout);
    int any = 0;
    for (size_t d = 0; d < TIO_DTYPE_COUNT; d++) {
        const char *name = tio_dtype_name((tio_dtype)d);
        if (!s->per_dtype[d] || !name) continue;
        printf("%s%s: %zu", any ? ", " : "", name, s->per_dtype[d]);
        any = 1;
    }
    for (size_t q = 0; q < 64; q++) {
        const char *name = tio_quant_name((tio_quant)q);
        if (!s->per_quant[q] || !name) continue;
        printf("%s%s: %zu", any ? ", " : "", name, s->per_quant[q]);
        any = 1;
    }
    fputs(any ? "\n" : "-\n", stdout);

    size_t nm = tio_container_meta_count(c);
    printf("metadata:    %zu\n", nm);
    for (size_t i = 0; i < nm; i++) {
        const char *k = NULL, *v = NULL;
        size_t kl = 0, vl = 0; /* byte strings: a NUL is shown \x00 */
        if (tio_container_meta_at_n(c, i, &k, &kl, &v, &vl) != TIO_OK || !k) continue;
        const char *ty = tio_container_meta_type_n(c, k, kl);
        char *ek = cli_bytes_escape(k, kl);
        char *ev = cli_bytes_escape(v ? v : "", v ? vl : 0);
        if (!ek || !ev) {
            free(ek);
            free(ev);
            return cli_error("out of memory");
        }
        if (ty && strncmp(ty, "array[", 6) == 0 && strlen(ev) > META_SHOWN) {
            /* arrays abbreviated: the start and the element count */
            ev[META_SHOWN] = 0;
            printf("  %s (%s) = %s... (%zu elements)\n", ek, ty, ev, array_len(v));
        } else if (ty) {
            printf("  %s (%s) = %s\n", ek, ty, ev);
        } else {
            printf("  %s = %s\n", ek, ev);
        }
        free(ek);
        free(ev);
    }

    size_t nw = tio_container_warning_count(c);
    printf("findings:    %zu\n", nw);
    for (size_t i = 0; i < nw; i++) {
        const tio_error *w = tio_container_warning(c, i);
        if (w && print_escaped("  ", cli_errmsg(w)) != CLI_EXIT_OK) return CLI_EXIT_FAIL;
    }
    if (props_text(c) != CLI_EXIT_OK || aliases_text(c) != CLI_EXIT_OK ||
        cli_tree_text(c) != CLI_EXIT_OK)
        return CLI_EXIT_FAIL;
    return model_text(c, nat);
}

int cli_cmd_info(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "info", argc, argv, info_opts,
                             sizeof info_opts / sizeof info_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    int json = 0, native = 0, id;
    const char *format = NULL;
    while ((id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_NATIVE: native = 1; break;
        case OPT_HELP:
            fputs(info_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_JSON: json = 1; break;
        case OPT_FORMAT: format = p.value; break;
        default: break;
        }
    }
    const char *path = NULL;
    rc = cli_one_file(&p, id, "info", format, &path);
    if (rc != CLI_EXIT_OK) return rc;

    if (!format && cli_is_lmdb(path)) return cli_lmdb_info(path, json);
    if (cli_is_shard(path, format)) return cli_shard_info(path, json);
    tio_container *c = NULL;
    rc = cli_open_flags(path, format, NULL, native ? TIO_OPEN_NATIVE_GRAPH : 0u, &c);
    if (rc != CLI_EXIT_OK) return rc;
    info_stats s;
    collect(c, &s);
    /* a graph raised to ONNX from another form (a tmfile's Tengine operators):
     * the file's own params beside each operator */
    native_map nm = {0};
    tio_container *nc = NULL;
    const tio_graph *g = tio_container_graph(c);
    tio_open_options no;
    memset(&no, 0, sizeof no);
    no.format = format;
    no.flags = TIO_OPEN_NATIVE_GRAPH;
    tio_limits lim;
    no.limits = cli_limits(NULL, &lim);
    tio_error nerr;
    if (!native && g && tio_graph_native_format(g) && tio_open(path, &no, &nc, &nerr) == TIO_OK) {
        nm.c = nc;
        nm.g = tio_container_graph(nc);
        size_t nn = nm.g ? tio_graph_node_count(nm.g) : 0;
        nm.order = malloc((nn ? nn : 1) * sizeof *nm.order);
        for (size_t i = 0; nm.order && i < nn; i++) {
            tio_node_info x;
            if (tio_graph_node(nm.g, i, &x) == TIO_OK && x.name)
                nm.order[nm.n++] = (named_node){x.name, i};
        }
        if (nm.n) qsort(nm.order, nm.n, sizeof *nm.order, by_node_name);
    }
    const native_map *pnm = nm.n ? &nm : NULL;
    rc = json ? info_json(path, c, &s, pnm) : info_text(path, c, &s, pnm);
    free(nm.order);
    tio_container_free(nc);
    tio_container_free(c);
    return rc;
}
