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
#include "formats/torch_objects.h"
#include "formats/torch_read.h"
#include "formats/torch_write.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TH_LEGACY_MAGIC_LEN 10
static const uint8_t th_legacy_magic[TH_LEGACY_MAGIC_LEN] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9,
                                                             0x20, 0x6a, 0xa8, 0x50, 0x19};

static int th_ends(const uint8_t *s, size_t n, const char *suffix) {
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* ------------------------------------------------------------ an index */



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

uint64_t th_hash_of(uint64_t seed, const void *p, size_t n) {
    th_hash x = {seed, 0, 0};
    th_hash_add(&x, p, n);
    return th_hash_end(&x);
}

/* The first entry of hash h for which eq(ctx, index) holds, or SIZE_MAX. */
size_t th_find(const th_index *x, uint64_t h, int (*eq)(const void *ctx, size_t i),
                      const void *ctx) {
    if (!x->cap) return SIZE_MAX;
    uint32_t h32 = (uint32_t)h;
    for (size_t k = h32 & (x->cap - 1); x->slot[k].idx; k = (k + 1) & (x->cap - 1))
        if (x->slot[k].h == h32 && eq(ctx, x->slot[k].idx - 1)) return x->slot[k].idx - 1;
    return SIZE_MAX;
}

int th_insert(th_index *x, uint64_t h, size_t i) {
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
    /* A record only torch.save writes, first where a save failed before
     * data.pkl (torch 1.13 leaves <dir>/version alone): the reader says so,
     * where npz (40 for any zip) would call it an archive of no arrays. */
    static const char *const own[] = {"/version", "/byteorder", "/.format_version",
                                      "/.storage_alignment", "/.data/version",
                                      "/.data/serialization_id"};
    if (slash)
        for (size_t k = 0; k < sizeof own / sizeof *own; k++)
            if ((size_t)(slash - name) + strlen(own[k]) == nl && th_ends(name, nl, own[k]))
                return 60;
    return 0;
}

/* ------------------------------------------------------------- storages */



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


int th_str_eq(const tio_pk_obj *o, const char *s) {
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
int th_storage_zip(th_reader *r, const tio_pk_obj *key, tio_dtype dtype, uint64_t at,
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
    /* big-endian: bytes already in memory are swapped there; mapped ones
     * stay where they are, their tensors views that swap on the way out
     * (as a big-endian .npy's), so open holds none of them */
    if (r->big_endian && es > 1) {
        if (s->owned)
            tio__swap_units(s->owned, (size_t)s->nbytes, tio__dtype_swap_unit(dtype));
        else
            s->swap = tio__dtype_swap_unit(dtype);
    }
    *out = s;
    return TIO_OK;
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
                        "a zip archive of torch.save's records without its data.pkl "
                        "(expected <dir>/data.pkl; a torch.save that failed part way "
                        "leaves such a file, which torch.load refuses too)");
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
    tio__budget_init(&r.names_mem, TH, ctx->size, TH_NAMES_FACTOR,
                     "names or strings are shared by too many references (a key or value the "
                     "pickle memoizes, copied along each path that reaches it)",
                     &ctx->limits);
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
    .caps = TIO_CAP_NAMES | TIO_CAP_METADATA | TIO_CAP_SPARSE,
    .dtypes = TIO__TORCH_DTYPES,
    .probe = th_probe,
    .read = th_read,
    .check = tio__torch_check,
    .write = tio__torch_write, /* torch_write.c */
    .options = TIO__TORCH_OPTIONS,
};
