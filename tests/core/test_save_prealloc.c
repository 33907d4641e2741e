/* Preallocation (src/core/sink.c, PREALLOC_MIN): on ext4 a save that
 * expects 8 MiB of tensors or more has that many bytes of blocks allocated
 * in its file before its first write (fallocate() with FALLOC_FL_KEEP_SIZE,
 * from where its output starts), and frees those it did not fill after its
 * last (ftruncate() to the file's size); elsewhere (tmpfs, other file
 * systems) and for smaller saves there is no call. A preallocation that
 * fails (ENOSPC, EOPNOTSUPP) leaves the save as it was; a trim that fails
 * is an error. The bytes are tio_save_memory's every way. The calls are
 * counted and made to fail through -Wl,--wrap (save_wrap.c). */
#include "save_wrap.h"
#include "core/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static bool dir_on_ext4(void) {
    struct statfs sf;
    assert_int_equal(statfs(dir, &sf), 0);
    return sf.f_type == 0xef53;
}

/* The bytes of the blocks a file holds. */
static uint64_t held(const char *path) {
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_blocks * 512;
}

static uint64_t size_of(const char *path) {
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

/* At most the file's size in whole 4 KiB blocks, and one block more (an
 * extent tree's). */
static void holds_its_size(const char *path) {
    uint64_t n = size_of(path), h = held(path), most = (n + 4095) / 4096 * 4096 + 4096;
    if (h > most) fail_msg("%s: %llu bytes of blocks for %llu bytes", path,
                           (unsigned long long)h, (unsigned long long)n);
}

/* tio_save of 11 MiB of tensors in three formats, synced and not: on
 * ext4 one fallocate() of the tensors' bytes at the start, FALLOC_FL_KEEP_SIZE,
 * no trim (each file is longer than its tensors), no blocks past the end;
 * elsewhere none (also saved onto tmpfs, /dev/shm, where there is one).
 * A preallocation refused (ENOSPC, EOPNOTSUPP): the same
 * bytes. 7 MiB of tensors: no call. */
static void test_prealloc_save(void **state) {
    (void)state;
    bool ext4 = dir_on_ext4();
    const size_t big[3] = {4 * MIB + 12, 6 * MIB, MIB + 4}, small[2] = {4 * MIB, 3 * MIB};
    uint8_t *data = random_bytes(11 * MIB + 16, 5);
    static const char *const formats[] = {"safetensors", "tenbin", "btf"};
    char dst[300];
    for (int which = 0; which < 2; which++) {
        tio_container *c = which == 0 ? float_tensors(data, big, 3, false)
                                      : float_tensors(data, small, 2, false);
        uint64_t tensors = which == 0 ? 11 * MIB + 16 : 7 * MIB;
        for (size_t f = 0; f < sizeof formats / sizeof *formats; f++) {
            for (int mode = 0; mode < 4; mode++) {
                if (which == 1 && mode > 1) continue;
                tio_save_options o = {.format = formats[f], .flags = TIO_SAVE_DROP_NAMES};
                if (mode != 1) o.flags |= TIO_SAVE_NO_SYNC;
                void *want;
                size_t want_n;
                tio_error e;
                if (tio_save_memory(c, &o, &want, &want_n, &e) != TIO_OK)
                    fail_msg("%s", e.message);
                snprintf(dst, sizeof dst, "%s/prealloc-%zu-%d.%s", dir, f, mode, formats[f]);
                falloc_calls = trunc_calls = 0;
                falloc_fail = mode == 2 ? ENOSPC : mode == 3 ? EOPNOTSUPP : 0;
                int rc = tio_save(c, dst, &o, &e);
                falloc_fail = 0;
                if (rc != TIO_OK) fail_msg("%s, mode %d: %s", formats[f], mode, e.message);
                fprintf(stderr, "%s, %llu bytes of tensors, mode %d, %s: %d fallocate() (%lld at "
                        "%lld), %d ftruncate()\n", formats[f], (unsigned long long)tensors,
                        mode, ext4 ? "ext4" : "not ext4", falloc_calls, falloc_len,
                        falloc_off, trunc_calls);
                assert_int_equal(trunc_calls, 0);
                if (!ext4 || which == 1) {
                    assert_int_equal(falloc_calls, 0);
                } else {
                    assert_int_equal(falloc_calls, 1);
                    assert_int_equal(falloc_mode, FALLOC_FL_KEEP_SIZE);
                    assert_true(falloc_off == 0 && falloc_len == (long long)tensors);
                }
                holds_its_size(dst);
                if (!file_is(dst, want, want_n))
                    fail_msg("%s, mode %d: the file differs from tio_save_memory", formats[f],
                             mode);
                tio_free(want);
            }
        }
        tio_container_free(c);
    }
    /* tmpfs (/dev/shm, where it is one): no call, whatever the test's
     * directory lies on */
    struct statfs sf;
    if (statfs("/dev/shm", &sf) == 0 && sf.f_type == 0x01021994) {
        tio_container *c = float_tensors(data, big, 3, false);
        tio_save_options o = {.format = "safetensors", .flags = TIO_SAVE_NO_SYNC};
        void *want;
        size_t want_n;
        tio_error e;
        assert_int_equal(tio_save_memory(c, &o, &want, &want_n, &e), TIO_OK);
        snprintf(dst, sizeof dst, "/dev/shm/tio-prealloc-%ld.safetensors", (long)getpid());
        falloc_calls = trunc_calls = 0;
        assert_int_equal(tio_save(c, dst, &o, &e), TIO_OK);
        assert_int_equal(falloc_calls + trunc_calls, 0);
        if (!file_is(dst, want, want_n)) fail_msg("tmpfs: the file differs");
        tio_free(want);
        tio_container_free(c);
    } else {
        fprintf(stderr, "no tmpfs at /dev/shm: not saved onto tmpfs\n");
    }
    free(data);
}

/* The sink itself told to expect 32 MiB and given 10 MiB and 3 bytes: on
 * ext4 the 32 MiB are the file's before the first write (its size still
 * 0), and the trim sets the file's size to itself, which frees the rest;
 * a trim that fails is TIO_E_IO naming what it could not free and the
 * errno, the save marked failed. From a file offset of 1 MiB (an output
 * after other bytes) the preallocation starts there. Under 8 MiB: none. */
static void test_prealloc_trim(void **state) {
    (void)state;
    bool ext4 = dir_on_ext4();
    const size_t n = 10 * MIB + 3;
    uint8_t *data = random_bytes(n, 9);
    char path[300];
    snprintf(path, sizeof path, "%s/trim.bin", dir);
    tio_sink *sk = malloc(sizeof *sk);
    assert_non_null(sk);
    for (int mode = 0; mode < 4; mode++) {
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        assert_true(fd >= 0);
        size_t base = mode == 2 ? MIB : 0;
        if (base) assert_int_equal(pwrite(fd, data, base, 0), (ssize_t)base);
        assert_int_equal(lseek(fd, (off_t)base, SEEK_SET), (off_t)base);
        tio_error e;
        assert_int_equal(tio__sink_init_fd(sk, fd, &e), TIO_OK);
        falloc_calls = trunc_calls = 0;
        uint64_t expect = mode == 3 ? 7 * MIB : 32 * MIB;
        tio__sink_expect(sk, expect);
        assert_true(sk->expect == expect);
        bool pre = ext4 && mode != 3;
        assert_int_equal(falloc_calls, pre ? 1 : 0);
        if (pre) {
            assert_true(falloc_off == (long long)base && falloc_len == (long long)expect);
            assert_true(size_of(path) == base && held(path) >= base + expect);
        }
        int rc = TIO_OK;
        for (size_t at = 0; rc == TIO_OK && at < n; at += MIB)
            rc = tio__sink_write(sk, data + at, n - at < MIB ? n - at : MIB, &e);
        if (rc == TIO_OK) rc = tio__sink_flush(sk, &e);
        assert_int_equal(rc, TIO_OK);
        trunc_fail = mode == 1 ? EIO : 0;
        rc = tio__sink_trim(sk, &e);
        trunc_fail = 0;
        fprintf(stderr, "trim, mode %d, %s: %d fallocate(), %d ftruncate() (to %lld): rc %d%s%s\n",
                mode, ext4 ? "ext4" : "not ext4", falloc_calls, trunc_calls, trunc_len, rc,
                rc ? ": " : "", rc ? e.message : "");
        assert_int_equal(trunc_calls, pre ? 1 : 0);
        if (pre) assert_true(trunc_len == (long long)(base + n));
        if (mode == 1 && pre) {
            assert_int_equal(rc, TIO_E_IO);
            assert_true(sk->failed);
            char what[128];
            snprintf(what, sizeof what, "cannot free the blocks allocated past the end (%llu "
                     "bytes): %s", (unsigned long long)(expect - n), strerror(EIO));
            if (!strstr(e.message, what)) fail_msg("want \"%s\", got \"%s\"", what, e.message);
        } else {
            assert_int_equal(rc, TIO_OK);
            assert_int_equal(tio__sink_trim(sk, &e), TIO_OK); /* once */
            assert_int_equal(trunc_calls, pre ? 1 : 0);
            holds_its_size(path);
        }
        tio__sink_dispose(sk);
        close(fd);
        assert_true(size_of(path) == base + n);
        size_t got_n;
        uint8_t *got = read_file(path, &got_n);
        if (got_n != base + n || memcmp(got, data, base) != 0 || memcmp(got + base, data, n) != 0)
            fail_msg("mode %d: the bytes differ", mode);
        free(got);
    }
    unlink(path);
    free(sk);
    free(data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prealloc_save),
        cmocka_unit_test(test_prealloc_trim),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
