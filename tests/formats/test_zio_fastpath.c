/* zio: the plain-label fast paths (reader and writer) against the general,
 * jansson path. Every message read through the fast path must give what the
 * general path gives (tensors, views, metadata, properties, warnings, errors
 * and the messages re-encoded from it), and every input the fast path does
 * not take must still be read exactly as before. Differential over random
 * labels (well-formed, near-misses and mutated bytes), then hand-written edge
 * cases with their expected outcome. The internal flags TIO__*_GENERAL_ONLY
 * and TIO__*_FAST_ONLY choose the path. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensio.h"
#include "core/internal.h"

/* ------------------------------------------------------------ helpers */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnext(rng *r) {
    r->s ^= r->s << 13;
    r->s ^= r->s >> 7;
    r->s ^= r->s << 17;
    return r->s;
}
static unsigned rn(rng *r, unsigned n) { return (unsigned)(rnext(r) % n); }
static bool rp(rng *r, unsigned percent) { return rn(r, 1000) < percent * 10; }

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_put(sbuf *b, const void *d, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n + 1) cap *= 2;
        b->p = realloc(b->p, cap);
        assert_non_null(b->p);
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void sb_puts(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_printf(sbuf *b, const char *fmt, ...) {
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < sizeof tmp);
    sb_put(b, tmp, (size_t)n);
}

static uint64_t fnv(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t h = 1469598103934665603u;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211u;
    return h;
}

/* A message: its parts, owned (test_fast_bounds: 1,000 tensors). */
#define MSG_MAX 1024u
typedef struct msg {
    tio_part parts[MSG_MAX];
    uint8_t *bufs[MSG_MAX];
    size_t n;
} msg;

static void msg_add(msg *m, const void *d, size_t n) {
    assert_true(m->n < MSG_MAX);
    m->bufs[m->n] = malloc(n ? n : 1);
    assert_non_null(m->bufs[m->n]);
    if (n) memcpy(m->bufs[m->n], d, n);
    m->parts[m->n].data = m->bufs[m->n];
    m->parts[m->n].size = n;
    m->n++;
}

static void msg_free(msg *m) {
    for (size_t i = 0; i < m->n; i++) free(m->bufs[i]);
    m->n = 0;
}

/* Encodings of c: multipart, single part, and after adding a named tensor
 * (a new layout); each with save flags `extra` added. */
static void dump_encodings(sbuf *o, tio_container *c, unsigned extra) {
    tio_error e;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            static const float v[2] = {1, 2};
            int64_t sh = 2;
            tio_tensor_desc d;
            memset(&d, 0, sizeof d);
            d.dtype = TIO_FLOAT32;
            d.rank = 1;
            d.shape = &sh;
            d.data = v;
            d.nbytes = sizeof v;
            d.name = "extra";
            assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
        }
        tio_save_options so = {.format = "zio", .flags = extra};
        tio_message *m = NULL;
        int rc = tio_message_encode(c, &so, &m, &e);
        sb_printf(o, " enc%d rc=%d", pass, rc);
        if (rc == TIO_OK) {
            for (size_t k = 0; k < tio_message_part_count(m); k++) {
                tio_part p = tio_message_part(m, k);
                if (k == 0) {
                    sb_puts(o, " p0=");
                    sb_put(o, p.data, p.size);
                } else {
                    sb_printf(o, " p%zu:%zu:%llx", k, p.size,
                              (unsigned long long)fnv(p.data, p.size));
                }
            }
            tio_message_free(m);
        } else {
            sb_printf(o, " %s", e.message);
        }
        so.flags = TIO_SAVE_SINGLE_PART | extra;
        void *out = NULL;
        size_t outn = 0;
        rc = tio_save_memory(c, &so, &out, &outn, &e);
        sb_printf(o, " single%d rc=%d %zu %llx\n", pass, rc, outn,
                  rc ? 0ull : (unsigned long long)fnv(out, outn));
        tio_free(out);
    }
}

/* Everything observable about decoding m with open flags `flags`. */
static char *dump(const msg *m, unsigned flags, int *rc_out) {
    sbuf o = {0};
    tio_open_options oo = {.format = "zio", .flags = flags};
    tio_container *c = NULL;
    tio_error e;
    int rc = tio_open_parts(m->parts, m->n, &oo, &c, &e);
    if (rc_out) *rc_out = rc;
    sb_printf(&o, "rc=%d", rc);
    if (rc) {
        sb_printf(&o, " err=%s off=%lld\n", e.message, (long long)e.offset);
        return o.p;
    }
    sb_printf(&o, " n=%zu\n", tio_container_count(c));
    for (size_t i = 0; i < tio_container_count(c); i++) {
        tio_tensor *t = tio_container_tensor(c, i);
        const char *name = tio_tensor_name(t);
        sb_printf(&o, " t%zu name=%s dtype=%s shape=", i, name ? name : "(null)",
                  tio_dtype_name(tio_tensor_dtype(t)));
        for (size_t d = 0; d < tio_tensor_rank(t); d++)
            sb_printf(&o, "%lld,", (long long)tio_tensor_shape(t)[d]);
        long at = -1; /* which part, where: the data must be a view */
        const uint8_t *data = tio_tensor_data(t);
        for (size_t k = 0; k < m->n; k++)
            if (data >= m->bufs[k] && data < m->bufs[k] + m->parts[k].size)
                at = (long)k * 100000 + (long)(data - m->bufs[k]);
        sb_printf(&o, " nbytes=%zu at=%ld h=%llx src=%lld\n", tio_tensor_nbytes(t), at,
                  (unsigned long long)fnv(data, tio_tensor_nbytes(t)),
                  (long long)tio_tensor_source_offset(t));
        for (size_t k = 0; k < tio_tensor_meta_count(t); k++) {
            const char *a, *b;
            tio_tensor_meta_at(t, k, &a, &b);
            sb_printf(&o, "  meta %s=%s\n", a, b);
        }
    }
    for (size_t k = 0; k < tio_container_meta_count(c); k++) {
        const char *a, *b;
        tio_container_meta_at(c, k, &a, &b);
        sb_printf(&o, " cmeta %s=%s\n", a, b);
    }
    for (size_t k = 0; k < tio_container_prop_count(c); k++) {
        const char *a, *b;
        tio_container_prop_at(c, k, &a, &b);
        sb_printf(&o, " prop %s=%s\n", a, b);
    }
    for (size_t k = 0; k < tio_container_warning_count(c); k++)
        sb_printf(&o, " warn %s\n", tio_container_warning(c, k)->message);
    dump_encodings(&o, c, 0);
    tio_container_free(c);
    return o.p;
}

/* Decodes m through both paths (and strictly); asserts they agree. Returns
 * whether the fast path took it, and the result code in *rc_out. */
static bool check_same(const msg *m, int *rc_out) {
    static const unsigned modes[] = {0, TIO_OPEN_STRICT};
    bool fast = false;
    for (size_t i = 0; i < 2; i++) {
        int rc_fast, rc_def, rc_gen;
        char *d = dump(m, modes[i], &rc_def);
        char *g = dump(m, modes[i] | TIO__OPEN_GENERAL_ONLY, &rc_gen);
        char *f = dump(m, modes[i] | TIO__OPEN_FAST_ONLY, &rc_fast);
        if (strcmp(d, g) != 0) {
            fprintf(stderr, "default and general paths differ (flags %u):\n--- default\n%s"
                            "--- general\n%s", modes[i], d, g);
            fail();
        }
        if (rc_fast == TIO_OK) { /* the fast path took it: the same result */
            assert_string_equal(f, g);
            if (i == 0) fast = true;
        }
        if (i == 0 && rc_out) *rc_out = rc_def;
        free(d);
        free(g);
        free(f);
    }
    return fast;
}

/* ------------------------------------------------------ random labels */

static const struct {
    const char *kind;
    unsigned word;
} kinds[] = {{"f", 2}, {"f", 4}, {"f", 8}, {"i", 1}, {"i", 2}, {"i", 4},  {"i", 8}, {"u", 1},
             {"u", 2}, {"u", 4}, {"u", 8}, {"b", 1}, {"f", 16}, {"c", 8}, {"x", 4}, {"f", 3}};

static void ws(rng *r, sbuf *b) {
    static const char *const w[] = {" ", "\t", "\n", "\r", "  "};
    if (rp(r, 30)) sb_puts(b, w[rn(r, 5)]);
}

/* An integer as text, sometimes in a form the fast path must not take. */
static void num(rng *r, sbuf *b, long long v) {
    unsigned x = rn(r, 1000);
    if (x < 20) sb_printf(b, "0%lld", v);
    else if (x < 30) sb_printf(b, "%lld.0", v);
    else if (x < 40) sb_printf(b, "%lld", v), sb_puts(b, x & 1 ? "e0" : "E0");
    else if (x < 50) sb_printf(b, "-%lld", v);
    else if (x < 55) sb_printf(b, "+%lld", v);
    else if (x < 60) sb_printf(b, "%lld0000000000000000000", v);
    else if (x < 65) sb_puts(b, "1111111111111111111");
    else if (x < 70) sb_puts(b, "999999999999999999");
    else sb_printf(b, "%lld", v);
}

/* A JSON string, sometimes escaped (the same string to jansson). */
static void str(rng *r, sbuf *b, const char *s) {
    sb_puts(b, "\"");
    unsigned x = rn(r, 100);
    if (x < 2) {
        for (const char *q = s; *q; q++) sb_printf(b, "\\u%04x", (unsigned)(unsigned char)*q);
    } else {
        sb_puts(b, s);
        if (x < 3) sb_puts(b, "\\n");
    }
    sb_puts(b, "\"");
}

/* key: value pairs in random order, as an object. */
typedef struct kvitem {
    char text[8192];
} kvitem;

static void obj(rng *r, sbuf *b, kvitem *items, size_t n) {
    for (size_t i = n; i > 1; i--) { /* shuffle */
        size_t j = rn(r, (unsigned)i);
        kvitem t = items[i - 1];
        items[i - 1] = items[j];
        items[j] = t;
    }
    sb_puts(b, "{");
    ws(r, b);
    for (size_t i = 0; i < n; i++) {
        if (i) sb_puts(b, ",");
        ws(r, b);
        sb_puts(b, items[i].text);
        ws(r, b);
    }
    sb_puts(b, "}");
}

/* One "key": value item, value already text. */
static void item(rng *r, kvitem *it, const char *key, const char *value) {
    sbuf b = {0};
    str(r, &b, key);
    ws(r, &b);
    sb_puts(&b, ":");
    ws(r, &b);
    sb_puts(&b, value);
    assert_true(b.n < sizeof it->text);
    memcpy(it->text, b.p, b.n + 1);
    free(b.p);
}

static void random_message(rng *r, msg *m) {
    static const unsigned ntc[] = {0, 1, 1, 1, 2, 3, 8, 9};
    static const unsigned rankc[] = {0, 1, 1, 2, 3, 8, 9};
    static const long long dimc[] = {0, 1, 2, 3, 5, 7};
    unsigned nt = ntc[rn(r, 8)];
    sbuf ents = {0};
    uint8_t *payload[10];
    size_t psize[10];
    size_t np = 0;
    sb_puts(&ents, "[");
    ws(r, &ents);
    for (unsigned i = 0; i < nt; i++) {
        unsigned k = rp(r, 30) ? rn(r, 16) : rn(r, 12);
        unsigned rank = rankc[rn(r, 7)];
        long long shape[9];
        uint64_t numel = 1;
        for (unsigned d = 0; d < rank; d++) {
            shape[d] = dimc[rn(r, 6)];
            numel *= (uint64_t)shape[d];
        }
        uint64_t nb = numel * kinds[k].word;
        if (rp(r, 5)) nb = nb + 8 - rn(r, 3) * 4; /* off by a few */
        if (nb > 65536) nb = 16;                   /* too large to bother: a size error */
        payload[np] = malloc(nb ? nb : 1);
        assert_non_null(payload[np]);
        for (uint64_t q = 0; q < nb; q++) payload[np][q] = (uint8_t)rnext(r);
        psize[np++] = nb;

        kvitem items[6];
        size_t ni = 0;
        sbuf v = {0};
        str(r, &v, kinds[k].kind);
        item(r, &items[ni++], "dtype", v.p);
        v.n = 0;
        num(r, &v, kinds[k].word);
        item(r, &items[ni++], "word", v.p);
        v.n = 0;
        sb_puts(&v, "[");
        for (unsigned d = 0; d < rank; d++) {
            if (d) sb_puts(&v, ",");
            ws(r, &v);
            num(r, &v, shape[d]);
        }
        sb_puts(&v, "]");
        item(r, &items[ni++], "shape", v.p);
        if (rp(r, 60)) {
            long long part = i;
            if (rp(r, 5)) {
                static const int alt[] = {0, -1, 1, 99};
                part = alt[rn(r, 4)] == 99 ? nt : (long long)i + alt[rn(r, 4)];
            }
            v.n = 0;
            num(r, &v, part);
            item(r, &items[ni++], "part", v.p);
        }
        unsigned x = rn(r, 100);
        if (x < 5) {
            char nm[16];
            snprintf(nm, sizeof nm, "\"w%u\"", i);
            char o2[64];
            snprintf(o2, sizeof o2, "{\"name\":%s}", nm);
            item(r, &items[ni++], "metadata", o2);
        } else if (x < 7) {
            item(r, &items[ni++], "order", rank == 2 ? "[1,0]" : "[0]");
        } else if (x < 8) {
            item(r, &items[ni++], "foo", "1");
        } else if (x < 9) {
            item(r, &items[ni++], "dtype", "\"f\""); /* a duplicate key */
        } else if (x < 10) {
            item(r, &items[ni++], "packing", "\"dense\"");
        } else if (x < 11) {
            item(r, &items[ni++], "pointer", "null");
        } else if (x < 12) {
            items[0] = items[--ni]; /* no dtype */
        }
        free(v.p);
        if (i) sb_puts(&ents, ",");
        ws(r, &ents);
        obj(r, &ents, items, ni);
        ws(r, &ents);
    }
    sb_puts(&ents, "]");

    kvitem titems[2];
    size_t nti = 0;
    unsigned x = rn(r, 100);
    if (x >= 8) item(r, &titems[nti++], "tensors", ents.p);
    if (x < 5) item(r, &titems[nti++], "metadata", "{\"k\":\"v\"}");
    else if (x < 7) item(r, &titems[nti++], "other", "true");
    sbuf tens = {0};
    obj(r, &tens, titems, nti);
    kvitem ritems[2];
    size_t nri = 0;
    item(r, &ritems[nri++], "TENS", tens.p);
    if (rp(r, 5)) item(r, &ritems[nri++], "extra", "1");
    sbuf label = {0};
    ws(r, &label);
    obj(r, &label, ritems, nri);
    ws(r, &label);

    x = rn(r, 100);
    if (x < 3) {
        sb_puts(&label, "x");
    } else if (x < 5) {
        label.n = rn(r, (unsigned)label.n + 1); /* truncated */
    } else if (x < 15) {                         /* a few bytes changed */
        static const char ins[] = "{}[],:\"0123456789 \t-e.\\";
        for (unsigned q = 1 + rn(r, 3); q; q--) {
            size_t at = rn(r, (unsigned)label.n + 1);
            unsigned op = rn(r, 10);
            if (op < 4 && label.n) {
                label.p[at < label.n ? at : label.n - 1] = (char)rnext(r);
            } else if (op < 7 && label.n) {
                size_t d = at < label.n ? at : label.n - 1;
                memmove(label.p + d, label.p + d + 1, label.n - d - 1);
                label.n--;
            } else {
                sb_put(&label, " ", 1);
                memmove(label.p + at + 1, label.p + at, label.n - 1 - at);
                label.p[at] = ins[rn(r, sizeof ins - 1)];
            }
        }
    } else if (x < 16) {
        label.n = 0;
    }

    static const char *const forms[] = {"TENS", "TENS", "FLOW", "\x01\x45NS"};
    static const char levels[] = "00000019";
    sbuf p0 = {0};
    sb_puts(&p0, "ZIO");
    sb_put(&p0, &levels[rn(r, 8)], 1);
    sb_puts(&p0, forms[rn(r, 4)]);
    sb_put(&p0, label.p ? label.p : "", label.n);
    msg_add(m, p0.p, p0.n);
    uint8_t coord[24];
    for (size_t q = 0; q < 24; q++) coord[q] = (uint8_t)rnext(r);
    msg_add(m, coord, rp(r, 1) ? 20 : 24);
    for (size_t q = 0; q < np; q++) {
        if (!(q == np - 1 && rp(r, 3))) msg_add(m, payload[q], psize[q]); /* or one missing */
        free(payload[q]);
    }
    if (rn(r, 4) == 0) msg_add(m, "extra", 5);
    free(ents.p);
    free(tens.p);
    free(label.p);
    free(p0.p);
}

static void test_differential_read(void **state) {
    (void)state;
    rng r = {0x9e3779b97f4a7c15u};
    size_t fast = 0, ok = 0, total = 4000;
    for (size_t i = 0; i < total; i++) {
        msg m = {0};
        random_message(&r, &m);
        int rc;
        if (check_same(&m, &rc)) fast++;
        if (rc == TIO_OK) ok++;
        msg_free(&m);
    }
    fprintf(stderr, "%zu messages: %zu read, %zu of them by the fast path\n", total, ok, fast);
    /* the generator must exercise both paths and both outcomes */
    assert_true(fast > total / 10);
    assert_true(ok > fast + total / 20);
    assert_true(total - ok > total / 5);
}

/* ------------------------------------------------------ random writes */

static void test_differential_write(void **state) {
    (void)state;
    static const char *const names[] = {NULL, "", "w", "weight.bias", "w\xc3\xa9",
                                        "a\"b\\c\n\t\x01", "\xe6\x97\xa5", "x y"};
    static const char *const opts[] = {NULL, "level=3", "form=AB",
                                       "seqno=18446744073709551615,origin=7",
                                       "granule=1,level=8,form=TE S"};
    static const unsigned flags[] = {0, TIO_SAVE_WIDEN, TIO_SAVE_DROP_NAMES,
                                     TIO_SAVE_DROP_METADATA,
                                     TIO_SAVE_WIDEN | TIO_SAVE_DROP_NAMES};
    static uint8_t data[4096];
    rng r = {0x2545f4914f6cdd1du};
    size_t plain = 0, total = 3000;
    for (size_t it = 0; it < total; it++) {
        tio_container *c = tio_container_new();
        assert_non_null(c);
        unsigned nt = rn(&r, 5);
        for (unsigned i = 0; i < nt; i++) {
            tio_tensor_desc d;
            memset(&d, 0, sizeof d);
            d.dtype = (tio_dtype)(1 + rn(&r, 13));
            d.rank = rn(&r, 5);
            int64_t shape[8];
            size_t n = 1;
            for (size_t k = 0; k < d.rank; k++) {
                shape[k] = rn(&r, 4);
                n *= (size_t)shape[k];
            }
            d.shape = shape;
            d.data = data;
            d.nbytes = n * tio_dtype_size(d.dtype);
            d.name = names[rn(&r, 8)];
            tio_tensor *t = NULL;
            if (tio_container_add(c, &d, TIO_ADD_BORROW, &t, NULL) == TIO_OK && rn(&r, 10) == 0)
                assert_int_equal(tio_tensor_meta_set(t, rn(&r, 2) ? "name" : "k", "v", NULL),
                                 TIO_OK);
        }
        if (rn(&r, 10) == 0) assert_int_equal(tio_container_meta_set(c, "cm", "1", NULL), TIO_OK);
        const char *o = opts[rn(&r, 5)];
        unsigned fl = flags[rn(&r, 5)];
        char *out[3];
        int rcs[3];
        static const unsigned path[3] = {0, TIO__SAVE_GENERAL_ONLY, TIO__SAVE_FAST_ONLY};
        for (int k = 0; k < 3; k++) {
            sbuf b = {0};
            tio_save_options so = {.format = "zio", .flags = fl | path[k], .options = o};
            tio_message *m = NULL;
            tio_error e;
            rcs[k] = tio_message_encode(c, &so, &m, &e);
            sb_printf(&b, "rc=%d", rcs[k]);
            if (rcs[k] == TIO_OK) {
                for (size_t q = 0; q < tio_message_part_count(m); q++) {
                    tio_part p = tio_message_part(m, q);
                    sb_printf(&b, " %zu:%llx", p.size, (unsigned long long)fnv(p.data, p.size));
                }
                tio_message_free(m);
            } else {
                sb_printf(&b, " %s", e.message);
            }
            out[k] = b.p;
        }
        if (strcmp(out[0], out[1]) != 0) {
            fprintf(stderr, "write %zu: default %s\ngeneral %s\n", it, out[0], out[1]);
            fail();
        }
        if (rcs[2] == TIO_OK) {
            assert_string_equal(out[2], out[1]);
            plain++;
        }
        for (int k = 0; k < 3; k++) free(out[k]);
        tio_container_free(c);
    }
    fprintf(stderr, "%zu containers encoded, %zu by the fast writer\n", total, plain);
    assert_true(plain > total / 4 && plain < total);
}

/* ------------------------------------------------------ edge cases */

/* A message: label, then payload parts of the given sizes (bytes 0..). */
static void make(msg *m, const char *label, const size_t *sizes, size_t n) {
    size_t cap = strlen(label) + 16;
    char *p0 = malloc(cap);
    assert_non_null(p0);
    int len = snprintf(p0, cap, "ZIO0TENS%s", label);
    assert_true(len > 0 && (size_t)len < cap);
    msg_add(m, p0, (size_t)len);
    free(p0);
    static const uint8_t coord[24] = {1, 0, 0, 0, 0, 0, 0, 0, 2};
    msg_add(m, coord, sizeof coord);
    static uint8_t bytes[4096];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (uint8_t)(i * 7);
    for (size_t i = 0; i < n; i++) msg_add(m, bytes, sizes[i]);
}

typedef struct edge {
    const char *label;
    size_t sizes[10];
    size_t nparts;
    int rc;    /* expected result */
    bool fast; /* whether the fast path takes it */
} edge;

#define E1(dims, w) "{\"dtype\":\"f\",\"word\":" #w ",\"shape\":[" dims "]}"

static void test_edges(void **state) {
    (void)state;
    static const edge cases[] = {
        /* plain */
        {"{\"TENS\":{\"tensors\":[" E1("2,3", 4) "]}}", {24}, 1, TIO_OK, true},
        {" { \"TENS\" : {\t\"tensors\"\n: [ " E1("", 4) " ] } }\r\n", {4}, 1, TIO_OK, true},
        {"{\"TENS\":{\"tensors\":[{\"part\":0,\"shape\":[0],\"word\":8,\"dtype\":\"f\"}]}}",
         {0}, 1, TIO_OK, true},
        /* parts swapped, and a payload part no tensor uses */
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"i\",\"word\":1,\"shape\":[3],\"part\":1},"
         "{\"dtype\":\"u\",\"word\":2,\"shape\":[2],\"part\":0}]}}",
         {4, 3, 9}, 3, TIO_OK, true},
        /* a name (metadata.name alone, printable ASCII without escapes) */
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"metadata\":{\"name\":\"w.b 1\"},"
         "\"part\":0,\"shape\":[1],\"word\":4}]}}",
         {4}, 1, TIO_OK, true},
        {"{\"TENS\":{\"tensors\":[{\"metadata\" : { \"name\" : \"w\" } ,\"dtype\":\"f\","
         "\"word\":4,\"shape\":[1]}]}}",
         {4}, 1, TIO_OK, true},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"metadata\":{\"name\":\"\"},"
         "\"shape\":[1],\"word\":4}]}}",
         {4}, 1, TIO_OK, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"metadata\":{\"name\":\"a\\\"b\"},"
         "\"shape\":[1],\"word\":4}]}}",
         {4}, 1, TIO_OK, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"metadata\":{\"name\":\"w\xc3\xa9\"},"
         "\"shape\":[1],\"word\":4}]}}",
         {4}, 1, TIO_OK, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"metadata\":{\"name\":\"w\",\"k\":1},"
         "\"shape\":[1],\"word\":4}]}}",
         {4}, 1, TIO_OK, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"metadata\":{\"name\":7},"
         "\"shape\":[1],\"word\":4}]}}",
         {4}, 1, TIO_OK, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"metadata\":{},"
         "\"shape\":[1],\"word\":4}]}}",
         {4}, 1, TIO_OK, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"metadata\":{\"name\":\"a\"},"
         "\"metadata\":{\"name\":\"b\"},\"shape\":[1],\"word\":4}]}}",
         {4}, 1, TIO_E_CORRUPT, false},
        /* 18 digits is the most the fast path reads; 19 goes to jansson */
        {"{\"TENS\":{\"tensors\":[" E1("999999999999999999,0", 4) "]}}", {0}, 1, TIO_OK, true},
        {"{\"TENS\":{\"tensors\":[" E1("1000000000000000000,0", 4) "]}}", {0}, 1, TIO_OK,
         false},
        {"{\"TENS\":{\"tensors\":[" E1("99999999999999999999,0", 4) "]}}", {0}, 1,
         TIO_E_UNSUPPORTED, false},
        /* numbers jansson reads otherwise */
        {"{\"TENS\":{\"tensors\":[" E1("02", 4) "]}}", {8}, 1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[" E1("2.0", 4) "]}}", {8}, 1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[" E1("2e0", 4) "]}}", {8}, 1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[" E1("-2", 4) "]}}", {8}, 1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[" E1("-0", 4) "]}}", {0}, 1, TIO_OK, false},
        /* escapes and odd bytes in strings: the general path decides */
        {"{\"TENS\":{\"tensors\":[{\"d\\u0074ype\":\"f\",\"word\":4,\"shape\":[1]}]}}", {4}, 1,
         TIO_OK, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"\\u0066\",\"word\":4,\"shape\":[1]}]}}", {4}, 1,
         TIO_OK, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\xc3\xa9\",\"word\":4,\"shape\":[1]}]}}", {4}, 1,
         TIO_E_DTYPE, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"\xff\",\"word\":4,\"shape\":[1]}]}}", {4}, 1,
         TIO_E_CORRUPT, false},
        /* duplicate keys are an error, not the first or last one wins */
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"dtype\":\"i\",\"word\":4,\"shape\":[1]}]}}",
         {4}, 1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"word\":4,\"shape\":[1],\"shape\":[1]}]}}",
         {4}, 1, TIO_E_CORRUPT, false},
        /* missing keys, other keys */
        {"{\"TENS\":{\"tensors\":[{\"word\":4,\"shape\":[1]}]}}", {4}, 1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"shape\":[1]}]}}", {4}, 1, TIO_E_CORRUPT,
         false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"word\":4}]}}", {4}, 1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"word\":4,\"shape\":[1],\"x\":1}]}}", {4}, 1,
         TIO_OK, false},
        {"{\"TENS\":{\"tensors\":[" E1("1", 4) "],\"metadata\":{\"a\":\"b\"}}}", {4}, 1, TIO_OK,
         false},
        {"{\"TENS\":{\"tensors\":[" E1("1", 4) "]},\"x\":null}", {4}, 1, TIO_OK, false},
        {"{\"TENS\":{\"tensors\":[]}}", {0}, 0, TIO_OK, false},
        /* unknown kinds, wrong sizes, bad parts */
        {"{\"TENS\":{\"tensors\":[" E1("1", 3) "]}}", {3}, 1, TIO_E_DTYPE, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"q\",\"word\":4,\"shape\":[1]}]}}", {4}, 1,
         TIO_E_DTYPE, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"ff\",\"word\":4,\"shape\":[1]}]}}", {4}, 1,
         TIO_E_DTYPE, false},
        {"{\"TENS\":{\"tensors\":[" E1("2", 4) "]}}", {7}, 1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[" E1("2", 4) "]}}", {0}, 0, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"word\":4,\"shape\":[1],\"part\":1}]}}", {4},
         1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"word\":4,\"shape\":[1],\"part\":0},"
         "{\"dtype\":\"f\",\"word\":4,\"shape\":[1],\"part\":0}]}}",
         {4, 4}, 2, TIO_E_CORRUPT, false},
        /* shapes whose size overflows */
        {"{\"TENS\":{\"tensors\":[" E1("999999999999999999,999999999999999999", 4) "]}}", {4},
         1, TIO_E_OVERFLOW, false},
        {"{\"TENS\":{\"tensors\":[" E1("4611686018427387904", 4) "]}}", {4}, 1, TIO_E_OVERFLOW,
         false},
        /* broken syntax */
        {"{\"TENS\":{\"tensors\":[" E1("1", 4) "]}}x", {4}, 1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[" E1("1", 4) "]}", {4}, 1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[" E1("1", 4) ",]}}", {4}, 1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[" E1("1,", 4) "]}}", {4}, 1, TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\" \"word\":4,\"shape\":[1]}]}}", {4}, 1,
         TIO_E_CORRUPT, false},
        {"{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"word\":4,\"shape\":[1]}]}} \x01", {4}, 1,
         TIO_E_CORRUPT, false},
    };
    size_t bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const edge *ec = &cases[i];
        msg m = {0};
        make(&m, ec->label, ec->sizes, ec->nparts);
        int rc;
        bool fast = check_same(&m, &rc);
        if (rc != ec->rc || fast != ec->fast) {
            fprintf(stderr, "case %zu (%s): %s, fast %d; expected %s, fast %d\n", i,
                    ec->label, tio_status_name(rc), fast, tio_status_name(ec->rc), ec->fast);
            bad++;
        }
        msg_free(&m);
    }
    assert_int_equal(bad, 0);
}

/* Tensors of rank up to 8 take the fast path, however many (the entries
 * move from the stack to the heap past 8, and grow); rank 9 goes to the
 * general one, with the same result. */
static void test_fast_bounds(void **state) {
    (void)state;
    static const size_t counts[] = {1, 2, 7, 8, 9, 16, 17, 1000}; /* + 2 header parts */
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        size_t nt = counts[c];
        for (size_t rank = 0; rank <= 9; rank += (rank == 1 ? 6 : 1)) {
            char *label = malloc(64 + nt * 64);
            size_t *sizes = malloc(nt * sizeof *sizes);
            assert_non_null(label);
            assert_non_null(sizes);
            strcpy(label, "{\"TENS\":{\"tensors\":[");
            for (size_t i = 0; i < nt; i++) {
                char e[256] = "{\"dtype\":\"u\",\"word\":1,\"shape\":[";
                for (size_t d = 0; d < rank; d++) strcat(e, d ? ",1" : "2");
                strcat(e, i + 1 < nt ? "]}," : "]}");
                strcat(label, e);
                sizes[i] = rank ? 2 : 1;
            }
            strcat(label, "]}}");
            msg m = {0};
            make(&m, label, sizes, nt);
            int rc;
            bool fast = check_same(&m, &rc);
            assert_int_equal(rc, TIO_OK);
            assert_int_equal(fast, rank <= 8);
            msg_free(&m);
            free(label);
            free(sizes);
        }
    }
}

/* The limits apply to the fast path as to the general one. */
static void test_fast_limits(void **state) {
    (void)state;
    msg m = {0};
    static const size_t sizes[] = {24, 24};
    make(&m,
         "{\"TENS\":{\"tensors\":[" E1("2,3", 4) ",{\"dtype\":\"i\",\"word\":4,\"shape\":[6]}]}}",
         sizes, 2);
    struct {
        tio_limits lim;
        int rc;
    } cases[] = {
        {{.max_tensors = 0}, TIO_OK},
        {{.max_tensors = 1}, TIO_E_LIMIT},
        {{.max_rank = 1}, TIO_E_LIMIT},
        {{.max_header_bytes = 40}, TIO_E_LIMIT},
        {{.max_depth = 3}, TIO_E_LIMIT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int k = 0; k < 2; k++) {
            tio_open_options oo = {.format = "zio", .flags = k ? TIO__OPEN_GENERAL_ONLY : 0, .limits = &cases[i].lim};
            tio_container *c = NULL;
            tio_error e, e2;
            int rc = tio_open_parts(m.parts, m.n, &oo, &c, &e);
            if (rc != cases[i].rc) {
                fprintf(stderr, "limits case %zu, general %d: %s: %s\n", i, k,
                        tio_status_name(rc), rc ? e.message : "");
                fail();
            }
            tio_container_free(c);
            if (k == 0 && rc) {
                oo.flags = TIO__OPEN_GENERAL_ONLY;
                assert_int_equal(tio_open_parts(m.parts, m.n, &oo, &c, &e2), rc);
                assert_string_equal(e.message, e2.message);
            }
        }
    }
    msg_free(&m);
}

/* A name over max_name_bytes: the fast path leaves it to the general one,
 * which refuses it the same way. */
static void test_fast_name_limit(void **state) {
    (void)state;
    msg m = {0};
    static const size_t sizes[] = {4};
    make(&m,
         "{\"TENS\":{\"tensors\":[{\"dtype\":\"f\",\"metadata\":{\"name\":\"named\"},"
         "\"part\":0,\"shape\":[1],\"word\":4}]}}",
         sizes, 1);
    for (uint32_t lim = 4; lim <= 5; lim++) {
        tio_limits l = {.max_name_bytes = lim};
        int want = lim < 5 ? TIO_E_LIMIT : TIO_OK;
        for (int k = 0; k < 2; k++) {
            tio_open_options oo = {.format = "zio", .flags = k ? TIO__OPEN_GENERAL_ONLY : 0, .limits = &l};
            tio_container *c = NULL;
            tio_error e;
            assert_int_equal(tio_open_parts(m.parts, m.n, &oo, &c, &e), want);
            if (want == TIO_OK) assert_string_equal(tio_tensor_name(tio_container_tensor(c, 0)),
                                                    "named");
            tio_container_free(c);
        }
    }
    msg_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_fast_bounds),
        cmocka_unit_test(test_fast_limits),
        cmocka_unit_test(test_fast_name_limit),
        cmocka_unit_test(test_differential_read),
        cmocka_unit_test(test_differential_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
