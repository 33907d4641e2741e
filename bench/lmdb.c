/* tio_bench lmdb: random reads from an LMDB store as it grows.
 *
 *   tio_bench [--reps N] [--check] lmdb --dir DIR [--sizes 10000,100000,1000000]
 *             [--reads 10000] [--floats 64]
 *
 * One store in DIR/bench.lmdb grows through the sizes (records appended in
 * batches of 1000: tenbin containers of one float32 [floats] tensor). At each
 * size, every repetition opens --reads random keys in one read transaction
 * (tio_lmdb_get: a B-tree lookup, the record opened as views into the map)
 * and checksums their tensor data; the same keys each repetition, so the
 * first pass (reported apart) also takes the page faults of mapping their
 * pages into this process. Each timed repetition also reads the same keys
 * with tio_lmdb_find alone (lmdb:find: LMDB's mdb_get and a checksum of the
 * record's bytes, no tensio decoding), the two passes alternating which goes
 * first: what LMDB's B-tree costs beside what tensio's open of the record
 * adds. Lines (bench/bench.h):
 *   R lmdb_read <N> tensio:get-first-touch <seconds> <bytes> <reads>
 *   R lmdb_read <N> tensio:get <seconds> <bytes> <reads>
 *   R lmdb_read <N> lmdb:find <seconds> <bytes> <reads>
 *   R lmdb_write <N> tensio:put <seconds> <bytes> <records added>
 * The per-read cost should stay flat as N grows (O(log N) page lookups, all
 * in the page cache). --check verifies every value read. */
#include "bench.h"

#include "tensio.h"

#include <stdlib.h>
#include <string.h>

static void key_of(uint64_t i, char *buf, size_t cap) {
    snprintf(buf, cap, "%010llu", (unsigned long long)i);
}

static float value_of(uint64_t i, size_t k) { return (float)(i % 100003) + (float)k / 64.0f; }

static int add_records(tio_lmdb *db, uint64_t from, uint64_t to, size_t floats) {
    float *v = malloc(floats * sizeof *v);
    if (!v) return bn_fail("lmdb: out of memory");
    int64_t shape[1] = {(int64_t)floats};
    for (uint64_t i = from; i < to; i++) {
        for (size_t k = 0; k < floats; k++) v[k] = value_of(i, k);
        tio_container *c = tio_container_new();
        tio_tensor_desc d = {NULL, TIO_FLOAT32, 1, shape, TIO_LAYOUT_DENSE, v,
                             floats * sizeof *v, 0, NULL};
        tio_error e;
        char key[24];
        key_of(i, key, sizeof key);
        if (!c || tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e) != TIO_OK ||
            tio_lmdb_put(db, key, strlen(key), c, &e) != TIO_OK) {
            tio_container_free(c);
            free(v);
            return bn_fail("lmdb: put %s: %s", key, e.message);
        }
        tio_container_free(c);
    }
    free(v);
    tio_error e;
    return tio_lmdb_commit(db, &e) == TIO_OK ? 0 : bn_fail("lmdb: commit: %s", e.message);
}

/* One repetition: reads random keys (find: the record's bytes only, through
 * tio_lmdb_find); returns nonzero on a failure. */
static int read_random(bn_ctx *x, tio_lmdb *db, uint64_t n, uint64_t reads, size_t floats,
                       int find, uint64_t *seed, uint64_t *bytes, uint64_t *sum) {
    tio_lmdb_txn *txn = NULL;
    tio_error e;
    if (tio_lmdb_read_begin(db, &txn, &e) != TIO_OK) return bn_fail("lmdb: %s", e.message);
    int rc = 0;
    for (uint64_t r = 0; r < reads && !rc; r++) {
        *seed ^= *seed >> 12;
        *seed ^= *seed << 25;
        *seed ^= *seed >> 27;
        uint64_t i = (*seed * 2685821657736338717ull) % n;
        char key[24];
        key_of(i, key, sizeof key);
        if (find) {
            tio_lmdb_record rec;
            if (tio_lmdb_find(txn, key, strlen(key), &rec, &e) != TIO_OK) {
                rc = bn_fail("lmdb: find %s: %s", key, e.message);
                break;
            }
            *sum = bn_checksum(rec.data, rec.size, *sum);
            *bytes += rec.size;
            continue;
        }
        tio_container *c = NULL;
        if (tio_lmdb_get(txn, key, strlen(key), NULL, &c, &e) != TIO_OK) {
            rc = bn_fail("lmdb: get %s: %s", key, e.message);
            break;
        }
        const tio_tensor *t = tio_container_tensor(c, 0);
        size_t nb = t ? tio_tensor_nbytes(t) : 0;
        const float *p = t ? tio_tensor_data(t) : NULL;
        *sum = bn_checksum(p, nb, *sum);
        *bytes += nb;
        if (x->check) {
            if (nb != floats * sizeof(float)) rc = bn_fail("lmdb: %s: %zu bytes", key, nb);
            for (size_t k = 0; !rc && k < floats; k++) {
                float want = value_of(i, k), got;
                memcpy(&got, (const char *)p + k * sizeof got, sizeof got);
                if (got != want) rc = bn_fail("lmdb: %s[%zu] = %g, not %g", key, k, got, want);
            }
        }
        tio_container_free(c);
    }
    tio_lmdb_read_end(txn);
    return rc;
}

int bn_cmd_lmdb(bn_ctx *x, int argc, char **argv) {
    const char *dir = bn_opt(argc, argv, "--dir", NULL);
    if (!dir) return bn_fail("lmdb: --dir DIR required");
    const char *sizes = bn_opt(argc, argv, "--sizes", "10000,100000,1000000");
    uint64_t reads = strtoull(bn_opt(argc, argv, "--reads", "10000"), NULL, 10);
    size_t floats = (size_t)strtoull(bn_opt(argc, argv, "--floats", "64"), NULL, 10);
    if (!reads || !floats) return bn_fail("lmdb: --reads and --floats must be positive");
    char path[4096];
    snprintf(path, sizeof path, "%s/bench.lmdb", dir);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) return bn_fail("lmdb: cannot remove %s", path);
    tio_lmdb_options o;
    memset(&o, 0, sizeof o);
    o.flags = TIO_LMDB_WRITE;
    o.batch = 1000;
    tio_lmdb *db = NULL;
    tio_error e;
    if (tio_lmdb_open(path, &o, &db, &e) != TIO_OK) return bn_fail("lmdb: %s", e.message);
    uint64_t have = 0, seed = 0x9e3779b97f4a7c15ull, sum = 0;
    int rc = 0;
    for (const char *s = sizes; *s && !rc; s += strcspn(s, ",") + (s[strcspn(s, ",")] != 0)) {
        uint64_t n = strtoull(s, NULL, 10);
        if (n <= have) continue;
        double t0 = bn_now();
        rc = add_records(db, have, n, floats);
        char group[32];
        snprintf(group, sizeof group, "%llu", (unsigned long long)n);
        if (!rc) bn_emit("lmdb_write", group, "tensio:put", bn_now() - t0,
                         (n - have) * floats * sizeof(float), n - have);
        have = n;
        /* the same keys every repetition: the first pass also faults their
         * pages into this process's map (reported apart), the timed ones
         * after the warmup read a warm map */
        uint64_t first_seed = seed + n;
        for (int r = 0; r < 1 + x->warmup + x->reps && !rc; r++) {
            for (int k = 0; k < (r ? 2 : 1) && !rc; k++) {
                int find = (k + r) % 2 == 0 && r > 0; /* the first pass: get */
                uint64_t bytes = 0, sd = first_seed;
                double t1 = bn_now();
                rc = read_random(x, db, n, reads, floats, find, &sd, &bytes, &sum);
                double dt = bn_now() - t1;
                const char *subject = find ? "lmdb:find" : "tensio:get";
                if (!rc && r == 0)
                    bn_emit("lmdb_read", group, "tensio:get-first-touch", dt, bytes, reads);
                if (!rc && r > x->warmup) bn_emit("lmdb_read", group, subject, dt, bytes, reads);
            }
        }
    }
    bn_fact("lmdb_read", "-", "tensio:get", "checksum", "%016llx", (unsigned long long)sum);
    tio_lmdb_close(db);
    if (system(cmd) != 0 && !rc) rc = bn_fail("lmdb: cannot remove %s", path);
    return rc;
}
