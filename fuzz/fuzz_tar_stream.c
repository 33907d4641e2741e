/* libFuzzer target: the shard reader as a stream (src/tar/stream.c) on the
 * input put in a memory file and read through "file:/proc/self/fd/N", member
 * by member, against the mapped reader on the same bytes: the same members
 * (name, key, extension, offset, size, bytes, sample) when it reads them,
 * the same code and offset when it fails (but for its member-count limit,
 * which a stream has no need of). A compressed input is decompressed as it
 * is read, and its members compared the same way (offsets in the tar);
 * when the mapped reader refuses it, the stream only has to fail cleanly
 * (the mapped one bounds the whole tar by max_dense_bytes, the stream each
 * member). */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz_common.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = memfd_create("tio-fuzz-stream", MFD_CLOEXEC);
    if (fd < 0) return 0; /* no memory files here: nothing to compare */
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) {
            close(fd);
            return 0;
        }
        done += (size_t)w;
    }
    char src[64];
    snprintf(src, sizeof src, "file:/proc/self/fd/%d", fd);
    tio_limits lim;
    memset(&lim, 0, sizeof lim);
    lim.max_dense_bytes = FZ_MAX_DENSE_BYTES;
    lim.max_member_bytes = FZ_MAX_DENSE_BYTES;
    tio_shard *s = NULL;
    tio_error em, es;
    int rm = tio_shard_open_memory(data, size, &lim, &s, &em);
    /* the magic numbers of src/tar/decompress.c's four kinds */
    int zipped = (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) ||
                 (size >= 3 && memcmp(data, "BZh", 3) == 0) ||
                 (size >= 6 && memcmp(data, "\xfd" "7zXZ\0", 6) == 0) ||
                 (size >= 4 && memcmp(data, "\x28\xb5\x2f\xfd", 4) == 0);
    if (rm == TIO_OK && (tio_shard_compression(s) != NULL) != zipped)
        fz_fail("the mapped reader and the magic disagree on compression");
    tio_shard_stream *st = NULL;
    int rs = tio_shard_stream_open(src, &lim, &st, &es);
    if (rs != TIO_OK) fz_fail("stream open failed on a file: %s", es.message);
    size_t i = 0;
    const tio_shard_member *m = NULL;
    while ((rs = tio_shard_stream_next(st, &m, &es)) == TIO_OK && m) {
        if (m->size > lim.max_member_bytes) fz_fail("member %zu past max_member_bytes", i);
        if (rm == TIO_OK) {
            const tio_shard_member *r = tio_shard_member_at(s, i);
            if (!r || strcmp(m->name, r->name) || strcmp(m->key, r->key) ||
                strcmp(m->ext, r->ext) || m->offset != r->offset || m->size != r->size ||
                memcmp(m->data, r->data, m->size) != 0)
                fz_fail("member %zu differs from the mapped reader's", i);
            if ((m->sample == TIO_SHARD_NONE) != (r->sample == TIO_SHARD_NONE))
                fz_fail("member %zu: in a sample in one reader only", i);
        }
        i++;
    }
    if (rs != TIO_OK && (es.code != rs || !es.message[0] || strcmp(es.format, "tar") != 0))
        fz_fail("stream error contract: code %d vs %d, format '%s'", es.code, rs, es.format);
    if (rm == TIO_OK) {
        /* a member past max_member_bytes stops the stream only */
        if (rs != TIO_OK && rs != TIO_E_LIMIT) fz_fail("stream failed (%s) where the mapped "
                                                       "reader did not", es.message);
        if (rs == TIO_OK && i != tio_shard_member_count(s))
            fz_fail("%zu members streamed, %zu mapped", i, tio_shard_member_count(s));
    } else if (!zipped && em.code != TIO_E_LIMIT && rs != TIO_E_LIMIT &&
               !(em.code == TIO_E_UNSUPPORTED || rs == TIO_E_UNSUPPORTED)) {
        if (rs != rm || es.offset != em.offset)
            fz_fail("mapped: %s; stream: %s", em.message, es.message);
    }
    tio_shard_stream_free(st);
    tio_shard_free(s);
    close(fd);
    return 0;
}
