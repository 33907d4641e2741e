/*
 * ZIO TENS: the writer (a .zmsg file, or a message's frames): what the
 * reader kept (level, form, coordinates, the label's other keys) written
 * back, the label as ZIO's nlohmann would print it.
 */
#include "core/internal.h"
#include "zio/zio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char zio_default_form[4] = {'T', 'E', 'N', 'S'};

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static bool zio_utf8_ok(const char *str, size_t n) {
    const uint8_t *s = (const uint8_t *)str;
    size_t i = 0;
    while (i < n) {
        uint8_t b = s[i];
        size_t len;
        uint32_t cp;
        if (b < 0x80) {
            i++;
            continue;
        } else if (b >= 0xC2 && b <= 0xDF) {
            len = 2;
            cp = b & 0x1Fu;
        } else if (b >= 0xE0 && b <= 0xEF) {
            len = 3;
            cp = b & 0x0Fu;
        } else if (b >= 0xF0 && b <= 0xF4) {
            len = 4;
            cp = b & 0x07u;
        } else {
            return false;
        }
        if (n - i < len) return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

/* ------------------------------------------------------------------ write */

static const zio_native *zio_native_of(const tio_container *c) {
    if (c->native && c->native_format && strcmp(c->native_format, ZIO_FMT) == 0)
        return c->native;
    return NULL;
}

/* Header values: the native state's (or TENS, level 0, coordinates 0),
 * overridden by the format options. */
typedef struct zio_head {
    unsigned level;
    char form[4];
    uint64_t coord[3];
} zio_head;

static int zio_parse_u64(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        if (tio__mul64_ovf(v, 10, &v) || tio__add64_ovf(v, (uint64_t)(*s - '0'), &v)) return -1;
    }
    *out = v;
    return 0;
}

static int zio_head_of(const tio_write_plan *p, zio_head *h, tio_error *err) {
    const zio_native *nat = zio_native_of(tio__plan_container(p));
    char esc[64];
    if (nat) {
        h->level = nat->level;
        memcpy(h->form, nat->form, 4);
        memcpy(h->coord, nat->coord, sizeof h->coord);
    } else {
        h->level = 0;
        memcpy(h->form, zio_default_form, 4);
        memset(h->coord, 0, sizeof h->coord);
    }
    const char *v = tio__plan_option(p, "level");
    if (v) {
        uint64_t x;
        if (zio_parse_u64(v, &x) || x > ZIO_MAX_LEVEL) {
            tio__escape((const uint8_t *)v, strlen(v), esc, sizeof esc);
            return tio__err(err, TIO_E_ARGUMENT, ZIO_FMT, -1,
                            "format option level=\"%s\" is not a level (expected 0..8)", esc);
        }
        h->level = (unsigned)x;
    }
    v = tio__plan_option(p, "form");
    if (v) {
        size_t n = strlen(v);
        bool ok = n >= 1 && n <= 4;
        for (size_t i = 0; ok && i < n; i++) ok = v[i] >= 0x20 && v[i] <= 0x7e;
        if (!ok) {
            tio__escape((const uint8_t *)v, n, esc, sizeof esc);
            return tio__err(err, TIO_E_ARGUMENT, ZIO_FMT, -1,
                            "format option form=\"%s\" is not a form (expected 1..4 printable "
                            "ASCII characters)",
                            esc);
        }
        memset(h->form, ' ', 4);
        memcpy(h->form, v, n);
    }
    static const char *const ckeys[3] = {"origin", "granule", "seqno"};
    for (int k = 0; k < 3; k++) {
        v = tio__plan_option(p, ckeys[k]);
        if (!v) continue;
        if (zio_parse_u64(v, &h->coord[k])) {
            tio__escape((const uint8_t *)v, strlen(v), esc, sizeof esc);
            return tio__err(err, TIO_E_ARGUMENT, ZIO_FMT, -1,
                            "format option %s=\"%s\" is not a uint64 (expected decimal digits, "
                            "0..18446744073709551615)",
                            ckeys[k], esc);
        }
    }
    return TIO_OK;
}

/* The native state of plan tensor i, or NULL. Containers only append
 * tensors, so tensor i read from a message is still tensor i. */
static const zio_tstate *zio_tstate_of(const zio_native *nat, const tio_wtensor *w, size_t i) {
    if (!nat || i >= nat->nts || nat->ts[i].t != w->src) return NULL;
    return &nat->ts[i];
}

/* Whether a tensor's name and its metadata entry "name" differ: both go to
 * metadata.name. */
static bool zio_name_clash(const tio_wtensor *w) {
    const char *mn = tio__kv_get(tio__tensor_meta_view(w->src), "name");
    return w->name && mn && strcmp(mn, w->name) != 0;
}

int tio__zio_check(const tio_write_plan *p, tio_error *err) {
    zio_head h;
    int rc = zio_head_of(p, &h, err);
    if (rc) return rc;
    const tio_container *c = tio__plan_container(p);
    for (size_t i = 0; i < c->meta.count; i++) {
        const char *k = c->meta.keys[i], *v = c->meta.values[i];
        if (!zio_utf8_ok(k, strlen(k)) || !zio_utf8_ok(v, strlen(v)))
            return tio__err(err, TIO_E_UNSUPPORTED, ZIO_FMT, -1,
                            "container metadata entry %zu is not valid UTF-8 (a JSON label "
                            "holds UTF-8 text only)",
                            i);
    }
    size_t n = tio__plan_count(p);
    for (size_t i = 0; i < n; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        if (w->layout != TIO_LAYOUT_DENSE)
            return tio__err(err, TIO_E_LOSSY, ZIO_FMT, -1,
                            "tensor %zu: TENS stores dense arrays only (use TIO_SAVE_DENSIFY)",
                            i);
        if (!tio__zio_kind_of(w->dtype))
            return tio__err(err, TIO_E_LOSSY, ZIO_FMT, -1,
                            "tensor %zu: dtype %s has no TENS kind", i,
                            tio_dtype_name(w->dtype) ? tio_dtype_name(w->dtype) : "?");
        if (w->name && !zio_utf8_ok(w->name, strlen(w->name)))
            return tio__err(err, TIO_E_UNSUPPORTED, ZIO_FMT, -1,
                            "tensor %zu: the name is not valid UTF-8 (it is written as "
                            "metadata.name in the JSON label)",
                            i);
        const tio_kv *m = tio__tensor_meta_view(w->src);
        for (size_t k = 0; k < m->count; k++) {
            if (!zio_utf8_ok(m->keys[k], strlen(m->keys[k])) ||
                !zio_utf8_ok(m->values[k], strlen(m->values[k])))
                return tio__err(err, TIO_E_UNSUPPORTED, ZIO_FMT, -1,
                                "tensor %zu: metadata entry %zu is not valid UTF-8 (a JSON "
                                "label holds UTF-8 text only)",
                                i, k);
        }
        const char *mn = tio__kv_get(m, "name");
        if (zio_name_clash(w) &&
            !(tio__plan_flags(p) & (TIO_SAVE_DROP_NAMES | TIO_SAVE_DROP_METADATA)))
            return tio__err(err, TIO_E_LOSSY, ZIO_FMT, -1,
                            "tensor %zu: it is named '%.64s' and also has a metadata entry "
                            "\"name\" = '%.64s'; TENS keeps the name in metadata.name, so one "
                            "would be lost (TIO_SAVE_DROP_NAMES writes the metadata entry, "
                            "TIO_SAVE_DROP_METADATA the name)",
                            i, w->name, mn);
    }
    return TIO_OK;
}

/* Where each payload part comes from. */
typedef struct zio_slot {
    size_t tensor;        /* plan tensor index, or SIZE_MAX for a kept part */
    const zio_upart *up;
} zio_slot;

typedef struct zio_out {
    tio_buf prefix;          /* part 0 */
    uint8_t coord[ZIO_COORD_LEN];
    size_t npayload;
    zio_slot *slots;
} zio_out;

static void zio_out_free(zio_out *o) {
    free(o->prefix.p);
    free(o->slots);
    memset(o, 0, sizeof *o);
}

/* Sets obj[key] to a copy of v, a value of the container's native label.
 * Not a reference (json_object_set): the container may be shared read-only
 * by threads writing it at once, and jansson reads a value's reference count
 * without an atomic before updating it (json_incref, json_decref): a data
 * race between the writers. -1 when out of memory. */
static int zj_set_copy(json_t *obj, const char *key, json_t *v) {
    return json_object_set_new(obj, key, json_deep_copy(v));
}

/* A metadata value to write: (a copy of) the original typed value when it
 * still reads as `value`, else the string. NULL when out of memory. */
static json_t *zio_meta_value(json_t *orig, const char *key, const char *value, tio_buf *scratch) {
    json_t *ov = orig ? json_object_get(orig, key) : NULL;
    if (ov && tio__json_text(scratch, ov) && strcmp(scratch->p, value) == 0)
        return json_deep_copy(ov);
    return json_string(value);
}

static json_t *zio_meta_object(const tio_kv *kv, const char *name, json_t *orig, tio_buf *scratch) {
    json_t *o = json_object();
    if (!o) return NULL;
    for (size_t k = 0; k < kv->count; k++) {
        if (name && strcmp(kv->keys[k], "name") == 0) continue; /* the name wins */
        if (json_object_set_new(o, kv->keys[k],
                                zio_meta_value(orig, kv->keys[k], kv->values[k], scratch))) {
            json_decref(o);
            return NULL;
        }
    }
    if (name && json_object_set_new(o, "name", json_string(name))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *zio_entry(const tio_wtensor *w, const zio_tstate *ts, size_t part,
                         bool part_explicit, unsigned flags, tio_buf *scratch) {
    /* a clash allowed by the flags: DROP_NAMES writes the metadata entry,
     * DROP_METADATA (alone) the name */
    const char *name = w->name;
    if (zio_name_clash(w) && (flags & TIO_SAVE_DROP_NAMES)) name = NULL;
    json_t *e = json_object();
    if (!e) return NULL;
    bool ok = true;
    if (ts && ts->entry) { /* NULL when read by zio_label_fast: no other keys */
        const char *key;
        json_t *v;
        json_object_foreach(ts->entry, key, v) {
            bool layout = strcmp(key, "order") == 0 || strcmp(key, "ascend") == 0;
            bool std = layout || strcmp(key, "shape") == 0 || strcmp(key, "word") == 0 ||
                       strcmp(key, "dtype") == 0 || strcmp(key, "part") == 0 ||
                       strcmp(key, "metadata") == 0;
            if (!std || (layout && ts->keep_layout))
                ok = ok && zj_set_copy(e, key, v) == 0;
        }
    }
    const struct zio_kind *kind = tio__zio_kind_of(w->dtype);
    char ks[2] = {kind->kind, '\0'};
    ok = ok && json_object_set_new(e, "dtype", json_string(ks)) == 0;
    ok = ok && json_object_set_new(e, "word", json_integer(kind->word)) == 0;
    json_t *shape = json_array();
    for (size_t d = 0; shape && d < w->rank; d++)
        if (json_array_append_new(shape, json_integer((json_int_t)w->shape[d]))) {
            json_decref(shape);
            shape = NULL;
        }
    ok = ok && json_object_set_new(e, "shape", shape) == 0;
    if (part_explicit)
        ok = ok && json_object_set_new(e, "part", json_integer((json_int_t)part)) == 0;
    const tio_kv *m = tio__tensor_meta_view(w->src);
    if (m->count || name || (ts && ts->meta))
        ok = ok && json_object_set_new(e, "metadata",
                                       zio_meta_object(m, name, ts ? ts->meta : NULL,
                                                       scratch)) == 0;
    if (!ok) {
        json_decref(e);
        return NULL;
    }
    return e;
}

/* ------------------------------------------------ label fast path (write) */

/* An integer as tio__json_dump_sorted writes it ("%lld"). */
static void zj_int(tio_buf *b, int64_t v) {
    char buf[TIO__DEC_CAP];
    if (v < 0) tio__json_putc(b, '-');
    tio__json_puts(b, tio__u64_dec(buf, v < 0 ? 0 - (uint64_t)v : (uint64_t)v));
}

/* Whether the label is the plain one: a container without metadata (tensor
 * names are fine), built here or read by zio_label_fast (no JSON kept) with
 * its tensors as read, in payload order with explicit parts and no other
 * payload part: the general writer would write the same label. */
static bool zio_plain(const tio_write_plan *p, const zio_native *nat) {
    const tio_container *c = tio__plan_container(p);
    size_t n = tio__plan_count(p);
    if (c->meta.count) return false;
    if (nat && (nat->label || nat->label_empty || !nat->tensors_present || nat->nup ||
                nat->npayload != n))
        return false;
    for (size_t i = 0; i < n; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        if (tio_tensor_meta_count(w->src)) return false;
        const zio_tstate *ts = zio_tstate_of(nat, w, i);
        if (nat && (!ts || ts->part != i || !ts->part_explicit)) return false;
    }
    return true;
}

/* The plain label, byte for byte what zio_prepare's JSON gives for it (keys
 * sorted: dtype, metadata, part, shape, word; every part explicit). */
static void zio_label_plain(tio_buf *b, const tio_write_plan *p) {
    size_t n = tio__plan_count(p);
    tio__json_puts(b, "{\"TENS\":{\"tensors\":[");
    for (size_t i = 0; i < n; i++) {
        const tio_wtensor *w = tio__plan_tensor(p, i);
        const struct zio_kind *kind = tio__zio_kind_of(w->dtype);
        char head[16] = "{\"dtype\":\"?\",";
        head[10] = kind->kind;
        if (i) tio__json_putc(b, ',');
        tio__json_puts(b, head);
        if (w->name) {
            tio__json_puts(b, "\"metadata\":{\"name\":");
            tio__json_string(b, w->name, strlen(w->name));
            tio__json_puts(b, "},");
        }
        tio__json_puts(b, "\"part\":");
        zj_int(b, (int64_t)i);
        tio__json_puts(b, ",\"shape\":[");
        for (size_t d = 0; d < w->rank; d++) {
            if (d) tio__json_putc(b, ',');
            zj_int(b, w->shape[d]);
        }
        tio__json_puts(b, "],\"word\":");
        zj_int(b, kind->word);
        tio__json_putc(b, '}');
    }
    tio__json_puts(b, "]}}");
}

/* Builds part 0 (prefix + label), part 1 and the payload layout. */
static int zio_prepare(tio_write_plan *p, zio_out *o, tio_error *err) {
    memset(o, 0, sizeof *o);
    const tio_container *c = tio__plan_container(p);
    const zio_native *nat = zio_native_of(c);
    size_t n = tio__plan_count(p);
    zio_head h;
    int rc = zio_head_of(p, &h, err);
    if (rc) return rc;
    for (int k = 0; k < 3; k++) tio__st64(o->coord + 8 * k, h.coord[k]);

    /* payload layout: the source's when every tensor came from it */
    bool reuse = nat != NULL;
    for (size_t i = 0; reuse && i < n; i++)
        reuse = zio_tstate_of(nat, tio__plan_tensor(p, i), i) != NULL;
    size_t nup = nat ? nat->nup : 0;
    o->npayload = reuse ? nat->npayload : n + nup;
    o->slots = calloc(o->npayload ? o->npayload : 1, sizeof *o->slots);
    if (!o->slots) return tio__nomem(err, ZIO_FMT);
    for (size_t k = 0; k < o->npayload; k++) o->slots[k].tensor = SIZE_MAX;
    for (size_t i = 0; i < n; i++) o->slots[reuse ? nat->ts[i].part : i].tensor = i;
    for (size_t u = 0; u < nup; u++) o->slots[reuse ? nat->up[u].index : n + u].up = &nat->up[u];

    if (zio_plain(p, nat) && !(tio__plan_flags(p) & TIO__SAVE_GENERAL_ONLY)) {
        /* no JSON values to build */
        char lv = (char)('0' + h.level);
        o->prefix.p = malloc(256); /* room for a label of a few tensors */
        if (o->prefix.p) o->prefix.cap = 256;
        tio__buf_put(&o->prefix, "ZIO", 3);
        tio__buf_put(&o->prefix, &lv, 1);
        tio__buf_put(&o->prefix, h.form, 4);
        zio_label_plain(&o->prefix, p);
        return o->prefix.oom ? tio__nomem(err, ZIO_FMT) : TIO_OK;
    }
    if (tio__plan_flags(p) & TIO__SAVE_FAST_ONLY)
        return tio__err(err, TIO_E_UNSUPPORTED, ZIO_FMT, -1, "not a plain label (fast path only)");

    /* the label */
    tio_buf scratch = {0};
    json_t *root = json_object();
    bool ok = root != NULL;
    if (ok && nat && nat->label) {
        const char *key;
        json_t *v;
        json_object_foreach(nat->label, key, v) {
            if (strcmp(key, "TENS") != 0) ok = ok && zj_set_copy(root, key, v) == 0;
        }
    }
    json_t *otmeta = nat && nat->tens ? json_object_get(nat->tens, "metadata") : NULL;
    if (ok && (!nat || nat->tens || n || c->meta.count)) {
        json_t *tens = json_object();
        ok = tens != NULL;
        if (ok && nat && nat->tens) {
            const char *key;
            json_t *v;
            json_object_foreach(nat->tens, key, v) {
                if (strcmp(key, "tensors") != 0 && strcmp(key, "metadata") != 0)
                    ok = ok && zj_set_copy(tens, key, v) == 0;
            }
        }
        if (ok && (n || !nat || nat->tensors_present)) {
            json_t *arr = json_array();
            ok = arr != NULL;
            for (size_t i = 0; ok && i < n; i++) {
                const tio_wtensor *w = tio__plan_tensor(p, i);
                const zio_tstate *ts = zio_tstate_of(nat, w, i);
                size_t part = reuse ? ts->part : i;
                bool expl = reuse ? ts->part_explicit : true;
                ok = json_array_append_new(
                         arr, zio_entry(w, ts, part, expl, tio__plan_flags(p), &scratch)) == 0;
            }
            ok = json_object_set_new(tens, "tensors", arr) == 0 && ok;
        }
        if (ok && (c->meta.count || otmeta))
            ok = json_object_set_new(tens, "metadata",
                                     zio_meta_object(&c->meta, NULL, otmeta, &scratch)) == 0;
        ok = json_object_set_new(root, "TENS", tens) == 0 && ok;
    }
    if (ok) {
        char lv = (char)('0' + h.level);
        tio__buf_put(&o->prefix, "ZIO", 3);
        tio__buf_put(&o->prefix, &lv, 1);
        tio__buf_put(&o->prefix, h.form, 4);
        if (!(nat && nat->label_empty && json_object_size(root) == 0))
            tio__json_dump_sorted(&o->prefix, root);
        ok = !o->prefix.oom && !scratch.oom;
    }
    json_decref(root);
    free(scratch.p);
    if (!ok) return tio__nomem(err, ZIO_FMT);
    return TIO_OK;
}

static int zio_put_size(tio_sink *s, size_t n, tio_error *err) {
    uint8_t h[5];
    if (n < ZIO_BIG_SIZE) {
        h[0] = (uint8_t)n;
        return tio__sink_write(s, h, 1, err);
    }
    h[0] = ZIO_BIG_SIZE;
    h[1] = (uint8_t)(n >> 24);
    h[2] = (uint8_t)(n >> 16);
    h[3] = (uint8_t)(n >> 8);
    h[4] = (uint8_t)n;
    return tio__sink_write(s, h, 5, err);
}

static int zio_check_size(size_t part, size_t n, tio_error *err) {
    if ((uint64_t)n > UINT32_MAX)
        return tio__err(err, TIO_E_LIMIT, ZIO_FMT, -1,
                        "part %zu is %zu bytes; the zmsg size field holds at most 4294967295 "
                        "(4 GiB - 1)",
                        part, n);
    return TIO_OK;
}

/* The .zmsg single buffer: each part with its size field. */
int tio__zio_write(tio_write_plan *p, tio_sink *s, tio_error *err) {
    zio_out o;
    int rc = zio_prepare(p, &o, err);
    /* every size is checked before the first byte */
    if (!rc) rc = zio_check_size(0, o.prefix.len, err);
    for (size_t k = 0; !rc && k < o.npayload; k++) {
        const zio_slot *sl = &o.slots[k];
        size_t sz = sl->up ? sl->up->size : tio__plan_tensor(p, sl->tensor)->nbytes;
        rc = zio_check_size(k + ZIO_HEADER_PARTS, sz, err);
    }
    if (!rc) rc = zio_put_size(s, o.prefix.len, err);
    if (!rc) rc = tio__sink_write(s, o.prefix.p, o.prefix.len, err);
    if (!rc) rc = zio_put_size(s, ZIO_COORD_LEN, err);
    if (!rc) rc = tio__sink_write(s, o.coord, ZIO_COORD_LEN, err);
    for (size_t k = 0; !rc && k < o.npayload; k++) {
        const zio_slot *sl = &o.slots[k];
        if (sl->up) {
            rc = zio_put_size(s, sl->up->size, err);
            if (!rc && sl->up->size)
                rc = tio__plan_sink_data(p, s, sl->up->data, sl->up->size, err);
        } else {
            /* streamed: a densified tensor is never held whole */
            rc = zio_put_size(s, tio__plan_tensor(p, sl->tensor)->nbytes, err);
            if (!rc) rc = tio__plan_sink_tensor(p, s, sl->tensor, err);
        }
    }
    zio_out_free(&o);
    return rc;
}

/* The multipart form: prefix, coordinates, payload (tensor data lent). */
int tio__zio_write_parts(tio_write_plan *p, struct tio_message *m, tio_error *err) {
    zio_out o;
    int rc = zio_prepare(p, &o, err);
    if (!rc) {
        void *pre = o.prefix.p;
        o.prefix.p = NULL;
        rc = tio__msg_add_owned(m, pre ? pre : malloc(1), o.prefix.len, err);
    }
    if (!rc) rc = tio__msg_add_copy(m, o.coord, ZIO_COORD_LEN, err);
    for (size_t k = 0; !rc && k < o.npayload; k++) {
        const zio_slot *sl = &o.slots[k];
        if (sl->up)
            rc = tio__msg_add_copy(m, sl->up->data, sl->up->size, err);
        else
            rc = tio__msg_add_tensor(m, p, sl->tensor, err);
    }
    zio_out_free(&o);
    return rc;
}

