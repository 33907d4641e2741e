/* How a save's tensor bytes go from a mapped source to a file: by
 * copy_file_range() where the offsets allow (in runs, cut where a run
 * ends), by the copy buffer's pread()s, by splice() through a pipe onto a
 * disk file system (ranges of 1 MiB and more; all where the host takes free
 * memory back), at any offset where the CPU copies so; every fallback (a source that changed, EXDEV, a
 * failing or short call, no pipe) gives the same bytes, which are always
 * those of tio_save_memory. The calls are counted and made to fail through
 * -Wl,--wrap, and the sink's questions to the host get the test's answers
 * (save_wrap.c). What a save writes is test_save_bytes.c. */
#include "save_wrap.h"
#include "core/sink.h" /* tio__sink_host_piece */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

/* Tensor data that lie unchanged in the mapped source go file to file with
 * copy_file_range() where the output offsets are congruent with the
 * source's (modulo the page size); the bytes are those of tio_save_memory.
 * tenbin to tenbin: the output mirrors the source (the names dropped from
 * the headers), each run copied in one call. A source that changed since it
 * was mapped (its mtime), or a kernel that refuses (EXDEV), falls back to
 * writing the mapped bytes. */
/* build("tenbin")'s container saved as dir/NAME-src.ten (1 MiB and 9 MiB
 * tensors among others), its path into src; dst is dir/NAME-dst.btf. */
static void tenbin_source(const char *name, char *src, char *dst, size_t cap) {
    uint8_t *data;
    tio_container *c = build("tenbin", &data);
    snprintf(src, cap, "%s/%s-src.ten", dir, name);
    snprintf(dst, cap, "%s/%s-dst.btf", dir, name);
    tio_error e;
    tio_save_options so = {.format = "tenbin", .flags = TIO_SAVE_NO_SYNC};
    assert_int_equal(tio_save(c, src, &so, &e), TIO_OK);
    tio_container_free(c);
    free(data);
}

static void test_copy_file_range(void **state) {
    (void)state;
    char src[300], dst[300];
    tenbin_source("copy", src, dst, sizeof src);
    tio_error e;
    const char *formats[] = {"btf", "safetensors", "zio", "tenbin"};
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        for (int mode = 0; mode < 3; mode++) { /* copied; EXDEV; source touched */
            tio_container *m;
            assert_int_equal(tio_open(src, NULL, &m, &e), TIO_OK);
            if (mode == 2) {
                struct timespec ts[2] = {{0, UTIME_NOW}, {12345 + (time_t)f, 0}};
                assert_int_equal(utimensat(AT_FDCWD, src, ts, 0), 0);
            }
            tio_save_options o = {.format = formats[f],
                                  .flags = TIO_SAVE_NO_SYNC | TIO_SAVE_DROP_NAMES};
            void *want;
            size_t want_n;
            assert_int_equal(tio_save_memory(m, &o, &want, &want_n, &e), TIO_OK);
            copy_calls = 0;
            copy_fail = mode == 1 ? EXDEV : 0;
            if (tio_save(m, dst, &o, &e) != TIO_OK) fail_msg("%s: %s", formats[f], e.message);
            copy_fail = 0;
            /* the runs: up to the 600 small tensors (~100 KiB, more than a
             * run spans between its ranges), then from the 40 KiB ones on */
            if (mode == 0 && strcmp(formats[f], "tenbin") == 0 && copy_calls != 2)
                fail_msg("%s: %d copy_file_range calls, expected one per run (2)",
                         formats[f], copy_calls);
            if (mode == 1 && copy_calls > 1)
                fail_msg("%s: after EXDEV, %d calls (expected no retry)", formats[f],
                         copy_calls);
            if (mode == 2 && copy_calls != 0)
                fail_msg("%s: copied from a source that changed", formats[f]);
            if (!file_holds(dst, want, want_n))
                fail_msg("%s (mode %d): the file differs from tio_save_memory", formats[f],
                         mode);
            tio_free(want);
            tio_container_free(m);
        }
    }
}

/* Copy runs: tensors that lie in the source at the same distance as in the
 * output, with the bytes between them (headers, padding, small tensors)
 * written over the copy where they differ. Each case's file must hold the
 * bytes of tio_save_memory: one run in one call; partial copies (the kernel
 * copying less than asked) resumed; a failure after some calls (EINVAL) and
 * at the first (ENOSYS) finished from the mapping, the patches still
 * written, and no call after it; pieces with a progress function; and a
 * layout at other offsets (btf), where nothing is copied at non-congruent
 * offsets. */
static void test_copy_runs(void **state) {
    (void)state;
    /* 64 tensors of 40..168 KiB between small ones, named (tenbin's info) */
    enum { N = 64 };
    size_t total = 0, sz[2 * N];
    for (size_t i = 0; i < 2 * N; i++) {
        sz[i] = i % 2 ? 4 * (10240 + 1024 * (i / 2)) + 4 * (i % 7) : 4 * (1 + i % 5);
        total += sz[i];
    }
    uint8_t *data = random_bytes(total, 11);
    tio_container *c = float_tensors(data, sz, 2 * N, false);
    tio_error e;
    char src[300], dst[300];
    snprintf(src, sizeof src, "%s/runs-src.ten", dir);
    tio_save_options so = {.format = "tenbin", .flags = TIO_SAVE_NO_SYNC};
    assert_int_equal(tio_save(c, src, &so, &e), TIO_OK);
    tio_container_free(c);
    free(data);
    struct stat st;
    assert_int_equal(stat(src, &st), 0);
    size_t src_size = (size_t)st.st_size;
    tio_container *m;
    assert_int_equal(tio_open(src, NULL, &m, &e), TIO_OK);
    struct {
        const char *what, *format;
        unsigned flags;
        int fail, fail_after;
        size_t max;
        int progress;
        int calls_min, calls_max; /* -1: any */
        int sendfile;     /* the copies must go on by sendfile() */
        int sendfile_err; /* make sendfile() fail with this errno */
    } cases[] = {
        {"same bytes", "tenbin", 0, 0, 0, 0, 0, 1, 1, 0, 0},
        {"names dropped: patches", "tenbin", TIO_SAVE_DROP_NAMES, 0, 0, 0, 0, 1, 1, 0, 0},
        {"partial copies", "tenbin", TIO_SAVE_DROP_NAMES, 0, 0, 300000, 0, 2, -1, 0, 0},
        {"EINVAL after 2 calls", "tenbin", TIO_SAVE_DROP_NAMES, EINVAL, 2, 200000, 0, 3, 3, 0, 0},
        {"ENOSYS at once", "tenbin", TIO_SAVE_DROP_NAMES, ENOSYS, 0, 0, 0, 1, 1, 0, 0},
        {"EXDEV at once: sendfile", "tenbin", 0, EXDEV, 0, 0, 0, 1, 1, 1, 0},
        {"EXDEV, patches: sendfile", "tenbin", TIO_SAVE_DROP_NAMES, EXDEV, 0, 0, 1, 1, 1, 1, 0},
        {"EXDEV, sendfile refused", "tenbin", TIO_SAVE_DROP_NAMES, EXDEV, 0, 0, 0, 1, 1, 1,
         EINVAL},
        {"EXDEV after 2 calls", "tenbin", TIO_SAVE_DROP_NAMES, EXDEV, 2, 200000, 0, 3, 3, 0, 0},
        {"progress", "tenbin", TIO_SAVE_DROP_NAMES, 0, 0, 0, 1, 1, -1, 0, 0},
        {"other offsets", "btf", TIO_SAVE_DROP_NAMES, 0, 0, 0, 0, -1, -1, 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tio_save_options o = {.format = cases[k].format,
                              .flags = TIO_SAVE_NO_SYNC | cases[k].flags};
        void *want;
        size_t want_n;
        assert_int_equal(tio_save_memory(m, &o, &want, &want_n, &e), TIO_OK);
        prog pr = {0};
        if (cases[k].progress) {
            o.progress = on_progress;
            o.progress_ctx = &pr;
        }
        snprintf(dst, sizeof dst, "%s/runs-dst.%s", dir, cases[k].format);
        copy_calls = 0;
        copy_largest = 0;
        copy_first_in = -1;
        copy_fail = cases[k].fail;
        copy_fail_after = cases[k].fail_after;
        copy_max = cases[k].max;
        sendfile_calls = 0;
        sendfile_fail = cases[k].sendfile_err;
        int rc = tio_save(m, dst, &o, &e);
        copy_fail = copy_fail_after = 0;
        copy_max = 0;
        sendfile_fail = 0;
        if (rc != TIO_OK) fail_msg("%s: %s", cases[k].what, e.message);
        /* copy_file_range() refused with EXDEV before it copied: the run is
         * copied by sendfile() (one call, or one per piece with progress);
         * refused once it copied, or by sendfile() too: no more tries */
        if (cases[k].sendfile && !cases[k].sendfile_err && sendfile_calls < 1)
            fail_msg("%s: no sendfile() call", cases[k].what);
        if (cases[k].sendfile_err && sendfile_calls != 1)
            fail_msg("%s: %d sendfile() calls after it failed, expected 1", cases[k].what,
                     sendfile_calls);
        if (!cases[k].sendfile && sendfile_calls)
            fail_msg("%s: %d sendfile() calls", cases[k].what, sendfile_calls);
        if ((cases[k].calls_min >= 0 && copy_calls < cases[k].calls_min) ||
            (cases[k].calls_max >= 0 && copy_calls > cases[k].calls_max))
            fail_msg("%s: %d copy_file_range calls, expected %d..%d", cases[k].what,
                     copy_calls, cases[k].calls_min, cases[k].calls_max);
        /* one run: nearly the whole file asked for at once, from offset 0
         * (the header in it, patched where it differs: whole blocks, which
         * XFS and btrfs clone) */
        if (cases[k].calls_max == 1 && !cases[k].fail && copy_largest < src_size / 2)
            fail_msg("%s: the largest copy was %zu of %zu bytes", cases[k].what,
                     copy_largest, src_size);
        if (cases[k].calls_max == 1 && copy_first_in != 0)
            fail_msg("%s: the first copy starts at source offset %lld, not 0", cases[k].what,
                     copy_first_in);
        if (k == 0 && !files_same(dst, src))
            fail_msg("same bytes: the file differs from its source");
        if (!file_holds(dst, want, want_n))
            fail_msg("%s: the file differs from tio_save_memory", cases[k].what);
        if (cases[k].progress) {
            assert_false(pr.backwards);
            assert_int_equal(pr.last_done, want_n);
        }
        tio_free(want);
    }
    tio_container_free(m);
}

/* Saves c (over data, both freed) as tenbin to src, and opens that. */
/* c saved as src in `format` (c and data freed), opened. */
static tio_container *save_as_and_open(tio_container *c, uint8_t *data, const char *src,
                                       const char *format) {
    tio_error e;
    tio_save_options so = {.format = format, .flags = TIO_SAVE_NO_SYNC};
    assert_int_equal(tio_save(c, src, &so, &e), TIO_OK);
    tio_container_free(c);
    free(data);
    tio_container *m = NULL;
    assert_int_equal(tio_open(src, NULL, &m, &e), TIO_OK);
    return m;
}

static tio_container *save_and_open(tio_container *c, uint8_t *data, const char *src) {
    return save_as_and_open(c, data, src, "tenbin");
}

/* Whether the test's directory lies on tmpfs. */
static bool dir_on_tmpfs(void) {
    struct statfs sf;
    assert_int_equal(statfs(dir, &sf), 0);
    return sf.f_type == 0x01021994;
}

/* The writes and splices counted from here (__wrap_writev's counters and
 * __wrap_splice's from 0), until writev_count is 0 again. */
static void count_writes(void) {
    writev_count = 1;
    write_crossing = writev_calls = writev_unaligned = 0;
    writev_bytes = writev_misaligned = 0;
    splice_in = splice_out = splice_out_whole = 0;
    splice_in_bytes = splice_out_bytes = 0;
}

/* tio_save with the writes counted (count_writes). */
static int counted_save(const tio_container *m, const char *dst, const tio_save_options *o,
                        tio_error *e) {
    count_writes();
    int rc = tio_save(m, dst, o, e);
    writev_count = 0;
    return rc;
}

/* build()'s tensors saved as a .ten (STEM-src.ten) and opened; dst gets
 * the path STEM-dst.FORMAT (o's format), *want the bytes tio_save_memory
 * makes of it with o. */
static tio_container *ten_to(const char *stem, char dst[300], const tio_save_options *o,
                             void **want, size_t *want_n) {
    uint8_t *data;
    tio_container *c = build("tenbin", &data);
    char src[300];
    snprintf(src, sizeof src, "%s/%s-src.ten", dir, stem);
    snprintf(dst, 300, "%s/%s-dst.%s", dir, stem, o->format);
    tio_container *m = save_and_open(c, data, src);
    tio_error e;
    assert_int_equal(tio_save_memory(m, o, want, want_n, &e), TIO_OK);
    return m;
}

/* A same-format rewrite with a progress function copies a long run in
 * pieces (RUN_PROGRESS, 64 MiB, cut as the run grows tensor by tensor):
 * each piece after the first starts at a multiple of 2 MiB of the output
 * (RUN_CUT_ALIGN), where the page cache's large folios can start; at a page
 * boundary, as before, ext4 made 4x as many folios for the copy. 150
 * tensors of 1 MiB + 36 bytes of zeros, so that no tensor ends on a
 * boundary. */
static void test_copy_cut(void **state) {
    (void)state;
    enum { N = 150 };
    size_t each = ((size_t)1 << 20) + 36;
    uint8_t *data = calloc(N, each);
    assert_non_null(data);
    tio_container *c = tio_container_new();
    assert_non_null(c);
    tio_error e;
    for (size_t i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%zu", i);
        int64_t shape[1] = {(int64_t)(each / 4)};
        tio_tensor_desc d = {0};
        d.name = name;
        d.dtype = TIO_FLOAT32;
        d.rank = 1;
        d.shape = shape;
        d.data = data + i * each;
        d.nbytes = each;
        assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
    }
    char src[300], dst[300];
    snprintf(src, sizeof src, "%s/cut-src.ten", dir);
    snprintf(dst, sizeof dst, "%s/cut-dst.ten", dir);
    tio_container *m = save_and_open(c, data, src);
    tio_save_options so = {.format = "tenbin", .flags = TIO_SAVE_NO_SYNC};
    prog pr = {0};
    so.progress = on_progress;
    so.progress_ctx = &pr;
    copy_calls = copy_out_unaligned = 0;
    copy_first_in = -1;
    int rc = tio_save(m, dst, &so, &e);
    if (rc) fail_msg("%s", e.message);
    fprintf(stderr, "%d copy_file_range calls, %d after the first not at a multiple of 2 MiB\n",
            copy_calls, copy_out_unaligned);
    assert_true(copy_calls >= 2);
    assert_int_equal(copy_first_in, 0);
    assert_int_equal(copy_out_unaligned, 0);
    assert_true(files_same(dst, src));
    tio_container_free(m);
    unlink(src);
    unlink(dst);
}

/* Tensor data of the mapped source at offsets not congruent with the
 * output's are read with pread() into the sink's buffer and written from
 * there, not written from the mapping (docs/performance.md): tenbin to btf
 * (other offsets), with and without a progress function, the bytes those
 * of tio_save_memory. A read that fails, or finds the file ended (a source
 * that shrank after it was reopened), fails the save with TIO_E_IO and
 * leaves no file. */
static void test_read_in(void **state) {
    (void)state;
    char dst[300];
    tio_error e;
    tio_save_options o = {.format = "btf", .flags = TIO_SAVE_NO_SYNC | TIO_SAVE_DROP_NAMES};
    void *want;
    size_t want_n;
    tio_container *m = ten_to("read", dst, &o, &want, &want_n);
    for (int mode = 0; mode < 4; mode++) { /* read; with progress; EOF; EIO */
        prog pr = {0};
        tio_save_options oo = o;
        if (mode == 1) {
            oo.progress = on_progress;
            oo.progress_ctx = &pr;
        }
        pread_big = 0;
        pread_aliased = 0;
        pread_fail = mode == 2 ? -1 : mode == 3 ? EIO : 0;
        pread_fail_after = 3;
        copy_calls = 0;
        int rc = counted_save(m, dst, &oo, &e);
        pread_fail = 0;
        if (mode >= 2) {
            assert_int_equal(rc, TIO_E_IO);
            assert_non_null(strstr(e.message, mode == 2 ? "ended at offset" : "failed"));
            struct stat st;
            assert_int_not_equal(stat(dst, &st), 0); /* nothing left behind */
            continue;
        }
        if (rc != TIO_OK) fail_msg("mode %d: %s", mode, e.message);
        if (pread_big < 10) fail_msg("mode %d: %d reads of the source", mode, pread_big);
        /* the writes start at multiples of 256 KiB of the output (read_in's
         * pieces end there, and what is pending is written there): the page
         * cache's large folios are aligned. Three do not: the first after the
         * header (written alone), the first after the small tensors (copied
         * into the buffer, not read in), and on a disk file system the first
         * after the tensors of 1 MiB and more, spliced (test_splice_whole),
         * once their pipe is emptied. Before: all 48. */
        fprintf(stderr, "mode %d: %d writes of >= 64 KiB (%zu bytes), %d not at a multiple "
                "of 256 KiB, %zu bytes not congruent modulo 64\n", mode, writev_calls,
                writev_bytes, writev_unaligned, writev_misaligned);
        assert_true(writev_calls >= 10);
        assert_true(writev_unaligned <= (dir_on_tmpfs() ? 2 : 3));
        assert_true(writev_misaligned == 0);
        assert_int_equal(pread_aliased, 0);
        if (!file_is(dst, want, want_n)) /* removes dst */
            fail_msg("mode %d: the file differs from tio_save_memory", mode);
        if (mode == 1) {
            assert_false(pr.backwards);
            assert_int_equal(pr.last_done, want_n);
        }
    }
    tio_free(want);
    tio_container_free(m);
}

/* Tensors read in (read_in) are read once each, each into a slot of its
 * own where its output offset wants it (bytes of the next tensor read into
 * this one's piece would lie right only by chance); tensors that follow one
 * another in the source go in one preadv(), the header between them into a
 * scratch (sink.c: FILL_MAX). 300 tensors of 40 KiB (and a few bytes, so
 * no layout is congruent) from a .ten to BTF, in file order, and to
 * safetensors, which orders them by name, here the reverse of the file's:
 * one slot per tensor (a tensor congruent by chance is copied instead), no
 * byte of a tensor read twice, the headers between (the .ten's, under 2 KiB
 * each) read once at most; in file order under one call per 4 tensors, in
 * reverse one per tensor; every piece of 4 KiB or more written from an
 * address congruent with its offset in the file modulo 64, and no read
 * landing just past its source modulo 4096. The files hold
 * tio_save_memory's bytes. */
static void test_read_once(void **state) {
    (void)state;
    enum { N = 300 };
    size_t sz[N], total = 0;
    for (size_t i = 0; i < N; i++) total += sz[i] = 40960 + 4 * (i % 7 + 1);
    uint8_t *data = random_bytes(total, 21);
    tio_container *c = float_tensors(data, sz, N, true); /* sorted: the reverse */
    tio_error e;
    char src[300], dst[300];
    snprintf(src, sizeof src, "%s/once-src.ten", dir);
    tio_container *m = save_and_open(c, data, src);
    const char *formats[2] = {"btf", "safetensors"};
    for (int f = 0; f < 2; f++) {
        tio_save_options o = {.format = formats[f],
                              .flags = TIO_SAVE_NO_SYNC | (f ? 0u : TIO_SAVE_DROP_NAMES)};
        void *want;
        size_t want_n;
        assert_int_equal(tio_save_memory(m, &o, &want, &want_n, &e), TIO_OK);
        snprintf(dst, sizeof dst, "%s/once-dst.%s", dir, formats[f]);
        pread_big = 0;
        pread_big_bytes = 0;
        pread_aliased = 0;
        preadv_calls = preadv_slots = 0;
        preadv_gap_bytes = 0;
        copy_calls = 0;
        writev_count = 1;
        writev_misaligned = 0;
        int rc = tio_save(m, dst, &o, &e);
        writev_count = 0;
        if (rc != TIO_OK) fail_msg("%s: %s", formats[f], e.message);
        int calls = pread_big - preadv_slots + preadv_calls;
        fprintf(stderr, "%s: %d reads of the source in %d calls, %zu bytes (%zu between), %d "
                "copies (%zu bytes of tensors), %zu bytes written not congruent modulo 64, %d "
                "reads just behind their buffer modulo 4096\n", formats[f], pread_big, calls,
                pread_big_bytes, preadv_gap_bytes, copy_calls, total, writev_misaligned,
                pread_aliased);
        if (f == 0 ? calls * 4 > N : calls + copy_calls < N)
            fail_msg("%s: %d calls for %d reads", formats[f], calls, pread_big);
        if (preadv_gap_bytes > (size_t)N * (2u << 10))
            fail_msg("%s: %zu bytes read between the tensors", formats[f], preadv_gap_bytes);
        if (pread_aliased)
            fail_msg("%s: %d reads into a buffer under 64 bytes past their source offset modulo "
                     "4096", formats[f], pread_aliased);
        if (writev_misaligned)
            fail_msg("%s: %zu bytes written from addresses not congruent with their offsets "
                     "modulo 64", formats[f], writev_misaligned);
        if (pread_big_bytes > total)
            fail_msg("%s: %zu bytes read for %zu bytes of tensors", formats[f], pread_big_bytes,
                     total);
        if (pread_big + copy_calls < N || pread_big > 2 * N)
            fail_msg("%s: %d reads and %d copies for %d tensors", formats[f], pread_big,
                     copy_calls, N);
        if (!file_is(dst, want, want_n)) /* removes dst */
            fail_msg("%s: the file differs from tio_save_memory", formats[f]);
        tio_free(want);
    }
    tio_container_free(m);
}

/* A Hugging Face index's tensors lie in its shards' mappings: a save reads
 * or copies them from the shard files as from one mapped file (every byte
 * a tensor holds comes by copy_file_range() or pread(), none through a
 * mapping), the zip writer's CRC job too (40 MiB, past TIO__CRC_JOB_MIN:
 * each byte once more, by pread()); a shard that changed since it was
 * mapped is written from its mapping. The files hold tio_save_memory's
 * bytes. */
static void test_copy_from_shards(void **state) {
    (void)state;
    enum { N = 8 };
    size_t sz[N], total = 0;
    for (size_t i = 0; i < N; i++) total += sz[i] = (5u << 20) + 4 * (i % 3 + 1);
    uint8_t *data = random_bytes(total, 23);
    tio_container *c = float_tensors(data, sz, N, false);
    tio_error e;
    char shards[300], dst[300], first[400];
    /* shards as save_pretrained writes them with safe_serialization on and off */
    static const char *const kinds[2][2] = {{"safetensors", "model-00001-of-00003.safetensors"},
                                            {"torch", "pytorch_model-00001-of-00003.bin"}};
    const char *formats[] = {"btf", "safetensors", "npz"};
    for (int run = 0; run < 4; run++) { /* each kind, then with a shard changed */
        int kind = run / 2, touched = run % 2;
        snprintf(shards, sizeof shards, "%s/shards-%s/", dir, kinds[kind][0]);
        snprintf(first, sizeof first, "%s%s", shards, kinds[kind][1]);
        if (!touched) {
            tio_save_options hf = {.format = kinds[kind][0], .flags = TIO_SAVE_NO_SYNC,
                                   .max_shard_bytes = 16u << 20};
            assert_int_equal(tio_save(c, shards, &hf, &e), TIO_OK);
        }
        tio_container *m;
        assert_int_equal(tio_open(shards, NULL, &m, &e), TIO_OK);
        assert_string_equal(tio_container_format(m), "hfindex");
        if (touched) { /* the first shard, once mapped */
            struct timespec ts[2] = {{0, UTIME_NOW}, {12345, 0}};
            assert_int_equal(utimensat(AT_FDCWD, first, ts, 0), 0);
        }
        for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
            tio_save_options o = {.format = formats[f],
                                  .flags = TIO_SAVE_NO_SYNC | TIO_SAVE_DROP_METADATA |
                                           (f ? 0u : TIO_SAVE_DROP_NAMES)};
            void *want;
            size_t want_n;
            if (tio_save_memory(m, &o, &want, &want_n, &e) != TIO_OK)
                fail_msg("%s: %s", formats[f], e.message);
            snprintf(dst, sizeof dst, "%s/from-shards.%s", dir, formats[f]);
            pread_big = 0;
            pread_big_bytes = copy_bytes = splice_in_bytes = 0;
            copy_calls = 0;
            int rc = tio_save(m, dst, &o, &e);
            if (rc != TIO_OK) fail_msg("%s: %s", formats[f], e.message);
            fprintf(stderr, "%s shards -> %s%s: %d reads of the shards (%zu bytes), %d copies "
                    "(%zu bytes), %zu bytes spliced, for %zu bytes of tensors\n",
                    kinds[kind][0], formats[f], touched ? ", a shard touched" : "", pread_big,
                    pread_big_bytes, copy_calls, copy_bytes, splice_in_bytes, total);
            /* each byte read, copied or spliced for the file (5 MiB tensors:
             * spliced where not congruent, test_splice_whole), and read for
             * the CRC (npz), but for reads under 4 KiB (pread_big: the ends
             * of a tensor's pieces); a changed shard's bytes (3 of the 8
             * tensors) none of those */
            size_t crc = strcmp(formats[f], "npz") == 0 ? total : 0;
            size_t got = pread_big_bytes + copy_bytes + splice_in_bytes, changed = 3 * sz[0];
            if (!touched && got + 2 * N * 4096 < total + crc)
                fail_msg("%s: %zu bytes read or copied for %zu bytes of tensors", formats[f],
                         got, total + crc);
            if (touched && got > total + crc - (crc ? 2 : 1) * changed)
                fail_msg("%s: %zu bytes read or copied with a shard changed", formats[f], got);
            if (!file_is(dst, want, want_n))
                fail_msg("%s%s: the file differs from tio_save_memory", formats[f],
                         touched ? " (a shard touched)" : "");
            tio_free(want);
        }
        tio_container_free(m);
    }
    tio_container_free(c);
    free(data);
}

/* A container made of another's tensors (a selection, as tensio convert
 * --only makes) that holds it (tio_container_hold) is saved from the
 * other's file as from its own: every byte a tensor holds read or copied
 * from the file, none through the mapping; without the hold, from the
 * mapping. The files hold tio_save_memory's bytes either way. */
static void test_copy_from_held(void **state) {
    (void)state;
    enum { N = 100 };
    size_t sz[N], total = 0;
    for (size_t i = 0; i < N; i++) total += sz[i] = 40960 + 4 * (i % 5 + 1);
    uint8_t *data = random_bytes(total, 25);
    char src[300], dst[300];
    snprintf(src, sizeof src, "%s/held-src.ten", dir);
    snprintf(dst, sizeof dst, "%s/held-dst.btf", dir);
    tio_container_free(save_and_open(float_tensors(data, sz, N, false), data, src));
    tio_error e;
    for (int hold = 1; hold >= 0; hold--) {
        tio_container *m, *sel = tio_container_new();
        assert_int_equal(tio_open(src, NULL, &m, &e), TIO_OK);
        assert_non_null(sel);
        size_t kept = 0;
        for (size_t i = 0; i < N; i += 2) { /* every other tensor */
            const tio_tensor *t = tio_container_tensor(m, i);
            tio_tensor_desc d = {0};
            d.dtype = tio_tensor_dtype(t);
            d.rank = tio_tensor_rank(t);
            d.shape = tio_tensor_shape(t);
            d.data = tio_tensor_data(t);
            d.nbytes = tio_tensor_nbytes(t);
            assert_int_equal(tio_container_add(sel, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
            kept += sz[i];
        }
        if (hold) {
            assert_int_equal(tio_container_hold(sel, m, &e), TIO_OK);
            tio_container_free(m); /* sel keeps it */
            m = NULL;
        }
        tio_save_options o = {.format = "btf", .flags = TIO_SAVE_NO_SYNC};
        void *want;
        size_t want_n;
        assert_int_equal(tio_save_memory(sel, &o, &want, &want_n, &e), TIO_OK);
        pread_big = 0;
        pread_big_bytes = copy_bytes = 0;
        if (tio_save(sel, dst, &o, &e) != TIO_OK) fail_msg("hold %d: %s", hold, e.message);
        size_t got = pread_big_bytes + copy_bytes;
        fprintf(stderr, "held %d: %zu bytes read or copied from the file for %zu bytes of "
                "tensors\n", hold, got, kept);
        if (hold ? got + N * 4096 < kept : got != 0)
            fail_msg("hold %d: %zu bytes read or copied for %zu", hold, got, kept);
        if (!file_is(dst, want, want_n)) fail_msg("hold %d: the file differs", hold);
        tio_free(want);
        tio_container_free(sel);
        tio_container_free(m);
    }
    unlink(src);
}

/* On a virtual machine whose balloon reports free pages to the host, the
 * writes onto a disk file system go in pieces that end at multiples of
 * 64 KiB of the file: the page cache makes each folio as large as the write
 * that creates it, and the small free blocks cp's 64 KiB folios come from
 * are the ones the host does not take back. Elsewhere they stay whole (512
 * KiB). There the tensors' bytes go by splice() (test_splice), in the same
 * pieces. Where such a host still keeps free blocks of 256 KiB and more
 * (orders it does not take back) of twice the bytes to write, the writes
 * stay whole: whole writes cost less while their folios' memory is at hand.
 * Where they hold less than twice but more than 1.25 times the bytes, the
 * sink asks once how much of them is kept for movable pages (the page
 * cache's), and the writes stay whole where those blocks hold 1.25 times
 * the bytes; where that cannot be told (only root reads pagetypeinfo),
 * pieces. The sink asks once per save, once more than 64 KiB is due, and
 * not for tmpfs; the file holds tio_save_memory's bytes either way. */
static void test_host_pieces(void **state) {
    (void)state;
    tio_save_options o = {.format = "safetensors", .flags = TIO_SAVE_NO_SYNC};
    char dst[300];
    void *want;
    size_t want_n;
    tio_container *m = ten_to("host", dst, &o, &want, &want_n);
    uint64_t bytes = 0; /* what the save expects to write: its tensors' */
    for (size_t i = 0; i < tio_container_count(m); i++)
        bytes += tio_tensor_nbytes(tio_container_tensor(m, i));
    tio_error e;
    bool tmpfs = dir_on_tmpfs(); /* no large folios there: never asked */
    /* 0: no free page reporting; 1: reporting, the kept free blocks hold
     * the bytes to write once; 2: they hold twice, and then
     * still twice the bytes left; 3: twice, and then none (asked again
     * after 8 MiB: the rest goes in pieces); 4-6: 1.5 times, of which
     * movable 4: all (whole), 5: the bytes once (pieces), 6: unknown
     * (pieces) */
    for (int says = 0; says < 7; says++) {
        host_reports = says > 0;
        host_kept = says >= 4 ? bytes / 2 * 3 : says >= 2 ? 2 * bytes : says == 1 ? bytes : 0;
        host_kept_later = says == 3 ? 0 : says >= 4 ? host_kept : 2 * bytes;
        host_movable = says == 4 ? host_kept : says == 5 ? bytes : UINT64_MAX;
        kept_turns = 1;
        host_asked = kept_asked = movable_asked = 0;
        int rc = counted_save(m, dst, &o, &e);
        host_reports = kept_turns = 0;
        host_kept = host_kept_later = 0;
        host_movable = UINT64_MAX;
        if (rc != TIO_OK) fail_msg("host says %d: %s", says, e.message);
        fprintf(stderr, "%s, host says %d: asked %d+%d+%d times, %d writes of >= 64 KiB (%zu "
                "bytes), %d splices out (%zu bytes), %d writes crossing a multiple of 64 KiB\n",
                tmpfs ? "tmpfs" : "disk", says, host_asked, kept_asked, movable_asked,
                writev_calls, writev_bytes, splice_out, splice_out_bytes, write_crossing);
        assert_int_equal(host_asked, tmpfs ? 0 : 1);
        /* ~24 MiB written: asked again at 8 and 16 MiB while writes stay whole */
        int whole = says == 0 || says == 2 || says == 4;
        assert_int_equal(kept_asked, tmpfs || !says ? 0 : whole ? 3 : says == 3 ? 2 : 1);
        if (kept_asked) assert_int_equal(kept_lo, 256); /* whole writes' folios: 256 KiB up */
        /* movable blocks asked about once a save, only where the answer decides */
        assert_int_equal(movable_asked, !tmpfs && says >= 4 ? 1 : 0);
        if (says == 3 && !tmpfs) { /* whole, then in pieces */
            assert_true(write_crossing > 0);
            assert_true(splice_out >= 100);
        } else if (!whole && !tmpfs) {
            assert_int_equal(write_crossing, 0);
            assert_true(writev_calls + splice_out >= 100); /* ~12 MiB in pieces of 64 KiB */
        } else { /* whole: only the tensors of 1 MiB and more spliced, on a disk */
            assert_true(write_crossing > 0);
            size_t big = ((size_t)11 << 20) + 4; /* build()'s 1 MiB, 1 MiB + 4, 9 MiB */
            assert_true(splice_in_bytes <= big);
            assert_true(tmpfs ? splice_in_bytes == 0 : splice_in_bytes >= (size_t)9 << 20);
        }
        assert_true(writev_misaligned == 0);
        if (!file_is(dst, want, want_n))
            fail_msg("host says %d: the file differs from tio_save_memory", says);
    }
    tio_free(want);
    /* a same-format rewrite copies in the kernel (congruent offsets); where
     * the kernel refuses (EINVAL), the mapped bytes are written in pieces */
    snprintf(dst, sizeof dst, "%s/host-dst.ten", dir);
    tio_save_options t = {.format = "tenbin", .flags = TIO_SAVE_NO_SYNC};
    for (int says = 0; says < 2; says++) {
        host_reports = says; /* and keeps no free blocks */
        copy_fail = EINVAL;
        copy_calls = 0;
        assert_int_equal(counted_save(m, dst, &t, &e), TIO_OK);
        copy_fail = 0;
        host_reports = 0;
        assert_true(copy_calls > 0);
        if (says && !tmpfs) assert_int_equal(write_crossing, 0);
        else assert_true(write_crossing > 0);
        unlink(dst);
    }
    tio_container_free(m);
    /* a save from memory: the 40 KiB tensors referenced, the headers between
     * them copied; its pieces end at multiples of 64 KiB too (they were
     * once placed by the position before the bytes just gathered, 40 KiB
     * off: 213 of 366 writes crossed one) */
    uint8_t *data;
    tio_container *mem = build("tenbin", &data);
    assert_int_equal(tio_save_memory(mem, &t, &want, &want_n, &e), TIO_OK);
    host_reports = 1;
    int rc = counted_save(mem, dst, &t, &e);
    host_reports = 0;
    if (rc != TIO_OK) fail_msg("from memory: %s", e.message);
    fprintf(stderr, "%s, from memory: %d writes of >= 64 KiB, %d crossing a multiple of 64 KiB\n",
            tmpfs ? "tmpfs" : "disk", writev_calls, write_crossing);
    if (!tmpfs) assert_int_equal(write_crossing, 0);
    if (!file_is(dst, want, want_n)) fail_msg("from memory: the file differs");
    tio_free(want);
    tio_container_free(mem);
    free(data);
    /* a small save does not ask */
    tio_container *one = tio_container_new();
    assert_non_null(one);
    float v[256] = {0};
    int64_t shape[1] = {256};
    tio_tensor_desc d = {.name = "v", .dtype = TIO_FLOAT32, .rank = 1, .shape = shape,
                         .data = v, .nbytes = sizeof v};
    assert_int_equal(tio_container_add(one, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
    host_asked = 0;
    assert_int_equal(tio_save(one, dst, &o, &e), TIO_OK);
    assert_int_equal(host_asked, 0);
    unlink(dst);
    tio_container_free(one);
    /* what the bench reports of the host (tio_bench host): the decision a
     * save makes at its start, of the same answers */
    uint64_t kept = 1;
    host_reports = 0;
    host_kept = 0;
    assert_int_equal(tio__sink_host_piece(1u << 30, 4096, &kept), 0);
    assert_int_equal(kept, 0); /* not asked: the balloon does not report */
    host_reports = 1;
    kept_asked = movable_asked = 0;
    host_kept = (uint64_t)2 << 30; /* twice the bytes to write: whole */
    assert_int_equal(tio__sink_host_piece(1u << 30, 4096, &kept), 0);
    assert_true(kept == host_kept && kept_asked == 1 && kept_lo == 256);
    host_kept -= 4096; /* just under */
    assert_int_equal(movable_asked, 0);
    assert_int_equal(tio__sink_host_piece(1u << 30, 4096, &kept), 64 << 10);
    assert_true(kept == host_kept);
    assert_int_equal(movable_asked, 1); /* unknown: pieces */
    host_movable = host_kept - ((uint64_t)700 << 20); /* 1.3 GiB of 2 GiB: whole */
    assert_int_equal(tio__sink_host_piece(1u << 30, 4096, &kept), 0);
    host_movable = ((uint64_t)5 << 30) / 4 - 1; /* under 1.25 GiB: pieces */
    assert_int_equal(tio__sink_host_piece(1u << 30, 4096, &kept), 64 << 10);
    host_kept = ((uint64_t)5 << 30) / 4 - 1; /* under 1.25 GiB in all: not asked */
    assert_int_equal(tio__sink_host_piece(1u << 30, 4096, &kept), 64 << 10);
    assert_int_equal(movable_asked, 3);
    host_reports = 0;
    host_kept = 0;
    host_movable = UINT64_MAX;
}

/* Tensors that lie back to back in the source and in the output at a
 * distance not congruent modulo the page (GGUF -> safetensors: their data
 * sections start at other offsets) are one range, not one call per tensor:
 * on a disk file system spliced in as one (1 MiB and more: where writes
 * stay whole too, out in pieces ending at multiples of 512 KiB), on tmpfs
 * read in pieces of up to 256 KiB. 300 tensors of 40 KiB and 32 bytes
 * (GGUF aligns each tensor to 32: nothing lies between them). The files
 * hold tio_save_memory's bytes. */
static void test_read_range(void **state) {
    (void)state;
    enum { N = 300 };
    size_t sz[N], total = 0;
    for (size_t i = 0; i < N; i++) total += sz[i] = 40960 + 32;
    uint8_t *data = random_bytes(total, 23);
    char src[300], dst[300];
    snprintf(src, sizeof src, "%s/range-src.gguf", dir);
    snprintf(dst, sizeof dst, "%s/range-dst.safetensors", dir);
    tio_container *m = save_as_and_open(float_tensors(data, sz, N, false), data, src, "gguf");
    tio_save_options o = {.format = "safetensors", .flags = TIO_SAVE_NO_SYNC};
    void *want;
    size_t want_n;
    tio_error e;
    assert_int_equal(tio_save_memory(m, &o, &want, &want_n, &e), TIO_OK);
    bool tmpfs = dir_on_tmpfs();
    for (int says = 0; says < 2; says++) {
        host_reports = says;
        pread_big = 0;
        pread_big_bytes = 0;
        copy_calls = 0;
        int rc = counted_save(m, dst, &o, &e);
        host_reports = 0;
        if (rc != TIO_OK) fail_msg("host says %d: %s", says, e.message);
        fprintf(stderr, "host says %d: %d reads of >= 4 KiB (%zu bytes), %d splices in (%zu "
                "bytes), %d out (%d ending at a multiple of 512 KiB), %d copies, for %d "
                "tensors (%zu bytes)\n", says, pread_big, pread_big_bytes, splice_in,
                splice_in_bytes, splice_out, splice_out_whole, copy_calls, N, total);
        assert_int_equal(copy_calls, 0); /* not congruent: nothing copied in the kernel */
        if (!tmpfs) {
            assert_true(splice_in_bytes == total);
            assert_true(splice_in <= N / 3);
            /* whole: 12 MiB in 512 KiB pieces, the last where the save ends */
            if (!says) assert_true(splice_out >= 20 && splice_out_whole >= splice_out - 1);
        } else {
            assert_true(pread_big_bytes == total);
            assert_true(pread_big <= N / 4); /* 12 MiB in pieces of 256 KiB: ~48 */
        }
        if (!file_is(dst, want, want_n))
            fail_msg("host says %d: the file differs from tio_save_memory", says);
    }
    tio_free(want);
    tio_container_free(m);
}

/* The lowest file descriptor free. */
static int lowest_free_fd(void) {
    int fd = dup(0);
    assert_true(fd >= 0);
    close(fd);
    return fd;
}

/* Where the host takes free memory back (host says 1) and the output is on
 * a disk file system, tensor bytes at offsets not congruent with the
 * source's go by splice() through a pipe of the sink's own into the file,
 * in pieces that end at multiples of 64 KiB of it: one copy, as cp, where
 * reading them in made two. The file holds tio_save_memory's bytes however
 * it goes: with a progress function (rising to the end); where the pipe
 * cannot be made (no pipe; one that will not hold 256 KiB) the bytes are
 * read in; where the output refuses (EINVAL after 5 pieces) the bytes in the
 * pipe are read back and written, and nothing more is spliced; where the
 * source refuses (EINVAL after 5 tensors) the rest is read in. A source that
 * ended or failed, or an output that failed, fails the save with TIO_E_IO
 * and leaves no file. Each save closes its pipe. On tmpfs nothing is
 * spliced. */
static void test_splice(void **state) {
    (void)state;
    tio_save_options o = {.format = "safetensors", .flags = TIO_SAVE_NO_SYNC};
    char dst[300];
    void *want;
    size_t want_n;
    tio_container *m = ten_to("splice", dst, &o, &want, &want_n);
    tio_error e;
    bool tmpfs = dir_on_tmpfs();
    int fd0 = lowest_free_fd();
    host_reports = 1;
    for (int mode = 0; mode < (tmpfs ? 1 : 9); mode++) {
        /* 0 as it is; 1 with progress; 2 output EINVAL; 3 source EINVAL; 4 no
         * pipe; 5 a small pipe; 6 source ended; 7 source EIO; 8 output EIO */
        prog pr = {0};
        tio_save_options oo = o;
        if (mode == 1) {
            oo.progress = on_progress;
            oo.progress_ctx = &pr;
        }
        splice_fail_out = mode == 2 ? EINVAL : mode == 8 ? EIO : 0;
        splice_fail_in = mode == 3 ? EINVAL : mode == 6 ? -1 : mode == 7 ? EIO : 0;
        splice_fail_after = 5;
        pipe_fail = mode == 4;
        pipe_small = mode == 5;
        pread_big = 0;
        int rc = counted_save(m, dst, &oo, &e);
        splice_fail_out = splice_fail_in = pipe_fail = pipe_small = 0;
        fprintf(stderr, "%s, mode %d: %d splices in (%zu bytes), %d out (%zu bytes), %d reads "
                "of >= 4 KiB, %d writes crossing a multiple of 64 KiB\n",
                tmpfs ? "tmpfs" : "disk", mode, splice_in, splice_in_bytes, splice_out,
                splice_out_bytes, pread_big, write_crossing);
        assert_int_equal(lowest_free_fd(), fd0); /* the pipe is closed */
        if (mode >= 6) {
            assert_int_equal(rc, TIO_E_IO);
            assert_non_null(strstr(e.message, mode == 6   ? "ended at offset"
                                              : mode == 7 ? "reading the source file"
                                                          : "write failed"));
            struct stat st;
            assert_int_not_equal(stat(dst, &st), 0); /* nothing left behind */
            continue;
        }
        if (rc != TIO_OK) fail_msg("mode %d: %s", mode, e.message);
        if (!file_is(dst, want, want_n))
            fail_msg("mode %d: the file differs from tio_save_memory", mode);
        assert_int_equal(write_crossing, tmpfs ? write_crossing : 0);
        if (tmpfs) {
            assert_int_equal(splice_in + splice_out, 0);
        } else if (mode <= 1) { /* the 300 tensors of 40 KiB but the few 4K-aliased */
            assert_true(splice_in >= 250);
            assert_true(splice_in_bytes >= (size_t)250 * MID_BYTES);
            assert_true(splice_out >= 150); /* ~12 MiB in pieces of 64 KiB */
            assert_true(pread_big <= 50);
            if (mode == 1) {
                assert_false(pr.backwards);
                assert_int_equal(pr.last_done, want_n);
            }
        } else if (mode == 2) {
            assert_int_equal(splice_out, 6); /* the 6th refused, no more tried */
            assert_true(pread_big >= 200);
        } else if (mode == 3) {
            assert_int_equal(splice_in, 6);
            assert_true(pread_big >= 200);
        } else {
            assert_int_equal(splice_in + splice_out, 0);
            assert_true(pread_big >= 250);
        }
    }
    host_reports = 0;
    tio_free(want);
    tio_container_free(m);
}

/* A source file of the n bytes at `data` named dir/name, open (*fd) and
 * mapped: the sink's own tests' input. */
static void *source_file(const char *name, const uint8_t *data, size_t n, char *path, size_t cap,
                         int *fd) {
    snprintf(path, cap, "%s/%s", dir, name);
    int in = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(in >= 0);
    assert_int_equal(write(in, data, n), (ssize_t)n);
    void *map = mmap(NULL, n, PROT_READ, MAP_SHARED, in, 0);
    assert_true(map != MAP_FAILED);
    *fd = in;
    return map;
}

/* Unmaps, closes and removes source_file()'s file, removes the output. */
static void source_gone(void *map, size_t n, int in, const char *src, const char *dst,
                        uint8_t *data) {
    munmap(map, n);
    close(in);
    unlink(src);
    unlink(dst);
    free(data);
}

/* Where writes stay whole (the host does not take free memory back), the
 * ranges of 1 MiB and more at offsets not congruent with the source's go by
 * splice() too, out in pieces that end at multiples of 512 KiB of the file
 * (whole writes' folios), and the smaller ones are read in: build()'s
 * tensors of 1 MiB, 1 MiB + 4 and 9 MiB spliced, the rest read. Where the
 * system will not make the pipe 1 MiB (256 KiB only: pipe-max-size), they
 * are read in, while the 64 KiB pieces of a host that takes memory back
 * are still spliced. 4K-aliased distances (the output 1-63 bytes past the
 * source modulo 4096) are spliced only where the save measured the way
 * (TRY_EPOCH: 256 MiB or more, here the sink told so, its clock made to
 * price splicing cheapest): 112 MiB at a distance of 8 bytes read in by a
 * small save, spliced by the trial's read epochs and after it. The files
 * hold tio_save_memory's bytes (the source's, for the sink's own). */
static void test_splice_whole(void **state) {
    (void)state;
    tio_save_options o = {.format = "safetensors", .flags = TIO_SAVE_NO_SYNC};
    char dst[300];
    void *want;
    size_t want_n;
    tio_container *m = ten_to("whole", dst, &o, &want, &want_n);
    tio_error e;
    bool tmpfs = dir_on_tmpfs();
    size_t big = ((size_t)11 << 20) + 4;
    for (int mode = 0; mode < 3; mode++) { /* 0 as it is; 1 pipe of 256 KiB; 2 that, pieces */
        pipe_small = mode ? 2 : 0;
        host_reports = mode == 2; /* and keeps no free blocks */
        pread_big_bytes = 0;
        int rc = counted_save(m, dst, &o, &e);
        pipe_small = host_reports = 0;
        if (rc != TIO_OK) fail_msg("mode %d: %s", mode, e.message);
        fprintf(stderr, "%s, mode %d: %d splices in (%zu bytes), %d out (%zu bytes, %d ending "
                "at a multiple of 512 KiB), %zu bytes read\n", tmpfs ? "tmpfs" : "disk", mode,
                splice_in, splice_in_bytes, splice_out, splice_out_bytes, splice_out_whole,
                (size_t)pread_big_bytes);
        if (!file_is(dst, want, want_n)) fail_msg("mode %d: the file differs", mode);
        if (tmpfs) {
            assert_int_equal(splice_in + splice_out, 0);
        } else if (mode == 0) {
            assert_true(splice_in_bytes >= (size_t)9 << 20 && splice_in_bytes <= big);
            /* the pipe emptied whole but where what follows is written */
            assert_true(splice_out >= 20 && splice_out_whole >= splice_out - 3);
        } else if (mode == 1) {
            assert_int_equal(splice_in + splice_out, 0);
        } else {
            assert_true(splice_in_bytes > big); /* the 40 KiB tensors too */
            assert_int_equal(write_crossing, 0);
        }
    }
    tio_free(want);
    tio_container_free(m);
    if (tmpfs) return;
    /* the sink's own, from a source of 112 MiB */
    size_t n = (size_t)112 << 20;
    uint8_t *data = random_bytes(n, 41);
    char src[300];
    int in;
    void *map = source_file("whole-src.bin", data, n, src, sizeof src, &in);
    tio_sink *sk = malloc(sizeof *sk);
    assert_non_null(sk);
    static const uint8_t head[8] = "aliased!";
    for (int measured = 0; measured < 2; measured++) {
        int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_true(out >= 0);
        assert_int_equal(tio__sink_init_fd(sk, out, &e), TIO_OK);
        sk->expect = measured ? (uint64_t)1 << 30 : 0;
        cost_splice = measured ? 1 : 0;
        cost_read = cost_copy = measured ? 3 : 0;
        count_writes();
        pread_big_bytes = copy_bytes = 0;
        cpu_asked = 0;
        assert_int_equal(tio__sink_write(sk, head, sizeof head, &e), TIO_OK);
        int rc = tio__sink_copy_range(sk, in, map, n, 0, n, &e);
        if (rc == TIO_OK) rc = tio__sink_flush(sk, &e);
        tio__sink_dispose(sk);
        writev_count = 0;
        cost_splice = cost_read = cost_copy = 0;
        close(out);
        if (rc != TIO_OK) fail_msg("measured %d: %s", measured, e.message);
        fprintf(stderr, "8 bytes past, measured %d: clock read %d times, %zu bytes spliced (%d "
                "out, %d ending at a multiple of 512 KiB), %zu read, %zu copied\n", measured,
                cpu_asked, splice_in_bytes, splice_out, splice_out_whole,
                (size_t)pread_big_bytes, copy_bytes);
        size_t mib = (size_t)1 << 20;
        if (!measured) {
            assert_int_equal(cpu_asked, 0);
            assert_int_equal(splice_in, 0);
            assert_true(pread_big_bytes >= n - 4096); /* the last 8 bytes: under 4 KiB */
        } else { /* 2 x 16 MiB of the trial, and the 48 MiB after it; the
                  * ways that lost by far (3 to 1) not tried twice; two
                  * readings more around the large buffer's setup */
            assert_int_equal(cpu_asked, 7);
            assert_true(splice_in_bytes == 80 * mib);
            assert_true(pread_big_bytes >= 16 * mib - 4096 && pread_big_bytes <= 16 * mib);
            assert_true(copy_bytes >= 16 * mib - 4096 && copy_bytes <= 16 * mib);
            assert_true(splice_out_whole >= splice_out - 6); /* each way's turn ends it */
        }
        size_t got_n;
        uint8_t *got = read_file(dst, &got_n);
        assert_true(got_n == n + sizeof head);
        assert_memory_equal(got, head, sizeof head);
        if (memcmp(got + sizeof head, data, n) != 0) fail_msg("measured %d: bytes differ", measured);
        free(got);
    }
    free(sk);
    source_gone(map, n, in, src, dst, data);
}

/* A save of 64 MiB or more onto a disk file system, where this thread may
 * run on two processors, hands what is pending to a thread of the sink's
 * own and reads the next bytes meanwhile (sink.c, AW_MIN): the sink driven
 * directly over 96 MiB of a source, 100 KiB ranges at non-congruent offsets
 * (read in, not spliced) each after an 8-byte header. Mode 0: the file
 * written off this thread (its first two windows at least: where the machine is
 * busy the thread may stop after them), its bytes right. 1: the 20th write fails
 * (ENOSPC): the save fails naming it and the bytes written before it, and
 * nothing hangs. 2: the wall clock made to pass far more than the CPU time
 * (the threads did not run side by side) and this thread made to wait 10 %
 * of it for a processor (other work had them): the thread stops after two
 * such windows of 32 MiB in a row and this thread writes the rest, the
 * bytes right. 3: the sink disposed of with a batch out, unflushed: the
 * file a prefix of the bytes. 4: that wall clock, but no wait for a
 * processor (the window was slow with the processors free: a host's
 * stall): the thread writes to the end. 5 and 6: that wall clock, the
 * waits unreadable, or showing no time run: stopped after the second
 * window, as in 2. 7: the waits of 2 in every other window only (never two
 * in a row): the thread writes to the end. On tmpfs, or with one processor
 * (or one processor's time: tio__host_cpus), nothing is written off this
 * thread. */
static void test_writer_thread(void **state) {
    (void)state;
    wrap_main = pthread_self();
    bool other = !dir_on_tmpfs() && tio__host_cpus() >= 2;
    const size_t n = (size_t)96 << 20, piece = (size_t)100 << 10;
    uint8_t *data = random_bytes(n, 43);
    char src[300], dst[300];
    int in;
    void *map = source_file("writer-src.bin", data, n, src, sizeof src, &in);
    snprintf(dst, sizeof dst, "%s/writer-dst.bin", dir);
    size_t pieces = (n + piece - 1) / piece, total = n + 8 * pieces;
    uint8_t *want = malloc(total);
    assert_non_null(want);
    for (size_t i = 0, o = 0; i < pieces; i++) {
        size_t k = n - i * piece < piece ? n - i * piece : piece;
        memcpy(want + o, "header!!", 8);
        memcpy(want + o + 8, data + i * piece, k);
        o += 8 + k;
    }
    tio_sink *sk = malloc(sizeof *sk);
    assert_non_null(sk);
    for (int mode = 0; mode < 8; mode++) {
        int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_true(out >= 0);
        tio_error e;
        assert_int_equal(tio__sink_init_fd(sk, out, &e), TIO_OK);
        sk->expect = (uint64_t)128 << 20; /* a thread, no trial (256 MiB) */
        writev_off_main = writev_on_main = writev_file_calls = 0;
        writev_off_main_bytes = writev_on_main_bytes = writev_ok_bytes = 0;
        splice_in = 0;
        writev_fail = mode == 1 ? ENOSPC : 0;
        writev_fail_after = 19;
        bool slow = mode == 2 || mode >= 4, stops = slow && mode != 4 && mode != 7;
        wall_step = slow ? (uint64_t)10000000000u : 0;
        sched_fake = slow;
        sched_wait_step = mode == 2 || mode == 7 ? (uint64_t)1000000000u : 0;
        sched_wait_every = mode == 7 ? 2 : 0;
        sched_fail = mode == 5;
        sched_ran_still = mode == 6;
        int rc = TIO_OK;
        size_t stop = mode == 3 ? pieces / 2 : pieces;
        for (size_t i = 0; rc == TIO_OK && i < stop; i++) {
            size_t k = n - i * piece < piece ? n - i * piece : piece;
            rc = tio__sink_write(sk, "header!!", 8, &e);
            if (rc == TIO_OK) rc = tio__sink_copy_range(sk, in, map, n, i * piece, k, &e);
        }
        if (rc == TIO_OK && mode != 3) rc = tio__sink_flush(sk, &e);
        bool had_thread = sk->aw != NULL;
        tio__sink_dispose(sk);
        writev_fail = 0;
        wall_step = 0;
        sched_fake = sched_fail = sched_ran_still = 0;
        sched_wait_step = 0;
        sched_wait_every = 0;
        close(out);
        fprintf(stderr, "writer thread, %s, mode %d: rc %d, %d writes off this thread (%zu "
                "bytes), %d on it (%zu bytes)%s%s\n", other ? "disk, 2 processors" : "no thread",
                mode, rc, writev_off_main, writev_off_main_bytes, writev_on_main,
                writev_on_main_bytes, rc ? ": " : "", rc ? e.message : "");
        assert_int_equal(splice_in, 0);
        size_t got_n;
        uint8_t *got = read_file(dst, &got_n);
        if (!other) {
            assert_int_equal(writev_off_main, 0);
        } else if (mode == 0) { /* its first two windows at least: the rest on a busy machine */
            assert_true(writev_off_main_bytes >= (size_t)62 << 20);
        } else if (mode == 4 || mode == 7) { /* to the end: all but what goes between batches */
            assert_true(had_thread);
            assert_true(writev_off_main_bytes >= total - ((size_t)2 << 20));
        } else if (stops) { /* stopped after its second window */
            assert_false(had_thread);
            assert_true(writev_off_main_bytes >= (size_t)62 << 20 &&
                        writev_off_main_bytes <= (size_t)68 << 20);
            assert_true(writev_on_main_bytes >= total - ((size_t)68 << 20));
        }
        if (mode == 1) {
            assert_int_equal(rc, TIO_E_IO);
            char at[64];
            snprintf(at, sizeof at, "write failed after %zu bytes", writev_ok_bytes);
            if (!strstr(e.message, at) || !strstr(e.message, strerror(ENOSPC)))
                fail_msg("want \"%s: %s\", got \"%s\"", at, strerror(ENOSPC), e.message);
            assert_true(writev_ok_bytes >= (size_t)8 << 20 && got_n == writev_ok_bytes);
        } else {
            assert_int_equal(rc, TIO_OK);
        }
        if (mode != 1 && mode != 3) {
            assert_true(got_n == total);
        } else {
            assert_true(got_n <= total);
        }
        if (memcmp(got, want, got_n) != 0) fail_msg("mode %d: bytes differ", mode);
        free(got);
    }
    free(sk);
    free(want);
    source_gone(map, n, in, src, dst, data);
}

/* Where ranges are copied in the kernel once the writer thread runs (a
 * first MiB at a non-congruent offset, read in, starts it; then 100 KiB
 * ranges at congruent offsets after 4 KiB headers, 96 MiB in all), the
 * headers between the copies are written on this thread (AW_GIVE_MIN), not
 * handed to the writer thread one by one with a wait before each copy; the
 * bytes right. */
static void test_writer_copies(void **state) {
    (void)state;
    wrap_main = pthread_self();
    bool other = !dir_on_tmpfs() && tio__host_cpus() >= 2;
    const size_t n = (size_t)96 << 20, first = (size_t)1 << 20, piece = (size_t)100 << 10;
    uint8_t *data = random_bytes(n, 44);
    static uint8_t head[4096];
    memset(head, 'h', sizeof head);
    char src[300], dst[300];
    int in;
    void *map = source_file("copies-src.bin", data, n, src, sizeof src, &in);
    snprintf(dst, sizeof dst, "%s/copies-dst.bin", dir);
    size_t pieces = (n - first + piece - 1) / piece;
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(out >= 0);
    tio_sink *sk = malloc(sizeof *sk);
    assert_non_null(sk);
    tio_error e;
    assert_int_equal(tio__sink_init_fd(sk, out, &e), TIO_OK);
    sk->expect = (uint64_t)128 << 20; /* a thread where it can run, no trial */
    writev_off_main = writev_on_main = 0;
    writev_off_main_bytes = writev_on_main_bytes = 0;
    copy_calls = 0;
    copy_bytes = 0;
    int rc = tio__sink_write(sk, head, 8, &e);
    if (rc == TIO_OK) rc = tio__sink_copy_range(sk, in, map, n, 0, first, &e);
    for (size_t i = 0; rc == TIO_OK && i < pieces; i++) {
        size_t at = first + i * piece, k = n - at < piece ? n - at : piece;
        rc = tio__sink_write(sk, head, i ? sizeof head : sizeof head - 8, &e);
        if (rc == TIO_OK) rc = tio__sink_copy_range(sk, in, map, n, at, k, &e);
    }
    if (rc == TIO_OK) rc = tio__sink_flush(sk, &e);
    assert_int_equal(rc, TIO_OK);
    bool had_thread = sk->aw != NULL;
    tio__sink_dispose(sk);
    close(out);
    fprintf(stderr, "copies, %s: %d copy_file_range() (%zu bytes), %d writes off this thread "
            "(%zu bytes), %d on it\n", had_thread ? "a writer thread" : "no thread", copy_calls,
            copy_bytes, writev_off_main, writev_off_main_bytes, writev_on_main);
    if (other) assert_true(had_thread);
    if (!dir_on_tmpfs()) assert_true(copy_bytes >= n - first - piece); /* a last 4 KiB read in */
    assert_true(writev_off_main <= 4); /* the first MiB's batches, not 973 headers */
    size_t got_n;
    uint8_t *got = read_file(dst, &got_n);
    assert_true(got_n == n + 4096 * pieces);
    assert_memory_equal(got, head, 8);
    assert_memory_equal(got + 8, data, first);
    for (size_t i = 0, o = 8 + first; i < pieces; i++) {
        size_t at = first + i * piece, k = n - at < piece ? n - at : piece, h = i ? 4096 : 4088;
        if (memcmp(got + o, head, h) != 0 || memcmp(got + o + h, data + at, k) != 0)
            fail_msg("range %zu: bytes differ", i);
        o += h + k;
    }
    free(got);
    free(sk);
    source_gone(map, n, in, src, dst, data);
}

static void put_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

/* The question itself, against a made-up sysfs: a device of the balloon
 * driver (virtioN) whose features have bit 5 (free page reporting) set. */
/* Tensor bytes at offsets not congruent with their source's (-> btf) are
 * read in (spliced where writes go in pieces), read in through the
 * buffer, or, on a disk file system, copied by copy_file_range() in runs:
 * whichever the save's first 96 MiB of them measured cheapest (the thread's
 * CPU time, which the test prices per byte of each way, or the real one).
 * A save of under 256 MiB reads them in and reads no clock; a larger one
 * tries read, buffer, copy, copy, read, buffer (16 MiB each, a tensor split
 * where an epoch ends: the clock read at the start and at each epoch's
 * end; a way's second epoch skipped where its first cost over 1.5 times
 * the best so far) and keeps the cheapest for the rest; on tmpfs it reads
 * in without trying. The host takes free memory back (64 KiB pieces, so
 * reading in splices). What a save does once is left out of the epochs:
 * in modes 0-2 each question that comes with it (the processors, asked
 * where the large buffer is taken; the blocks kept for movable pages, asked
 * because the host keeps 1.5 times the bytes, none of them for those) costs
 * the clock four epochs' worth of the cheapest way, which would make the
 * buffer's first epoch (mode 1) or the read's (mode 2) lose by far if it
 * fell on them. Small: build()'s tensors from a .ten; large: 11
 * tensors of 24 MiB and a few bytes from a .safetensors (one distance, not
 * 4K-aliased: all of it spliced where reading in splices). The file holds
 * tio_save_memory's bytes every way, synced or not. */
#define WAY_N 11u
static void test_copy_or_read(void **state) {
    (void)state;
    char src[300], dst[300];
    tio_error e;
    bool tmpfs = dir_on_tmpfs();
    tio_save_options o = {.format = "btf", .flags = TIO_SAVE_DROP_NAMES | TIO_SAVE_NO_SYNC};
    void *want;
    size_t want_n;
    /* build()'s ~24 MiB */
    tenbin_source("way", src, dst, sizeof src);
    tio_container *m;
    assert_int_equal(tio_open(src, NULL, &m, &e), TIO_OK);
    assert_int_equal(tio_save_memory(m, &o, &want, &want_n, &e), TIO_OK);
    cpu_asked = copy_calls = 0;
    assert_int_equal(tio_save(m, dst, &o, &e), TIO_OK);
    fprintf(stderr, "%s, small: %d copy_file_range calls, clock read %d times\n",
            tmpfs ? "tmpfs" : "disk", copy_calls, cpu_asked);
    assert_int_equal(cpu_asked, 0);
    assert_true(copy_calls < (int)MID_COUNT / 10); /* a run congruent by chance, at most */
    if (!file_is(dst, want, want_n)) fail_msg("small: the file differs from tio_save_memory");
    tio_free(want);
    tio_container_free(m);
    assert_int_equal(unlink(src), 0);
    /* 264 MiB */
    size_t sz[WAY_N], total = 0;
    for (size_t i = 0; i < WAY_N; i++) total += sz[i] = ((size_t)24 << 20) + 44 * (i + 1);
    uint8_t *data = random_bytes(total, 11);
    snprintf(src, sizeof src, "%s/way-src.safetensors", dir);
    m = save_as_and_open(float_tensors(data, sz, WAY_N, false), data, src, "safetensors");
    assert_int_equal(tio_save_memory(m, &o, &want, &want_n, &e), TIO_OK);
    /* the cheapest: 0 copying, 1 the buffer, 2 splicing; 3 the real clock;
     * 4 that, synced */
    size_t mib = (size_t)1 << 20;
    for (int mode = 0; mode < 5; mode++) {
        cost_copy = mode == 0 ? 1 : mode < 3 ? 3 : 0;
        cost_read = mode == 1 ? 1 : mode < 3 ? 3 : 0;
        cost_splice = mode == 2 ? 1 : mode < 3 ? 3 : 0;
        cpu_asked = 0;
        copy_calls = 0;
        copy_bytes = 0;
        pread_big_bytes = 0;
        tio_save_options oo = o;
        if (mode == 4) oo.flags &= ~(unsigned)TIO_SAVE_NO_SYNC;
        host_reports = 1; /* 64 KiB pieces: */
        if (mode < 3) { /* 1.5 times the bytes kept, none for movable pages */
            cost_once = (uint64_t)64 << 20;
            host_kept = total / 2 * 3;
            host_movable = 0;
        } /* else none kept */
        movable_asked = 0;
        int rc = counted_save(m, dst, &oo, &e);
        host_reports = 0;
        host_kept = 0;
        host_movable = UINT64_MAX;
        cost_copy = cost_read = cost_splice = cost_once = 0;
        if (rc != TIO_OK) fail_msg("mode %d: %s", mode, e.message);
        size_t rd = pread_big_bytes, sp = splice_in_bytes;
        fprintf(stderr, "%s, mode %d: clock read %d times; %zu bytes copied (%d calls), %zu "
                "read, %zu spliced, of %zu\n", tmpfs ? "tmpfs" : "disk", mode, cpu_asked,
                copy_bytes, copy_calls, rd, sp, total);
        if (!file_is(dst, want, want_n))
            fail_msg("mode %d: the file differs from tio_save_memory", mode);
        if (tmpfs)
            assert_int_equal(cpu_asked, 0);
        else if (mode < 3) /* the start, three first epochs, the cheapest way's second, */
            assert_int_equal(cpu_asked, 7); /* and before and after the buffer's setup */
        else /* and the second of a way that did not lose by far */
            assert_true(cpu_asked >= 7 && cpu_asked <= 9);
        if (!tmpfs) assert_int_equal(movable_asked, mode < 3); /* once a save */
        assert_true(copy_bytes + rd + sp >= total - 64 * 1024); /* every tensor, one way */
        if (tmpfs) {
            assert_true(copy_bytes <= sz[WAY_N - 1]); /* congruent by chance */
            continue;
        }
        /* an epoch (16 MiB) each way, a second for the ways that did not
         * lose by far (priced 3 to 1: the cheapest only), then one way;
         * pieces under 4 KiB (where an epoch cut a tensor) read in and not
         * counted */
        size_t lo = 16 * mib - 64 * 1024, one = 16 * mib + 64 * 1024, hi = 32 * mib + 64 * 1024;
        assert_true(copy_bytes >= lo && rd >= lo && sp >= lo);
        if (mode == 0) assert_true(rd <= one && sp <= one && copy_bytes > hi);
        if (mode == 1) assert_true(copy_bytes <= one && sp <= one && rd > hi);
        if (mode == 2) assert_true(copy_bytes <= one && rd <= one && sp > hi);
        if (mode >= 3) assert_int_equal((copy_bytes <= hi) + (rd <= hi) + (sp <= hi), 2);
    }
    tio_free(want);
    tio_container_free(m);
    assert_int_equal(unlink(src), 0); /* file_is removed dst */
}

static void test_host_probe(void **state) {
    (void)state;
    char b[300], p[400];
    snprintf(b, sizeof b, "%s/virtio_balloon", dir);
    assert_int_equal(__real_tio__host_reports_free_pages(b), 0); /* no such driver */
    assert_int_equal(mkdir(b, 0755), 0);
    assert_int_equal(__real_tio__host_reports_free_pages(b), 0); /* no device */
    snprintf(p, sizeof p, "%s/bind", b);
    put_file(p, "");
    snprintf(p, sizeof p, "%s/other", b);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/other/features", b);
    put_file(p, "0000010000000000\n"); /* not a device: not read */
    snprintf(p, sizeof p, "%s/virtio2", b);
    assert_int_equal(mkdir(p, 0755), 0); /* a device without features */
    assert_int_equal(__real_tio__host_reports_free_pages(b), 0);
    snprintf(p, sizeof p, "%s/virtio3", b);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/virtio3/features", b);
    put_file(p, "0110");      /* too short to say */
    assert_int_equal(__real_tio__host_reports_free_pages(b), 0);
    put_file(p, "0110000100000000000000000000000010000000\n"); /* balloon, no reporting */
    assert_int_equal(__real_tio__host_reports_free_pages(b), 0);
    put_file(p, "0110010100000000000000000000000010000000\n"); /* reporting (this VM's) */
    assert_int_equal(__real_tio__host_reports_free_pages(b), 1);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", b);
    assert_int_equal(system(cmd), 0);
}

/* How much free memory the host keeps: /proc/buddyinfo's blocks of orders
 * from the sink's up to the reporting order (exclusive), zone DMA not
 * counted; the lines below are this VM's, in the two states measured
 * (docs/performance.md), then text no kernel writes. */
static void test_host_kept(void **state) {
    (void)state;
    const uint64_t K = 1024, M = K * K;
    const char *good =
        "Node 0, zone      DMA      0      0      0      0      0      0      0      0      "
        "1      1      3 \n"
        "Node 0, zone    DMA32      1      3      0      2      3      2      1      4      "
        "4      2    752 \n"
        "Node 0, zone   Normal   1664   1690    995    598   5793   7428   4109   1857    "
        "695    270   1052 \n";
    const char *bad = "Node 0, zone   Normal   1602    878    884    824  26584    461    296 "
                      "   163     31      1     13 \n";
    /* DMA32: 1, 4 and 4 blocks of orders 6-8; Normal 4109, 1857, 695 */
    uint64_t good_6_8 = 1 * 256 * K + 4 * 512 * K + 4 * M + 4109 * 256 * K + 1857 * 512 * K +
                        695 * M;
    assert_true(tio__buddy_free(good, 6, 8, 4096) == good_6_8);
    assert_true(tio__buddy_free(bad, 6, 8, 4096) == 296 * 256 * K + 163 * 512 * K + 31 * M);
    assert_true(tio__buddy_free(good, 6, 6, 4096) == (1 + 4109) * 256 * K);
    assert_true(tio__buddy_free(good, 10, 10, 16384) == (752 + 1052) * 16 * M); /* 16 KiB pages */
    assert_true(tio__buddy_free(good, 11, 20, 4096) == 0); /* no such columns */
    /* not buddyinfo: nothing, or what can be read before it goes wrong */
    assert_true(tio__buddy_free("", 0, 10, 4096) == 0);
    assert_true(tio__buddy_free("zone", 0, 10, 4096) == 0);
    assert_true(tio__buddy_free("Node 0, zone Normal", 0, 10, 4096) == 0);
    assert_true(tio__buddy_free("no zones here 1 2 3\n", 0, 10, 4096) == 0);
    assert_true(tio__buddy_free("zone Normal 1 2 x 5\nzone Movable 1", 0, 10, 4096) ==
                (1 + 2 * 2 + 1) * 4096);
    assert_true(tio__buddy_free("zone Normal 99999999999999999999999 1", 0, 0, 4096) ==
                UINT64_MAX);
    assert_true(tio__buddy_free("zone Normal 0 0 0 0 0 0 0 0 0 0 4503599627370496", 0, 10,
                                4096) == UINT64_MAX); /* 2^52 blocks of 4 MiB */
    assert_true(tio__buddy_free("zone Normal 9223372036854775807 9223372036854775807", 0, 1,
                                1) == UINT64_MAX);
    assert_true(tio__buddy_free("zone DMA 5\nzone DMA32 5", 0, 0, 4096) == 5 * 4096);
    char cols[300] = "zone Normal"; /* orders 0-63: blocks past 2^64 bytes */
    for (int k = 0; k < 64; k++) strcat(cols, k == 62 ? " 1" : " 0");
    assert_true(tio__buddy_free(cols, 0, 63, 4096) == UINT64_MAX);
    assert_true(tio__buddy_free(cols, 0, 61, 4096) == 0);
    assert_true(tio__buddy_free(cols, 62, 62, 1) == (uint64_t)1 << 62);
    assert_true(tio__buddy_free(cols, 0, 63, 0) == 0); /* no page size: no division by 0 */
    /* from files: the reporting order bounds the orders counted */
    char bi[300], ro[300];
    snprintf(bi, sizeof bi, "%s/buddyinfo", dir);
    snprintf(ro, sizeof ro, "%s/page_reporting_order", dir);
    assert_true(__real_tio__host_kept_free(bi, ro, 6, 4096) == 0); /* no buddyinfo */
    put_file(bi, good);
    assert_true(__real_tio__host_kept_free(bi, ro, 6, 4096) == good_6_8); /* 9 when unsaid */
    put_file(ro, "9\n");
    assert_true(__real_tio__host_kept_free(bi, ro, 6, 4096) == good_6_8);
    put_file(ro, "7\n");
    assert_true(__real_tio__host_kept_free(bi, ro, 6, 4096) == (1 + 4109) * 256 * K);
    put_file(ro, "6\n"); /* the host takes back every block whole writes' folios need */
    assert_true(__real_tio__host_kept_free(bi, ro, 6, 4096) == 0);
    put_file(ro, "x\n");
    assert_true(__real_tio__host_kept_free(bi, ro, 6, 4096) == good_6_8);
    put_file(ro, "99\n");
    assert_true(__real_tio__host_kept_free(bi, ro, 6, 4096) == good_6_8);
    put_file(bi, "");
    assert_true(__real_tio__host_kept_free(bi, ro, 6, 4096) == 0);
    /* longer than what is read of it (16 KiB): the whole lines count */
    size_t lines = 300, ll = strlen(bad);
    char *big = malloc(lines * ll + 1);
    assert_non_null(big);
    for (size_t i = 0; i < lines; i++) memcpy(big + i * ll, bad, ll);
    big[lines * ll] = 0;
    put_file(bi, big);
    free(big);
    uint64_t per = 296 * 256 * K + 163 * 512 * K + 31 * M, got;
    got = __real_tio__host_kept_free(bi, ro, 6, 4096);
    assert_true(got == (16383 / ll) * per);
    unlink(bi);
    unlink(ro);
}

/* The part of those blocks the kernel keeps for movable pages (the page
 * cache's): /proc/pagetypeinfo's Movable lines alone, zone DMA and the
 * count of page blocks by kind (lines that name no type) not counted; the
 * text below is this VM's (2026-12-05), cut to two zones' lines. */
static void test_host_movable(void **state) {
    (void)state;
    const uint64_t K = 1024, M = K * K;
    const char *good =
        "Page block order: 9\nPages per block:  512\n\n"
        "Free pages count per migrate type at order       0      1      2      3      4      5"
        "      6      7      8      9     10 \n"
        "Node    0, zone      DMA, type      Movable      0      0      0      0      0      0"
        "      0      0      9      1      3 \n"
        "Node    0, zone    DMA32, type    Unmovable      0      0      0      0      0      0"
        "      7      0      0      0      0 \n"
        "Node    0, zone    DMA32, type      Movable      3      4      3      4      2      3"
        "      0      3      4      1    752 \n"
        "Node    0, zone   Normal, type    Unmovable     44    292    291    340    418    216"
        "    128     51     22      0      0 \n"
        "Node    0, zone   Normal, type      Movable      4      2     24   1483   1566   2760"
        "    946    442   1019    442   2422 \n"
        "Node    0, zone   Normal, type  Reclaimable    282    690    687    423    664    512"
        "    308    149     51      0      0 \n"
        "Node    0, zone   Normal, type   HighAtomic      0      0      0      0      0      0"
        "      0      0      0      0      0 \n\n"
        "Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      "
        "Isolate \n"
        "Node 0, zone      DMA            1            7            0            0            0 \n"
        "Node 0, zone   Normal          118        10448          186            0            0 \n";
    uint64_t mov_6_8 = 3 * 512 * K + 4 * M + 946 * 256 * K + 442 * 512 * K + 1019 * M;
    unsigned lines = 0;
    assert_true(tio__pagetype_movable(good, 6, 8, 4096, &lines) == mov_6_8);
    assert_int_equal(lines, 3); /* DMA's seen, not counted */
    assert_true(tio__pagetype_movable(good, 10, 10, 4096, &lines) == (752 + 2422) * 4 * M);
    /* not pagetypeinfo, or cut short: what can be read before it goes wrong */
    assert_true(tio__pagetype_movable("", 0, 10, 4096, &lines) == 0 && lines == 0);
    assert_true(tio__pagetype_movable(
                    "Node 0, zone Normal  1 2 3\nzone Normal, type Movable\n"
                    "zone Normal, type Movablex 1\nzone Normal, type  Movable 1 x 2\n"
                    "zone Normal, typeMovable 5\nzone Normal type Movable 2 >3 4",
                    0, 10, 4096, &lines) == (1 + 2 + 3 * 2 + 4 * 4) * 4096);
    assert_int_equal(lines, 3);
    assert_true(tio__pagetype_movable("zone Normal, type Movable 99999999999999999999999", 0,
                                      0, 4096, &lines) == UINT64_MAX);
    /* from files: root's only; UINT64_MAX where it cannot be read or says
     * nothing of movable blocks, the reporting order bounding the orders */
    char pt[300], ro[300];
    snprintf(pt, sizeof pt, "%s/pagetypeinfo", dir);
    snprintf(ro, sizeof ro, "%s/page_reporting_order", dir);
    assert_true(__real_tio__host_kept_movable(pt, ro, 6, 4096) == UINT64_MAX);
    put_file(pt, good);
    assert_true(__real_tio__host_kept_movable(pt, ro, 6, 4096) == mov_6_8);
    put_file(ro, "8\n");
    assert_true(__real_tio__host_kept_movable(pt, ro, 6, 4096) ==
                3 * 512 * K + 946 * 256 * K + 442 * 512 * K);
    put_file(ro, "6\n");
    assert_true(__real_tio__host_kept_movable(pt, ro, 6, 4096) == 0);
    put_file(pt, "Node 0, zone Normal  1 2 3\n");
    assert_true(__real_tio__host_kept_movable(pt, ro, 6, 4096) == UINT64_MAX);
    put_file(pt, "");
    assert_true(__real_tio__host_kept_movable(pt, ro, 6, 4096) == UINT64_MAX);
    chmod(pt, 0);
    if (access(pt, R_OK) != 0) /* not root: the file as it is for users */
        assert_true(__real_tio__host_kept_movable(pt, ro, 6, 4096) == UINT64_MAX);
    unlink(pt);
    unlink(ro);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copy_file_range),
        cmocka_unit_test(test_copy_runs),
        cmocka_unit_test(test_copy_cut),
        cmocka_unit_test(test_read_in),
        cmocka_unit_test(test_read_once),
        cmocka_unit_test(test_host_pieces),
        cmocka_unit_test(test_host_probe),
        cmocka_unit_test(test_host_kept),
        cmocka_unit_test(test_host_movable),
        cmocka_unit_test(test_splice),
        cmocka_unit_test(test_splice_whole),
        cmocka_unit_test(test_writer_thread),
        cmocka_unit_test(test_writer_copies),
        cmocka_unit_test(test_copy_or_read),
        cmocka_unit_test(test_read_range),
        cmocka_unit_test(test_copy_from_shards),
        cmocka_unit_test(test_copy_from_held),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
