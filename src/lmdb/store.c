/* LMDB stores of tensors: one record per key, each a container encoded in
 * one tensio format; records read as views into LMDB's map
 * (docs/formats/lmdb.md). */
#include "core/internal.h"

#include <errno.h>
#include <jansson.h>
#include <lmdb.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FMT "lmdb"
#define META_KEY "__tensio__"
#define META_VERSION 1
#define DEFAULT_BATCH 1000u
#define DEFAULT_MAP_SIZE (64ull << 20)
/* The pending batch is kept to be written again after the map has grown;
 * past this many bytes it is committed early. */
#define PENDING_BYTES_CAP (64ull << 20)
#define MAX_GROWS 48

typedef struct pending_rec {
    void *key;
    size_t key_size;
    void *data; /* owned */
    size_t size;
} pending_rec;

struct tio_lmdb {
    atomic_size_t refs;    /* the caller's hold + one per read transaction */
    atomic_size_t readers; /* read transactions not yet ended */
    MDB_env *env;
    MDB_dbi dbi;
    int write;
    int file_mode;
    char *path;
    char *data_path; /* path of data.mdb (or the file) */
    char format[16]; /* "" = probe each record */
    tio_limits limits;
    tio_save_options save;
    size_t batch;
    uint64_t map_size;
    MDB_txn *wtxn;
    pending_rec *pending;
    size_t npending, cap_pending;
    uint64_t pending_bytes;
};

struct tio_lmdb_txn {
    atomic_size_t refs; /* the caller's hold + one per open container */
    tio_lmdb *db;
    MDB_txn *txn;
    MDB_cursor *cur;
    int started;
};

/* ------------------------------------------------------------ helpers */

static int code_of(int rc) {
    switch (rc) {
    case MDB_NOTFOUND: return TIO_E_NOT_FOUND;
    case MDB_MAP_FULL: return TIO_E_LIMIT;
    case MDB_CORRUPTED:
    case MDB_INVALID:
    case MDB_PAGE_NOTFOUND:
    case MDB_VERSION_MISMATCH: return TIO_E_CORRUPT;
    case MDB_BAD_VALSIZE: return TIO_E_ARGUMENT;
    case ENOMEM: return TIO_E_NOMEM;
    default: return rc > 0 ? TIO_E_IO : TIO_E_CORRUPT;
    }
}

static int lmdb_err(tio_error *err, const tio_lmdb *db, int rc, const char *what) {
    return tio__err(err, code_of(rc), FMT, -1, "%s: %s: %s", db ? db->path : "?", what,
                    mdb_strerror(rc));
}

static void key_text(const void *key, size_t n, char *out, size_t cap) {
    tio__escape(key, n, out, cap);
}

static int check_key(tio_lmdb *db, const void *key, size_t key_size, tio_error *err) {
    size_t max = (size_t)mdb_env_get_maxkeysize(db->env);
    if (!key || key_size == 0 || key_size > max)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1,
                        "%s: a key is 1 to %zu bytes (got %zu)", db->path, max, key_size);
    if (key_size == sizeof META_KEY - 1 && memcmp(key, META_KEY, key_size) == 0)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1,
                        "%s: key \"" META_KEY "\" is reserved for the store's metadata",
                        db->path);
    return TIO_OK;
}

static int is_meta(const MDB_val *k) {
    return k->mv_size == sizeof META_KEY - 1 && memcmp(k->mv_data, META_KEY, k->mv_size) == 0;
}

static int known_format(const char *name) { return name && tio_format_description(name); }

/* ---------------------------------------------------------- the store */

static void drop_pending(tio_lmdb *db) {
    for (size_t i = 0; i < db->npending; i++) {
        free(db->pending[i].key);
        tio_free(db->pending[i].data);
    }
    db->npending = 0;
    db->pending_bytes = 0;
}

static void db_unref(tio_lmdb *db) {
    if (atomic_fetch_sub_explicit(&db->refs, 1, memory_order_acq_rel) != 1) return;
    if (db->wtxn) mdb_txn_abort(db->wtxn);
    drop_pending(db);
    free(db->pending);
    if (db->env) mdb_env_close(db->env);
    free(db->path);
    free(db->data_path);
    free(db);
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Directory or single file, as the header says; creates the directory of a
 * new directory store. */
static int resolve_path(tio_lmdb *db, unsigned flags, tio_error *err) {
    struct stat st;
    if (stat(db->path, &st) == 0) {
        db->file_mode = !S_ISDIR(st.st_mode);
    } else if (errno != ENOENT || !db->write) {
        return tio__err(err, TIO_E_IO, FMT, -1, "%s: %s", db->path, strerror(errno));
    } else {
        db->file_mode = (flags & TIO_LMDB_FILE) || ends_with(db->path, ".mdb");
        if (!db->file_mode && mkdir(db->path, 0777) != 0)
            return tio__err(err, TIO_E_IO, FMT, -1, "%s: cannot create the directory: %s",
                            db->path, strerror(errno));
    }
    size_t n = strlen(db->path) + sizeof "/data.mdb";
    db->data_path = malloc(n);
    if (!db->data_path) return tio__nomem(err, FMT);
    snprintf(db->data_path, n, db->file_mode ? "%s" : "%s/data.mdb", db->path);
    return TIO_OK;
}

/* LMDB maps the data file and trusts it: a file shorter than its meta page
 * says would fault (SIGBUS) on the first page past its end. Refused here. */
static int check_file_size(tio_lmdb *db, tio_error *err) {
    MDB_envinfo info;
    MDB_stat st;
    struct stat fs;
    int rc = mdb_env_info(db->env, &info);
    if (rc == 0) rc = mdb_env_stat(db->env, &st);
    if (rc != 0) return lmdb_err(err, db, rc, "cannot read the environment");
    if (stat(db->data_path, &fs) != 0)
        return tio__err(err, TIO_E_IO, FMT, -1, "%s: %s", db->data_path, strerror(errno));
    uint64_t need;
    if (tio__mul64_ovf((uint64_t)info.me_last_pgno + 1, st.ms_psize, &need) ||
        (uint64_t)fs.st_size < need)
        return tio__err(err, TIO_E_TRUNCATED, FMT, (int64_t)fs.st_size,
                        "%s: %lld bytes, but its meta page says %zu pages of %u bytes "
                        "(the file is truncated)",
                        db->data_path, (long long)fs.st_size, info.me_last_pgno + 1,
                        st.ms_psize);
    if (info.me_mapsize < need)
        return tio__err(err, TIO_E_CORRUPT, FMT, -1,
                        "%s: map size %zu is smaller than the %llu bytes in use", db->data_path,
                        info.me_mapsize, (unsigned long long)need);
    return TIO_OK;
}

static int parse_meta(tio_lmdb *db, const MDB_val *v, tio_error *err) {
    json_error_t je;
    json_t *root = json_loadb(v->mv_data, v->mv_size, JSON_REJECT_DUPLICATES, &je);
    const char *what = NULL;
    json_t *f = root ? json_object_get(root, "format") : NULL;
    json_t *ver = root ? json_object_get(root, "version") : NULL;
    if (!root || !json_is_object(root)) what = "not a JSON object";
    else if (!json_is_string(f) || !json_is_integer(ver))
        what = "needs \"format\" (a string) and \"version\" (an integer)";
    if (what) {
        json_decref(root);
        return tio__err(err, TIO_E_CORRUPT, FMT, -1, "%s: metadata key \"" META_KEY "\": %s",
                        db->path, what);
    }
    json_int_t version = json_integer_value(ver);
    const char *name = json_string_value(f);
    int rc = TIO_OK;
    if (version != META_VERSION)
        rc = tio__err(err, version > META_VERSION ? TIO_E_UNSUPPORTED : TIO_E_CORRUPT, FMT, -1,
                      "%s: metadata version %lld (this tensio reads version %d)", db->path,
                      (long long)version, META_VERSION);
    else if (!known_format(name) || strlen(name) >= sizeof db->format)
        rc = tio__err(err, TIO_E_FORMAT, FMT, -1,
                      "%s: metadata names format \"%.32s\", which tensio does not know",
                      db->path, name);
    else
        snprintf(db->format, sizeof db->format, "%s", name);
    json_decref(root);
    return rc;
}

static int begin_txn(tio_lmdb *db, unsigned flags, MDB_txn **out, tio_error *err) {
    int rc = mdb_txn_begin(db->env, NULL, flags, out);
    if (rc == MDB_MAP_RESIZED && atomic_load(&db->readers) == 0 && !db->wtxn) {
        /* another process grew the map: adopt its size */
        rc = mdb_env_set_mapsize(db->env, 0);
        if (rc == 0) rc = mdb_txn_begin(db->env, NULL, flags, out);
    }
    return rc ? lmdb_err(err, db, rc, "cannot begin a transaction") : TIO_OK;
}

/* Reads the metadata; a new writable store gets it written. */
static int load_meta(tio_lmdb *db, const tio_lmdb_options *o, tio_error *err) {
    MDB_txn *t;
    int rc = begin_txn(db, db->write ? 0 : MDB_RDONLY, &t, err);
    if (rc != TIO_OK) return rc;
    int mrc = mdb_dbi_open(t, NULL, 0, &db->dbi);
    MDB_val k = {sizeof META_KEY - 1, (void *)META_KEY}, v;
    if (mrc == 0) mrc = mdb_get(t, db->dbi, &k, &v);
    if (mrc == 0) {
        rc = parse_meta(db, &v, err);
        if (rc == TIO_OK && db->write && o->format && strcmp(o->format, db->format) != 0)
            rc = tio__err(err, TIO_E_ARGUMENT, FMT, -1,
                          "%s: the store holds %s records, not %s", db->path, db->format,
                          o->format);
        mdb_txn_abort(t);
        return rc;
    }
    if (mrc != MDB_NOTFOUND) {
        mdb_txn_abort(t);
        return lmdb_err(err, db, mrc, "cannot read the metadata");
    }
    const char *name = o->format ? o->format : (db->write ? "tenbin" : NULL);
    if (name && (!known_format(name) || strlen(name) >= sizeof db->format)) {
        mdb_txn_abort(t);
        return tio__err(err, TIO_E_FORMAT, FMT, -1, "unknown format \"%.32s\"", name);
    }
    snprintf(db->format, sizeof db->format, "%s", name ? name : "");
    MDB_stat st;
    if (!db->write || mdb_stat(t, db->dbi, &st) != 0 || st.ms_entries != 0) {
        mdb_txn_abort(t); /* read-only, or someone else's store: left as it is */
        return TIO_OK;
    }
    char text[64];
    int n = snprintf(text, sizeof text, "{\"format\": \"%s\", \"version\": %d}", db->format,
                     META_VERSION);
    MDB_val mv = {(size_t)n, text};
    mrc = mdb_put(t, db->dbi, &k, &mv, 0);
    if (mrc == 0) return (mrc = mdb_txn_commit(t)) ? lmdb_err(err, db, mrc, "commit") : TIO_OK;
    mdb_txn_abort(t);
    return lmdb_err(err, db, mrc, "cannot write the metadata");
}

int tio_lmdb_open(const char *path, const tio_lmdb_options *opts, tio_lmdb **out,
                  tio_error *err) {
    if (!path || !out) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_lmdb_open: bad arguments");
    *out = NULL;
    tio_lmdb_options o;
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    tio_lmdb *db = calloc(1, sizeof *db);
    if (!db) return tio__nomem(err, FMT);
    atomic_init(&db->refs, 1);
    atomic_init(&db->readers, 0);
    db->write = (o.flags & TIO_LMDB_WRITE) != 0;
    db->limits = tio__limits_resolve(o.limits);
    db->batch = o.batch ? o.batch : DEFAULT_BATCH;
    db->map_size = o.map_size ? o.map_size : DEFAULT_MAP_SIZE;
    if (o.save) db->save = *o.save;
    db->path = strdup(path);
    int rc = db->path ? resolve_path(db, o.flags, err) : tio__nomem(err, FMT);
    if (rc != TIO_OK) goto fail;
    int mrc = mdb_env_create(&db->env);
    if (mrc == 0 && db->write) mrc = mdb_env_set_mapsize(db->env, (size_t)db->map_size);
    if (mrc == 0) {
        unsigned flags = MDB_NOTLS | (db->file_mode ? MDB_NOSUBDIR : 0) |
                         (db->write ? 0 : MDB_RDONLY);
        mrc = mdb_env_open(db->env, path, flags, 0666);
    }
    if (mrc != 0) {
        rc = lmdb_err(err, db, mrc, "cannot open the environment");
        goto fail;
    }
    rc = check_file_size(db, err);
    if (rc == TIO_OK) rc = load_meta(db, &o, err);
    if (rc == TIO_OK && db->write) {
        MDB_envinfo info;
        if (mdb_env_info(db->env, &info) == 0) db->map_size = info.me_mapsize;
    }
    if (rc != TIO_OK) goto fail;
    *out = db;
    return TIO_OK;
fail:
    db_unref(db);
    return rc;
}

void tio_lmdb_close(tio_lmdb *db) {
    if (!db) return;
    if (db->write) tio_lmdb_commit(db, NULL);
    db_unref(db);
}

const char *tio_lmdb_format(const tio_lmdb *db) {
    return db && db->format[0] ? db->format : NULL;
}

/* ------------------------------------------------------------- writes */

/* After MDB_MAP_FULL (the write transaction is gone): doubles the map and
 * writes the pending batch again into a new transaction. */
static int grow_and_replay(tio_lmdb *db, tio_error *err) {
    for (int g = 0; g < MAX_GROWS; g++) {
        if (atomic_load(&db->readers) != 0)
            return tio__err(err, TIO_E_LIMIT, FMT, -1,
                            "%s: the map (%llu bytes) is full and cannot grow while read "
                            "transactions of this process are open",
                            db->path, (unsigned long long)db->map_size);
        uint64_t size;
        if (tio__mul64_ovf(db->map_size, 2, &size) || size > SIZE_MAX)
            return tio__err(err, TIO_E_LIMIT, FMT, -1, "%s: the map cannot grow past %llu bytes",
                            db->path, (unsigned long long)db->map_size);
        int mrc = mdb_env_set_mapsize(db->env, (size_t)size);
        if (mrc != 0) return lmdb_err(err, db, mrc, "cannot grow the map");
        db->map_size = size;
        int rc = begin_txn(db, 0, &db->wtxn, err);
        if (rc != TIO_OK) return rc;
        mrc = 0;
        for (size_t i = 0; i < db->npending && mrc == 0; i++) {
            pending_rec *p = &db->pending[i];
            MDB_val k = {p->key_size, p->key}, v = {p->size, p->data};
            mrc = mdb_put(db->wtxn, db->dbi, &k, &v, 0);
        }
        if (mrc == 0) return TIO_OK;
        mdb_txn_abort(db->wtxn);
        db->wtxn = NULL;
        if (mrc != MDB_MAP_FULL) return lmdb_err(err, db, mrc, "cannot write a record");
    }
    return tio__err(err, TIO_E_LIMIT, FMT, -1, "%s: the map is still full after growing",
                    db->path);
}

/* Fails the batch: nothing of it is written. */
static int fail_batch(tio_lmdb *db, int rc, tio_error *err) {
    if (db->wtxn) mdb_txn_abort(db->wtxn);
    db->wtxn = NULL;
    size_t n = db->npending;
    drop_pending(db);
    if (err && n) {
        size_t len = strlen(err->message);
        snprintf(err->message + len, sizeof err->message - len,
                 " (the batch of %zu record%s is not written)", n, n == 1 ? "" : "s");
    }
    return rc;
}

int tio_lmdb_commit(tio_lmdb *db, tio_error *err) {
    if (!db || !db->write)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_lmdb_commit: not a writable store");
    for (int g = 0; db->wtxn; g++) {
        int mrc = mdb_txn_commit(db->wtxn); /* frees the transaction, either way */
        db->wtxn = NULL;
        if (mrc == 0) break;
        int rc = mrc == MDB_MAP_FULL && g < MAX_GROWS ? grow_and_replay(db, err)
                                                      : lmdb_err(err, db, mrc, "commit");
        if (rc != TIO_OK) return fail_batch(db, rc, err);
    }
    drop_pending(db);
    return TIO_OK;
}

/* Takes data (released with tio_free). */
static int put_owned(tio_lmdb *db, const void *key, size_t key_size, void *data, size_t size,
                     tio_error *err) {
    if (db->npending == db->cap_pending) {
        size_t ncap = db->cap_pending ? 2 * db->cap_pending : 16;
        pending_rec *p = realloc(db->pending, ncap * sizeof *p);
        if (!p) {
            tio_free(data);
            return tio__nomem(err, FMT);
        }
        db->pending = p;
        db->cap_pending = ncap;
    }
    void *k = malloc(key_size);
    if (!k) {
        tio_free(data);
        return tio__nomem(err, FMT);
    }
    memcpy(k, key, key_size);
    db->pending[db->npending++] = (pending_rec){k, key_size, data, size};
    db->pending_bytes += size;
    int rc = db->wtxn ? TIO_OK : begin_txn(db, 0, &db->wtxn, err);
    if (rc != TIO_OK) return fail_batch(db, rc, err);
    MDB_val mk = {key_size, k}, mv = {size, data};
    int mrc = mdb_put(db->wtxn, db->dbi, &mk, &mv, 0);
    if (mrc == MDB_MAP_FULL) {
        mdb_txn_abort(db->wtxn);
        db->wtxn = NULL;
        rc = grow_and_replay(db, err);
    } else if (mrc != 0) {
        char kt[80];
        key_text(key, key_size, kt, sizeof kt);
        rc = tio__err(err, code_of(mrc), FMT, -1, "%s: record \"%s\": %s", db->path, kt,
                      mdb_strerror(mrc));
    }
    if (rc != TIO_OK) return fail_batch(db, rc, err);
    if (db->npending >= db->batch || db->pending_bytes >= PENDING_BYTES_CAP)
        return tio_lmdb_commit(db, err);
    return TIO_OK;
}

static int check_put(tio_lmdb *db, const void *key, size_t key_size, tio_error *err) {
    if (!db || !db->write)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_lmdb_put: not a writable store");
    return check_key(db, key, key_size, err);
}

int tio_lmdb_put(tio_lmdb *db, const void *key, size_t key_size, const tio_container *c,
                 tio_error *err) {
    int rc = check_put(db, key, key_size, err);
    if (rc != TIO_OK) return rc;
    if (!c) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_lmdb_put: no container");
    tio_save_options so = db->save;
    so.format = db->format;
    void *buf = NULL;
    size_t n = 0;
    rc = tio_save_memory(c, &so, &buf, &n, err);
    if (rc != TIO_OK) return rc;
    return put_owned(db, key, key_size, buf, n, err);
}

int tio_lmdb_put_bytes(tio_lmdb *db, const void *key, size_t key_size, const void *data,
                       size_t size, tio_error *err) {
    int rc = check_put(db, key, key_size, err);
    if (rc != TIO_OK) return rc;
    if (!data && size) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_lmdb_put_bytes: no data");
    tio_open_options o;
    memset(&o, 0, sizeof o);
    o.format = db->format;
    o.limits = &db->limits;
    tio_container *c = NULL;
    rc = tio_open_memory(data, size, &o, &c, err);
    tio_container_free(c);
    if (rc != TIO_OK) return rc;
    void *buf = malloc(size ? size : 1);
    if (!buf) return tio__nomem(err, FMT);
    if (size) memcpy(buf, data, size);
    return put_owned(db, key, key_size, buf, size, err);
}

/* -------------------------------------------------------------- reads */

static void txn_unref(void *ctx) {
    tio_lmdb_txn *t = ctx;
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1) return;
    if (t->cur) mdb_cursor_close(t->cur);
    mdb_txn_abort(t->txn);
    tio_lmdb *db = t->db;
    atomic_fetch_sub_explicit(&db->readers, 1, memory_order_acq_rel);
    free(t);
    db_unref(db);
}

int tio_lmdb_read_begin(tio_lmdb *db, tio_lmdb_txn **out, tio_error *err) {
    if (!db || !out) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_lmdb_read_begin: bad arguments");
    *out = NULL;
    tio_lmdb_txn *t = calloc(1, sizeof *t);
    if (!t) return tio__nomem(err, FMT);
    int rc = begin_txn(db, MDB_RDONLY, &t->txn, err);
    if (rc != TIO_OK) {
        free(t);
        return rc;
    }
    atomic_init(&t->refs, 1);
    atomic_fetch_add_explicit(&db->refs, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&db->readers, 1, memory_order_relaxed);
    t->db = db;
    *out = t;
    return TIO_OK;
}

void tio_lmdb_read_end(tio_lmdb_txn *txn) {
    if (txn) txn_unref(txn);
}

uint64_t tio_lmdb_count(const tio_lmdb_txn *txn) {
    if (!txn) return 0;
    MDB_stat st;
    if (mdb_stat(txn->txn, txn->db->dbi, &st) != 0) return 0;
    MDB_val k = {sizeof META_KEY - 1, (void *)META_KEY}, v;
    uint64_t n = st.ms_entries;
    if (n && mdb_get(txn->txn, txn->db->dbi, &k, &v) == 0) n--;
    return n;
}

int tio_lmdb_find(tio_lmdb_txn *txn, const void *key, size_t key_size, tio_lmdb_record *rec,
                  tio_error *err) {
    if (!txn || !rec) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_lmdb_find: bad arguments");
    int rc = check_key(txn->db, key, key_size, err);
    if (rc != TIO_OK) return rc;
    MDB_val k = {key_size, (void *)key}, v;
    int mrc = mdb_get(txn->txn, txn->db->dbi, &k, &v);
    if (mrc != 0) {
        char kt[80];
        key_text(key, key_size, kt, sizeof kt);
        return tio__err(err, code_of(mrc), FMT, -1, "%s: record \"%s\": %s", txn->db->path, kt,
                        mrc == MDB_NOTFOUND ? "no such key" : mdb_strerror(mrc));
    }
    *rec = (tio_lmdb_record){key, key_size, v.mv_data, v.mv_size, txn};
    return TIO_OK;
}

void tio_lmdb_rewind(tio_lmdb_txn *txn) {
    if (txn) txn->started = 0;
}

int tio_lmdb_next(tio_lmdb_txn *txn, tio_lmdb_record *rec, tio_error *err) {
    if (!txn || !rec) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_lmdb_next: bad arguments");
    if (!txn->cur) {
        int mrc = mdb_cursor_open(txn->txn, txn->db->dbi, &txn->cur);
        if (mrc != 0) return lmdb_err(err, txn->db, mrc, "cannot open a cursor");
    }
    MDB_val k, v;
    int mrc;
    do {
        mrc = mdb_cursor_get(txn->cur, &k, &v, txn->started ? MDB_NEXT : MDB_FIRST);
        txn->started = 1;
    } while (mrc == 0 && is_meta(&k));
    if (mrc == MDB_NOTFOUND)
        return tio__err(err, TIO_E_NOT_FOUND, FMT, -1, "%s: no more records", txn->db->path);
    if (mrc != 0) return lmdb_err(err, txn->db, mrc, "cannot read the next record");
    *rec = (tio_lmdb_record){k.mv_data, k.mv_size, v.mv_data, v.mv_size, txn};
    return TIO_OK;
}

int tio_lmdb_open_record(tio_lmdb_txn *txn, const tio_lmdb_record *rec,
                         const tio_open_options *opts, tio_container **out, tio_error *err) {
    if (!txn || !rec || !out || !rec->key)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_lmdb_open_record: bad arguments");
    *out = NULL;
    tio_lmdb *db = txn->db;
    if (rec->txn != txn)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1,
                        "tio_lmdb_open_record: the record is not one of this transaction's");
    tio_open_options o;
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    if (!o.limits) o.limits = &db->limits;
    if (!o.format && db->format[0]) o.format = db->format;
    int borrow = !(o.flags & TIO_OPEN_COPY);
    if (borrow) atomic_fetch_add_explicit(&txn->refs, 1, memory_order_relaxed);
    tio_container *c = NULL;
    tio_error inner;
    tio_error_clear(&inner);
    int rc = tio_open_memory(rec->data, rec->size, &o, &c, &inner);
    if (rc == TIO_OK && borrow) {
        rc = tio_container_on_release(c, txn_unref, txn, &inner);
        if (rc != TIO_OK) {
            tio_container_free(c);
            c = NULL;
        } else {
            borrow = 0; /* the container holds the transaction now */
        }
    }
    if (borrow) txn_unref(txn);
    if (rc != TIO_OK && err) {
        char kt[80];
        key_text(rec->key, rec->key_size, kt, sizeof kt);
        *err = inner;
        int n = snprintf(err->message, sizeof err->message, "%s: record \"%s\": ", db->path, kt);
        size_t used = n < 0 ? 0 : (size_t)n, room = sizeof err->message;
        if (used < room) {
            size_t k = strlen(inner.message);
            if (k > room - 1 - used) k = room - 1 - used;
            memcpy(err->message + used, inner.message, k);
            err->message[used + k] = 0;
        }
    }
    *out = c;
    return rc;
}

int tio_lmdb_get(tio_lmdb_txn *txn, const void *key, size_t key_size,
                 const tio_open_options *opts, tio_container **out, tio_error *err) {
    if (out) *out = NULL;
    tio_lmdb_record rec;
    int rc = tio_lmdb_find(txn, key, key_size, &rec, err);
    return rc == TIO_OK ? tio_lmdb_open_record(txn, &rec, opts, out, err) : rc;
}
