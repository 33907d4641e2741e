/* tensio graph — a model's graph as Graphviz DOT (or SVG/PNG through dot). */
#include "cli.h"
#include "cli_sbuf.h"
#include "diff_graph.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char graph_help[] =
    "Usage: tensio graph [OPTIONS] MODEL\n"
    "\n"
    "Draw the graph of MODEL (onnx, rten, tmfile, tflite) as Graphviz DOT:\n"
    "operators as boxes with their key attributes, edges labelled with the\n"
    "dtype and shape of the value they carry, graph inputs and outputs as\n"
    "their own shapes, subgraphs (If/Loop bodies) as clusters. A constant read\n"
    "by one operator is folded into its box (the values of an integer one of\n"
    "at most 8 elements or of a float scalar, else its dtype and shape); a\n"
    "shared one is a small node of its own. Attributes that hold their ONNX\n"
    "defaults are left out.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE   write to FILE: DOT for .dot/.gv or '-' (stdout, the\n"
    "                      default); .svg, .png or .pdf run Graphviz's dot\n"
    "                      (Debian package graphviz)\n"
    "  -T, --type TYPE     dot, svg, png or pdf, whatever FILE's extension\n"
    "      --rankdir DIR   TB (top to bottom, the default), LR, BT or RL\n"
    "      --constants     draw every constant as its own node\n"
    "      --native        the graph as the file stores it, not in ONNX form\n"
    "  -f, --format FMT    read MODEL as format FMT instead of detecting it\n"
    "  -h, --help          show this help and exit\n";

enum { OPT_HELP = 1, OPT_OUTPUT, OPT_TYPE, OPT_RANKDIR, OPT_CONSTANTS, OPT_NATIVE, OPT_FORMAT };

static const cli_option graph_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"output", 'o', 1, OPT_OUTPUT},
    {"type", 'T', 1, OPT_TYPE},
    {"rankdir", 0, 1, OPT_RANKDIR},
    {"constants", 0, 0, OPT_CONSTANTS},
    {"native", 0, 0, OPT_NATIVE},
    {"format", 'f', 1, OPT_FORMAT},
};

/* Longest label line before it is wrapped, and longest text taken from the
 * file (names, strings) before it is cut with "...". */
#define WRAP 28
#define MAX_TEXT 40
#define TINY_CONST 8
/* Between the dims of a shape: U+00D7 MULTIPLICATION SIGN. */
#define TIMES "\xc3\x97"

/* ------------------------------------------------------------ strings */

/* Length of the valid UTF-8 sequence at p (of at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, size_t n) {
    size_t len = p[0] < 0x80 ? 1 : (p[0] >> 5) == 6 ? 2 : (p[0] >> 4) == 14 ? 3
               : (p[0] >> 3) == 30 ? 4 : 0;
    if (len == 0 || len > n || (len == 2 && p[0] < 0xC2)) return 0;
    for (size_t k = 1; k < len; k++)
        if ((p[k] & 0xC0) != 0x80) return 0;
    return len;
}

/* s as the inside of a DOT string: quotes and backslashes escaped, control
 * characters and invalid UTF-8 as '?', cut at MAX_TEXT characters. */
static void sb_text(cli_sbuf *b, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p), chars = 0;
    while (n > 0) {
        if (chars++ == MAX_TEXT) {
            cli_sbuf_put(b, "...", 3);
            return;
        }
        size_t len = utf8_len(p, n);
        if (len == 0 || p[0] < 0x20 || p[0] == 0x7F)
            cli_sbuf_put(b, "?", 1);
        else if (p[0] == '"' || p[0] == '\\') {
            cli_sbuf_put(b, "\\", 1);
            cli_sbuf_put(b, (const char *)p, 1);
        } else
            cli_sbuf_put(b, (const char *)p, len);
        if (len == 0) len = 1;
        p += len;
        n -= len;
    }
}

/* ------------------------------------------------------------- labels */

static const char *short_dtype(tio_dtype dt) {
    switch (dt) {
    case TIO_BOOL: return "bool";
    case TIO_INT8: return "i8";
    case TIO_INT16: return "i16";
    case TIO_INT32: return "i32";
    case TIO_INT64: return "i64";
    case TIO_UINT8: return "u8";
    case TIO_UINT16: return "u16";
    case TIO_UINT32: return "u32";
    case TIO_UINT64: return "u64";
    case TIO_FLOAT16: return "f16";
    case TIO_BFLOAT16: return "bf16";
    case TIO_FLOAT32: return "f32";
    case TIO_FLOAT64: return "f64";
    case TIO_FLOAT8_E4M3FN: return "f8e4m3";
    case TIO_FLOAT8_E5M2: return "f8e5m2";
    case TIO_COMPLEX64: return "c64";
    case TIO_COMPLEX128: return "c128";
    case TIO_STRING: return "str";
    case TIO_DTYPE_INVALID: break;
    }
    return NULL;
}

/* "f32 [1×3×224×224]" (scalar: "f32 scalar"; unknown parts left out). */
static void sb_value_type(cli_sbuf *b, const tio_graph *g, int64_t v) {
    tio_value_info vi;
    if (v < 0 || tio_graph_value(g, (size_t)v, &vi) != TIO_OK) return;
    if (vi.type) { /* a sequence, optional, map ... (ONNX's notation) */
        sb_text(b, vi.type);
        return;
    }
    const char *dt = short_dtype(vi.dtype);
    if (dt) cli_sbuf_printf(b, "%s", dt);
    if (vi.rank < 0) return;
    cli_sbuf_printf(b, "%s", dt ? " " : "");
    if (vi.rank == 0) cli_sbuf_printf(b, "scalar");
    if (vi.rank > 0) cli_sbuf_put(b, "[", 1);
    for (int64_t k = 0; k < vi.rank; k++) {
        if (k) cli_sbuf_put(b, TIMES, strlen(TIMES));
        if (vi.dims[k].name)
            sb_text(b, vi.dims[k].name);
        else if (vi.dims[k].value < 0)
            cli_sbuf_put(b, "?", 1);
        else
            cli_sbuf_printf(b, "%lld", (long long)vi.dims[k].value);
    }
    if (vi.rank > 0) cli_sbuf_put(b, "]", 1);
}

/* Whether every element of ints is v. */
static int all_are(const int64_t *ints, size_t n, int64_t v) {
    for (size_t k = 0; k < n; k++)
        if (ints[k] != v) return 0;
    return 1;
}

/* ints as "3×3" (sep TIMES) or "1, 2" (sep ", "), at most 8 shown. */
static void sb_ints(cli_sbuf *b, const int64_t *ints, size_t n, const char *sep) {
    for (size_t k = 0; k < n; k++) {
        if (k == 8) {
            cli_sbuf_printf(b, "%s...", sep);
            return;
        }
        cli_sbuf_printf(b, "%s%lld", k ? sep : "", (long long)ints[k]);
    }
}

/* One attribute in a few characters, or nothing when it holds a value that
 * says nothing (strides 1, pads 0, dilations 1, group 1, auto_pad NOTSET). */
static void sb_attr(cli_sbuf *b, const tio_container *c, const tio_attr *a) {
    const char *n = a->name;
    if (a->type == TIO_ATTR_INTS) {
        int spatial = strcmp(n, "kernel_shape") == 0 || strcmp(n, "strides") == 0 ||
                      strcmp(n, "dilations") == 0;
        if ((strcmp(n, "strides") == 0 || strcmp(n, "dilations") == 0) &&
            all_are(a->ints, a->count, 1))
            return;
        if (strcmp(n, "pads") == 0) {
            if (all_are(a->ints, a->count, 0)) return;
            if (a->count && all_are(a->ints, a->count, a->ints[0])) {
                cli_sbuf_printf(b, "pads %lld", (long long)a->ints[0]);
                return;
            }
        }
        if (strcmp(n, "kernel_shape") == 0) n = "kernel";
        if (spatial && a->count > 1 && all_are(a->ints, a->count, a->ints[0]) &&
            strcmp(n, "kernel") != 0) {
            cli_sbuf_printf(b, "%s %lld", n, (long long)a->ints[0]);
            return;
        }
        sb_text(b, n);
        cli_sbuf_put(b, spatial ? " " : " [", spatial ? 1 : 2);
        sb_ints(b, a->ints, a->count, spatial ? TIMES : ", ");
        if (!spatial) cli_sbuf_put(b, "]", 1);
        return;
    }
    if (a->type == TIO_ATTR_INT && strcmp(n, "group") == 0 && a->i == 1) return;
    if (a->type == TIO_ATTR_STRING && strcmp(n, "auto_pad") == 0 && a->s &&
        strcmp(a->s, "NOTSET") == 0)
        return;
    sb_text(b, n);
    cli_sbuf_put(b, " ", 1);
    switch (a->type) {
    case TIO_ATTR_INT:
        if (a->label)
            sb_text(b, a->label);
        else
            cli_sbuf_printf(b, "%lld", (long long)a->i);
        break;
    case TIO_ATTR_FLOAT: cli_sbuf_printf(b, "%.4g", a->f); break;
    case TIO_ATTR_STRING:
    case TIO_ATTR_TYPE: sb_text(b, a->s); break;
    case TIO_ATTR_FLOATS:
        cli_sbuf_put(b, "[", 1);
        for (size_t k = 0; k < a->count && k < 8; k++)
            cli_sbuf_printf(b, "%s%.4g", k ? ", " : "", a->floats[k]);
        cli_sbuf_printf(b, "%s]", a->count > 8 ? ", ..." : "");
        break;
    case TIO_ATTR_STRINGS: cli_sbuf_printf(b, "(%zu strings)", a->count); break;
    case TIO_ATTR_TENSOR: {
        const tio_tensor *t = a->i >= 0 ? tio_container_tensor(c, (size_t)a->i) : NULL;
        if (t) {
            const char *dt = short_dtype(tio_tensor_dtype(t));
            cli_sbuf_printf(b, "%s ", dt ? dt : "?");
            sb_ints(b, tio_tensor_shape(t), tio_tensor_rank(t), TIMES);
        }
        break;
    }
    case TIO_ATTR_TENSORS: cli_sbuf_printf(b, "(%zu tensors)", a->count); break;
    case TIO_ATTR_GRAPH: cli_sbuf_printf(b, "(subgraph)"); break;
    case TIO_ATTR_GRAPHS: cli_sbuf_printf(b, "(%zu subgraphs)", a->count); break;
    case TIO_ATTR_INTS: break;
    }
}

/* A constant tensor in a label: its values when tiny, else dtype and shape. */
static void sb_const(cli_sbuf *b, const tio_tensor *t) {
    tio_dtype dt = tio_tensor_dtype(t);
    uint64_t n = tio_tensor_numel(t);
    const char *sd = short_dtype(dt);
    const uint8_t *p = tio_tensor_data(t);
    int ints = dt >= TIO_INT8 && dt <= TIO_UINT64;
    if (tio_tensor_layout(t) == TIO_LAYOUT_DENSE && p &&
        ((ints && n <= TINY_CONST) || ((dt == TIO_FLOAT32 || dt == TIO_FLOAT64) && n == 1))) {
        size_t es = tio_dtype_size(dt);
        cli_sbuf_put(b, tio_tensor_rank(t) ? "[" : "", tio_tensor_rank(t) ? 1 : 0);
        for (uint64_t i = 0; i < n; i++, p += es) {
            uint64_t u = 0;
            for (size_t k = es; k-- > 0;) u = u << 8 | p[k];
            if (i) cli_sbuf_put(b, ", ", 2);
            if (dt == TIO_FLOAT32 || dt == TIO_FLOAT64) {
                double d;
                if (es == 4) {
                    float f;
                    uint32_t u32 = (uint32_t)u;
                    memcpy(&f, &u32, 4);
                    d = (double)f;
                } else {
                    memcpy(&d, &u, 8);
                }
                cli_sbuf_printf(b, "%.4g", d);
            } else if (dt >= TIO_UINT8) {
                cli_sbuf_printf(b, "%llu", (unsigned long long)u);
            } else {
                if (es < 8 && (u >> (8 * es - 1)) & 1u) u |= ~UINT64_C(0) << (8 * es);
                int64_t v;
                memcpy(&v, &u, 8);
                cli_sbuf_printf(b, "%lld", (long long)v);
            }
        }
        cli_sbuf_put(b, tio_tensor_rank(t) ? "]" : "", tio_tensor_rank(t) ? 1 : 0);
        if (dt != TIO_FLOAT32 && dt != TIO_INT64) cli_sbuf_printf(b, " %s", sd ? sd : "?");
        return;
    }
    cli_sbuf_printf(b, "%s ", sd ? sd : "?");
    if (tio_tensor_rank(t) == 0) {
        cli_sbuf_printf(b, "scalar");
        return;
    }
    cli_sbuf_put(b, "[", 1);
    sb_ints(b, tio_tensor_shape(t), tio_tensor_rank(t), TIMES);
    cli_sbuf_put(b, "]", 1);
}

/* Appends piece as a new label line, or to the current one while it stays
 * within WRAP characters. */
static void sb_item(cli_sbuf *b, size_t *line_start, const char *piece) {
    size_t n = strlen(piece);
    if (n == 0) return;
    if (b->len - *line_start + 2 + n > WRAP && b->len > *line_start) {
        cli_sbuf_put(b, "\\n", 2);
        *line_start = b->len;
    } else if (b->len > *line_start) {
        cli_sbuf_put(b, ", ", 2);
    }
    cli_sbuf_put(b, piece, n);
}

/* Writes s[from, to), a label built for a DOT string (\" \\ \n escapes), as
 * the text of an HTML-like label: & < > " as entities, line breaks as <br/>. */
static void put_html(FILE *f, const char *s, size_t from, size_t to) {
    for (size_t k = from; k < to; k++) {
        char c = s[k];
        if (c == '\\' && k + 1 < to) {
            c = s[++k];
            if (c == 'n') {
                fputs("<br/>", f);
                continue;
            }
        }
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(c, f); break;
        }
    }
}

/* -------------------------------------------------------------- graph */

/* One graph being drawn; subgraphs get their own, linked to the parent. */
typedef struct gctx {
    const tio_container *c;
    const tio_graph *g;
    const struct gctx *parent;
    unsigned id;        /* prefix of the graph's DOT ids: "g<id>_..." */
    size_t nv;
    int64_t *producer;  /* value -> node index, -1 */
    int64_t *out_slot;  /* value -> its output index on that node */
    int64_t *input_of;  /* value -> graph input index, -1 */
    uint32_t *uses;     /* value -> number of node inputs reading it */
} gctx;

typedef struct drawer {
    FILE *f;
    int all_constants;
    unsigned next_id;
    cli_sbuf outer; /* edges from enclosing graphs into subgraphs, drawn last */
    int nomem;
} drawer;

static void ctx_free(gctx *x) {
    free(x->producer);
    free(x->out_slot);
    free(x->input_of);
    free(x->uses);
}

static int ctx_init(gctx *x, const tio_container *c, const tio_graph *g, const gctx *parent,
                    unsigned id) {
    memset(x, 0, sizeof *x);
    x->c = c;
    x->g = g;
    x->parent = parent;
    x->id = id;
    x->nv = tio_graph_value_count(g);
    size_t n = x->nv ? x->nv : 1;
    x->producer = malloc(n * sizeof *x->producer);
    x->out_slot = malloc(n * sizeof *x->out_slot);
    x->input_of = malloc(n * sizeof *x->input_of);
    x->uses = calloc(n, sizeof *x->uses);
    if (!x->producer || !x->out_slot || !x->input_of || !x->uses) {
        ctx_free(x);
        return -1;
    }
    for (size_t v = 0; v < x->nv; v++) x->producer[v] = x->input_of[v] = -1;
    const int64_t *in = tio_graph_inputs(g);
    for (size_t k = 0; k < tio_graph_input_count(g); k++)
        if (in[k] >= 0 && (size_t)in[k] < x->nv) x->input_of[in[k]] = (int64_t)k;
    size_t nn = tio_graph_node_count(g);
    for (size_t i = 0; i < nn; i++) {
        tio_node_info ni;
        if (tio_graph_node(g, i, &ni) != TIO_OK) continue;
        for (size_t j = 0; j < ni.output_count; j++) {
            int64_t v = ni.outputs[j];
            if (v >= 0 && (size_t)v < x->nv && x->producer[v] < 0) {
                x->producer[v] = (int64_t)i;
                x->out_slot[v] = (int64_t)j;
            }
        }
        for (size_t j = 0; j < ni.input_count; j++) {
            int64_t v = ni.inputs[j];
            if (v >= 0 && (size_t)v < x->nv && x->uses[v] < UINT32_MAX) x->uses[v]++;
        }
    }
    return 0;
}

static int is_const(const gctx *x, int64_t v, tio_value_info *vi) {
    return tio_graph_value(x->g, (size_t)v, vi) == TIO_OK && vi->tensor >= 0;
}

/* Whether constant v is drawn inside its reader's box: read once, and not
 * the output of a node (a native tmfile's Const). */
static int folded(const drawer *d, const gctx *x, int64_t v) {
    return !d->all_constants && x->uses[v] == 1 && x->producer[v] < 0;
}

/* Where value v starts: its producer's or graph input's DOT id into buf
 * (1), a constant (2: *owner and *cv name it; each reader gets its own small
 * node, which keeps edges short), a value of no known source (a capture not
 * found outside, an output nothing produces) drawn as its own node (3), or
 * nothing (0). A value of a subgraph that an enclosing graph's value of the
 * same name stands for starts where that one does. */
static int source_id(const gctx *x, int64_t v, char *buf, size_t size, const gctx **owner,
                     int64_t *cv) {
    tio_value_info vi;
    if (v < 0 || (size_t)v >= x->nv || tio_graph_value(x->g, (size_t)v, &vi) != TIO_OK)
        return 0;
    *owner = x;
    if (x->producer[v] >= 0) { /* also a constant a node makes (tmfile's Const) */
        snprintf(buf, size, "g%u_n%lld", x->id, (long long)x->producer[v]);
        return 1;
    }
    if (vi.tensor >= 0) {
        *cv = v;
        return 2;
    }
    if (x->input_of[v] >= 0) {
        snprintf(buf, size, "g%u_in%lld", x->id, (long long)x->input_of[v]);
        return 1;
    }
    for (const gctx *p = x->parent; p && vi.name; p = p->parent) {
        int64_t pv = tio_graph_find_value(p->g, vi.name);
        if (pv >= 0) return source_id(p, pv, buf, size, owner, cv);
    }
    snprintf(buf, size, "g%u_v%lld", x->id, (long long)v);
    return 3;
}

static void draw_graph(drawer *d, const gctx *x, int indent);

/* An operator box: op, name (when short), attributes, folded constants. */
static void draw_node(drawer *d, const gctx *x, size_t i, int indent) {
    tio_node_info ni;
    if (tio_graph_node(x->g, i, &ni) != TIO_OK) return;
    cli_sbuf b = {0};
    size_t line = 0;
    sb_text(&b, ni.op ? ni.op : "?");
    if (ni.domain && *ni.domain && strcmp(ni.domain, "ai.onnx") != 0) {
        cli_sbuf_put(&b, " (", 2);
        sb_text(&b, ni.domain);
        cli_sbuf_put(&b, ")", 1);
    }
    size_t head = b.len; /* the op: bold */
    cli_sbuf_put(&b, "\\n", 2);
    line = b.len;
    for (size_t j = 0; j < ni.attr_count; j++) {
        tio_attr a;
        if (tio_graph_attr(x->g, i, j, &a) != TIO_OK || a.type == TIO_ATTR_GRAPH ||
            a.type == TIO_ATTR_GRAPHS) /* drawn as clusters */
            continue;
        if (strcmp(a.name, "kernel_shape") != 0 && diff_graph_is_default(x->g, &ni, &a))
            continue;
        cli_sbuf p = {0};
        sb_attr(&p, x->c, &a);
        if (p.nomem) d->nomem = 1;
        if (p.s) sb_item(&b, &line, p.s);
        free(p.s);
    }
    size_t consts = b.len; /* the folded constants: grey */
    for (size_t j = 0; j < ni.input_count; j++) {
        tio_value_info vi;
        int64_t v = ni.inputs[j];
        if (v < 0 || !is_const(x, v, &vi) || !folded(d, x, v)) continue;
        const tio_tensor *t = tio_container_tensor(x->c, (size_t)vi.tensor);
        if (!t) continue;
        cli_sbuf p = {0};
        sb_const(&p, t);
        if (p.nomem) d->nomem = 1;
        if (p.s) {
            if (b.len > line) cli_sbuf_put(&b, "\\n", 2);
            line = b.len;
            cli_sbuf_put(&b, p.s, p.len);
        }
        free(p.s);
    }
    if (b.nomem || !b.s) {
        d->nomem = 1;
        return;
    }
    /* drop a trailing line break */
    if (b.len >= 2 && strcmp(b.s + b.len - 2, "\\n") == 0) b.s[b.len -= 2] = '\0';
    if (consts > b.len) consts = b.len;
    fprintf(d->f, "%*sg%u_n%zu [label=<<b>", indent, "", x->id, i);
    put_html(d->f, b.s, 0, head);
    fputs("</b>", d->f);
    put_html(d->f, b.s, head, consts);
    if (consts < b.len) {
        /* the line break before the constants stays outside the font */
        size_t k = consts;
        if (b.len - k >= 2 && strncmp(b.s + k, "\\n", 2) == 0) {
            fputs("<br/>", d->f);
            k += 2;
        }
        fputs("<font color=\"#555555\">", d->f);
        put_html(d->f, b.s, k, b.len);
        fputs("</font>", d->f);
    }
    fputs(">", d->f);
    if (ni.name) {
        cli_sbuf t = {0};
        sb_text(&t, ni.name);
        fprintf(d->f, ", tooltip=\"%s\"", t.s ? t.s : "");
        free(t.s);
    }
    fputs("];\n", d->f);
    free(b.s);
    /* subgraphs as clusters below the node */
    for (size_t j = 0; j < ni.attr_count; j++) {
        tio_attr a;
        if (tio_graph_attr(x->g, i, j, &a) != TIO_OK) continue;
        size_t ns = a.type == TIO_ATTR_GRAPH ? 1 : a.type == TIO_ATTR_GRAPHS ? a.count : 0;
        for (size_t k = 0; k < ns; k++) {
            const tio_graph *sg = a.type == TIO_ATTR_GRAPH ? a.graph : a.graphs[k];
            if (!sg) continue;
            gctx sub;
            unsigned id = ++d->next_id;
            if (ctx_init(&sub, x->c, sg, x, id) != 0) {
                d->nomem = 1;
                return;
            }
            cli_sbuf t = {0};
            sb_text(&t, ni.op);
            cli_sbuf_put(&t, " ", 1);
            sb_text(&t, a.name);
            fprintf(d->f, "%*ssubgraph cluster_g%u {\n%*s  label=\"%s\"; style=\"rounded,dashed\"; "
                          "color=\"#888888\"; fontsize=9;\n",
                    indent, "", id, indent, "", t.s ? t.s : "");
            free(t.s);
            draw_graph(d, &sub, indent + 2);
            fprintf(d->f, "%*s}\n", indent, "");
            /* tie the cluster to its operator */
            if (tio_graph_node_count(sg) > 0)
                fprintf(d->f, "%*sg%u_n%zu -> g%u_n0 [style=dashed, color=\"#888888\", "
                              "arrowhead=none, lhead=cluster_g%u];\n",
                        indent, "", x->id, i, id, id);
            ctx_free(&sub);
        }
    }
}

static void draw_value_node(drawer *d, const gctx *x, int64_t v, const char *id,
                            const char *attrs, int indent);

#define CONST_STYLE "shape=note, fontsize=8, style=filled, fillcolor=\"#f2f2f2\""

/* The edge of value v into DOT node `to` (a constant gets its own node). */
static void draw_edge(drawer *d, const gctx *x, int64_t v, const char *to, int indent) {
    char from[96];
    const gctx *owner = NULL;
    int64_t cv = -1;
    int kind = source_id(x, v, from, sizeof from, &owner, &cv);
    if (!kind) return;
    if (kind == 3) /* declared at each use: DOT merges the declarations */
        draw_value_node(d, x, v, from, "shape=ellipse, fontsize=8, style=dashed", indent);
    if (kind == 2) {
        snprintf(from, sizeof from, "g%u_c%lld_%s", owner->id, (long long)cv, to);
        draw_value_node(d, owner, cv, from, CONST_STYLE, indent);
        fprintf(d->f, "%*s%s -> %s [color=\"#999999\"];\n", indent, "", from, to);
        return;
    }
    /* An edge from a value of an enclosing graph goes outside the clusters:
     * inside one, it would pull its source node in. */
    cli_sbuf lab = {0};
    sb_value_type(&lab, x->g, v);
    cli_sbuf *e = owner == x ? NULL : &d->outer;
    int has = lab.s && *lab.s;
    if (e)
        cli_sbuf_printf(e, "  %s -> %s [style=dotted%s%s%s];\n", from, to,
                        has ? ", label=\"" : "", has ? lab.s : "", has ? "\"" : "");
    else if (has)
        fprintf(d->f, "%*s%s -> %s [label=\"%s\"];\n", indent, "", from, to, lab.s);
    else
        fprintf(d->f, "%*s%s -> %s;\n", indent, "", from, to);
    if (lab.nomem || (e && e->nomem)) d->nomem = 1;
    free(lab.s);
}

/* A graph input / output / free value / constant node: label "name\ntype". */
static void draw_value_node(drawer *d, const gctx *x, int64_t v, const char *id,
                            const char *attrs, int indent) {
    tio_value_info vi;
    cli_sbuf b = {0};
    if (tio_graph_value(x->g, (size_t)v, &vi) == TIO_OK) {
        if (vi.tensor >= 0) {
            const tio_tensor *t = tio_container_tensor(x->c, (size_t)vi.tensor);
            sb_text(&b, vi.name ? vi.name : "const");
            if (t) {
                cli_sbuf_put(&b, "\\n", 2);
                sb_const(&b, t);
            }
        } else {
            sb_text(&b, vi.name ? vi.name : "?");
            cli_sbuf t = {0};
            sb_value_type(&t, x->g, v);
            if (t.s) {
                cli_sbuf_put(&b, "\\n", 2);
                cli_sbuf_put(&b, t.s, t.len);
            }
            free(t.s);
        }
    }
    if (b.nomem) d->nomem = 1;
    fprintf(d->f, "%*s%s [label=\"%s\", %s];\n", indent, "", id, b.s ? b.s : "?", attrs);
    free(b.s);
}

static void draw_graph(drawer *d, const gctx *x, int indent) {
    char id[64];
    const int64_t *in = tio_graph_inputs(x->g);
    for (size_t k = 0; k < tio_graph_input_count(x->g); k++) {
        if (in[k] < 0 || (size_t)in[k] >= x->nv) continue;
        tio_value_info vi;
        /* an initializer listed as an input; a native tmfile's InputOp node
         * stands for its input */
        if (is_const(x, in[k], &vi) || x->producer[in[k]] >= 0) continue;
        snprintf(id, sizeof id, "g%u_in%zu", x->id, k);
        draw_value_node(d, x, in[k], id,
                        "shape=invhouse, style=filled, fillcolor=\"#d5f5d5\"", indent);
    }
    size_t nn = tio_graph_node_count(x->g);
    for (size_t i = 0; i < nn; i++) draw_node(d, x, i, indent);
    /* edges: into each operator from where its inputs start */
    for (size_t i = 0; i < nn; i++) {
        tio_node_info ni;
        if (tio_graph_node(x->g, i, &ni) != TIO_OK) continue;
        char to[64];
        snprintf(to, sizeof to, "g%u_n%zu", x->id, i);
        for (size_t j = 0; j < ni.input_count; j++) {
            int64_t v = ni.inputs[j];
            tio_value_info vi;
            if (v < 0 || (is_const(x, v, &vi) && folded(d, x, v))) continue;
            draw_edge(d, x, v, to, indent);
        }
    }
    const int64_t *out = tio_graph_outputs(x->g);
    for (size_t k = 0; k < tio_graph_output_count(x->g); k++) {
        if (out[k] < 0) continue;
        snprintf(id, sizeof id, "g%u_out%zu", x->id, k);
        draw_value_node(d, x, out[k], id,
                        "shape=house, style=filled, fillcolor=\"#fde2c8\"", indent);
        draw_edge(d, x, out[k], id, indent);
    }
}

static int write_dot(FILE *f, const tio_container *c, const tio_graph *g, const char *rankdir,
                     int all_constants) {
    drawer d = {f, all_constants, 0, {0}, 0};
    gctx root;
    if (ctx_init(&root, c, g, NULL, 0) != 0) return cli_error("out of memory");
    fprintf(f, "digraph model {\n"
               "  rankdir=%s; compound=true; newrank=true; nodesep=0.25; ranksep=0.3;\n"
               "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#e3ecfa\", "
               "fontname=\"Helvetica\", fontsize=10, margin=\"0.12,0.04\", height=0.3];\n"
               "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\", "
               "fontcolor=\"#333333\", arrowsize=0.6];\n",
            rankdir);
    draw_graph(&d, &root, 2);
    if (d.outer.s) fputs(d.outer.s, f);
    free(d.outer.s);
    fputs("}\n", f);
    ctx_free(&root);
    return d.nomem ? cli_error("out of memory") : CLI_EXIT_OK;
}

/* ------------------------------------------------------------ command */

/* The output type from -T or the file's extension: "dot", "svg", "png", "pdf". */
static const char *output_type(const char *type, const char *out) {
    static const char *const known[] = {"dot", "svg", "png", "pdf"};
    if (!type) {
        const char *dot = out ? strrchr(out, '.') : NULL;
        if (!out || strcmp(out, "-") == 0 || !dot) return "dot";
        type = dot + 1;
        if (strcmp(type, "gv") == 0) return "dot";
    }
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        if (strcmp(type, known[k]) == 0) return known[k];
    return NULL;
}

/* Runs dot -T<type> -o<out> <dotfile>, without a shell. */
static int run_dot(const char *type, const char *out, const char *dotfile) {
    char targ[16], *oarg = cli_strdup_printf("-o%s%s", out[0] == '-' ? "./" : "", out);
    if (!oarg) return cli_error("out of memory");
    snprintf(targ, sizeof targ, "-T%s", type);
    char dotname[] = "dot";
    char *argv[] = {dotname, targ, oarg, (char *)dotfile, NULL};
    pid_t pid;
    int err = posix_spawnp(&pid, "dot", NULL, NULL, argv, environ);
    free(oarg);
    if (err == ENOENT)
        return cli_error("graph: Graphviz's 'dot' is not installed (Debian package "
                         "graphviz: apt-get install graphviz); write DOT with -o FILE.dot");
    if (err) return cli_error("graph: cannot run dot: %s", strerror(err));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) return cli_error("graph: waiting for dot: %s", strerror(errno));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return cli_error("graph: dot failed (exit status %d) writing %s",
                         WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
    return CLI_EXIT_OK;
}

static int render(const tio_container *c, const tio_graph *g, const char *out,
                  const char *type, const char *rankdir, int all_constants) {
    if (strcmp(type, "dot") == 0) {
        int to_stdout = !out || strcmp(out, "-") == 0;
        FILE *f = to_stdout ? stdout : fopen(out, "w");
        if (!f) return cli_error("%s: cannot create: %s", out, strerror(errno));
        int rc = write_dot(f, c, g, rankdir, all_constants);
        if (!to_stdout) {
            if (ferror(f) && rc == CLI_EXIT_OK) rc = cli_error("%s: write failed", out);
            if (fclose(f) != 0 && rc == CLI_EXIT_OK)
                rc = cli_error("%s: write failed: %s", out, strerror(errno));
        }
        return rc;
    }
    if (!out || strcmp(out, "-") == 0)
        return cli_usage_error("graph", "-T %s needs -o FILE", type);
    const char *tmpdir = getenv("TMPDIR");
    char *tmp = cli_strdup_printf("%s/tensio-graph-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!tmp) return cli_error("out of memory");
    int fd = mkstemp(tmp);
    if (fd < 0) {
        int rc = cli_error("%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return rc;
    }
    FILE *f = fdopen(fd, "w");
    int rc = f ? write_dot(f, c, g, rankdir, all_constants) : cli_error("out of memory");
    if (f && ferror(f) && rc == CLI_EXIT_OK) rc = cli_error("%s: write failed", tmp);
    if (f ? fclose(f) != 0 : close(fd) != 0) {
        if (rc == CLI_EXIT_OK) rc = cli_error("%s: write failed: %s", tmp, strerror(errno));
    }
    if (rc == CLI_EXIT_OK) rc = run_dot(type, out, tmp);
    unlink(tmp);
    free(tmp);
    return rc;
}

int cli_cmd_graph(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "graph", argc, argv, graph_opts,
                             sizeof graph_opts / sizeof graph_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    const char *out = NULL, *type = NULL, *format = NULL, *rankdir = "TB";
    int all_constants = 0, id;
    unsigned flags = 0;
    while ((id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(graph_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_OUTPUT: out = p.value; break;
        case OPT_TYPE: type = p.value; break;
        case OPT_RANKDIR: rankdir = p.value; break;
        case OPT_CONSTANTS: all_constants = 1; break;
        case OPT_NATIVE: flags |= TIO_OPEN_NATIVE_GRAPH; break;
        case OPT_FORMAT: format = p.value; break;
        default: break;
        }
    }
    const char *path = NULL;
    rc = cli_one_file(&p, id, "graph", format, &path);
    if (rc != CLI_EXIT_OK) return rc;
    const char *t = output_type(type, out);
    if (!t)
        return cli_usage_error("graph", "unknown output type '%s' (dot, svg, png, pdf)",
                               type ? type : strrchr(out, '.') + 1);
    if (strcmp(rankdir, "TB") != 0 && strcmp(rankdir, "LR") != 0 &&
        strcmp(rankdir, "BT") != 0 && strcmp(rankdir, "RL") != 0)
        return cli_usage_error("graph", "--rankdir: '%s' is not TB, LR, BT or RL", rankdir);
    tio_container *c = NULL;
    rc = cli_open_flags(path, format, NULL, flags, &c);
    if (rc != CLI_EXIT_OK) return rc;
    const tio_graph *g = tio_container_graph(c);
    if (!g)
        rc = cli_error("%s: no model graph (a %s file of tensors only)", path,
                       tio_container_format(c));
    else
        rc = render(c, g, out, t, rankdir, all_constants);
    tio_container_free(c);
    return rc;
}
