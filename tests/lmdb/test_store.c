/* LMDB stores (src/lmdb/store.c): round trips in several record formats,
 * zero-copy views into LMDB's map, the read-transaction lifetime rule,
 * batched writes that grow the map, every class of bad record and bad
 * metadata, truncated data files opened read-only, and a writer killed with
 * SIGKILL. Children never use cmocka's asserts: they report through exit
 * statuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tensio.h"

#define EXPECT(cond, ...)                   \
    do {                                    \
        if (!(cond)) fail_msg(__VA_ARGS__); \
    } while (0)

static void make_dir(char *tmpl) { assert_non_null(mkdtemp(tmpl)); }

static void remove_tree(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Record i: a float32 [i % 7 + 1, 3] of i + k/8 and an int64 [2] {i, -i},
 * bytes bytes of uint8 extra when extra > 0. */
typedef struct record {
    float f[64 * 3];
    int64_t q[2];
    uint8_t *extra;
    size_t nextra;
    tio_container *c;
} record;

static void record_init(record *r, unsigned i, size_t extra) {
    memset(r, 0, sizeof *r);
    int64_t rows = (int64_t)(i % 7 + 1);
    for (int64_t k = 0; k < rows * 3; k++) r->f[k] = (float)i + (float)k / 8.0f;
    r->q[0] = (int64_t)i;
    r->q[1] = -(int64_t)i;
    r->c = tio_container_new();
    assert_non_null(r->c);
    int64_t s0[2] = {rows, 3}, s1[1] = {2}, s2[1] = {(int64_t)extra};
    tio_tensor_desc d = {"f", TIO_FLOAT32, 2, s0, TIO_LAYOUT_DENSE, r->f,
                         (size_t)(rows * 3) * sizeof(float), 0, NULL};
    tio_error e;
    EXPECT(tio_container_add(r->c, &d, TIO_ADD_BORROW, NULL, &e) == TIO_OK, "%s", e.message);
    tio_tensor_desc d1 = {"q", TIO_INT64, 1, s1, TIO_LAYOUT_DENSE, r->q, sizeof r->q, 0, NULL};
    EXPECT(tio_container_add(r->c, &d1, TIO_ADD_BORROW, NULL, &e) == TIO_OK, "%s", e.message);
    if (extra) {
        r->extra = malloc(extra);
        assert_non_null(r->extra);
        for (size_t k = 0; k < extra; k++) r->extra[k] = (uint8_t)(k * 31 + i);
        r->nextra = extra;
        tio_tensor_desc d2 = {"x", TIO_UINT8, 1, s2, TIO_LAYOUT_DENSE, r->extra, extra, 0, NULL};
        EXPECT(tio_container_add(r->c, &d2, TIO_ADD_BORROW, NULL, &e) == TIO_OK, "%s",
               e.message);
    }
}

static void record_free(record *r) {
    tio_container_free(r->c);
    free(r->extra);
}

/* Whether c holds record i's tensors (names when the format keeps them). */
static int record_equal(const tio_container *c, unsigned i, size_t extra) {
    record r;
    record_init(&r, i, extra);
    int ok = tio_container_count(c) == tio_container_count(r.c);
    for (size_t t = 0; ok && t < tio_container_count(c); t++) {
        const tio_tensor *b = tio_container_tensor(r.c, t);
        const tio_tensor *a = tio_container_find(c, tio_tensor_name(b)); /* safetensors sorts */
        if (!a) a = tio_container_tensor(c, t);                           /* names dropped */
        ok = tio_tensor_dtype(a) == tio_tensor_dtype(b) &&
             tio_tensor_rank(a) == tio_tensor_rank(b) &&
             memcmp(tio_tensor_shape(a), tio_tensor_shape(b),
                    tio_tensor_rank(a) * sizeof(int64_t)) == 0 &&
             tio_tensor_nbytes(a) == tio_tensor_nbytes(b) &&
             memcmp(tio_tensor_data(a), tio_tensor_data(b), tio_tensor_nbytes(a)) == 0;
    }
    record_free(&r);
    return ok;
}

static void key_of(unsigned i, char *buf, size_t cap) { snprintf(buf, cap, "k%06u", i); }

static tio_lmdb *open_write(const char *path, const char *format, size_t batch,
                            uint64_t map_size) {
    tio_lmdb_options o;
    memset(&o, 0, sizeof o);
    o.flags = TIO_LMDB_WRITE;
    o.format = format;
    o.batch = batch;
    o.map_size = map_size;
    tio_lmdb *db = NULL;
    tio_error e;
    EXPECT(tio_lmdb_open(path, &o, &db, &e) == TIO_OK, "%s: %s", path, e.message);
    return db;
}

static tio_lmdb *open_read(const char *path) {
    tio_lmdb *db = NULL;
    tio_error e;
    EXPECT(tio_lmdb_open(path, NULL, &db, &e) == TIO_OK, "%s: %s", path, e.message);
    return db;
}

static void put_records(tio_lmdb *db, unsigned from, unsigned to, size_t extra) {
    for (unsigned i = from; i < to; i++) {
        record r;
        record_init(&r, i, extra);
        char key[32];
        key_of(i, key, sizeof key);
        tio_error e;
        EXPECT(tio_lmdb_put(db, key, strlen(key), r.c, &e) == TIO_OK, "put %s: %s", key,
               e.message);
        record_free(&r);
    }
}

/* Every record k000000.. of the store is there, in order, and equal. */
static void check_records(const char *path, unsigned n, size_t extra) {
    tio_lmdb *db = open_read(path);
    tio_lmdb_txn *txn = NULL;
    tio_error e;
    EXPECT(tio_lmdb_read_begin(db, &txn, &e) == TIO_OK, "%s", e.message);
    assert_int_equal(tio_lmdb_count(txn), n);
    tio_lmdb_record rec;
    unsigned i = 0;
    while (tio_lmdb_next(txn, &rec, &e) == TIO_OK) {
        char key[32];
        key_of(i, key, sizeof key);
        EXPECT(rec.key_size == strlen(key) && memcmp(rec.key, key, rec.key_size) == 0,
               "record %u: key %.*s", i, (int)rec.key_size, (const char *)rec.key);
        tio_container *c = NULL;
        EXPECT(tio_lmdb_open_record(txn, &rec, NULL, &c, &e) == TIO_OK, "%s", e.message);
        EXPECT(record_equal(c, i, extra), "%s: record %s differs", path, key);
        tio_container_free(c);
        i++;
    }
    assert_int_equal(e.code, TIO_E_NOT_FOUND);
    assert_int_equal(i, n);
    tio_lmdb_read_end(txn);
    tio_lmdb_close(db);
}

/* ------------------------------------------------------------ round trip */

static void test_round_trip(void **state) {
    (void)state;
    static const struct {
        const char *format, *name;
    } cases[] = {{NULL, "d.lmdb"}, {"npz", "f.mdb"}, {"safetensors", "s.lmdb"}, {"zio", "z.lmdb"}};
    char dir[] = "/tmp/tio-lmdb-XXXXXX";
    make_dir(dir);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char path[300];
        snprintf(path, sizeof path, "%s/%s", dir, cases[k].name);
        tio_lmdb *db = open_write(path, cases[k].format, 0, 0);
        put_records(db, 0, 50, k == 0 ? 5000 : 0);
        tio_error e;
        EXPECT(tio_lmdb_commit(db, &e) == TIO_OK, "%s", e.message);
        tio_lmdb_close(db);
        check_records(path, 50, k == 0 ? 5000 : 0);
        /* self-describing: the format comes back without being named */
        db = open_read(path);
        assert_string_equal(tio_lmdb_format(db), cases[k].format ? cases[k].format : "tenbin");
        tio_lmdb_close(db);
        /* ".mdb" is a single file, the others a directory */
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(S_ISDIR(st.st_mode), strstr(cases[k].name, ".mdb") == NULL);
        /* writing another format into it is refused */
        tio_lmdb_options o;
        memset(&o, 0, sizeof o);
        o.flags = TIO_LMDB_WRITE;
        o.format = "npy";
        db = NULL;
        if (strcmp(cases[k].format ? cases[k].format : "tenbin", "npy") != 0) {
            assert_int_equal(tio_lmdb_open(path, &o, &db, &e), TIO_E_ARGUMENT);
            assert_null(db);
        }
    }
    /* misuse: reserved and empty keys, a missing key, a record of another
     * transaction, a read-only put */
    char path[300];
    snprintf(path, sizeof path, "%s/d.lmdb", dir);
    tio_lmdb *db = open_read(path);
    tio_error e;
    tio_container *c = NULL;
    assert_int_equal(tio_lmdb_put(db, "a", 1, c, &e), TIO_E_ARGUMENT);
    tio_lmdb_txn *t1 = NULL, *t2 = NULL;
    assert_int_equal(tio_lmdb_read_begin(db, &t1, &e), TIO_OK);
    assert_int_equal(tio_lmdb_read_begin(db, &t2, &e), TIO_OK);
    assert_int_equal(tio_lmdb_get(t1, "__tensio__", 10, NULL, &c, &e), TIO_E_ARGUMENT);
    assert_int_equal(tio_lmdb_get(t1, "", 0, NULL, &c, &e), TIO_E_ARGUMENT);
    assert_int_equal(tio_lmdb_get(t1, "nope", 4, NULL, &c, &e), TIO_E_NOT_FOUND);
    assert_non_null(strstr(e.message, "\"nope\""));
    assert_null(c);
    tio_lmdb_record rec;
    assert_int_equal(tio_lmdb_find(t1, "k000003", 7, &rec, &e), TIO_OK);
    assert_int_equal(tio_lmdb_open_record(t2, &rec, NULL, &c, &e), TIO_E_ARGUMENT);
    assert_int_equal(tio_lmdb_open_record(t1, &rec, NULL, &c, &e), TIO_OK);
    EXPECT(record_equal(c, 3, 5000), "k000003 differs");
    tio_container_free(c);
    tio_lmdb_read_end(t2);
    tio_lmdb_read_end(t1);
    tio_lmdb_close(db);
    remove_tree(dir);
}

/* -------------------------------------------------------------- zero copy */

/* Whether p lies in a mapping of a file whose path ends with name. */
static int in_file_mapping(const void *p, const char *name) {
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[1024];
    int yes = 0;
    uintptr_t x = (uintptr_t)p;
    while (!yes && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) != 2) continue;
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        size_t n = strlen(line), k = strlen(name);
        yes = x >= lo && x < hi && n >= k && strcmp(line + n - k, name) == 0;
    }
    fclose(f);
    return yes;
}

static void test_zero_copy(void **state) {
    (void)state;
    char dir[] = "/tmp/tio-lmdb-XXXXXX";
    make_dir(dir);
    char path[300];
    snprintf(path, sizeof path, "%s/z.lmdb", dir);
    tio_lmdb *db = open_write(path, NULL, 0, 0);
    put_records(db, 0, 20, 100000); /* large records: overflow pages */
    put_records(db, 20, 40, 0);     /* small ones: inside leaf pages */
    tio_lmdb_close(db);
    db = open_read(path);
    tio_lmdb_txn *txn = NULL;
    tio_error e;
    assert_int_equal(tio_lmdb_read_begin(db, &txn, &e), TIO_OK);
    for (unsigned i = 0; i < 40; i += 13) {
        char key[32];
        key_of(i, key, sizeof key);
        tio_lmdb_record rec;
        assert_int_equal(tio_lmdb_find(txn, key, strlen(key), &rec, &e), TIO_OK);
        tio_container *c = NULL;
        EXPECT(tio_lmdb_open_record(txn, &rec, NULL, &c, &e) == TIO_OK, "%s", e.message);
        for (size_t t = 0; t < tio_container_count(c); t++) {
            const uint8_t *d = tio_tensor_data(tio_container_tensor(c, t));
            EXPECT(in_file_mapping(d, "/data.mdb"), "%s tensor %zu: not in data.mdb's map", key,
                   t);
            EXPECT(d >= (const uint8_t *)rec.data && d < (const uint8_t *)rec.data + rec.size,
                   "%s tensor %zu: not inside the record's bytes", key, t);
        }
        tio_container_free(c);
        /* TIO_OPEN_COPY: not a view */
        tio_open_options o;
        memset(&o, 0, sizeof o);
        o.flags = TIO_OPEN_COPY;
        assert_int_equal(tio_lmdb_open_record(txn, &rec, &o, &c, &e), TIO_OK);
        EXPECT(!in_file_mapping(tio_tensor_data(tio_container_tensor(c, 0)), "/data.mdb"),
               "a copy in the map");
        tio_container_free(c);
    }
    tio_lmdb_read_end(txn);
    tio_lmdb_close(db);
    remove_tree(dir);
}

/* ----------------------------------------------------------- lifetime rule */

static void test_lifetime(void **state) {
    (void)state;
    char dir[] = "/tmp/tio-lmdb-XXXXXX";
    make_dir(dir);
    char path[300];
    snprintf(path, sizeof path, "%s/l.lmdb", dir);
    tio_lmdb *db = open_write(path, NULL, 0, 0);
    put_records(db, 0, 10, 3000);
    tio_lmdb_close(db);
    /* a container outlives read_end and close: the snapshot stays mapped
     * (ASan would see a read after the unmap) */
    tio_lmdb *rd = open_read(path);
    tio_lmdb_txn *txn = NULL;
    tio_error e;
    assert_int_equal(tio_lmdb_read_begin(rd, &txn, &e), TIO_OK);
    tio_container *c = NULL, *c2 = NULL;
    assert_int_equal(tio_lmdb_get(txn, "k000004", 7, NULL, &c, &e), TIO_OK);
    assert_int_equal(tio_lmdb_get(txn, "k000005", 7, NULL, &c2, &e), TIO_OK);
    tio_lmdb_read_end(txn);
    tio_lmdb_close(rd);
    tio_container_free(c2);
    EXPECT(record_equal(c, 4, 3000), "k000004 after read_end and close");
    tio_container_free(c); /* the last hold: the transaction and the store end */

    /* the writer replaces k000004: an open container still sees its snapshot
     * (one environment per process, as LMDB wants: the writer's own reads) */
    db = open_write(path, NULL, 1, 1 << 20);
    assert_int_equal(tio_lmdb_read_begin(db, &txn, &e), TIO_OK);
    assert_int_equal(tio_lmdb_get(txn, "k000004", 7, NULL, &c, &e), TIO_OK);
    tio_lmdb_read_end(txn);
    record r;
    record_init(&r, 99, 3000);
    assert_int_equal(tio_lmdb_put(db, "k000004", 7, r.c, &e), TIO_OK); /* batch 1: committed */
    record_free(&r);
    EXPECT(record_equal(c, 4, 3000), "the old snapshot changed under its container");
    tio_container *c3 = NULL;
    assert_int_equal(tio_lmdb_read_begin(db, &txn, &e), TIO_OK);
    assert_int_equal(tio_lmdb_get(txn, "k000004", 7, NULL, &c3, &e), TIO_OK);
    tio_lmdb_read_end(txn);
    EXPECT(record_equal(c3, 99, 3000), "k000004 was not replaced");
    tio_container_free(c3);

    /* while c holds its read transaction the map cannot grow (LMDB's rule):
     * a write that needs more room fails cleanly, and works once c is gone */
    record big;
    record_init(&big, 7, (size_t)2 << 20); /* more than the 1 MiB map */
    assert_int_equal(tio_lmdb_put(db, "big", 3, big.c, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "read transactions"));
    EXPECT(record_equal(c, 4, 3000), "held record changed");
    tio_container_free(c);
    EXPECT(tio_lmdb_put(db, "big", 3, big.c, &e) == TIO_OK, "%s", e.message);
    record_free(&big);
    tio_lmdb_close(db);
    remove_tree(dir);
}

/* --------------------------------------------------------- batched writes */

static void test_batches(void **state) {
    (void)state;
    char dir[] = "/tmp/tio-lmdb-XXXXXX";
    make_dir(dir);
    char path[300];
    snprintf(path, sizeof path, "%s/b.lmdb", dir);
    /* 64 KiB map, 25 records of ~8 KiB: the map grows on the way */
    tio_lmdb *db = open_write(path, NULL, 10, 64 << 10);
    put_records(db, 0, 25, 8000);
    tio_lmdb_txn *txn = NULL;
    tio_error e;
    assert_int_equal(tio_lmdb_read_begin(db, &txn, &e), TIO_OK);
    assert_int_equal(tio_lmdb_count(txn), 20); /* two whole batches, the third pending */
    tio_lmdb_read_end(txn);
    assert_int_equal(tio_lmdb_commit(db, &e), TIO_OK);
    tio_lmdb_close(db);
    check_records(path, 25, 8000);
    struct stat st;
    char data[320];
    snprintf(data, sizeof data, "%s/data.mdb", path);
    assert_int_equal(stat(data, &st), 0);
    EXPECT(st.st_size > (64 << 10), "data.mdb is %lld bytes: the map did not grow",
           (long long)st.st_size);
    remove_tree(dir);
}
/* ------------------------------------------------------------ bad records */

/* Writes key -> bytes with liblmdb itself (no check). */
static void raw_put(const char *path, const char *key, const void *data, size_t size) {
    MDB_env *env;
    MDB_txn *t;
    MDB_dbi dbi;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_open(env, path, 0, 0644), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &t), 0);
    assert_int_equal(mdb_dbi_open(t, NULL, 0, &dbi), 0);
    MDB_val k = {strlen(key), (void *)key}, v = {size, (void *)data};
    assert_int_equal(mdb_put(t, dbi, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(t), 0);
    mdb_env_close(env);
}

static void test_bad_records(void **state) {
    (void)state;
    char dir[] = "/tmp/tio-lmdb-XXXXXX";
    make_dir(dir);
    char path[300];
    snprintf(path, sizeof path, "%s/bad.lmdb", dir);
    tio_lmdb *db = open_write(path, NULL, 0, 0);
    put_records(db, 0, 3, 0);
    tio_lmdb_close(db);
    /* a good record's bytes, to damage */
    record r;
    record_init(&r, 1, 0);
    tio_save_options so;
    memset(&so, 0, sizeof so);
    so.format = "tenbin";
    void *good = NULL;
    size_t n = 0;
    tio_error e;
    assert_int_equal(tio_save_memory(r.c, &so, &good, &n, &e), TIO_OK);
    so.format = "npy";
    tio_container *one = tio_container_new();
    int64_t s1[1] = {4};
    float v[4] = {1, 2, 3, 4};
    tio_tensor_desc d = {NULL, TIO_FLOAT32, 1, s1, TIO_LAYOUT_DENSE, v, sizeof v, 0, NULL};
    assert_int_equal(tio_container_add(one, &d, 0, NULL, &e), TIO_OK);
    void *npy = NULL;
    size_t nnpy = 0;
    assert_int_equal(tio_save_memory(one, &so, &npy, &nnpy, &e), TIO_OK);
    tio_container_free(one);
    uint8_t *flip = malloc(n), *dims = malloc(n);
    memcpy(flip, good, n);
    memcpy(dims, good, n);
    flip[0] ^= 0xff;                 /* magic */
    memset(dims + 16 + 24, 0x7f, 8); /* first dim of the first header: huge */
    static const char garbage[] = "hello, not a tensor";
    const struct {
        const char *key;
        const void *data;
        size_t size;
    } bad[] = {
        {"b-garbage", garbage, sizeof garbage},
        {"b-truncated", good, n / 2 + 3},
        {"b-magic", flip, n},
        {"b-dims", dims, n},
        {"b-npy", npy, nnpy}, /* another format than the store's */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        raw_put(path, bad[k].key, bad[k].data, bad[k].size);
    db = open_read(path);
    tio_lmdb_txn *txn = NULL;
    assert_int_equal(tio_lmdb_read_begin(db, &txn, &e), TIO_OK);
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        tio_container *c = NULL;
        int rc = tio_lmdb_get(txn, bad[k].key, strlen(bad[k].key), NULL, &c, &e);
        EXPECT(rc != TIO_OK && rc != TIO_E_NOT_FOUND, "%s: rc %d", bad[k].key, rc);
        assert_null(c);
        char want[64];
        snprintf(want, sizeof want, "record \"%s\"", bad[k].key);
        EXPECT(strstr(e.message, want) && strstr(e.message, "bad.lmdb"),
               "%s: the message names no key: %s", bad[k].key, e.message);
    }
    /* an empty record is a tenbin file of zero arrays: valid */
    tio_lmdb_read_end(txn);
    tio_lmdb_close(db);
    raw_put(path, "empty", "", 0);
    db = open_read(path);
    assert_int_equal(tio_lmdb_read_begin(db, &txn, &e), TIO_OK);
    tio_container *c = NULL;
    EXPECT(tio_lmdb_get(txn, "empty", 5, NULL, &c, &e) == TIO_OK, "%s", e.message);
    assert_int_equal(tio_container_count(c), 0);
    tio_container_free(c);
    /* the good ones still open, and a walk sees them all */
    assert_int_equal(tio_lmdb_get(txn, "k000002", 7, NULL, &c, &e), TIO_OK);
    tio_container_free(c);
    assert_int_equal(tio_lmdb_count(txn), 4 + sizeof bad / sizeof bad[0]);
    tio_lmdb_read_end(txn);
    tio_lmdb_close(db);
    /* put_bytes refuses what does not decode as the store's format */
    db = open_write(path, NULL, 0, 0);
    assert_int_not_equal(tio_lmdb_put_bytes(db, "x", 1, garbage, sizeof garbage, &e), TIO_OK);
    assert_int_not_equal(tio_lmdb_put_bytes(db, "x", 1, npy, nnpy, &e), TIO_OK);
    assert_int_equal(tio_lmdb_put_bytes(db, "x", 1, good, n, &e), TIO_OK);
    tio_lmdb_close(db);
    free(flip);
    free(dims);
    tio_free(npy);
    tio_free(good);
    record_free(&r);
    remove_tree(dir);
}

static void test_bad_metadata(void **state) {
    (void)state;
    static const struct {
        const char *meta;
        int code;
    } cases[] = {
        {"not json", TIO_E_CORRUPT},
        {"[1, 2]", TIO_E_CORRUPT},
        {"{\"format\": \"tenbin\"}", TIO_E_CORRUPT},
        {"{\"format\": 3, \"version\": 1}", TIO_E_CORRUPT},
        {"{\"format\": \"tenbin\", \"version\": 2}", TIO_E_UNSUPPORTED},
        {"{\"format\": \"tenbin\", \"version\": 0}", TIO_E_CORRUPT},
        {"{\"format\": \"nosuch\", \"version\": 1}", TIO_E_FORMAT},
        {"{\"format\": \"tenbin\", \"format\": \"npy\", \"version\": 1}", TIO_E_CORRUPT},
    };
    char dir[] = "/tmp/tio-lmdb-XXXXXX";
    make_dir(dir);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char path[300];
        snprintf(path, sizeof path, "%s/m%zu.lmdb", dir, k);
        tio_lmdb *db = open_write(path, NULL, 0, 0);
        put_records(db, 0, 2, 0);
        tio_lmdb_close(db);
        raw_put(path, "__tensio__", cases[k].meta, strlen(cases[k].meta));
        tio_error e;
        db = NULL;
        assert_int_equal(tio_lmdb_open(path, NULL, &db, &e), cases[k].code);
        assert_null(db);
        EXPECT(strstr(e.message, "m") && strstr(e.message, ".lmdb"), "%s", e.message);
    }
    /* no metadata at all (another program's store): records are probed */
    char path[300];
    snprintf(path, sizeof path, "%s/foreign.lmdb", dir);
    record r;
    record_init(&r, 3, 0);
    tio_save_options so;
    memset(&so, 0, sizeof so);
    so.format = "btf";
    so.flags = TIO_SAVE_DROP_NAMES;
    void *bytes = NULL;
    size_t n = 0;
    tio_error e;
    assert_int_equal(tio_save_memory(r.c, &so, &bytes, &n, &e), TIO_OK);
    assert_int_equal(mkdir(path, 0755), 0);
    raw_put(path, "k000003", bytes, n);
    tio_free(bytes);
    record_free(&r);
    tio_lmdb *db = open_read(path);
    assert_null(tio_lmdb_format(db));
    tio_lmdb_txn *txn = NULL;
    assert_int_equal(tio_lmdb_read_begin(db, &txn, &e), TIO_OK);
    tio_container *c = NULL;
    EXPECT(tio_lmdb_get(txn, "k000003", 7, NULL, &c, &e) == TIO_OK, "%s", e.message);
    EXPECT(record_equal(c, 3, 0), "probed record differs");
    assert_string_equal(tio_container_format(c), "btf");
    tio_container_free(c);
    tio_lmdb_read_end(txn);
    tio_lmdb_close(db);
    remove_tree(dir);
}

/* ------------------------------------------------------ truncated data.mdb */

static void copy_prefix(const char *from, const char *to, long n) {
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    assert_non_null(a);
    assert_non_null(b);
    for (long i = 0; i < n; i++) {
        int ch = fgetc(a);
        if (ch == EOF) break;
        fputc(ch, b);
    }
    fclose(a);
    assert_int_equal(fclose(b), 0);
}

static void test_truncated_file(void **state) {
    (void)state;
    char dir[] = "/tmp/tio-lmdb-XXXXXX";
    make_dir(dir);
    char path[300], data[320];
    snprintf(path, sizeof path, "%s/t.lmdb", dir);
    tio_lmdb *db = open_write(path, NULL, 0, 0);
    put_records(db, 0, 200, 2000);
    tio_lmdb_close(db);
    snprintf(data, sizeof data, "%s/data.mdb", path);
    struct stat st;
    assert_int_equal(stat(data, &st), 0);
    long psize = sysconf(_SC_PAGESIZE);
    /* empty, inside the first meta page, between the metas, the two metas
     * only, and half the file: every one an error, never a fault */
    const long cuts[] = {0, 100, psize + 100, 2 * psize, (long)st.st_size / 2,
                         (long)st.st_size - psize};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        char cut[340];
        snprintf(cut, sizeof cut, "%s/cut%zu.mdb", dir, k);
        copy_prefix(data, cut, cuts[k]);
        tio_lmdb *t = NULL;
        tio_error e;
        int rc = tio_lmdb_open(cut, NULL, &t, &e);
        EXPECT(rc != TIO_OK, "%s (%ld bytes of %lld) opened", cut, cuts[k],
               (long long)st.st_size);
        assert_null(t);
        if (cuts[k] >= 2 * psize)
            EXPECT(rc == TIO_E_TRUNCATED, "%s: %d %s", cut, rc, e.message);
    }
    remove_tree(dir);
}

/* --------------------------------------------------------- SIGKILL writer */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Child: appends records from..to in batches of 10. */
static int child_write(const char *path, unsigned from, unsigned to) {
    tio_lmdb_options o;
    memset(&o, 0, sizeof o);
    o.flags = TIO_LMDB_WRITE;
    o.batch = 10;
    tio_lmdb *db = NULL;
    if (tio_lmdb_open(path, &o, &db, NULL) != TIO_OK) return 3;
    for (unsigned i = from; i < to; i++) {
        record r;
        record_init(&r, i, 4000);
        char key[32];
        key_of(i, key, sizeof key);
        int rc = tio_lmdb_put(db, key, strlen(key), r.c, NULL);
        record_free(&r);
        if (rc != TIO_OK) return 4;
    }
    return tio_lmdb_commit(db, NULL) == TIO_OK ? 0 : 5;
}

static unsigned store_count(const char *path) {
    tio_lmdb *db = open_read(path);
    tio_lmdb_txn *txn = NULL;
    tio_error e;
    assert_int_equal(tio_lmdb_read_begin(db, &txn, &e), TIO_OK);
    unsigned n = (unsigned)tio_lmdb_count(txn);
    tio_lmdb_read_end(txn);
    tio_lmdb_close(db);
    return n;
}

static void test_sigkill(void **state) {
    (void)state;
    char dir[] = "/tmp/tio-lmdb-XXXXXX";
    make_dir(dir);
    char path[300];
    snprintf(path, sizeof path, "%s/k.lmdb", dir);
    tio_lmdb_close(open_write(path, NULL, 0, 0)); /* metadata in place */
    const unsigned per_run = 300;
    /* calibrate: one uninterrupted run */
    double t0 = now_s();
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(child_write(path, 0, per_run));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    double span = now_s() - t0;
    unsigned n = store_count(path), killed = 0, partial = 0;
    assert_int_equal(n, per_run);
    uint64_t seed = 0x5eedf00dull;
    for (int run = 0; run < 24; run++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        double delay = span * (double)(seed >> 33) / (double)(1ull << 31);
        fflush(NULL);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) _exit(child_write(path, n, n + per_run));
        struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFSIGNALED(status)) killed++;
        else EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed: %d", status);
        unsigned m = store_count(path);
        EXPECT(m >= n && m <= n + per_run && m % 10 == 0,
               "run %d: %u records after %u: not whole batches of 10", run, m, n);
        if (m > n && m < n + per_run) partial++;
        n = m;
    }
    check_records(path, n, 4000); /* every record whole and equal */
    print_message("lmdb SIGKILL: %u of 24 writers killed, %u mid-way; %u records, "
                  "one run %.1f ms\n", killed, partial, n, span * 1e3);
    EXPECT(killed > 0 && partial > 0, "no writer was killed mid-way (%u killed)", killed);
    remove_tree(dir);
}

/* ------------------------------------------------- containers on threads */

typedef struct held_record {
    tio_container *c;
    unsigned i;
    int ok;
} held_record;

static void *check_and_free(void *arg) {
    held_record *h = arg;
    h->ok = record_equal(h->c, h->i, 3000);
    tio_container_free(h->c); /* the last one ends the transaction, on this thread */
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    char dir[] = "/tmp/tio-lmdb-XXXXXX";
    make_dir(dir);
    char path[300];
    snprintf(path, sizeof path, "%s/t.lmdb", dir);
    tio_lmdb *db = open_write(path, NULL, 0, 0);
    put_records(db, 0, 8, 3000);
    tio_lmdb_close(db);
    for (int round = 0; round < 20; round++) {
        db = open_read(path);
        tio_lmdb_txn *txn = NULL;
        tio_error e;
        assert_int_equal(tio_lmdb_read_begin(db, &txn, &e), TIO_OK);
        held_record h[8];
        pthread_t th[8];
        for (unsigned i = 0; i < 8; i++) {
            char key[32];
            key_of(i, key, sizeof key);
            h[i] = (held_record){NULL, i, 0};
            assert_int_equal(tio_lmdb_get(txn, key, strlen(key), NULL, &h[i].c, &e), TIO_OK);
        }
        tio_lmdb_read_end(txn);
        tio_lmdb_close(db); /* the containers hold both */
        for (unsigned i = 0; i < 8; i++)
            assert_int_equal(pthread_create(&th[i], NULL, check_and_free, &h[i]), 0);
        for (unsigned i = 0; i < 8; i++) {
            assert_int_equal(pthread_join(th[i], NULL), 0);
            EXPECT(h[i].ok, "round %d: record %u differs on its thread", round, i);
        }
    }
    remove_tree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_zero_copy),
        cmocka_unit_test(test_lifetime),     cmocka_unit_test(test_batches),
        cmocka_unit_test(test_bad_records),  cmocka_unit_test(test_bad_metadata),
        cmocka_unit_test(test_truncated_file), cmocka_unit_test(test_sigkill),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
