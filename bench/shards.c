/* tio_bench shards: WebDataset tar shards (issue 21).
 *
 *   shards gen --out PATH --size BYTES --samples N [--seed S]
 *       a shard of N samples, written with tio_shard_writer: KEY.ten (tenbin:
 *       one float32 [rows, 16] tensor in even samples, two in odd ones) and
 *       KEY.cls (the class as text), keys "s%07d"; the tensor data of all
 *       samples add up to about BYTES (the same bytes per sample, a multiple
 *       of 64). Sample i's tensor bytes, one after the other, are
 *       bn_fill(seed + i).
 *   shards iterate PATH --group G [--seed S]
 *       tensio: tio_shard_open, then for every sample every tensor member
 *       opened (tio_shard_open_member: views into the mapping) and every
 *       tensor's bytes checksummed, tio_shard_free; paired with base:cat:
 *       read() of the whole shard into a warm buffer (the page cache warm).
 *       Items: samples. --check compares every sample's tensor bytes with
 *       what gen wrote (seed S, default 1).
 */
#include "bench.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <tensio.h>

#include "gen.h"

static int shard_failed(const char *what, const tio_error *e) {
    return bn_fail("shards: %s: %s: %s", what, tio_status_name(e->code), e->message);
}

/* Sample i's tensor sizes: 1 or 2 tensors, multiples of 64 bytes, per in all. */
static int split_of(uint64_t i, uint64_t per, uint64_t sz[2]) {
    uint64_t half = (per / 2) & ~UINT64_C(63);
    if (i % 2 == 0 || half == 0) {
        sz[0] = per;
        return 1;
    }
    sz[0] = half;
    sz[1] = per - half;
    return 2;
}

static int add_sample(tio_shard_writer *w, uint64_t i, unsigned char *buf, uint64_t per,
                      uint64_t seed) {
    char key[32], cls[32], name[48];
    snprintf(key, sizeof key, "s%07" PRIu64, i);
    bn_fill(buf, (size_t)per, seed + i);
    uint64_t sz[2];
    int n = split_of(i, per, sz);
    tio_container *c = tio_container_new();
    if (!c) return bn_fail("shards: out of memory");
    tio_error e;
    uint64_t at = 0;
    for (int k = 0; k < n; k++) {
        int64_t shape[2] = {(int64_t)(sz[k] / 64), 16};
        tio_tensor_desc d = {0};
        d.dtype = TIO_FLOAT32;
        d.rank = 2;
        d.shape = shape;
        d.data = buf + at;
        d.nbytes = (size_t)sz[k];
        at += sz[k];
        if (tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e)) {
            tio_container_free(c);
            return shard_failed(key, &e);
        }
    }
    tio_save_options so = bn_save_options("tenbin");
    int rc = tio_shard_writer_add_container(w, key, c, &so, NULL, &e);
    tio_container_free(c);
    if (rc) return shard_failed(key, &e);
    int len = snprintf(cls, sizeof cls, "%" PRIu64 "\n", i % 1000);
    snprintf(name, sizeof name, "%s.cls", key);
    if (tio_shard_writer_add_bytes(w, name, cls, (uint64_t)len, &e)) return shard_failed(name, &e);
    return 0;
}

static int cmd_gen(int argc, char **argv) {
    const char *out = bn_opt(argc, argv, "--out", NULL);
    uint64_t size = bn_parse_size(bn_opt(argc, argv, "--size", "0"));
    uint64_t n = strtoull(bn_opt(argc, argv, "--samples", "0"), NULL, 10);
    uint64_t seed = strtoull(bn_opt(argc, argv, "--seed", "1"), NULL, 10);
    if (!out || !size || !n) return bn_fail("shards gen: --out, --size and --samples needed");
    uint64_t per = bn_data_bytes(size, n) / n;
    unsigned char *buf = malloc((size_t)per);
    if (!buf) return bn_fail("shards gen: cannot allocate %" PRIu64 " bytes", per);
    tio_shard_writer_options wo = {TIO_SAVE_NO_SYNC, 0, 0};
    tio_shard_writer *w;
    tio_error e;
    int rc = tio_shard_writer_open(out, &wo, &w, &e) ? shard_failed(out, &e) : 0;
    for (uint64_t i = 0; i < n && !rc; i++) rc = add_sample(w, i, buf, per, seed);
    if (rc) tio_shard_writer_abort(w);
    else if (tio_shard_writer_close(w, &e)) rc = shard_failed(out, &e);
    free(buf);
    return rc;
}

/* The counts one pass saw, and its checksum over every tensor's bytes. */
typedef struct pass {
    uint64_t acc, bytes, tensors, samples;
} pass;

/* --check: sample i's tensors hold bn_fill(seed + i), one after the other. */
static int check_sample(uint64_t i, const tio_container *c, unsigned char **ref, size_t *cap,
                        uint64_t seed) {
    size_t n = tio_container_count(c), total = 0;
    for (size_t k = 0; k < n; k++) total += tio_tensor_nbytes(tio_container_tensor(c, k));
    if (total > *cap) {
        unsigned char *p = realloc(*ref, total);
        if (!p) return bn_fail("shards: out of memory");
        *ref = p;
        *cap = total;
    }
    bn_fill(*ref, total, seed + i);
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
        const tio_tensor *t = tio_container_tensor(c, k);
        if (memcmp(tio_tensor_data(t), *ref + at, tio_tensor_nbytes(t)) != 0)
            return bn_fail("shards: sample %" PRIu64 " tensor %zu: not the bytes written", i, k);
        at += tio_tensor_nbytes(t);
    }
    return 0;
}

/* One pass of the tensio subject: seconds, or < 0 (reported). With check
 * (seed), every sample's bytes are compared, outside the time. */
static double iterate_once(const char *path, pass *ps, int check, uint64_t seed) {
    unsigned char *ref = NULL;
    size_t cap = 0;
    double spent = 0; /* on --check, not timed */
    double t0 = bn_now();
    tio_shard *s;
    tio_error e;
    if (tio_shard_open(path, NULL, &s, &e)) return shard_failed(path, &e), -1;
    memset(ps, 0, sizeof *ps);
    size_t ns = tio_shard_sample_count(s);
    int rc = 0;
    for (size_t i = 0; i < ns && !rc; i++) {
        size_t members = tio_shard_sample_at(s, i)->count;
        for (size_t j = 0; j < members && !rc; j++) {
            size_t m = tio_shard_sample_member(s, i, j);
            if (!tio_shard_member_format(s, m)) continue; /* .cls: no tensors */
            tio_container *c;
            if (tio_shard_open_member(s, m, NULL, &c, &e)) {
                rc = shard_failed(tio_shard_member_at(s, m)->name, &e);
                break;
            }
            size_t n = tio_container_count(c);
            for (size_t k = 0; k < n; k++) {
                const tio_tensor *t = tio_container_tensor(c, k);
                size_t nb = tio_tensor_nbytes(t);
                ps->acc = bn_checksum(tio_tensor_data(t), nb, ps->acc);
                ps->bytes += nb;
            }
            ps->tensors += n;
            if (check) {
                double c0 = bn_now();
                rc = check_sample(i, c, &ref, &cap, seed);
                spent += bn_now() - c0;
            }
            tio_container_free(c);
        }
        ps->samples++;
    }
    tio_shard_free(s);
    double t = bn_now() - t0 - spent;
    free(ref);
    return rc ? -1 : t;
}

static int cmd_iterate(bn_ctx *x, const char *path, const char *group, uint64_t seed) {
    struct stat st;
    if (stat(path, &st) != 0) return bn_fail("shards: %s: cannot stat", path);
    uint64_t size = (uint64_t)st.st_size;
    pass first, now;
    if (iterate_once(path, &first, x->check, seed) < 0) return 1;
    if (first.tensors == 0) return bn_fail("shards: %s: no tensor members", path);
    unsigned char *buf = bn_big_alloc((size_t)size);
    if (!buf) return bn_fail("shards: cannot allocate");
    memset(buf, 0, (size_t)size); /* the buffer is not what is measured */
    bn_paired p;
    if (bn_paired_init(&p, x, "shards", group, "base:cat", "tensio:iterate")) {
        bn_big_free(buf, (size_t)size);
        return 1;
    }
    int rc = 0;
    for (int r = -x->warmup; !rc && (r < 0 || bn_paired_more(&p)); r++) {
        for (int k = 0; k < 2 && !rc; k++) {
            int s = bn_paired_order(&p, r, k);
            double t = s == 0 ? bn_read_whole(path, buf, size) : iterate_once(path, &now, 0, seed);
            if (t < 0) rc = s == 0 ? bn_fail("%s: short read", path) : 1;
            else if (s == 1 && now.acc != first.acc)
                rc = bn_fail("shards: checksum changed between repetitions");
            else if (r >= 0) bn_paired_set(&p, s, t, size, s ? first.samples : 1);
        }
        if (r >= 0) p.n++;
    }
    if (!rc) {
        bn_paired_emit(&p);
        bn_fact("shards", group, "tensio:iterate", "samples", "%" PRIu64, first.samples);
        bn_fact("shards", group, "tensio:iterate", "tensors", "%" PRIu64, first.tensors);
        bn_fact("shards", group, "tensio:iterate", "tensor_bytes", "%" PRIu64, first.bytes);
        bn_fact("shards", group, "tensio:iterate", "checksum", "%016" PRIx64, first.acc);
    }
    bn_paired_free(&p);
    bn_big_free(buf, (size_t)size);
    return rc;
}

int bn_cmd_shards(bn_ctx *x, int argc, char **argv) {
    if (argc < 2) return bn_fail("shards: gen or iterate?");
    uint64_t seed = strtoull(bn_opt(argc, argv, "--seed", "1"), NULL, 10);
    if (strcmp(argv[1], "gen") == 0) return cmd_gen(argc, argv);
    if (strcmp(argv[1], "iterate") == 0 && argc > 2)
        return cmd_iterate(x, argv[2], bn_opt(argc, argv, "--group", "-"), seed);
    return bn_fail("shards: unknown case or missing path: %s", argv[1]);
}
