/*
 * `tensio info`'s object tree (a PyTorch checkpoint's unpickled object:
 * tio_container_object): an indented outline in text, the whole tree in
 * --json (docs/cli.md). Objects reached from several places are shown once;
 * later places refer to them by id.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define TREE_LINES 200u    /* lines of the text outline */
#define TREE_ITEMS 24u     /* children shown per container in text */
#define TREE_INLINE 16u    /* a list/tuple of that many scalars or fewer: one line */
#define TREE_TEXT 60u      /* bytes of a str/bytes shown in text */
#define TREE_JSON_REPEAT 256u /* a shared str/bytes up to this long is repeated in JSON */

typedef struct tree_out {
    const tio_container *c;
    unsigned char *seen; /* per object id: shown already */
    size_t lines, cut;   /* lines printed; lines left out */
} tree_out;

static int is_scalar(const tio_object *o) {
    tio_object_kind k = tio_object_kind_of(o);
    return k == TIO_OBJ_NONE || k == TIO_OBJ_BOOL || k == TIO_OBJ_INT || k == TIO_OBJ_FLOAT ||
           k == TIO_OBJ_BIGINT || (k == TIO_OBJ_STR && tio_object_len(o) <= TREE_TEXT);
}

static int is_seq(tio_object_kind k) {
    return k == TIO_OBJ_LIST || k == TIO_OBJ_TUPLE || k == TIO_OBJ_SET;
}

/* A str or bytes as a quoted literal, at most `cap` bytes shown. */
static void put_quoted(const char *s, size_t n, size_t cap, int bytes) {
    if (bytes) putchar('b');
    putchar('"');
    for (size_t k = 0; k < n && k < cap; k++) {
        unsigned char ch = (unsigned char)s[k];
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch >= 32 && ch < 127)
            putchar(ch);
        else if (ch >= 0x80 && !bytes)
            putchar(ch); /* UTF-8 as stored (cli_text_escape's rule for names) */
        else
            printf("\\x%02x", ch);
    }
    putchar('"');
    if (n > cap) printf("... (%zu bytes)", n);
}

/* The shortest text that reads back as f. */
static void put_float(double f) {
    char b[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(b, sizeof b, "%.*g", prec, f);
        if (f != f || strtod(b, NULL) == f) break;
    }
    fputs(b, stdout);
}

static void put_scalar(const tio_object *o) {
    size_t n = 0;
    const char *s = tio_object_bytes(o, &n);
    switch (tio_object_kind_of(o)) {
    case TIO_OBJ_NONE: fputs("None", stdout); break;
    case TIO_OBJ_BOOL: fputs(tio_object_int(o) ? "True" : "False", stdout); break;
    case TIO_OBJ_INT: printf("%" PRId64, tio_object_int(o)); break;
    case TIO_OBJ_FLOAT: put_float(tio_object_float(o)); break;
    case TIO_OBJ_BIGINT: printf("int of %zu bytes", n); break;
    case TIO_OBJ_STR: put_quoted(s, n, TREE_TEXT, 0); break;
    case TIO_OBJ_BYTES: put_quoted(s, n, TREE_TEXT, 1); break;
    default: break;
    }
}

/* A tensor: "tensor #i name dtype [shape]". */
static void put_tensor(const tree_out *w, const tio_object *o) {
    int64_t i = tio_object_tensor(o);
    tio_tensor *t = tio_container_tensor(w->c, (size_t)i);
    printf("tensor #%" PRId64, i);
    if (!t) return;
    const char *name = tio_tensor_name(t);
    if (name) {
        char *e = cli_name_escape(name);
        if (e) printf(" %s", e);
        free(e);
    }
    printf(" %s [", tio_dtype_name(tio_tensor_dtype(t)));
    const int64_t *sh = tio_tensor_shape(t);
    for (size_t k = 0; k < tio_tensor_rank(t); k++) printf("%s%" PRId64, k ? "," : "", sh[k]);
    putchar(']');
}

static void put_key(const tio_object *k, size_t index, int in_dict) {
    if (!in_dict) {
        printf("[%zu]: ", index);
        return;
    }
    if (is_scalar(k))
        put_scalar(k);
    else
        printf("(%s key)", tio_object_kind_name(tio_object_kind_of(k)));
    fputs(": ", stdout);
}

static int tree_line(tree_out *w) {
    if (w->lines >= TREE_LINES) {
        w->cut++;
        return 0;
    }
    w->lines++;
    return 1;
}

static void tree_node(tree_out *w, const tio_object *o, unsigned ind);

static void tree_kids(tree_out *w, const tio_object *o, unsigned ind) {
    int dict = tio_object_kind_of(o) == TIO_OBJ_DICT;
    size_t n = tio_object_len(o);
    for (size_t k = 0; k < n; k++) {
        if (k == TREE_ITEMS && n > TREE_ITEMS + 1) {
            if (tree_line(w)) printf("%*s... %zu more\n", (int)ind, "", n - k);
            return;
        }
        if (!tree_line(w)) return;
        printf("%*s", (int)ind, "");
        put_key(tio_object_key(o, k), k, dict);
        tree_node(w, tio_object_item(o, k), ind);
    }
}

/* The rest of a line that put_key began: the object, then its children. */
static void tree_node(tree_out *w, const tio_object *o, unsigned ind) {
    tio_object_kind kind = tio_object_kind_of(o);
    size_t id = tio_object_id(o), n = tio_object_len(o);
    if (is_scalar(o) || kind == TIO_OBJ_STR || kind == TIO_OBJ_BYTES) {
        put_scalar(o);
        putchar('\n');
        return;
    }
    if (kind == TIO_OBJ_TENSOR) {
        put_tensor(w, o);
        putchar('\n');
        return;
    }
    if (w->seen[id]) {
        printf("(the %s #%zu above)\n", tio_object_kind_name(kind), id);
        return;
    }
    w->seen[id] = 1;
    const char *tag = tio_object_shared(o) ? " #" : NULL;
    if (kind == TIO_OBJ_OPAQUE) {
        const char *name = tio_object_bytes(o, NULL);
        char *e = cli_text_escape(name ? name : "");
        printf("%s (opaque", e ? e : "?");
        free(e);
        if (tio_object_offset(o) >= 0) printf(", offset %" PRId64, tio_object_offset(o));
        if (tag) printf(", #%zu", id);
        const tio_object *st = tio_object_state(o);
        if (!st) {
            fputs(")\n", stdout);
            return;
        }
        fputs(") state: ", stdout);
        tree_node(w, st, ind);
        return;
    }
    /* a container: short sequences of scalars on one line */
    int inline_ok = is_seq(kind) && n <= TREE_INLINE;
    for (size_t k = 0; k < n && inline_ok; k++) inline_ok = is_scalar(tio_object_item(o, k));
    if (inline_ok) {
        fputs(kind == TIO_OBJ_LIST ? "[" : kind == TIO_OBJ_TUPLE ? "(" : "{", stdout);
        for (size_t k = 0; k < n; k++) {
            if (k) fputs(", ", stdout);
            put_scalar(tio_object_item(o, k));
        }
        fputs(kind == TIO_OBJ_LIST ? "]" : kind == TIO_OBJ_TUPLE ? (n == 1 ? ",)" : ")") : "}",
              stdout);
        if (tag) printf("  #%zu", id);
        putchar('\n');
        return;
    }
    printf("%s, %zu %s", tio_object_kind_name(kind), n,
           kind == TIO_OBJ_DICT ? (n == 1 ? "pair" : "pairs") : (n == 1 ? "item" : "items"));
    if (tag) printf("  #%zu", id);
    putchar('\n');
    tree_kids(w, o, ind + 2);
}

int cli_tree_text(const tio_container *c) {
    const tio_object *root = tio_container_object(c);
    if (!root) return CLI_EXIT_OK;
    tree_out w = {c, calloc(tio_container_object_count(c) + 1, 1), 0, 0};
    if (!w.seen) return cli_error("out of memory");
    printf("object:      ");
    tree_node(&w, root, 0);
    if (w.cut) printf("  ... %zu more lines (--json has the whole tree)\n", w.cut);
    free(w.seen);
    return CLI_EXIT_OK;
}

/* ------------------------------------------------------------------ JSON */

static json_t *tree_json(tree_out *w, const tio_object *o);

static json_t *tagged(const char *tag, json_t *v) {
    json_t *j = json_object();
    if (j && cli_json_set(j, tag, v) == 0) return j;
    json_decref(j);
    return NULL;
}

static json_t *hex_json(const char *s, size_t n) {
    char *h = malloc(2 * n + 1);
    if (!h) return NULL;
    for (size_t k = 0; k < n; k++) snprintf(h + 2 * k, 3, "%02x", (unsigned char)s[k]);
    h[2 * n] = 0;
    json_t *j = json_string(h);
    free(h);
    return j;
}

static json_t *kids_json(tree_out *w, const tio_object *o) {
    json_t *a = json_array();
    int dict = tio_object_kind_of(o) == TIO_OBJ_DICT;
    for (size_t k = 0; a && k < tio_object_len(o); k++) {
        json_t *v = tree_json(w, tio_object_item(o, k));
        if (v && dict) {
            json_t *pair = json_array();
            if (!pair || json_array_append_new(pair, tree_json(w, tio_object_key(o, k))) ||
                json_array_append_new(pair, v)) {
                json_decref(pair);
                pair = NULL;
            }
            v = pair;
        }
        if (!v || json_array_append_new(a, v)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* JSON of one object: null, true/false, numbers and strs as themselves;
 * everything else an object tagged by its kind ({"dict": [[k, v], …]},
 * {"list": […]}, {"tensor": i, "name": …}, {"opaque": "mod.name",
 * "offset": n, "state": …}, {"bytes": "hex"}, …). A shared object carries
 * "id" where it is shown, {"ref": id} at its other places (but tensors,
 * and strs and bytes of up to TREE_JSON_REPEAT bytes, are repeated). */
static json_t *tree_json(tree_out *w, const tio_object *o) {
    tio_object_kind kind = tio_object_kind_of(o);
    size_t n = 0, id = tio_object_id(o);
    const char *s = tio_object_bytes(o, &n);
    switch (kind) {
    case TIO_OBJ_NONE: return json_null();
    case TIO_OBJ_BOOL: return json_boolean(tio_object_int(o));
    case TIO_OBJ_INT: return json_integer((json_int_t)tio_object_int(o));
    case TIO_OBJ_FLOAT: {
        double f = tio_object_float(o);
        if (f == f && f - f == 0) return json_real(f);
        return tagged("float", json_string(f != f ? "nan" : f > 0 ? "inf" : "-inf"));
    }
    default: break;
    }
    int repeatable = kind == TIO_OBJ_TENSOR ||
                     ((kind == TIO_OBJ_STR || kind == TIO_OBJ_BYTES || kind == TIO_OBJ_BIGINT) &&
                      n <= TREE_JSON_REPEAT);
    if (tio_object_shared(o) && !repeatable && w->seen[id])
        return tagged("ref", json_integer((json_int_t)id));
    w->seen[id] = 1;
    json_t *j = NULL;
    switch (kind) {
    case TIO_OBJ_STR:
        if (!memchr(s, 0, n)) return cli_json_str(s);
        j = tagged("str_hex", hex_json(s, n));
        break;
    case TIO_OBJ_BYTES: j = tagged("bytes", hex_json(s, n)); break;
    case TIO_OBJ_BIGINT: j = tagged("int_le", hex_json(s, n)); break;
    case TIO_OBJ_TENSOR: {
        j = tagged("tensor", json_integer((json_int_t)tio_object_tensor(o)));
        tio_tensor *t = tio_container_tensor(w->c, (size_t)tio_object_tensor(o));
        if (j && t && tio_tensor_name(t) &&
            cli_json_set(j, "name", cli_json_str(tio_tensor_name(t)))) {
            json_decref(j);
            return NULL;
        }
        break;
    }
    case TIO_OBJ_OPAQUE: {
        j = tagged("opaque", cli_json_str(s));
        const tio_object *st = tio_object_state(o);
        int64_t off = tio_object_offset(o);
        if (j && ((off >= 0 && cli_json_set(j, "offset", json_integer((json_int_t)off))) ||
                  (st && cli_json_set(j, "state", tree_json(w, st))))) {
            json_decref(j);
            return NULL;
        }
        break;
    }
    default:
        j = tagged(tio_object_kind_name(kind), kids_json(w, o));
        break;
    }
    if (j && tio_object_shared(o) && !repeatable &&
        cli_json_set(j, "id", json_integer((json_int_t)id))) {
        json_decref(j);
        return NULL;
    }
    return j;
}

int cli_tree_json(const tio_container *c, json_t *root) {
    const tio_object *o = tio_container_object(c);
    if (!o) return 0;
    tree_out w = {c, calloc(tio_container_object_count(c) + 1, 1), 0, 0};
    if (!w.seen) return -1;
    json_t *j = tree_json(&w, o);
    free(w.seen);
    return j ? cli_json_set(root, "object", j) : -1;
}
