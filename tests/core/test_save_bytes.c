/* What a file save writes: exactly the bytes of tio_save_memory for every
 * format, whatever the mix of tensor sizes around the gathering sink's
 * thresholds (small writes copied, tensor data referenced, one writev() for
 * many pieces), and tio_save_buffer's the same; TIO_SAVE_NO_SYNC skips every
 * fsync and nothing else; progress is reported in order; converted data are
 * copied, not referenced; a save lists its directory only with
 * TIO_SAVE_CLEANUP, so its cost does not grow with the directory. fsync and
 * opendir are counted through -Wl,--wrap (save_wrap.c). How the bytes go from
 * a mapped source (the kernel's copies) is test_save_io.c. */
#include "save_wrap.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* tio_save_buffer, as snprintf: cap 0 measures; a buffer of that size gets
 * the bytes of tio_save_memory; a smaller one their prefix and nothing past
 * its end (guard bytes). */
static void check_save_buffer(const tio_container *c, const tio_save_options *so,
                              const uint8_t *want, size_t size) {
    tio_error e;
    size_t n = 1;
    if (tio_save_buffer(c, so, NULL, 0, &n, &e) != TIO_OK)
        fail_msg("%s: save_buffer (measure): %s", so->format, e.message);
    if (n != size) fail_msg("%s: save_buffer measured %zu, expected %zu", so->format, n, size);
    size_t caps[] = {size, size / 2, 3};
    for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++) {
        size_t cap = caps[k] < size ? caps[k] : size;
        uint8_t *b = malloc(cap + 64);
        assert_non_null(b);
        memset(b, 0xA5, cap + 64);
        n = 0;
        if (tio_save_buffer(c, so, b, cap, &n, &e) != TIO_OK)
            fail_msg("%s: save_buffer (cap %zu): %s", so->format, cap, e.message);
        assert_int_equal(n, size);
        if (memcmp(b, want, cap) != 0)
            fail_msg("%s: save_buffer (cap %zu of %zu) wrote other bytes", so->format, cap, size);
        for (size_t i = cap; i < cap + 64; i++)
            if (b[i] != 0xA5) fail_msg("%s: save_buffer wrote past cap %zu", so->format, cap);
        free(b);
    }
    assert_int_equal(tio_save_buffer(c, so, NULL, 5, &n, &e), TIO_E_ARGUMENT);
    assert_int_equal(tio_save_buffer(NULL, so, NULL, 0, &n, &e), TIO_E_ARGUMENT);
}

static void test_file_bytes_equal_memory_bytes(void **state) {
    (void)state;
    for (size_t f = 0; f < tio_format_count(); f++) {
        const char *format = tio_format_name(f);
        if (!tio_format_can_write(format)) continue; /* read only */
        uint8_t *data;
        tio_container *c = build(format, &data);
        tio_save_options so = {0};
        so.format = format;
        tio_error e;
        void *mem;
        size_t mem_size;
        int rc = tio_save_memory(c, &so, &mem, &mem_size, &e);
        if (rc != TIO_OK) fail_msg("%s: save_memory: %s", format, e.message);
        check_save_buffer(c, &so, mem, mem_size);
        char path[300];
        snprintf(path, sizeof path, "%s/out.%s", dir, format);
        for (int sync = 0; sync < 2; sync++) {
            so.flags = sync ? 0 : TIO_SAVE_NO_SYNC;
            fsync_calls = 0;
            rc = tio_save(c, path, &so, &e);
            if (rc != TIO_OK) fail_msg("%s: save: %s", format, e.message);
            if (sync && fsync_calls < 2)
                fail_msg("%s: a synced save made %d fsync calls, expected the file's and the "
                         "directory's", format, fsync_calls);
            if (!sync && fsync_calls != 0)
                fail_msg("%s: TIO_SAVE_NO_SYNC made %d fsync calls", format, fsync_calls);
            if (!file_holds(path, mem, mem_size))
                fail_msg("%s: the file differs from tio_save_memory (%zu bytes)", format,
                         mem_size);
        }
        /* and it reads back as the same tensors */
        tio_container *back;
        tio_open_options oo = {0};
        oo.format = format; /* the file is named out.FORMAT */
        assert_int_equal(tio_open(path, &oo, &back, &e), TIO_OK);
        assert_int_equal(tio_container_count(back), tio_container_count(c));
        for (size_t i = 0; i < tio_container_count(c); i++) {
            /* by name where the format stores names (safetensors orders them) */
            const tio_tensor *a = tio_container_tensor(c, i);
            const tio_tensor *b = tio_tensor_name(a) ? tio_container_find(back, tio_tensor_name(a))
                                                     : tio_container_tensor(back, i);
            assert_non_null(b);
            assert_int_equal(tio_tensor_nbytes(a), tio_tensor_nbytes(b));
            assert_memory_equal(tio_tensor_data(a), tio_tensor_data(b), tio_tensor_nbytes(a));
        }
        tio_container_free(back);
        tio_free(mem);
        tio_container_free(c);
        free(data);
    }
}

static void test_progress(void **state) {
    (void)state;
    const char *formats[] = {"tenbin", "btf", "safetensors", "zio"};
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        uint8_t *data;
        tio_container *c = build(formats[f], &data);
        prog pr = {0};
        tio_save_options so = {.format = formats[f], .flags = TIO_SAVE_NO_SYNC,
                               .progress = on_progress, .progress_ctx = &pr};
        char path[300];
        snprintf(path, sizeof path, "%s/progress.%s", dir, formats[f]);
        tio_error e;
        assert_int_equal(tio_save(c, path, &so, &e), TIO_OK);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        uint64_t size = (uint64_t)st.st_size;
        assert_false(pr.backwards);
        assert_int_equal(pr.last_done, size);
        assert_int_equal(pr.last_total, size);
        assert_true(pr.calls >= size / (1u << 20) / 2);
        assert_true(pr.calls <= size / (1u << 20) + 2);
        /* a memory save reports the same way */
        prog pm = {0};
        so.progress_ctx = &pm;
        void *mem;
        size_t n;
        assert_int_equal(tio_save_memory(c, &so, &mem, &n, &e), TIO_OK);
        assert_int_equal(pm.last_done, n);
        assert_int_equal(pm.calls, pr.calls);
        tio_free(mem);
        /* opening: read into memory, by MiB; mapped, once */
        for (int nommap = 0; nommap < 2; nommap++) {
            prog po = {0};
            tio_open_options oo = {.flags = nommap ? TIO_OPEN_NO_MMAP : 0u,
                                   .progress = on_progress, .progress_ctx = &po};
            tio_container *back;
            assert_int_equal(tio_open(path, &oo, &back, &e), TIO_OK);
            assert_false(po.backwards);
            assert_int_equal(po.last_done, size);
            assert_int_equal(po.last_total, size);
            if (nommap) assert_true(po.calls >= size / (1u << 20) / 2);
            else assert_int_equal(po.calls, 1);
            tio_container_free(back);
        }
        tio_container_free(c);
        free(data);
    }
}

/* Converted data (widened float16) live in the plan's scratch buffer, which
 * the next tensor reuses: the sink must copy them, not reference them. */
static void test_converted_data_are_copied(void **state) {
    (void)state;
    const size_t n = 40000; /* 80000 bytes of float16, 160000 widened: above 32 KiB */
    uint16_t *h = malloc(n * 2 * 3);
    assert_non_null(h);
    for (size_t i = 0; i < n * 3; i++) h[i] = (uint16_t)(0x3c00u + (i % 1000)); /* finite */
    tio_container *c = tio_container_new();
    tio_error e;
    for (int k = 0; k < 3; k++) {
        int64_t shape[1] = {(int64_t)n};
        tio_tensor_desc d = {0};
        d.dtype = TIO_FLOAT16;
        d.rank = 1;
        d.shape = shape;
        d.data = h + (size_t)k * n;
        d.nbytes = n * 2;
        assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
    }
    int tried = 0;
    for (size_t f = 0; f < tio_format_count(); f++) {
        const char *format = tio_format_name(f);
        if (!tio_format_can_write(format) || tio_format_supports_dtype(format, TIO_FLOAT16) ||
            (tio_format_caps(format) & TIO_CAP_GRAPH))
            continue;
        tried++;
        tio_save_options so = {0};
        so.format = format;
        so.flags = TIO_SAVE_WIDEN | TIO_SAVE_NO_SYNC;
        void *mem;
        size_t mem_size;
        assert_int_equal(tio_save_memory(c, &so, &mem, &mem_size, &e), TIO_OK);
        char path[300];
        snprintf(path, sizeof path, "%s/widened.%s", dir, format);
        assert_int_equal(tio_save(c, path, &so, &e), TIO_OK);
        assert_true(file_holds(path, mem, mem_size));
        tio_free(mem);
    }
    assert_true(tried > 0); /* some format widens float16 */
    tio_container_free(c);
    free(h);
}

static void write_small(const char *name, size_t bytes) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < bytes; i++) fputc('x', f);
    assert_int_equal(fclose(f), 0);
}

/* Saves into a directory of 2,000 files: a default save (synced or not)
 * never lists it; TIO_SAVE_CLEANUP lists it once and removes the target's
 * stale temporary file (of a dead process); tio_save_cleanup lists it once. */
static void test_listing_only_on_request(void **state) {
    (void)state;
    char name[64];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "m-%06d.bin", i);
        write_small(name, 1);
    }
    uint8_t *data;
    tio_container *c = build("tenbin", &data);
    fflush(NULL);
    pid_t dead = fork(); /* a pid that is surely gone: a child, reaped */
    if (dead == 0) _exit(0);
    assert_true(dead > 0);
    assert_int_equal(waitpid(dead, NULL, 0), dead);
    char stale[128], path[512];
    snprintf(stale, sizeof stale, ".out.ten.tio-%ld-0123456789abcdef.tmp", (long)dead);
    write_small(stale, 3);
    snprintf(path, sizeof path, "%s/out.ten", dir);
    tio_error e;
    tio_save_options so = {0};
    for (unsigned flags = 0; flags < 2; flags++) {
        so.flags = flags ? TIO_SAVE_NO_SYNC : 0;
        opendir_calls = 0;
        assert_int_equal(tio_save(c, path, &so, &e), TIO_OK);
        assert_int_equal(opendir_calls, 0);
    }
    snprintf(path, sizeof path, "%s/%s", dir, stale);
    struct stat st;
    assert_int_equal(stat(path, &st), 0); /* left alone */
    snprintf(path, sizeof path, "%s/out.ten", dir);
    so.flags = TIO_SAVE_CLEANUP | TIO_SAVE_NO_SYNC;
    opendir_calls = 0;
    assert_int_equal(tio_save(c, path, &so, &e), TIO_OK);
    assert_int_equal(opendir_calls, 1);
    snprintf(path, sizeof path, "%s/%s", dir, stale);
    assert_int_equal(stat(path, &st), -1); /* removed */
    write_small(stale, 3);
    size_t gone = 0;
    opendir_calls = 0;
    assert_int_equal(tio_save_cleanup(dir, &gone, &e), TIO_OK);
    assert_int_equal(opendir_calls, 1);
    assert_int_equal(gone, 1);
    tio_container_free(c);
    free(data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_bytes_equal_memory_bytes),
        cmocka_unit_test(test_converted_data_are_copied),
        cmocka_unit_test(test_progress),
        cmocka_unit_test(test_listing_only_on_request),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
