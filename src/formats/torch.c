/*
 * PyTorch checkpoints, read without running them (docs/formats/torch.md):
 *  - the zip layout of torch.save >= 1.6: <prefix>/data.pkl (the pickled
 *    object), <prefix>/data/<key> (one record per storage, stored and
 *    aligned), <prefix>/byteorder ("little" or "big"), <prefix>/version;
 *  - TorchScript archives (torch.jit.save): the same records plus code/,
 *    constants.pkl; the modules' parameters and buffers are read from
 *    data.pkl, the code is never read;
 *  - the legacy layout of torch < 1.6: the pickles of the magic number, the
 *    protocol version and the sys info, the pickled object, the list of
 *    storage keys, then each storage (an int64 element count, its bytes).
 * The zip structure is src/zip's, the pickles are run by src/pickle's
 * machine (nothing is imported or called); this file walks the object the
 * pickle built: tensors (torch._utils._rebuild_tensor*) become tensors named
 * by their path in the object ("optimizer.state.0.exp_avg"), other leaves
 * container metadata, and every global outside the vocabulary a finding.
 */
#include "core/object.h"
#include "formats/torch_objects.h"
#include "formats/torch_write.h"
#include "pickle/pickle.h"
#include "zip/zip.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TH "torch"
#define TH_MAX_RANK 64u /* dims of a tensor here (torch's own limit is 64 too) */
#define TH_LEGACY_MAGIC_LEN 10
static const uint8_t th_legacy_magic[TH_LEGACY_MAGIC_LEN] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                                             0x20, 0x6a, 0xa8, 0x50, 0x19};

static int64_t th_off(uint64_t v) { return tio__zip_off(v); }

static int th_ends(const uint8_t *s, size_t n, const char *suffix) {
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* ------------------------------------------------------------ an index */

/* Open addressing over (hash, index + 1) pairs: the zip members by name, the
 * storages by key, the names given so far. The caller compares the entries
 * whose hash matches (its low 32 bits: 8-byte slots keep a large index in
 * cache). Grows at half full, so every lookup is O(1) expected and the
 * reader stays linear in its input. */
typedef struct th_slot {
    uint32_t h;
    uint32_t idx; /* index + 1; 0 = empty */
} th_slot;
typedef struct th_index {
    th_slot *slot;
    size_t cap, n;
} th_index;

/* The indexes' hash of a name: 8 bytes a step, the same however the name
 * is split among th_hash_add calls (a member's name is looked up in three
 * pieces), keyed by a seed per open so that names chosen to collide cannot
 * be prepared in advance. */
typedef struct th_hash {
    uint64_t h, tail, len;
} th_hash;

static void th_hash_word(th_hash *x, uint64_t w) {
    x->h = (x->h ^ w) * 0x9fb21c651e98df25u;
    x->h ^= x->h >> 28;
}

static void th_hash_add(th_hash *x, const void *p, size_t n) {
    const uint8_t *b = p;
    unsigned have = (unsigned)(x->len & 7);
    x->len += n;
    while (have && n) { /* finish the word a previous piece began */
        x->tail |= (uint64_t)*b++ << (8 * have);
        n--;
        if (++have == 8) {
            th_hash_word(x, x->tail);
            x->tail = 0;
            have = 0;
        }
    }
    for (; n >= 8; b += 8, n -= 8) th_hash_word(x, tio__ld64(b));
    for (unsigned k = 0; k < n; k++) x->tail |= (uint64_t)b[k] << (8 * (have + k));
}

static uint64_t th_hash_end(th_hash *x) {
    uint64_t h = x->h ^ x->tail ^ (x->len * 0xff51afd7ed558ccdu);
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53u;
    return h ^ (h >> 33);
}

static uint64_t th_hash_of(uint64_t seed, const void *p, size_t n) {
    th_hash x = {seed, 0, 0};
    th_hash_add(&x, p, n);
    return th_hash_end(&x);
}

/* The first entry of hash h for which eq(ctx, index) holds, or SIZE_MAX. */
static size_t th_find(const th_index *x, uint64_t h, int (*eq)(const void *ctx, size_t i),
                      const void *ctx) {
    if (!x->cap) return SIZE_MAX;
    uint32_t h32 = (uint32_t)h;
    for (size_t k = h32 & (x->cap - 1); x->slot[k].idx; k = (k + 1) & (x->cap - 1))
        if (x->slot[k].h == h32 && eq(ctx, x->slot[k].idx - 1)) return x->slot[k].idx - 1;
    return SIZE_MAX;
}

static int th_insert(th_index *x, uint64_t h, size_t i) {
    if (i >= UINT32_MAX - 1 || x->cap > UINT32_MAX) return TIO_E_NOMEM; /* past any limit */
    if (2 * (x->n + 1) > x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 64;
        th_slot *s = calloc(cap, sizeof *s);
        if (!s) return TIO_E_NOMEM;
        for (size_t k = 0; k < x->cap; k++) {
            if (!x->slot[k].idx) continue;
            size_t j = (size_t)x->slot[k].h & (cap - 1);
            while (s[j].idx) j = (j + 1) & (cap - 1);
            s[j] = x->slot[k];
        }
        free(x->slot);
        x->slot = s;
        x->cap = cap;
    }
    size_t j = (uint32_t)h & (x->cap - 1);
    while (x->slot[j].idx) j = (j + 1) & (x->cap - 1);
    x->slot[j].h = (uint32_t)h;
    x->slot[j].idx = (uint32_t)(i + 1);
    x->n++;
    return TIO_OK;
}

static int th_probe(const uint8_t *data, size_t size) {
    if (!data || size < 4) return 0;
    /* legacy: PROTO 2, LONG1 of 10 bytes: 0x1950a86a20f9469cfc6c */
    if (size >= 14 && data[0] == 0x80 && data[1] == 2 && data[2] == 0x8a && data[3] == 10 &&
        memcmp(data + 4, th_legacy_magic, TH_LEGACY_MAGIC_LEN) == 0)
        return 100;
    if (tio__ld32(data) != TIO_ZIP_LOCAL || size < TIO_ZIP_LOCAL_SIZE) return 0;
    size_t nl = tio__ld16(data + 26);
    if (size < TIO_ZIP_LOCAL_SIZE + nl) return 0;
    const uint8_t *name = data + TIO_ZIP_LOCAL_SIZE;
    const uint8_t *slash = memchr(name, '/', nl);
    if (th_ends(name, nl, "/data.pkl") || (nl == 8 && memcmp(name, "data.pkl", 8) == 0))
        return 95;
    /* TorchScript writes its data/ records first */
    if (slash && (size_t)(slash - name) + 6 <= nl && memcmp(slash, "/data/", 6) == 0) return 70;
    return 0;
}

/* ------------------------------------------------------------- storages */

typedef struct th_storage {
    const uint8_t *key;  /* the persistent id's key (a view into the pickle) */
    size_t key_len;
    tio_dtype dtype;
    const uint8_t *data; /* its bytes */
    uint64_t nbytes;
    uint64_t at;         /* source offset of its bytes, or of its record when owned */
    uint8_t *owned;      /* inflated or byte-swapped bytes (until a tensor takes them) */
    size_t tensors;      /* tensors viewing it (tied weights: more than one) */
    size_t first;        /* the first of them (container index) */
} th_storage;

typedef struct th_reader {
    tio_read_ctx *ctx;
    tio_error *err;
    tio_zip zip;
    int is_zip, big_endian, script;
    const char *prefix; /* the archive's directory, e.g. "archive" (not NUL-ended) */
    size_t prefix_len;
    const char *pkl_name; /* "data.pkl" … for messages */
    uint64_t pkl_base;    /* source offset of the pickle's first byte (0: inflated) */
    const uint8_t *pk_data; /* the pickle's first byte */
    tio_pickle pk;
    uint8_t *pk_owned;   /* its bytes when inflated (th_machine), else NULL */
    struct tio_pk_later *later; /* the container's tree to be (th_tree) */
    tio_zip_locals *locals; /* the thread reading local headers (th_early), or NULL */
    uint8_t *seen;       /* per object: a container already walked */
    int64_t *tensor_of;  /* per object: the tensor it was read as (container index), or -1 */
    th_storage *st;
    size_t nst, capst;
    uint64_t dense;      /* bytes copied for strided views and swaps (max_dense_bytes) */
    const char *storage_dir; /* "data/", or "constants/" (TorchScript's constants.pkl) */
    th_index members;    /* zip members by name */
    th_index keys;       /* storages by key */
    uint32_t *key_at;    /* storages by decimal key, index + 1 (th_dec) */
    uint32_t *member_at; /* <prefix>/<member_dir><decimal key> records, index + 1 */
    const char *member_dir; /* the storage_dir member_at is filled for, or NULL */
    th_index names;      /* the tensor and metadata names given (tio_container's) */
    char scratch[256], gscratch[200]; /* th_walk's leaf text */
    const char **given;  /* the names given (r->names indexes them) */
    size_t ngiven, given_cap;
    uint64_t seed;          /* the indexes' hash key (th_hash) */
    const char *probe_s[3]; /* a lookup's pieces (th_member) */
    size_t probe_n[3];
    char *name;          /* the path being walked */
    size_t name_len, name_cap;
    size_t name_depth; /* keys walked into: 0 = the root (unnamed); "" is a name */
} th_reader;

static void th_free_storages(th_reader *r) {
    for (size_t i = 0; i < r->nst; i++) free(r->st[i].owned);
    free(r->st);
    r->st = NULL;
    r->nst = r->capst = 0;
}

static int th_member_eq(const void *ctx, size_t i) {
    const th_reader *r = ctx;
    const tio_zip_member *m = &r->zip.m[i];
    size_t at = 0;
    for (int k = 0; k < 3; k++) {
        if (!r->probe_n[k]) continue;
        if (r->probe_n[k] > m->name_len - at ||
            memcmp(m->name + at, r->probe_s[k], r->probe_n[k]) != 0)
            return 0;
        at += r->probe_n[k];
    }
    return at == m->name_len;
}

/* torch.save names storages "0", "1", … in order of first use and stores
 * each as <prefix>/data/<key>. A key written so (decimal, without a leading
 * zero) and below the number of records indexes arrays, r->key_at and
 * r->member_at, read in nearly the order they were filled; the hashes serve
 * every other key. Either way a key has one place to be found. SIZE_MAX:
 * not such a key. */
static size_t th_dec(const th_reader *r, const uint8_t *s, size_t n) {
    if (!r->key_at || !n || n > 10 || (n > 1 && s[0] == '0')) return SIZE_MAX;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return SIZE_MAX;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    return v < r->zip.n ? (size_t)v : SIZE_MAX;
}

/* Fills r->member_at for r->storage_dir: one pass over the records. */
static void th_member_at(th_reader *r) {
    size_t pl = r->prefix_len ? r->prefix_len + 1 : 0, dl = strlen(r->storage_dir);
    memset(r->member_at, 0, r->zip.n * sizeof *r->member_at);
    for (size_t i = 0; i < r->zip.n; i++) {
        const tio_zip_member *m = &r->zip.m[i];
        if (m->name_len <= pl + dl || memcmp(m->name, r->prefix, pl) != 0 ||
            memcmp(m->name + pl, r->storage_dir, dl) != 0)
            continue;
        size_t d = th_dec(r, m->name + pl + dl, m->name_len - pl - dl);
        if (d != SIZE_MAX && !r->member_at[d]) r->member_at[d] = (uint32_t)(i + 1);
    }
    r->member_dir = r->storage_dir;
}

/* The zip member named prefix + "/" + rest + rest2 (rest2_len bytes), or
 * SIZE_MAX. */
static size_t th_member(th_reader *r, const char *rest, const uint8_t *rest2, size_t rest2_len) {
    size_t d = rest2 && r->storage_dir && strcmp(rest, r->storage_dir) == 0
                   ? th_dec(r, rest2, rest2_len)
                   : SIZE_MAX;
    if (d != SIZE_MAX) {
        if (r->member_dir != r->storage_dir) th_member_at(r);
        return r->member_at[d] ? r->member_at[d] - 1 : SIZE_MAX;
    }
    r->probe_s[0] = r->prefix;
    r->probe_n[0] = r->prefix_len ? r->prefix_len + 1 : 0; /* with its '/' */
    r->probe_s[1] = rest;
    r->probe_n[1] = strlen(rest);
    r->probe_s[2] = (const char *)rest2;
    r->probe_n[2] = rest2_len;
    th_hash x = {r->seed, 0, 0};
    for (int k = 0; k < 3; k++) th_hash_add(&x, r->probe_s[k], r->probe_n[k]);
    uint64_t h = th_hash_end(&x);
    return th_find(&r->members, h, th_member_eq, r);
}

/* Sizes an empty index for n entries at once (at most half full, as
 * th_insert keeps it), so that it is not rehashed as it fills. */
static int th_index_reserve(th_index *x, size_t n) {
    size_t cap = 64;
    while (cap / 2 < n + 1 && cap < SIZE_MAX / 4 / sizeof *x->slot) cap *= 2;
    if (x->cap || cap <= 64) return TIO_OK;
    x->slot = calloc(cap, sizeof *x->slot);
    if (!x->slot) return TIO_E_NOMEM;
    x->cap = cap;
    return TIO_OK;
}

static int th_index_members(th_reader *r) {
    /* a record per storage, a storage per tensor or so: the other two too */
    if (th_index_reserve(&r->members, r->zip.n) || th_index_reserve(&r->keys, r->zip.n) ||
        th_index_reserve(&r->names, r->zip.n))
        return tio__nomem(r->err, TH);
    if (r->zip.n && r->zip.n < UINT32_MAX) {
        r->key_at = calloc(r->zip.n, sizeof *r->key_at);
        r->member_at = calloc(r->zip.n, sizeof *r->member_at);
        if (!r->key_at || !r->member_at) return tio__nomem(r->err, TH);
    }
    for (size_t i = 0; i < r->zip.n; i++)
        if (th_insert(&r->members, th_hash_of(r->seed, r->zip.m[i].name, r->zip.m[i].name_len), i))
            return tio__nomem(r->err, TH);
    return TIO_OK;
}

/* A member's bytes: a view when stored, else inflated (*owned set). */
static int th_bytes_of(th_reader *r, const tio_zip_member *m, const uint8_t **data, uint64_t *n,
                       uint8_t **owned) {
    char nm[80];
    *owned = NULL;
    if (m->method == TIO_ZIP_STORED) {
        if (m->csize != m->usize && (tio__zip_name(m, nm, sizeof nm), 1))
            return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(m->central + 20),
                            "record '%s' is stored, but its sizes differ: %" PRIu64
                            " compressed, %" PRIu64 " uncompressed",
                            nm, m->csize, m->usize);
        *data = r->ctx->data + m->data_at;
        *n = m->usize;
        return TIO_OK;
    }
    tio__zip_name(m, nm, sizeof nm);
    int rc = tio__zip_inflate(&r->zip, m, nm, owned);
    if (rc) return rc;
    *data = *owned;
    *n = m->usize;
    return TIO_OK;
}

/* Record i's bytes; *at (if given) gets their offset. While the locals'
 * thread runs, through its copy of the record (tio__zip_locals_member). */
static int th_member_bytes(th_reader *r, size_t i, const uint8_t **data, uint64_t *n,
                           uint8_t **owned, uint64_t *at) {
    tio_zip_member m;
    *owned = NULL;
    int rc = tio__zip_locals_member(&r->zip, r->locals, i, &m);
    if (!rc && at) *at = m.data_at;
    return rc ? rc : th_bytes_of(r, &m, data, n, owned);
}

static size_t th_dtype_size(tio_dtype d) { return tio_dtype_size(d); }

/* Copies a storage's bytes for a byte swap, within max_dense_bytes. */
static int th_own(th_reader *r, th_storage *s, uint64_t at) {
    uint64_t total = 0;
    if (tio__add64_ovf(r->dense, s->nbytes, &total) || total > r->ctx->limits.max_dense_bytes)
        return tio__err(r->err, TIO_E_LIMIT, TH, th_off(at),
                        "byte-swapping a storage of %" PRIu64 " bytes (%" PRIu64
                        " in all) exceeds max_dense_bytes %" PRIu64 " (--max-dense-bytes)",
                        s->nbytes, total, r->ctx->limits.max_dense_bytes);
    uint8_t *p = malloc(s->nbytes ? (size_t)s->nbytes : 1);
    if (!p) return tio__nomem(r->err, TH);
    memcpy(p, s->data, (size_t)s->nbytes);
    free(s->owned);
    s->owned = p;
    s->data = p;
    r->dense = total;
    return TIO_OK;
}

static int th_str_eq(const tio_pk_obj *o, const char *s) {
    return o && o->kind == TIO_PK_STR && o->n == strlen(s) && memcmp(o->u.s, s, o->n) == 0;
}

static int th_key_eq(const void *ctx, size_t i) {
    const th_reader *r = ctx;
    return r->st[i].key_len == r->probe_n[0] && memcmp(r->st[i].key, r->probe_s[0], r->probe_n[0]) == 0;
}

/* The storage of that key, or SIZE_MAX; *h gets the key's hash. */
static size_t th_key_find(th_reader *r, const uint8_t *k, size_t n, uint64_t *h) {
    size_t d = th_dec(r, k, n);
    if (d != SIZE_MAX) {
        *h = 0;
        return r->key_at[d] ? r->key_at[d] - 1 : SIZE_MAX;
    }
    r->probe_s[0] = (const char *)k;
    r->probe_n[0] = n;
    *h = th_hash_of(r->seed, k, n);
    return th_find(&r->keys, *h, th_key_eq, r);
}

/* Records storage i under key k (hash h from th_key_find). */
static int th_key_add(th_reader *r, const uint8_t *k, size_t n, uint64_t h, size_t i) {
    size_t d = th_dec(r, k, n);
    if (d != SIZE_MAX) {
        r->key_at[d] = (uint32_t)(i + 1); /* i < the records, below UINT32_MAX */
        return TIO_OK;
    }
    return th_insert(&r->keys, h, i) ? tio__nomem(r->err, TH) : TIO_OK;
}

/* The legacy layout's storages are found before the walk (th_legacy); the
 * zip layout's on first use here. */
static int th_storage_zip(th_reader *r, const tio_pk_obj *key, tio_dtype dtype, uint64_t at,
                          th_storage **out) {
    uint64_t kh = 0;
    size_t found = th_key_find(r, key->u.s, key->n, &kh);
    if (found != SIZE_MAX) {
        if (r->st[found].dtype != dtype) {
            char k[64];
            tio__escape(key->u.s, key->n, k, sizeof k);
            return tio__err(r->err, TIO_E_UNSUPPORTED, TH, th_off(at),
                            "storage '%s' is viewed as %s and as %s (tensors of different "
                            "dtypes over one storage)",
                            k, tio_dtype_name(r->st[found].dtype), tio_dtype_name(dtype));
        }
        *out = &r->st[found];
        return TIO_OK;
    }
    if (!r->is_zip) {
        char k[64];
        tio__escape(key->u.s, key->n, k, sizeof k);
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "storage '%s' is not among the storages after the pickle", k);
    }
    size_t mi = th_member(r, r->storage_dir, key->u.s, key->n);
    if (mi == SIZE_MAX) {
        char k[64];
        tio__escape(key->u.s, key->n, k, sizeof k);
        return tio__err(r->err, TIO_E_NOT_FOUND, TH, th_off(at),
                        "storage '%s': the archive has no record %s%s", k, r->storage_dir, k);
    }
    if (r->nst == r->capst) {
        size_t cap = r->capst ? 2 * r->capst : 16;
        th_storage *s = realloc(r->st, cap * sizeof *s);
        if (!s) return tio__nomem(r->err, TH);
        r->st = s;
        r->capst = cap;
    }
    th_storage *s = &r->st[r->nst];
    memset(s, 0, sizeof *s);
    s->key = key->u.s;
    s->key_len = key->n;
    s->dtype = dtype;
    int rc = th_member_bytes(r, mi, &s->data, &s->nbytes, &s->owned, &s->at);
    if (rc) return rc;
    if ((rc = th_key_add(r, key->u.s, key->n, kh, r->nst))) return rc;
    r->nst++;
    size_t es = th_dtype_size(dtype);
    if (r->big_endian && es > 1) {
        if (!s->owned) rc = th_own(r, s, s->at);
        if (rc) return rc;
        tio__swap_units(s->owned, (size_t)s->nbytes, tio__dtype_swap_unit(dtype));
    }
    *out = s;
    return TIO_OK;
}

/* ------------------------------------------------------------- the walk */

static int th_name_push(th_reader *r, const char *s, size_t n, size_t *mark, uint64_t at) {
    *mark = r->name_len;
    r->name_depth++; /* th_name_pop undoes it, pushed or not */
    size_t need = r->name_len + (r->name_len ? 1 : 0) + n + 1;
    if (need - 1 > r->ctx->limits.max_name_bytes)
        return tio__err(r->err, TIO_E_LIMIT, TH, th_off(at),
                        "a name of %zu bytes, above the limit (max_name_bytes %" PRIu32 ")",
                        need - 1, r->ctx->limits.max_name_bytes);
    if (need > r->name_cap) {
        size_t cap = r->name_cap ? r->name_cap : 64;
        while (cap < need) cap *= 2;
        char *p = realloc(r->name, cap);
        if (!p) return tio__nomem(r->err, TH);
        r->name = p;
        r->name_cap = cap;
    }
    if (r->name_len) r->name[r->name_len++] = '.';
    memcpy(r->name + r->name_len, s, n);
    r->name_len += n;
    r->name[r->name_len] = 0;
    return TIO_OK;
}

static void th_name_pop(th_reader *r, size_t mark) {
    r->name_len = mark;
    r->name_depth--;
    if (r->name) r->name[mark] = 0;
}

static const char *th_gname(const tio_pk_obj *g, char *out, size_t cap) {
    char m[96], n[96];
    tio__escape(g->u.g.mod, g->u.g.mod_len, m, sizeof m);
    tio__escape(g->u.g.name, g->u.g.name_len, n, sizeof n);
    snprintf(out, cap, "%s.%s", m, n);
    return out;
}

static int th_name_eq(const void *ctx, size_t i) {
    const th_reader *r = ctx;
    return strcmp(r->given[i], r->probe_s[0]) == 0;
}

/* Whether `name` was given to a tensor or a metadata key already (a dict key
 * repeated, or "a.b" beside {"a": {"b": …}}): a finding, and the later one is
 * dropped. *h gets the name's hash for th_name_add. */
static int th_name_taken(th_reader *r, const char *name, uint64_t *h, int *taken, uint64_t at) {
    r->probe_s[0] = name;
    *h = th_hash_of(r->seed, name, strlen(name));
    *taken = th_find(&r->names, *h, th_name_eq, r) != SIZE_MAX;
    if (!*taken) return TIO_OK;
    char e[80];
    tio__escape((const uint8_t *)name, strlen(name), e, sizeof e);
    return tio__warn(r->ctx, TH, th_off(at), r->err,
                     "the name '%s' is given twice (a repeated key, or a key holding '.' beside "
                     "a nested one): the later value is dropped",
                     e);
}

/* Records a name the container now holds (stable: its own copy). */
static int th_name_add(th_reader *r, const char *stored, uint64_t h) {
    if (r->ngiven == r->given_cap) {
        size_t cap = r->given_cap ? 2 * r->given_cap : 64;
        const char **g = realloc(r->given, cap * sizeof *g);
        if (!g) return tio__nomem(r->err, TH);
        r->given = g;
        r->given_cap = cap;
    }
    r->given[r->ngiven] = stored;
    if (th_insert(&r->names, h, r->ngiven)) return tio__nomem(r->err, TH);
    r->ngiven++;
    return TIO_OK;
}

/* A non-tensor leaf: container metadata under the name walked (type NULL:
 * a plain string). O(1): keys are unique by th_name_taken. */
static int th_meta_n(th_reader *r, const char *value, size_t len, const char *type,
                     uint64_t at) {
    const char *key = r->name_depth ? r->name : "(root)";
    uint64_t h = 0;
    int taken = 0;
    int rc = th_name_taken(r, key, &h, &taken, at);
    if (rc || taken) return rc;
    tio_container *c = r->ctx->c;
    rc = tio__meta_append_typed_n(c, key, strlen(key), value, len, type ? type : "", r->err);
    return rc ? rc : th_name_add(r, c->meta.keys[c->meta.count - 1], h);
}

static int th_meta(th_reader *r, const char *value, const char *type, uint64_t at) {
    return th_meta_n(r, value, strlen(value), type, at);
}

/* An int64 argument. */
static int th_int(th_reader *r, const tio_pk_obj *o, const char *what, uint64_t at, int64_t *v) {
    if (!o || (o->kind != TIO_PK_INT && o->kind != TIO_PK_BOOL))
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at), "%s is a %s (expected an int)",
                        what, o ? (o->kind == TIO_PK_BIGINT ? "int past int64" : "non-int") : "missing argument");
    *v = o->u.i;
    return TIO_OK;
}

/* The ints of a tuple (size, stride) into out[0..*n). */
static int th_ints(th_reader *r, const tio_pk_obj *o, const char *what, uint64_t at,
                   int64_t *out, size_t *n) {
    const tio_pickle *p = &r->pk;
    if (o && o->kind == TIO_PK_CALL && tio__pk_callee(p, o) &&
        tio__pk_callee(p, o)->id == TIO_PKV_SIZE) /* torch.Size((…)) */
        o = tio__pk_item(p, tio__pk(p, o->u.call.args), 0);
    if (!o || (o->kind != TIO_PK_TUPLE && o->kind != TIO_PK_LIST))
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at), "the tensor's %s is not a tuple",
                        what);
    if (o->n > r->ctx->limits.max_rank || o->n > TH_MAX_RANK)
        return tio__err(r->err, TIO_E_LIMIT, TH, th_off(at),
                        "the tensor's %s has %" PRIu32 " dims, above the limit (max_rank %" PRIu32
                        ", and at most %u here)",
                        what, o->n, r->ctx->limits.max_rank, TH_MAX_RANK);
    for (size_t k = 0; k < o->n; k++) {
        int rc = th_int(r, tio__pk_item(p, o, k), what, at, &out[k]);
        if (rc) return rc;
        if (out[k] < 0)
            return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                            "the tensor's %s has %" PRId64 " in dim %zu (expected >= 0)", what,
                            out[k], k);
    }
    *n = o->n;
    return TIO_OK;
}

/* Copies a strided view C-contiguously into dst. */
static void th_gather(uint8_t *dst, const uint8_t *base, const int64_t *size,
                      const int64_t *stride, size_t rank, size_t es, uint64_t numel,
                      int64_t *idx) {
    for (size_t k = 0; k < rank; k++) idx[k] = 0;
    uint64_t off = 0; /* elements from base */
    for (uint64_t i = 0; i < numel; i++) {
        memcpy(dst + i * es, base + off * es, es);
        for (size_t k = rank; k-- > 0;) {
            if (++idx[k] < size[k]) {
                off += (uint64_t)stride[k];
                break;
            }
            off -= (uint64_t)stride[k] * (uint64_t)(size[k] - 1);
            idx[k] = 0;
        }
    }
}

/* The storage of a persistent id ('storage', type, key, location, numel
 * [, view_metadata]). */
static int th_persid(th_reader *r, const tio_pk_obj *o, tio_dtype v3_dtype, uint64_t at,
                     th_storage **st, uint64_t *view_off, int *quant) {
    const tio_pickle *p = &r->pk;
    *view_off = 0;
    if (!o || o->kind != TIO_PK_PERSID)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "the tensor's storage is not a persistent id (BINPERSID)");
    const tio_pk_obj *pid = tio__pk(p, o->u.call.args);
    if (!pid || pid->kind != TIO_PK_TUPLE || pid->n < 5 || !th_str_eq(tio__pk_item(p, pid, 0), "storage"))
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(o->off),
                        "a persistent id that is not ('storage', type, key, location, numel)");
    const tio_pk_obj *type = tio__pk_item(p, pid, 1), *key = tio__pk_item(p, pid, 2);
    const tio_pk_vocab_entry *e = type && type->kind == TIO_PK_GLOBAL ? tio__pk_vocab_at(type->vocab) : NULL;
    char gn[200];
    if (!e || (e->id != TIO_PKV_STORAGE && e->id != TIO_PKV_UNTYPED_STORAGE &&
               e->id != TIO_PKV_QSTORAGE))
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(o->off),
                        "the persistent id's storage type is %s (expected a torch storage class)",
                        type && type->kind == TIO_PK_GLOBAL ? th_gname(type, gn, sizeof gn) : "not a global");
    tio_dtype dt = e->id == TIO_PKV_UNTYPED_STORAGE ? v3_dtype : e->dtype;
    *quant = e->id == TIO_PKV_QSTORAGE;
    if (dt == TIO_DTYPE_INVALID)
        return tio__err(r->err, TIO_E_DTYPE, TH, th_off(type->off),
                        "a storage of %s: tensio has no such dtype (yet)",
                        e->id == TIO_PKV_UNTYPED_STORAGE ? "an untyped storage without a dtype"
                                                          : th_gname(type, gn, sizeof gn));
    if (!key || key->kind != TIO_PK_STR)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(o->off),
                        "the persistent id's key is not a str");
    int64_t numel = 0;
    int rc = th_int(r, tio__pk_item(p, pid, 4), "the storage's size", o->off, &numel);
    if (rc) return rc;
    rc = th_storage_zip(r, key, dt, o->off, st);
    if (rc) return rc;
    uint64_t want = 0, es = th_dtype_size(dt);
    if (numel < 0 || tio__mul64_ovf((uint64_t)numel, e->id == TIO_PKV_UNTYPED_STORAGE ? 1 : es, &want))
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(o->off),
                        "storage size %" PRId64 " is negative or overflows", numel);
    char k[64];
    k[0] = 0;
    if ((*st)->nbytes < want || pid->n >= 6) /* named in the messages below */
        tio__escape(key->u.s, key->n, k, sizeof k);
    if ((*st)->nbytes < want)
        return tio__err(r->err, TIO_E_BOUNDS, TH, th_off((*st)->at),
                        "storage '%s' declares %" PRId64 " elements of %s (%" PRIu64
                        " bytes), its record holds %" PRIu64 " bytes",
                        k, numel, tio_dtype_name(dt), want, (*st)->nbytes);
    /* legacy view_metadata: (view_key, offset, size) */
    const tio_pk_obj *vm = pid->n >= 6 ? tio__pk_item(p, pid, 5) : NULL;
    if (vm && vm->kind == TIO_PK_TUPLE && vm->n == 3) {
        int64_t voff = 0, vsize = 0;
        rc = th_int(r, tio__pk_item(p, vm, 1), "a storage view's offset", o->off, &voff);
        if (!rc) rc = th_int(r, tio__pk_item(p, vm, 2), "a storage view's size", o->off, &vsize);
        if (rc) return rc;
        if (voff < 0 || vsize < 0 || (uint64_t)voff > (*st)->nbytes / es ||
            (uint64_t)vsize > (*st)->nbytes / es - (uint64_t)voff)
            return tio__err(r->err, TIO_E_BOUNDS, TH, th_off(o->off),
                            "a view of %" PRId64 " elements at %" PRId64 " of storage '%s' (%" PRIu64 " elements)",
                            vsize, voff, k, (*st)->nbytes / es);
        *view_off = (uint64_t)voff;
    } else if (vm && vm->kind != TIO_PK_NONE) {
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(o->off),
                        "the persistent id's view metadata is not None or (key, offset, size)");
    }
    return TIO_OK;
}

/* Room for one more tensor named as walked: max_tensors, and a name not
 * given yet (*taken: it was, a finding, and the tensor is dropped). */
static int th_room(th_reader *r, uint64_t at, uint64_t *nh, int *taken) {
    *taken = 0;
    if (r->ctx->c->count >= r->ctx->limits.max_tensors)
        return tio__err(r->err, TIO_E_LIMIT, TH, th_off(at),
                        "more than %" PRIu64 " tensors (max_tensors)", r->ctx->limits.max_tensors);
    return r->name_depth ? th_name_taken(r, r->name, nh, taken, at) : TIO_OK;
}

/* Counts nb more bytes copied (strided views, swaps, NumPy arrays) against
 * max_dense_bytes; the message says what for ("what shape how"). */
static int th_budget(th_reader *r, uint64_t nb, uint64_t at, const char *what,
                     const char *shape, const char *how) {
    uint64_t total = 0;
    if (tio__add64_ovf(r->dense, nb, &total) || total > r->ctx->limits.max_dense_bytes)
        return tio__err(r->err, TIO_E_LIMIT, TH, th_off(at),
                        "'%s': %s %s %s needs %" PRIu64 " bytes, above max_dense_bytes %" PRIu64
                        " (--max-dense-bytes)",
                        r->name_depth ? r->name : "(root)", what, shape, how, nb,
                        r->ctx->limits.max_dense_bytes);
    r->dense = total;
    return TIO_OK;
}

/* Appends td, named as walked (th_room said the name is free, its hash nh):
 * its data a view, or `copy`, which the tensor takes (freed on failure). */
static int th_append(th_reader *r, tio_tensor_desc *td, uint8_t *copy, int64_t src_off,
                     uint64_t nh, tio_tensor **out) {
    td->name = r->name_depth ? r->name : NULL;
    int rc = tio__container_add_view(r->ctx->c, td, src_off, TH, r->err);
    if (rc) {
        free(copy);
        return rc;
    }
    tio_tensor *t = r->ctx->c->tensors[r->ctx->c->count - 1];
    t->owned_data = copy;
    *out = t;
    return t->name ? th_name_add(r, t->name, nh) : TIO_OK;
}

/* A metadata leaf under the name walked + "." + `leaf`. */
static int th_meta_leaf(th_reader *r, const char *leaf, const char *value, const char *type,
                        uint64_t at) {
    size_t mark = 0;
    int rc = th_name_push(r, leaf, strlen(leaf), &mark, at);
    if (!rc) rc = th_meta(r, value, type, at);
    th_name_pop(r, mark);
    return rc;
}

static int th_walk_child(th_reader *r, uint32_t kid, const char *s, size_t n, uint64_t at,
                         unsigned depth);

/* A per-channel quantizer's tensor (scales or zero points), walked as NAME.`leaf`: one
 * dim of size[axis] elements. */
static int th_qchannel(th_reader *r, uint32_t obj, const char *leaf, int64_t channels,
                       uint64_t at, unsigned depth) {
    tio_container *c = r->ctx->c;
    size_t before = c->count;
    int rc = th_walk_child(r, obj, leaf, strlen(leaf), at, depth);
    if (rc) return rc;
    const tio_tensor *t = c->count == before + 1 ? c->tensors[before] : NULL;
    if (!t || t->rank != 1 || t->shape[0] != channels)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "quantized tensor '%s': its per-channel %s %s (expected a tensor of "
                        "%" PRId64 " elements, one per channel along the axis)",
                        r->name_depth ? r->name : "(root)", leaf,
                        !t ? "are not a tensor" : "have another shape", channels);
    return TIO_OK;
}

/* A quantized tensor's parameters, beside it: NAME.qscheme, and
 * NAME.q_scale, NAME.q_zero_point (per tensor) or NAME.q_per_channel_axis
 * and the tensors NAME.q_per_channel_scales, NAME.q_per_channel_zero_points
 * (per channel), as torch's accessors name them. */
static int th_quant(th_reader *r, const tio_qparams *q, const int64_t *size, uint64_t at,
                    unsigned depth) {
    char v[64];
    snprintf(v, sizeof v, "torch.%s", q->scheme);
    int rc = th_meta_leaf(r, "qscheme", v, "string", at);
    if (rc) return rc;
    if (!q->per_channel) {
        tio__th_float_text(q->scale, 0, v, sizeof v);
        rc = th_meta_leaf(r, "q_scale", v, "float64", at);
        snprintf(v, sizeof v, "%" PRId64, q->zero_point);
        return rc ? rc : th_meta_leaf(r, "q_zero_point", v, "int64", at);
    }
    snprintf(v, sizeof v, "%" PRId64, q->axis);
    rc = th_meta_leaf(r, "q_per_channel_axis", v, "int64", at);
    if (!rc) rc = th_qchannel(r, q->scales, "q_per_channel_scales", size[q->axis], at, depth);
    if (!rc)
        rc = th_qchannel(r, q->zero_points, "q_per_channel_zero_points", size[q->axis], at, depth);
    return rc;
}

/* A tensor: rebuild function `e` applied to `args`, at walk depth `depth`,
 * `nest` rebuilds deep (a Parameter of a tensor: 1). */
static int th_tensor(th_reader *r, const tio_pk_vocab_entry *e, const tio_pk_obj *args,
                     uint64_t at, unsigned depth, unsigned nest) {
    const tio_pickle *p = &r->pk;
    if (nest > 8) /* a Parameter of a tensor: 1; of a subclass: 2 */
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "tensors rebuilt from tensors nested %u deep", nest);
    if (!args || args->kind != TIO_PK_TUPLE)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at), "%s's arguments are not a tuple",
                        e->name);
    switch (e->id) {
    case TIO_PKV_REBUILD_PARAMETER:
    case TIO_PKV_REBUILD_PARAMETER_STATE: {
        const tio_pk_obj *t = tio__pk_item(p, args, 0);
        const tio_pk_vocab_entry *f = tio__pk_callee(p, t);
        if (!f)
            return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                            "a Parameter whose data are not a tensor");
        return th_tensor(r, f, tio__pk(p, t->u.call.args), t->off, depth, nest + 1);
    }
    case TIO_PKV_REBUILD_FROM_TYPE: { /* (func, type, args, state) */
        const tio_pk_obj *f = tio__pk_item(p, args, 0);
        const tio_pk_vocab_entry *fe = f && f->kind == TIO_PK_GLOBAL ? tio__pk_vocab_at(f->vocab) : NULL;
        if (!fe || fe->id < TIO_PKV_REBUILD_TENSOR || fe->id > TIO_PKV_REBUILD_FROM_TYPE)
            return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                            "_rebuild_from_type_v2 of a function that rebuilds no tensor");
        return th_tensor(r, fe, tio__pk_item(p, args, 2), at, depth, nest + 1);
    }
    default:
        break;
    }
    if (args->n < 4)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "%s with %" PRIu32 " arguments (expected storage, offset, size, stride…)",
                        e->name, args->n);
    tio_dtype v3 = TIO_DTYPE_INVALID;
    if (e->id == TIO_PKV_REBUILD_TENSOR_V3) {
        const tio_pk_obj *d = tio__pk_item(p, args, 6);
        const tio_pk_vocab_entry *de = d && d->kind == TIO_PK_GLOBAL ? tio__pk_vocab_at(d->vocab) : NULL;
        if (!de || de->id != TIO_PKV_DTYPE)
            return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                            "_rebuild_tensor_v3's dtype is not a torch dtype");
        v3 = de->dtype;
    }
    th_storage *st = NULL;
    uint64_t base = 0;
    int quant = 0;
    int rc = th_persid(r, tio__pk_item(p, args, 0), v3, at, &st, &base, &quant);
    if (rc) return rc;
    if (quant != (e->id == TIO_PKV_REBUILD_QTENSOR))
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "'%s': %s over a %s storage",
                        r->name_depth ? r->name : "(root)", e->name,
                        quant ? "quantized" : "non-quantized");
    int64_t off = 0, size[TH_MAX_RANK], stride[TH_MAX_RANK];
    size_t rank = 0, srank = 0;
    rc = th_int(r, tio__pk_item(p, args, 1), "the storage offset", at, &off);
    if (!rc) rc = th_ints(r, tio__pk_item(p, args, 2), "size", at, size, &rank);
    if (!rc) rc = th_ints(r, tio__pk_item(p, args, 3), "stride", at, stride, &srank);
    if (rc) return rc;
    if (srank != rank)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "the tensor has %zu sizes and %zu strides (expected the same)", rank, srank);
    if (off < 0)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(at),
                        "the storage offset is %" PRId64 " (expected >= 0)", off);
    size_t es = th_dtype_size(st->dtype);
    uint64_t numel = 1, last = 0, elems = st->nbytes / es, start = 0;
    int contiguous = 1;
    uint64_t want = 1;
    for (size_t k = rank; k-- > 0;) {
        uint64_t span = 0;
        if (tio__mul64_ovf(numel, (uint64_t)size[k], &numel) ||
            (size[k] && tio__mul64_ovf((uint64_t)size[k] - 1, (uint64_t)stride[k], &span)) ||
            tio__add64_ovf(last, span, &last))
            return tio__err(r->err, TIO_E_OVERFLOW, TH, th_off(at),
                            "size x stride overflows 64 bits");
        if (size[k] != 1 && (uint64_t)stride[k] != want) contiguous = 0;
        if (tio__mul64_ovf(want, (uint64_t)size[k], &want)) want = UINT64_MAX;
    }
    char shape[96];
    if (tio__add64_ovf(base, (uint64_t)off, &start) ||
        (numel && (tio__add64_ovf(start, last, &last) || last >= elems)) || start > elems) {
        char k[64];
        tio__escape(st->key, st->key_len, k, sizeof k);
        tio__shape_str(size, rank, shape, sizeof shape);
        return tio__err(r->err, TIO_E_BOUNDS, TH, th_off(at),
                        "'%s': a view of shape %s at offset %" PRId64 " reaches past its storage "
                        "'%s' of %" PRIu64 " %s elements",
                        r->name_depth ? r->name : "(root)", shape, off, k, elems,
                        tio_dtype_name(st->dtype));
    }
    tio_qparams qp;
    if (quant && (rc = tio__th_qparams(p, tio__pk_item(p, args, 4), rank, TH, r->name, at, &qp,
                                       r->err)))
        return rc;
    tio_container *c = r->ctx->c;
    uint64_t nh = 0;
    int taken = 0;
    if ((rc = th_room(r, at, &nh, &taken)) || taken) return rc;
    tio_tensor_desc td;
    memset(&td, 0, sizeof td);
    td.dtype = st->dtype;
    td.rank = rank;
    td.shape = size;
    td.layout = TIO_LAYOUT_DENSE;
    td.nbytes = (size_t)(numel * es); /* <= storage bytes when contiguous */
    uint8_t *copy = NULL;
    tio_strided *sv = NULL;
    if (numel && !contiguous) {
        /* numel * es fits: an expanded view (stride 0) may claim more than
         * its storage holds, but numel < 2^64 / es was checked with size */
        uint64_t nb = 0;
        if (tio__mul64_ovf(numel, es, &nb) || nb > SIZE_MAX)
            return tio__err(r->err, TIO_E_OVERFLOW, TH, th_off(at),
                            "numel x element size overflows");
        tio__shape_str(size, rank, shape, sizeof shape);
        if (st->owned) { /* a storage decoded into memory (inflated, swapped): copied now */
            if ((rc = th_budget(r, nb, at, "making the strided view of shape", shape,
                                "contiguous")))
                return rc;
            int64_t idx[TH_MAX_RANK];
            copy = malloc((size_t)nb);
            if (!copy) return tio__nomem(r->err, TH);
            th_gather(copy, st->data + start * es, size, stride, rank, es, numel, idx);
        } else { /* a view of the mapped storage, made contiguous when asked for */
            if (nb > r->ctx->limits.max_dense_bytes)
                return tio__err(r->err, TIO_E_LIMIT, TH, th_off(at),
                                "'%s': making the strided view of shape %s contiguous needs "
                                "%" PRIu64 " bytes, above max_dense_bytes %" PRIu64
                                " (--max-dense-bytes)",
                                r->name_depth ? r->name : "(root)", shape, nb,
                                r->ctx->limits.max_dense_bytes);
            sv = tio__container_chunk(c, sizeof *sv + rank * sizeof sv->stride[0]);
            if (!sv) return tio__nomem(r->err, TH);
            sv->base = st->data + start * es;
            memcpy(sv->stride, stride, rank * sizeof *stride);
        }
        td.nbytes = (size_t)nb;
    }
    td.data = copy ? copy : numel ? st->data + start * es : st->data;
    if (!copy && numel && !st->data) td.data = NULL;
    int64_t src_off = th_off(st->owned ? st->at : st->at + start * es);
    tio_tensor *t = NULL;
    if ((rc = th_append(r, &td, copy, src_off, nh, &t))) return rc;
    if (sv) {
        t->strided = sv;
        t->data = NULL;
    } else if (!copy && st->owned) {
        t->owned_data = st->owned; /* the first tensor over it frees it */
        st->owned = NULL;
    } else if (numel && es > 1 && (uintptr_t)t->data % es) {
        t->unaligned = 1;
    }
    if (st->tensors++ == 0) {
        st->first = c->count - 1;
    } else { /* tied weights: the tensors share a storage (props "shares_storage.NAME");
              * the same view of it is an alias (tio_tensor_alias) */
        const tio_tensor *f = c->tensors[st->first];
        if (!quant && !copy && !sv && !f->strided && f->data == t->data &&
            f->nbytes == t->nbytes &&
            f->rank == t->rank && (!rank || memcmp(f->shape, t->shape, rank * sizeof *size) == 0))
            t->alias = f;
        const char *first = f->name;
        char *key = malloc(r->name_len + 16);
        if (!key) return tio__nomem(r->err, TH);
        memcpy(key, "shares_storage.", 15);
        memcpy(key + 15, r->name_len ? r->name : "", r->name_len + 1);
        rc = tio__kv_append(&c->props, key, first ? first : "(root)", r->err); /* names are unique */
        free(key);
        if (rc) return rc;
    }
    return quant ? th_quant(r, &qp, size, at, depth) : TIO_OK;
}

/* A NumPy array (numpy.core.multiarray._reconstruct + BUILD): a tensor,
 * viewing the pickle's bytes when they are C-ordered little-endian bytes in
 * the mapped file, else decoded into a copy within max_dense_bytes. */
static int th_ndarray(th_reader *r, const tio_pk_obj *o) {
    tio_np_array a;
    int rc = tio__np_array(&r->pk, o, TH, r->name, &a, r->err);
    if (rc) return rc;
    uint64_t nh = 0;
    int taken = 0;
    if ((rc = th_room(r, o->off, &nh, &taken)) || taken) return rc;
    tio_tensor_desc td;
    memset(&td, 0, sizeof td);
    td.dtype = a.dtype;
    td.rank = a.rank;
    td.shape = a.shape;
    td.layout = TIO_LAYOUT_DENSE;
    td.nbytes = (size_t)a.nbytes;
    uint8_t *copy = NULL;
    /* a view only into the mapped file: an inflated pickle is freed after the walk */
    int view = tio__np_array_is_view(&a) && r->pkl_base != 0;
    if (!view && a.nbytes) {
        char shape[96];
        tio__shape_str(a.shape, a.rank, shape, sizeof shape);
        if ((rc = th_budget(r, a.nbytes, o->off, "decoding the NumPy array of shape", shape, "")))
            return rc;
        int64_t idx[TIO_NP_MAX_RANK];
        copy = malloc((size_t)a.nbytes);
        if (!copy || tio__np_array_bytes(&a, copy, idx)) {
            free(copy);
            return tio__nomem(r->err, TH);
        }
    }
    td.data = copy ? copy : a.nbytes ? a.src : NULL;
    int64_t src_off = th_off(r->pkl_base && a.src && !a.latin1
                                 ? r->pkl_base + (uint64_t)(a.src - r->pk_data)
                                 : a.at);
    tio_tensor *t = NULL;
    if ((rc = th_append(r, &td, copy, src_off, nh, &t))) return rc;
    size_t es = tio_dtype_size(a.dtype);
    if (!copy && a.nbytes && es > 1 && (uintptr_t)t->data % es) t->unaligned = 1;
    return TIO_OK;
}

static int th_walk(th_reader *r, uint32_t idx, unsigned depth);

static int th_walk_child(th_reader *r, uint32_t kid, const char *s, size_t n, uint64_t at,
                         unsigned depth) {
    size_t mark = 0;
    int rc = th_name_push(r, s, n, &mark, at);
    if (!rc) rc = th_walk(r, kid, depth + 1);
    th_name_pop(r, mark);
    return rc;
}

static int th_walk_seq(th_reader *r, const tio_pk_obj *o, unsigned depth) {
    for (size_t k = 0; k < o->n; k++) {
        char d[TIO__DEC_CAP];
        const char *s = tio__u64_dec(d, k);
        int rc = th_walk_child(r, o->u.kids[k], s, strlen(s), o->off, depth);
        if (rc) return rc;
    }
    return TIO_OK;
}

static int th_walk_dict(th_reader *r, const tio_pk_obj *o, unsigned depth) {
    const tio_pickle *p = &r->pk;
    for (size_t k = 0; k < o->n; k++) {
        const tio_pk_obj *key = tio__pk(p, o->u.kids[2 * k]);
        char d[40];
        const char *s = d;
        size_t n = 0;
        if (key->kind == TIO_PK_STR) {
            s = (const char *)key->u.s;
            n = key->n;
            if (memchr(s, 0, n))
                return tio__err(r->err, TIO_E_UNSUPPORTED, TH, th_off(key->off),
                                "a key holding a NUL byte");
        } else if (key->kind == TIO_PK_INT) {
            n = (size_t)snprintf(d, sizeof d, "%" PRId64, key->u.i);
        } else if (key->kind == TIO_PK_BOOL || key->kind == TIO_PK_NONE) {
            n = (size_t)snprintf(d, sizeof d, "%s",
                                 key->kind == TIO_PK_NONE ? "None" : key->u.i ? "True" : "False");
        } else {
            n = (size_t)snprintf(d, sizeof d, "%zu", k); /* a key of another kind: its position */
        }
        int rc = th_walk_child(r, o->u.kids[2 * k + 1], s, n, o->off, depth);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* rc of reading object idx as a tensor; records the tensor it became (the
 * first, for the object tree) when it became one. */
static int th_tensor_of(th_reader *r, uint32_t idx, size_t before, int rc) {
    if (!rc && r->ctx->c->count > before && r->tensor_of[idx] < 0)
        r->tensor_of[idx] = (int64_t)before;
    return rc;
}

static int th_walk(th_reader *r, uint32_t idx, unsigned depth) {
    const tio_pickle *p = &r->pk;
    const tio_pk_obj *o = tio__pk(p, idx);
    if (!o) return tio__err(r->err, TIO_E_CORRUPT, TH, -1, "an object index past the pickle's");
    if (depth > r->ctx->limits.max_pickle_depth)
        return tio__err(r->err, TIO_E_LIMIT, TH, th_off(o->off),
                        "objects nested more than %" PRIu32 " deep (max_pickle_depth)",
                        r->ctx->limits.max_pickle_depth);
    char *v = r->scratch; /* not on the stack: th_walk recurses */
    switch (o->kind) {
    case TIO_PK_NONE: return th_meta(r, "None", NULL, o->off);
    case TIO_PK_BOOL: return th_meta(r, o->u.i ? "true" : "false", "bool", o->off);
    case TIO_PK_INT:
        snprintf(v, sizeof r->scratch, "%" PRId64, o->u.i);
        return th_meta(r, v, "int64", o->off);
    case TIO_PK_FLOAT:
        tio__th_float_text(o->u.f, 0, v, sizeof r->scratch);
        return th_meta(r, v, "float64", o->off);
    case TIO_PK_BIGINT:
        return th_meta(r, "(an integer past int64)", NULL, o->off);
    case TIO_PK_STR: {
        if (o->n > r->ctx->limits.max_name_bytes) {
            snprintf(v, sizeof r->scratch, "(a str of %" PRIu32 " bytes)", o->n);
            return th_meta(r, v, NULL, o->off);
        }
        /* NUL bytes included: metadata values carry their length */
        return th_meta_n(r, (const char *)o->u.s, o->n, "string", o->off);
    }
    case TIO_PK_BYTES:
        snprintf(v, sizeof r->scratch, "(%" PRIu32 " bytes)", o->n);
        return th_meta(r, v, NULL, o->off);
    case TIO_PK_GLOBAL: {
        char *g = r->gscratch;
        const tio_pk_vocab_entry *e = tio__pk_vocab_at(o->vocab);
        if (e && (e->id == TIO_PKV_DTYPE || e->id == TIO_PKV_QSCHEME))
            return th_meta(r, th_gname(o, g, sizeof r->gscratch), NULL, o->off);
        snprintf(v, sizeof r->scratch, "(global %s)", th_gname(o, g, sizeof r->gscratch));
        return th_meta(r, v, NULL, o->off);
    }
    case TIO_PK_PERSID:
        return th_meta(r, "(a storage)", NULL, o->off);
    default:
        break;
    }
    if (r->seen[idx]) return TIO_OK; /* shared: walked once (memo references) */
    r->seen[idx] = 1;
    switch (o->kind) {
    case TIO_PK_TUPLE:
    case TIO_PK_LIST:
    case TIO_PK_SET:
    case TIO_PK_FROZENSET:
        return th_walk_seq(r, o, depth);
    case TIO_PK_DICT:
        return th_walk_dict(r, o, depth); /* an OrderedDict's state (_metadata) is not walked */
    default:
        break;
    }
    /* a CALL */
    const tio_pk_vocab_entry *e = tio__pk_callee(p, o);
    const tio_pk_obj *args = tio__pk(p, o->u.call.args);
    if (e && e->id >= TIO_PKV_REBUILD_TENSOR && e->id <= TIO_PKV_REBUILD_QTENSOR) {
        r->seen[idx] = 0; /* the same tensor under several names: listed under each */
        size_t before = r->ctx->c->count;
        return th_tensor_of(r, idx, before, th_tensor(r, e, args, o->off, depth, 0));
    }
    if (e && e->id == TIO_PKV_NP_RECONSTRUCT) {
        r->seen[idx] = 0; /* as a tensor: listed under each name */
        size_t before = r->ctx->c->count;
        return th_tensor_of(r, idx, before, th_ndarray(r, o));
    }
    if (e && e->id == TIO_PKV_NP_SCALAR) {
        const char *type = NULL;
        int rc = tio__np_scalar(p, o, TH, r->name, v, sizeof r->scratch, &type, r->err);
        return rc ? rc : th_meta(r, v, type, o->off);
    }
    if (e && (e->id == TIO_PKV_SIZE || e->id == TIO_PKV_SET || e->id == TIO_PKV_FROZENSET ||
              e->id == TIO_PKV_JIT_LIST || e->id == TIO_PKV_JIT_TYPE_TAG) &&
        args && args->n >= 1)
        return th_walk(r, args->u.kids[0], depth + 1);
    if (e && e->id == TIO_PKV_DEVICE && args && args->n >= 1 &&
        tio__pk_item(p, args, 0)->kind == TIO_PK_STR)
        return th_walk(r, args->u.kids[0], depth + 1);
    uint64_t nbytes = 0; /* protocol 2's bytes: bytes() and _codecs.encode */
    if (tio__th_bytes_len(p, o, &nbytes)) {
        snprintf(v, sizeof r->scratch, "(%" PRIu64 " bytes)", nbytes);
        return th_meta(r, v, NULL, o->off);
    }
    /* an object of a class outside the vocabulary (or a call of one): its
     * state walked when it has one (an argparse.Namespace's fields, a
     * TorchScript module's parameters) */
    if (o->state != TIO_PK_NIL) {
        const tio_pk_obj *s = tio__pk(p, o->state);
        if (s->kind == TIO_PK_TUPLE && s->n == 2) /* (state, slotstate) */
            return th_walk(r, s->u.kids[0], depth + 1);
        return th_walk(r, o->state, depth + 1);
    }
    const tio_pk_obj *f = tio__pk(p, o->u.call.func);
    char *g = r->gscratch;
    snprintf(v, sizeof r->scratch, "(object of %s)",
             f->kind == TIO_PK_GLOBAL ? th_gname(f, g, sizeof r->gscratch) : "a computed class");
    return th_meta(r, v, NULL, o->off);
}

/* ------------------------------------------------------------ scanning */

/* Every global outside the vocabulary, as a finding. */
static int th_scan(th_reader *r, const char *pkl) {
    const tio_pickle *p = &r->pk;
    size_t first = p->first_unknown; /* none in most files */
    if (first >= p->count) return TIO_OK;
    uint8_t *called = calloc(p->count ? p->count : 1, 1);
    if (!called) return tio__nomem(r->err, TH);
    for (size_t i = 0; i < p->count; i++)
        if (p->obj[i].kind == TIO_PK_CALL && p->obj[i].u.call.func < p->count)
            called[p->obj[i].u.call.func] = 1;
    int rc = TIO_OK;
    for (size_t i = first; i < p->count && !rc; i++) {
        const tio_pk_obj *o = &p->obj[i];
        if (o->kind != TIO_PK_GLOBAL || o->vocab) continue;
        /* TorchScript's own classes (compiled from code/, never imported) */
        if (r->script && o->u.g.mod_len >= 9 && memcmp(o->u.g.mod, "__torch__", 9) == 0)
            continue;
        char g[200];
        rc = tio__warn(r->ctx, TH, th_off(o->off), r->err,
                       "%s %s at pickle offset %" PRIu64 " of %s (a global outside tensio's "
                       "vocabulary: never imported or called, kept as an opaque object)",
                       called[i] ? "calls" : "references", th_gname(o, g, sizeof g),
                       o->off - r->pkl_base, pkl);
    }
    free(called);
    return rc;
}

/* Runs a pickle into r->pk. */
/* Runs the pickle data[0..size) into r->pk; owned (the bytes when
 * inflated, else NULL) is the reader's from here, then the tree's. */
static int th_machine(th_reader *r, const uint8_t *data, size_t size, uint64_t base,
                      uint8_t *owned) {
    tio__pickle_free(&r->pk);
    free(r->pk_owned);
    r->pk_owned = owned;
    r->pkl_base = base;
    r->pk_data = data;
    return tio__pickle_run(&r->pk, data, size, base, TH, &r->ctx->limits, r->err);
}

/* Runs a pickle into r->pk and reports its globals. */
static int th_run(th_reader *r, const uint8_t *data, size_t size, uint64_t base, uint8_t *owned,
                  const char *pkl) {
    int rc = th_machine(r, data, size, base, owned);
    return rc ? rc : th_scan(r, pkl);
}

/* Hands what r->pk built, walked, to the container's object tree, made
 * when first asked for (src/pickle: tio__pickle_tree_later): data.pkl's
 * object as the root, or with TorchScript's constants.pkl (prefix
 * "constants") a dict {"data": data.pkl's object, "constants": its}. */
static int th_tree(th_reader *r, const char *prefix) {
    int rc = tio__pickle_tree_later(r->ctx->c, &r->later, &r->pk, r->tensor_of, r->pk_owned,
                                    r->pkl_base != 0, prefix ? prefix : "data",
                                    &r->ctx->limits);
    if (rc) return tio__err(r->err, rc, TH, -1, "keeping the pickle's objects for its tree");
    r->tensor_of = NULL; /* the tree's now, as r->pk's objects */
    r->pk_owned = NULL;
    return TIO_OK;
}

/* Walks what r->pk built, its names under `prefix` (NULL: none), then makes
 * its object tree. */
static int th_walk_root(th_reader *r, const char *prefix) {
    size_t n = r->pk.count ? r->pk.count : 1;
    free(r->seen);
    free(r->tensor_of);
    r->seen = calloc(n, 1);
    r->tensor_of = malloc(n * sizeof *r->tensor_of);
    if (!r->seen || !r->tensor_of) return tio__nomem(r->err, TH);
    for (size_t i = 0; i < n; i++) r->tensor_of[i] = -1;
    r->name_len = 0;
    r->name_depth = 0;
    size_t mark = 0;
    int rc = prefix ? th_name_push(r, prefix, strlen(prefix), &mark, r->pkl_base) : TIO_OK;
    if (!rc) rc = th_walk(r, r->pk.root, 0);
    return rc ? rc : th_tree(r, prefix);
}

/* ------------------------------------------------------------ zip layout */

static int th_each(void *arg, size_t i) {
    (void)arg;
    (void)i;
    return TIO_OK;
}

static int th_read_zip_rest(th_reader *r, size_t pk, int prc, const tio_error *perr);

/* The data.pkl member (<prefix>/data.pkl, prefix one directory or none),
 * or SIZE_MAX; sets r->prefix. */
static size_t th_find_pickle(th_reader *r) {
    for (size_t i = 0; i < r->zip.n; i++) {
        const tio_zip_member *m = &r->zip.m[i];
        if (!th_ends(m->name, m->name_len, "data.pkl")) continue;
        size_t pl = m->name_len - 8;
        if (pl == 0 || (m->name[pl - 1] == '/' && !memchr(m->name, '/', pl - 1))) {
            r->prefix = (const char *)m->name;
            r->prefix_len = pl ? pl - 1 : 0;
            return i;
        }
    }
    return SIZE_MAX;
}

/* With many records, their local headers are read on a thread while this
 * one runs data.pkl and walks it (src/zip: tio__zip_locals_start): data.pkl's
 * local header read here into a copy, a storage's waited for when the walk
 * reaches it (th_member_bytes). What this finds waits in *herr until the
 * archive is checked, so that errors come in the order of a reader without
 * the thread: the archive's first. Returns -1 when nothing ran (no thread). */
static int th_early(th_reader *r, size_t pk, tio_error *herr) {
    if (pk == SIZE_MAX) return -1;
    tio_zip_member pm = r->zip.m[pk]; /* z->m's locals are the thread's from here */
    tio_zip_locals *lj = tio__zip_locals_start(&r->zip);
    if (!lj) return -1;
    tio_error *err = r->err;
    tio_error_clear(herr);
    r->err = r->zip.err = herr;
    r->locals = lj;
    const uint8_t *d = NULL;
    uint64_t n = 0;
    uint8_t *owned = NULL;
    int rc = tio__zip_local_of(&r->zip, &pm);
    if (!rc) rc = th_bytes_of(r, &pm, &d, &n, &owned);
    if (!rc) rc = th_machine(r, d, (size_t)n, owned ? 0 : pm.data_at, owned);
    rc = th_read_zip_rest(r, pk, rc, herr);
    r->err = r->zip.err = err;
    tio__zip_locals_end(&r->zip, lj);
    r->locals = NULL;
    return rc;
}

static int th_read_zip(th_reader *r) {
    int rc = tio__zip_open(&r->zip, r->ctx, TH, "torch.save", r->err);
    if (!rc) rc = th_index_members(r);
    if (rc) return rc;
    r->is_zip = 1;
    size_t pk = th_find_pickle(r);
    tio_error herr;
    int hrc = th_early(r, pk, &herr);
    rc = tio__zip_each(&r->zip, th_each, r);
    if (rc) return rc;
    if (pk == SIZE_MAX)
        return tio__err(r->err, TIO_E_FORMAT, TH, 0,
                        "a zip archive without a data.pkl record (expected <dir>/data.pkl, as "
                        "torch.save writes)");
    if (hrc > 0) *r->err = herr;
    return hrc >= 0 ? hrc : th_read_zip_rest(r, pk, -1, NULL);
}

/* The rest of th_read_zip: its props, data.pkl (run here unless it ran
 * already: prc its outcome, -1 not run, perr its error), the walk, and
 * TorchScript's constants.pkl. The archive is checked, or its locals' thread
 * runs (r->locals, th_early). */
static int th_read_zip_rest(th_reader *r, size_t pk, int prc, const tio_error *perr) {
    int rc = TIO_OK;
    const uint8_t *d = NULL;
    uint64_t n = 0;
    uint8_t *owned = NULL;
    size_t bo = th_member(r, "byteorder", NULL, 0);
    if (bo != SIZE_MAX) {
        uint64_t bo_at = 0;
        rc = th_member_bytes(r, bo, &d, &n, &owned, &bo_at);
        if (rc) return rc;
        if (n == 3 && memcmp(d, "big", 3) == 0)
            r->big_endian = 1;
        else if (!(n == 6 && memcmp(d, "little", 6) == 0))
            rc = tio__err(r->err, TIO_E_CORRUPT, TH, th_off(bo_at),
                          "the byteorder record holds neither \"little\" nor \"big\"");
        free(owned);
        if (rc) return rc;
        rc = tio__kv_set(&r->ctx->c->props, "byteorder", r->big_endian ? "big" : "little", r->err);
        if (rc) return rc;
    }
    size_t ver = th_member(r, "version", NULL, 0);
    if (ver != SIZE_MAX) {
        rc = th_member_bytes(r, ver, &d, &n, &owned, NULL);
        if (rc) return rc;
        char v[24];
        size_t k = 0;
        for (; k < n && k + 1 < sizeof v && d[k] >= '0' && d[k] <= '9'; k++) v[k] = (char)d[k];
        v[k] = 0;
        free(owned);
        if (k && (rc = tio__kv_set(&r->ctx->c->props, "version", v, r->err))) return rc;
    }
    for (size_t i = 0; i < r->zip.n && !r->script; i++) {
        const tio_zip_member *m = &r->zip.m[i];
        size_t pl = r->prefix_len ? r->prefix_len + 1 : 0;
        if (m->name_len > pl + 5 && memcmp(m->name + pl, "code/", 5) == 0) r->script = 1;
    }
    rc = tio__kv_set(&r->ctx->c->props, "layout", r->script ? "torchscript" : "zip", r->err);
    if (rc) return rc;
    if (prc > 0) { /* it ran, and failed */
        *r->err = *perr;
        return prc;
    }
    if (prc == 0) {
        rc = th_scan(r, "data.pkl");
    } else {
        uint64_t at = 0;
        rc = th_member_bytes(r, pk, &d, &n, &owned, &at);
        if (rc) return rc;
        rc = th_run(r, d, (size_t)n, owned ? 0 : at, owned, "data.pkl");
        owned = NULL; /* the reader's now */
    }
    if (!rc) rc = th_walk_root(r, NULL);
    size_t cp = r->script ? th_member(r, "constants.pkl", NULL, 0) : SIZE_MAX;
    if (rc || cp == SIZE_MAX) return rc;
    /* TorchScript's constants: their storages in constants/<key>, named
     * constants.<index> */
    th_free_storages(r);
    free(r->keys.slot);
    memset(&r->keys, 0, sizeof r->keys);
    if (r->key_at) memset(r->key_at, 0, r->zip.n * sizeof *r->key_at);
    r->storage_dir = "constants/";
    uint64_t cp_at = 0;
    rc = th_member_bytes(r, cp, &d, &n, &owned, &cp_at);
    if (!rc) rc = th_run(r, d, (size_t)n, owned ? 0 : cp_at, owned, "constants.pkl");
    if (!rc) rc = th_walk_root(r, "constants");
    return rc;
}

/* ------------------------------------------------------------ legacy layout */

/* A storage key and its dtype, from the object's persistent ids. */
typedef struct th_key {
    const uint8_t *k;
    size_t n;
    tio_dtype dtype;
} th_key;

static int th_key_cmp(const void *a, const void *b) {
    const th_key *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->k, y->k, n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

/* The storages of the legacy layout, after the pickle of their keys: each
 * an int64 element count and its bytes, the element size the storage type
 * that the object's persistent ids give the key. */
static int th_legacy_storages(th_reader *r, const tio_pickle *keys, uint64_t *pos) {
    const tio_pickle *p = &r->pk;
    const tio_pk_obj *list = tio__pk(keys, keys->root);
    if (!list || list->kind != TIO_PK_LIST)
        return tio__err(r->err, TIO_E_CORRUPT, TH, th_off(*pos),
                        "the storage keys are not a list");
    size_t nk = 0;
    for (size_t i = 0; i < p->count; i++) nk += p->obj[i].kind == TIO_PK_PERSID;
    th_key *map = calloc(nk ? nk : 1, sizeof *map);
    r->st = calloc(list->n ? list->n : 1, sizeof *r->st);
    if (!map || !r->st) {
        free(map);
        return tio__nomem(r->err, TH);
    }
    r->capst = list->n;
    nk = 0;
    for (size_t i = 0; i < p->count; i++) {
        if (p->obj[i].kind != TIO_PK_PERSID) continue;
        const tio_pk_obj *pid = tio__pk(p, p->obj[i].u.call.args);
        const tio_pk_obj *type = tio__pk_item(p, pid, 1), *key = tio__pk_item(p, pid, 2);
        const tio_pk_vocab_entry *e =
            type && type->kind == TIO_PK_GLOBAL ? tio__pk_vocab_at(type->vocab) : NULL;
        if (!e || e->id != TIO_PKV_STORAGE || e->dtype == TIO_DTYPE_INVALID || !key ||
            key->kind != TIO_PK_STR)
            continue; /* refused when a tensor uses it */
        map[nk].k = key->u.s;
        map[nk].n = key->n;
        map[nk++].dtype = e->dtype;
    }
    qsort(map, nk, sizeof *map, th_key_cmp);
    int rc = TIO_OK;
    for (size_t i = 0; i < list->n && !rc; i++) {
        const tio_pk_obj *k = tio__pk_item(keys, list, i);
        char kn[64];
        if (!k || k->kind != TIO_PK_STR) {
            rc = tio__err(r->err, TIO_E_CORRUPT, TH, th_off(keys->end),
                          "storage key %zu is not a str", i);
            break;
        }
        tio__escape(k->u.s, k->n, kn, sizeof kn);
        th_key want = {k->u.s, k->n, TIO_DTYPE_INVALID};
        const th_key *f = nk ? bsearch(&want, map, nk, sizeof *map, th_key_cmp) : NULL;
        if (!f) {
            rc = tio__err(r->err, TIO_E_CORRUPT, TH, th_off(*pos),
                          "storage '%s' is used by no tensor the pickle names (its element "
                          "size is unknown)",
                          kn);
            break;
        }
        uint64_t numel = 0, nbytes = 0;
        if (r->ctx->size - *pos < 8) {
            rc = tio__err(r->err, TIO_E_TRUNCATED, TH, th_off(*pos),
                          "storage '%s': its element count runs past the end of the file", kn);
            break;
        }
        numel = tio__ld64(r->ctx->data + *pos);
        if (tio__mul64_ovf(numel, tio_dtype_size(f->dtype), &nbytes) ||
            nbytes > r->ctx->size - *pos - 8) {
            rc = tio__err(r->err, TIO_E_TRUNCATED, TH, th_off(*pos),
                          "storage '%s': %" PRIu64 " %s elements run past the end of the file "
                          "(%" PRIu64 " bytes left)",
                          kn, numel, tio_dtype_name(f->dtype), (uint64_t)(r->ctx->size - *pos - 8));
            break;
        }
        uint64_t kh = 0;
        if (th_key_find(r, k->u.s, k->n, &kh) != SIZE_MAX) {
            rc = tio__err(r->err, TIO_E_CORRUPT, TH, th_off(*pos), "storage '%s' is listed twice",
                          kn);
            break;
        }
        if ((rc = th_key_add(r, k->u.s, k->n, kh, r->nst))) break;
        th_storage *s = &r->st[r->nst++];
        s->key = k->u.s;
        s->key_len = k->n;
        s->dtype = f->dtype;
        s->at = *pos + 8;
        s->data = r->ctx->data + *pos + 8;
        s->nbytes = nbytes;
        *pos += 8 + nbytes;
    }
    free(map);
    return rc;
}

static int th_read_legacy(th_reader *r) {
    uint64_t pos = 0;
    /* the magic number, the protocol version, the sys info; then the object */
    static const char *const what[3] = {"the magic number", "the protocol version",
                                        "the sys info"};
    int rc = TIO_OK;
    for (int k = 0; k < 3 && !rc; k++) {
        tio_pickle p;
        rc = tio__pickle_run(&p, r->ctx->data + pos, r->ctx->size - (size_t)pos, pos, TH,
                             &r->ctx->limits, r->err);
        if (rc) break;
        const tio_pk_obj *o = tio__pk(&p, p.root);
        if (k == 2 && o && o->kind == TIO_PK_DICT)
            for (size_t i = 0; i < o->n; i++)
                if (th_str_eq(tio__pk(&p, o->u.kids[2 * i]), "little_endian") &&
                    tio__pk(&p, o->u.kids[2 * i + 1])->kind == TIO_PK_BOOL &&
                    !tio__pk(&p, o->u.kids[2 * i + 1])->u.i)
                    rc = tio__err(r->err, TIO_E_UNSUPPORTED, TH, th_off(pos),
                                  "a legacy checkpoint written big-endian: not read yet");
        if (k == 1 && (!o || o->kind != TIO_PK_INT || o->u.i != 1001))
            rc = tio__err(r->err, TIO_E_UNSUPPORTED, TH, th_off(pos),
                          "%s is not 1001 (the legacy layout's)", what[k]);
        pos = p.end;
        tio__pickle_free(&p);
    }
    if (!rc) rc = tio__kv_set(&r->ctx->c->props, "layout", "legacy", r->err);
    if (!rc) rc = th_run(r, r->ctx->data + pos, r->ctx->size - (size_t)pos, pos, NULL, "the pickle");
    if (rc) return rc;
    pos = r->pk.end;
    tio_pickle keys;
    rc = tio__pickle_run(&keys, r->ctx->data + pos, r->ctx->size - (size_t)pos, pos, TH,
                         &r->ctx->limits, r->err);
    if (rc) return rc;
    pos = keys.end;
    rc = th_legacy_storages(r, &keys, &pos);
    tio__pickle_free(&keys);
    if (!rc && pos < r->ctx->size)
        rc = tio__warn(r->ctx, TH, th_off(pos), r->err,
                       "%" PRIu64 " bytes after the last storage", (uint64_t)(r->ctx->size - pos));
    return rc ? rc : th_walk_root(r, NULL);
}

static int th_read(tio_read_ctx *ctx, tio_error *err) {
    th_reader r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.err = err;
    r.storage_dir = "data/";
    /* the mapping's and the stack's addresses, which ASLR places anew */
    r.seed = th_hash_of((uint64_t)(uintptr_t)ctx->data, &r, sizeof r.ctx) ^ (uint64_t)(uintptr_t)&r;
    int rc;
    if (ctx->size >= 4 && tio__ld32(ctx->data) != TIO_ZIP_LOCAL && th_probe(ctx->data, ctx->size) == 100)
        rc = th_read_legacy(&r);
    else
        rc = th_read_zip(&r);
    tio__pickle_free(&r.pk);
    free(r.pk_owned);
    tio__zip_free(&r.zip);
    th_free_storages(&r);
    free(r.members.slot);
    free(r.key_at);
    free(r.member_at);
    free(r.keys.slot);
    free(r.names.slot);
    free(r.given);
    free(r.seen);
    free(r.tensor_of);
    free(r.name);
    return rc;
}

const tio_format_desc tio__format_torch = {
    .name = "torch",
    .description = "PyTorch checkpoint (torch.save zip and legacy layouts, TorchScript "
                   "archives): read without running the pickle; written as torch.save's zip",
    .extensions = ".pt .pth .bin .ckpt",
    .caps = TIO_CAP_NAMES | TIO_CAP_METADATA,
    .dtypes = TIO__TORCH_DTYPES,
    .probe = th_probe,
    .read = th_read,
    .check = tio__torch_check,
    .write = tio__torch_write, /* torch_write.c */
    .options = TIO__TORCH_OPTIONS,
};
