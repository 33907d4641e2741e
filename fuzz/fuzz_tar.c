/* libFuzzer target: the WebDataset shard reader (ustar/GNU/pax headers,
 * grouping; gzip/bzip2/xz/zstd streams decompressed first) on one buffer; every member that names a tensor format opened,
 * its tensors read after the shard is released (the containers keep the
 * bytes alive). */
#include "fuzz_common.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint8_t sink;

/* Whether the input starts with the magic of a compression the reader takes
 * (gzip, bzip2, xz, zstd), as tio_shard_compression will say. */
static int compressed(const uint8_t *p, size_t n) {
    return (n >= 2 && p[0] == 0x1f && p[1] == 0x8b) || (n >= 3 && memcmp(p, "BZh", 3) == 0) ||
           (n >= 6 && memcmp(p, "\xfd" "7zXZ\0", 6) == 0) ||
           (n >= 4 && memcmp(p, "\x28\xb5\x2f\xfd", 4) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tio_limits lim;
    memset(&lim, 0, sizeof lim);
    lim.max_dense_bytes = FZ_MAX_DENSE_BYTES;
    tio_shard *s = (tio_shard *)&lim;
    tio_error e;
    int rc = tio_shard_open_memory(data, size, &lim, &s, &e);
    if (rc != TIO_OK) {
        if (s) fz_fail("failed open left a shard");
        if (e.code != rc || !e.message[0] || strcmp(e.format, "tar") != 0)
            fz_fail("error contract: code %d vs %d, format '%s'", e.code, rc, e.format);
        /* a compressed shard's later errors name offsets in its tar */
        uint64_t span = compressed(data, size) ? FZ_MAX_DENSE_BYTES : size;
        if (e.offset > (int64_t)span) fz_fail("error offset %lld past the input",
                                              (long long)e.offset);
        return 0;
    }
    /* members lie in the input, or (compressed) in the tar decompressed from
     * it: one base for all, at most max_dense_bytes */
    const char *z = tio_shard_compression(s);
    if ((z != NULL) != compressed(data, size)) fz_fail("compression '%s' not its magic", z);
    size_t n = tio_shard_member_count(s), grouped = 0;
    const uint8_t *base = z ? NULL : data;
    uint64_t span = z ? FZ_MAX_DENSE_BYTES : size;
    tio_container *cs[8];
    size_t nc = 0;
    for (size_t i = 0; i < n; i++) {
        const tio_shard_member *m = tio_shard_member_at(s, i);
        if (!base) base = (const uint8_t *)m->data - m->offset;
        if (m->offset % 512 || m->offset > span || m->size > span - m->offset ||
            (const uint8_t *)m->data != base + m->offset)
            fz_fail("member %zu outside the input", i);
        if (m->sample != TIO_SHARD_NONE) {
            grouped++;
            size_t kl = strlen(m->key);
            if (strncmp(m->name, m->key, kl) != 0 || m->name[kl] != '.' ||
                strcmp(m->name + kl + 1, m->ext) != 0)
                fz_fail("member %zu: key/extension do not make its name", i);
            if (strcmp(tio_shard_sample_at(s, m->sample)->key, m->key) != 0)
                fz_fail("member %zu: not its sample's key", i);
        }
        if (!tio_shard_member_format(s, i) || nc == 8) continue;
        tio_open_options o;
        memset(&o, 0, sizeof o);
        o.limits = &lim;
        tio_container *c = NULL;
        rc = tio_shard_open_member(s, i, &o, &c, &e);
        if (rc != TIO_OK) fz_check_error(rc, &e, c);
        else cs[nc++] = c;
    }
    size_t total = 0;
    for (size_t k = 0; k < tio_shard_sample_count(s); k++) {
        const tio_shard_sample *sm = tio_shard_sample_at(s, k);
        if (!sm->count) fz_fail("empty sample %zu", k);
        if (sm->duplicate_of != TIO_SHARD_NONE &&
            (sm->duplicate_of >= k ||
             strcmp(tio_shard_sample_at(s, sm->duplicate_of)->key, sm->key) != 0))
            fz_fail("sample %zu: bad duplicate_of", k);
        total += sm->count;
    }
    if (total != grouped) fz_fail("samples hold %zu members, %zu grouped", total, grouped);
    tio_shard_free(s);
    for (size_t k = 0; k < nc; k++) {
        for (size_t t = 0; t < tio_container_count(cs[k]); t++) {
            const tio_tensor *x = tio_container_tensor(cs[k], t);
            const uint8_t *d = tio_tensor_data(x);
            size_t nb = tio_tensor_nbytes(x);
            if (nb) sink ^= (uint8_t)(d[0] ^ d[nb - 1]);
        }
        tio_container_free(cs[k]);
    }
    return 0;
}
