/* How tio_save writes: the gathering file sink (small writes copied, tensor
 * data referenced, one writev() for many pieces) must give exactly the bytes
 * of tio_save_memory for every format, whatever the mix of tensor sizes
 * around the thresholds; TIO_SAVE_NO_SYNC must skip every fsync and nothing
 * else; a save lists its directory only with TIO_SAVE_CLEANUP, so its cost
 * does not grow with the directory. fsync and opendir are counted through
 * -Wl,--wrap, and so are the reads and writes; the sink's question to the
 * host (does it take free memory back?) gets the test's answer. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* F_SETPIPE_SZ */
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tensio.h"
#include "tvec.h"

int __real_fsync(int fd);
int __wrap_fsync(int fd);
static int fsync_calls; /* this test program's own counter */

int __wrap_fsync(int fd) {
    fsync_calls++;
    return __real_fsync(fd);
}

DIR *__real_opendir(const char *name);
DIR *__wrap_opendir(const char *name);
static int opendir_calls;

DIR *__wrap_opendir(const char *name) {
    opendir_calls++;
    return __real_opendir(name);
}

ssize_t __real_copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t n,
                               unsigned flags);
ssize_t __wrap_copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t n,
                               unsigned flags);
static int copy_calls;
static int copy_fail;       /* make the calls fail with this errno (0: no)… */
static int copy_fail_after; /* …once this many have copied */
static size_t copy_max;     /* copy at most this much per call (0: no limit) */
static size_t copy_largest; /* the largest count asked for */
static long long copy_first_in = -1; /* the first call's source offset */
static int copy_out_unaligned; /* calls after the first starting past a multiple of 2 MiB */

ssize_t __wrap_copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t n,
                               unsigned flags) {
    off_t out_at = out_off ? *out_off : lseek(out, 0, SEEK_CUR);
    if (copy_calls && (out_at < 0 || out_at % (2 << 20))) copy_out_unaligned++;
    if (!copy_calls++ && in_off) copy_first_in = (long long)*in_off;
    if (n > copy_largest) copy_largest = n;
    if (copy_fail && copy_fail_after-- <= 0) {
        errno = copy_fail;
        return -1;
    }
    if (copy_max && n > copy_max) n = copy_max; /* a partial copy */
    return __real_copy_file_range(in, in_off, out, out_off, n, flags);
}

ssize_t __real_sendfile(int out, int in, off_t *off, size_t n);
ssize_t __wrap_sendfile(int out, int in, off_t *off, size_t n);
static int sendfile_calls;
static int sendfile_fail; /* make the calls fail with this errno (0: no) */

ssize_t __wrap_sendfile(int out, int in, off_t *off, size_t n) {
    sendfile_calls++;
    if (sendfile_fail) {
        errno = sendfile_fail;
        return -1;
    }
    return __real_sendfile(out, in, off, n);
}

ssize_t __real_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off);
static int pread_big;     /* calls for 4 KiB or more (the sink's, not a reader's headers) */
static size_t pread_big_bytes; /* what those read */
static int pread_fail;    /* make those fail with this errno (-1: return 0, an ended file)… */
static int pread_fail_after; /* …once this many have read */
/* …and those whose buffer lies under 64 bytes past the source offset modulo
 * 4096 (the sink avoids that: 4K aliasing slows the kernel's copy) */
static int pread_aliased;

ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off) {
    if (n >= (4u << 10)) {
        pread_big++;
        uintptr_t d = ((uintptr_t)buf - (uintptr_t)off) & 4095u;
        if (d > 0 && d < 64) pread_aliased++;
        if (pread_fail && pread_fail_after-- <= 0) {
            if (pread_fail < 0) return 0;
            errno = pread_fail;
            return -1;
        }
    }
    ssize_t r = __real_pread(fd, buf, n, off);
    if (n >= (4u << 10) && r > 0) pread_big_bytes += (size_t)r;
    return r;
}

ssize_t __real_writev(int fd, const struct iovec *iov, int n);
ssize_t __wrap_writev(int fd, const struct iovec *iov, int n);
static int writev_count;    /* count the writes… */
static int write_crossing;  /* …and of write() too, that cross a multiple of 64 KiB */
static int writev_calls;    /* …of 64 KiB or more (the sink's) */
static int writev_unaligned; /* …that start past a multiple of 256 KiB */
static size_t writev_bytes;
/* …and the bytes in pieces of 4 KiB or more whose address is not congruent
 * with their offset in the file modulo 64 (the sink keeps them congruent:
 * the kernel's copy into the page cache then moves whole cache lines) */
static size_t writev_misaligned;

/* Counts a write of n bytes at fd's position that crosses a multiple of
 * 64 KiB (write_crossing); not into a pipe. */
static void count_crossing(int fd, size_t n) {
    if (!writev_count || n == 0) return;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) return;
    off_t at = lseek(fd, 0, SEEK_CUR);
    if (at < 0 || (uint64_t)at / (64u << 10) != ((uint64_t)at + n - 1) / (64u << 10))
        write_crossing++;
}

/* splice(): from a file into a pipe (splice_in) and from a pipe into a file
 * (splice_out, counted in write_crossing too); made to fail (errno; -1 for
 * the source ended: 0) from the splice_fail_after'th call of the kind, and
 * their bytes counted. */
ssize_t __real_splice(int in, off_t *in_off, int out, off_t *out_off, size_t n,
                      unsigned flags);
ssize_t __wrap_splice(int in, off_t *in_off, int out, off_t *out_off, size_t n,
                      unsigned flags);
static int splice_in, splice_out;
static size_t splice_in_bytes, splice_out_bytes;
static int splice_fail_in, splice_fail_out, splice_fail_after;

ssize_t __wrap_splice(int in, off_t *in_off, int out, off_t *out_off, size_t n,
                      unsigned flags) {
    bool into = in_off != NULL; /* the sink gives the source's offset, not the pipe's */
    int fail = into ? splice_fail_in : splice_fail_out;
    int calls = into ? splice_in++ : splice_out++;
    if (!into) count_crossing(out, n);
    if (fail && calls >= splice_fail_after) {
        if (fail < 0) return 0;
        errno = fail;
        return -1;
    }
    ssize_t r = __real_splice(in, in_off, out, out_off, n, flags);
    if (r > 0) *(into ? &splice_in_bytes : &splice_out_bytes) += (size_t)r;
    return r;
}

/* pipe2() made to fail, F_SETPIPE_SZ made to give less than asked. */
int __real_pipe2(int fds[2], int flags);
int __wrap_pipe2(int fds[2], int flags);
int __real_fcntl(int fd, int cmd, ...);
int __wrap_fcntl(int fd, int cmd, ...);
static int pipe_fail, pipe_small;

int __wrap_pipe2(int fds[2], int flags) {
    if (pipe_fail) {
        errno = EMFILE;
        return -1;
    }
    return __real_pipe2(fds, flags);
}

int __wrap_fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *); /* as glibc's own: an int or a pointer */
    va_end(ap);
    if (cmd == F_SETPIPE_SZ && pipe_small) return __real_fcntl(fd, cmd, 65536);
    return __real_fcntl(fd, cmd, arg);
}

ssize_t __real_write(int fd, const void *p, size_t n);
ssize_t __wrap_write(int fd, const void *p, size_t n);
ssize_t __wrap_write(int fd, const void *p, size_t n) {
    count_crossing(fd, n);
    return __real_write(fd, p, n);
}

ssize_t __wrap_writev(int fd, const struct iovec *iov, int n) {
    size_t total = 0;
    for (int k = 0; k < n; k++) total += iov[k].iov_len;
    count_crossing(fd, total);
    if (writev_count && total >= (64u << 10)) {
        off_t at = lseek(fd, 0, SEEK_CUR);
        writev_calls++;
        if (at < 0 || at % (256 << 10)) writev_unaligned++;
        writev_bytes += total;
        for (int k = 0; k < n && at >= 0; k++) {
            if (iov[k].iov_len >= (4u << 10) &&
                ((uintptr_t)iov[k].iov_base - (uintptr_t)at) % 64 != 0)
                writev_misaligned += iov[k].iov_len;
            at += (off_t)iov[k].iov_len;
        }
    }
    return __real_writev(fd, iov, n);
}

/* What the host says to the sink's question (does it take free memory
 * back?), and how often the sink asked. */
int __real_tio__host_reports_free_pages(const char *balloon_dir);
int __wrap_tio__host_reports_free_pages(const char *balloon_dir);
static int host_reports, host_asked;

int __wrap_tio__host_reports_free_pages(const char *balloon_dir) {
    (void)balloon_dir;
    host_asked++;
    return host_reports;
}

/* How much free memory such a host leaves in blocks it does not take back
 * (0 unless a test says; host_kept_later from the second question on, where
 * kept_turns), and the smallest order the sink asked about. */
uint64_t __real_tio__host_kept_free(const char *buddyinfo, const char *reporting_order,
                                    unsigned lo, size_t page);
uint64_t __wrap_tio__host_kept_free(const char *buddyinfo, const char *reporting_order,
                                    unsigned lo, size_t page);
/* the sum it makes of /proc/buddyinfo's lines (src/core/host.c) */
uint64_t tio__buddy_free(const char *text, unsigned lo, unsigned hi, size_t page);
static uint64_t host_kept, host_kept_later;
static unsigned kept_lo;
static int kept_asked, kept_turns;

uint64_t __wrap_tio__host_kept_free(const char *buddyinfo, const char *reporting_order,
                                    unsigned lo, size_t page) {
    (void)buddyinfo;
    (void)reporting_order;
    kept_lo = (unsigned)(page << lo >> 10); /* in KiB */
    kept_asked++;
    return kept_turns && kept_asked > 1 ? host_kept_later : host_kept;
}

/* Whether the kernel copies at any offset about as fast (0 unless a test
 * says), and how often the sink asked. */
int __real_tio__host_copies_any_offset(void);
int __wrap_tio__host_copies_any_offset(void);
static int host_any, any_asked;

int __wrap_tio__host_copies_any_offset(void) {
    any_asked++;
    return host_any;
}

static char dir[256];

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tio-save-io-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static uint8_t *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(len > 0 ? (size_t)len : 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* Whether the file at path holds the n bytes at want, and nothing more;
 * removes it. */
static bool file_is(const char *path, const void *want, size_t n) {
    size_t len;
    uint8_t *got = read_file(path, &len);
    bool same = len == n && memcmp(got, want, n) == 0;
    free(got);
    unlink(path);
    return same;
}

/* Tensor sizes straddling the sink's thresholds: the 8 KiB first copy
 * buffer (inside the sink), the 32 KiB reference minimum, the 1 MiB copy
 * buffer that replaces it, many small ones (more pieces than one writev
 * takes), and one over the 8 MiB flush point. */
static const size_t sizes[] = {4,           8192 - 8,       8192,     8192 + 4,       32768 - 4,
                               32768,       32768 + 4,      100,      (1u << 20) - 4, 1u << 20,
                               (1u << 20) + 4, 12,          9u << 20};

/* Then MID_COUNT tensors of MID_BYTES, apart in memory: each is referenced,
 * not copied, and its header copied, so that a file sink's pieces fill its
 * iov[] (2 per tensor) before they reach the 8 MiB flush point. */
#define MID_COUNT 300u
#define MID_BYTES (40u << 10)

/* n bytes of the generator from `seed` (freed by the caller). */
static uint8_t *random_bytes(size_t n, uint64_t seed) {
    uint8_t *data = malloc(n);
    assert_non_null(data);
    for (size_t i = 0; i < n; i++) data[i] = (uint8_t)tvec_rand(&seed);
    return data;
}

static tio_container *build(const char *format, uint8_t **data_out) {
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += sizes[i];
    total += 600 * 64 + MID_COUNT * (MID_BYTES + 64);
    uint8_t *data = random_bytes(total, 7);
    tio_container *c = tio_container_new();
    assert_non_null(c);
    size_t at = 0;
    tio_error e;
    char name[32];
    size_t k = 0;
    /* a format of one array (.npy, a bare TensorProto): the largest alone,
     * past the flush point */
    bool one = strcmp(format, "npy") == 0 || strcmp(format, "onnx-tensor") == 0;
    size_t ns = sizeof sizes / sizeof sizes[0];
    for (size_t i = one ? ns - 1 : 0; i < ns + (one ? 0 : 600 + MID_COUNT); i++) {
        size_t n = i < ns ? sizes[i] : i < ns + 600 ? 64 : MID_BYTES;
        int64_t shape[1] = {(int64_t)(n / 4)};
        tio_tensor_desc d = {0};
        snprintf(name, sizeof name, "t%zu", k++);
        d.name = (tio_format_caps(format) & TIO_CAP_NAMES) ? name : NULL;
        d.dtype = TIO_FLOAT32;
        d.rank = 1;
        d.shape = shape;
        d.data = data + at;
        d.nbytes = n;
        assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
        at += n + (i >= ns + 600 ? 64 : 0);
    }
    if (tio_format_caps(format) & TIO_CAP_GRAPH) {
        tio_graph *g;
        assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
        for (size_t i = 0; i < tio_container_count(c); i++) {
            tio_value_info v = {0};
            v.tensor = (int64_t)i;
            v.name = tio_tensor_name(tio_container_tensor(c, i));
            size_t idx;
            assert_int_equal(tio_graph_add_value(g, &v, &idx, &e), TIO_OK);
        }
    }
    *data_out = data;
    return c;
}

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
            size_t n;
            uint8_t *file = read_file(path, &n);
            if (n != mem_size || memcmp(file, mem, n) != 0)
                fail_msg("%s: the file (%zu bytes) differs from tio_save_memory (%zu bytes)",
                         format, n, mem_size);
            free(file);
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

/* tio_save_options.progress / tio_open_options.progress: increasing byte
 * counts, at most one call per MiB plus the last, which is done == total ==
 * the output's (input's) size. */
typedef struct prog {
    uint64_t calls, last_done, last_total;
    int backwards;
} prog;

static void on_progress(void *ctx, uint64_t done, uint64_t total) {
    prog *p = ctx;
    if (p->calls && done < p->last_done) p->backwards = 1;
    p->calls++;
    p->last_done = done;
    p->last_total = total;
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
            size_t n;
            uint8_t *got = read_file(dst, &n);
            if (n != want_n || memcmp(got, want, n) != 0)
                fail_msg("%s (mode %d): the file differs from tio_save_memory", formats[f],
                         mode);
            free(got);
            tio_free(want);
            tio_container_free(m);
        }
    }
}

/* A container of n float32 vectors of sz[i] bytes each, borrowed from data
 * one after another, named "w<i>" (or, reversed, "t<n-1-i>" zero-padded to
 * 3 digits, so that sorting the names reverses them). */
static tio_container *float_tensors(uint8_t *data, const size_t *sz, size_t n, bool reversed) {
    tio_container *c = tio_container_new();
    assert_non_null(c);
    tio_error e;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        char name[32];
        if (reversed)
            snprintf(name, sizeof name, "t%03zu", n - 1 - i);
        else
            snprintf(name, sizeof name, "w%03zu", i); /* sorted: the file's order */
        int64_t shape[1] = {(int64_t)(sz[i] / 4)};
        tio_tensor_desc d = {0};
        d.name = name;
        d.dtype = TIO_FLOAT32;
        d.rank = 1;
        d.shape = shape;
        d.data = data + at;
        d.nbytes = sz[i];
        assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
        at += sz[i];
    }
    return c;
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
        size_t n;
        uint8_t *got = read_file(dst, &n);
        if (n != want_n || memcmp(got, want, n) != 0)
            fail_msg("%s: the file differs from tio_save_memory", cases[k].what);
        if (k == 0) {
            size_t sn;
            uint8_t *sb = read_file(src, &sn);
            if (n != sn || memcmp(got, sb, n) != 0)
                fail_msg("same bytes: the file differs from its source");
            free(sb);
        }
        if (cases[k].progress) {
            assert_false(pr.backwards);
            assert_int_equal(pr.last_done, n);
        }
        free(got);
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

/* tio_save with the writes counted (__wrap_writev's counters from 0). */
static int counted_save(const tio_container *m, const char *dst, const tio_save_options *o,
                        tio_error *e) {
    writev_count = 1;
    write_crossing = writev_calls = writev_unaligned = 0;
    writev_bytes = writev_misaligned = 0;
    splice_in = splice_out = 0;
    splice_in_bytes = splice_out_bytes = 0;
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
    size_t n, sn;
    uint8_t *got = read_file(dst, &n), *sb = read_file(src, &sn);
    assert_int_equal(n, sn);
    assert_memory_equal(got, sb, n);
    free(got);
    free(sb);
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
         * cache's large folios are aligned. Two do not: the first after the
         * header (written alone), and the first after the small tensors
         * (copied into the buffer, not read in). Before: all 48. */
        fprintf(stderr, "mode %d: %d writes of >= 64 KiB (%zu bytes), %d not at a multiple "
                "of 256 KiB, %zu bytes not congruent modulo 64\n", mode, writev_calls,
                writev_bytes, writev_unaligned, writev_misaligned);
        assert_true(writev_calls >= 10);
        assert_true(writev_unaligned <= 2);
        assert_true(writev_misaligned == 0);
        assert_int_equal(pread_aliased, 0);
        size_t n;
        uint8_t *got = read_file(dst, &n);
        if (n != want_n || memcmp(got, want, n) != 0)
            fail_msg("mode %d: the file differs from tio_save_memory", mode);
        if (mode == 1) {
            assert_false(pr.backwards);
            assert_int_equal(pr.last_done, n);
        }
        free(got);
        unlink(dst);
    }
    tio_free(want);
    tio_container_free(m);
}

/* Tensors read in (read_in) are read once each, nothing ahead: bytes of
 * the next tensor read with this one would lie where the next tensor's
 * output offset wants them only by chance, and moving them cost more than
 * the read saved. 300 tensors of 40 KiB (and a few bytes, so no layout is
 * congruent) from a .ten to BTF, in file order, and to safetensors, which
 * orders them by name, here the reverse of the file's: one read per tensor
 * (a tensor congruent by chance is copied instead), no byte read twice,
 * every piece of 4 KiB or more written from an address congruent with its
 * offset in the file modulo 64, and no read landing just past its source
 * modulo 4096. The files hold tio_save_memory's bytes. */
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
        copy_calls = 0;
        writev_count = 1;
        writev_misaligned = 0;
        int rc = tio_save(m, dst, &o, &e);
        writev_count = 0;
        if (rc != TIO_OK) fail_msg("%s: %s", formats[f], e.message);
        fprintf(stderr, "%s: %d reads of the source, %zu bytes, %d copies (%zu bytes of "
                "tensors), %zu bytes written not congruent modulo 64, %d reads just behind "
                "their buffer modulo 4096\n", formats[f], pread_big, pread_big_bytes, copy_calls,
                total, writev_misaligned, pread_aliased);
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
        size_t n;
        uint8_t *got = read_file(dst, &n);
        if (n != want_n || memcmp(got, want, n) != 0)
            fail_msg("%s: the file differs from tio_save_memory", formats[f]);
        free(got);
        tio_free(want);
        unlink(dst);
    }
    tio_container_free(m);
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
 * The sink asks once per save, once more than 64 KiB is due, and not for
 * tmpfs; the file holds tio_save_memory's bytes either way. */
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
     * after 8 MiB: the rest goes in pieces) */
    for (int says = 0; says < 4; says++) {
        host_reports = says > 0;
        host_kept = says >= 2 ? 2 * bytes : says == 1 ? bytes : 0;
        host_kept_later = says == 3 ? 0 : 2 * bytes;
        kept_turns = 1;
        host_asked = kept_asked = 0;
        int rc = counted_save(m, dst, &o, &e);
        host_reports = kept_turns = 0;
        host_kept = host_kept_later = 0;
        if (rc != TIO_OK) fail_msg("host says %d: %s", says, e.message);
        fprintf(stderr, "%s, host says %d: asked %d+%d times, %d writes of >= 64 KiB (%zu "
                "bytes), %d splices out (%zu bytes), %d writes crossing a multiple of 64 KiB\n",
                tmpfs ? "tmpfs" : "disk", says, host_asked, kept_asked, writev_calls,
                writev_bytes, splice_out, splice_out_bytes, write_crossing);
        assert_int_equal(host_asked, tmpfs ? 0 : 1);
        /* ~24 MiB written: asked again at 8 and 16 MiB while writes stay whole */
        assert_int_equal(kept_asked, tmpfs || !says ? 0 : says == 2 ? 3 : says == 3 ? 2 : 1);
        if (kept_asked) assert_int_equal(kept_lo, 256); /* whole writes' folios: 256 KiB up */
        if (says == 3 && !tmpfs) { /* whole, then in pieces */
            assert_true(write_crossing > 0);
            assert_true(splice_out >= 100);
        } else if (says == 1 && !tmpfs) {
            assert_int_equal(write_crossing, 0);
            assert_true(writev_calls + splice_out >= 100); /* ~12 MiB in pieces of 64 KiB */
        } else {
            assert_true(write_crossing > 0);
            assert_int_equal(splice_in + splice_out, 0);
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
}

/* Tensors that lie back to back in the source and in the output at a
 * distance not congruent modulo the page (GGUF -> safetensors: their data
 * sections start at other offsets) are read as one range, in pieces of up
 * to 256 KiB, not one read per tensor; where the host takes free memory
 * back, spliced in as one range. 300 tensors of 40 KiB and 32 bytes (GGUF
 * aligns each tensor to 32: nothing lies between them). The files hold
 * tio_save_memory's bytes. */
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
                "bytes), %d copies, for %d tensors (%zu bytes)\n", says, pread_big,
                pread_big_bytes, splice_in, splice_in_bytes, copy_calls, N, total);
        assert_int_equal(copy_calls, 0); /* not congruent: nothing copied in the kernel */
        if (says && !tmpfs) {
            assert_true(splice_in_bytes == total);
            assert_true(splice_in <= N / 3);
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

static void put_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

/* The question itself, against a made-up sysfs: a device of the balloon
 * driver (virtioN) whose features have bit 5 (free page reporting) set. */
/* Where the kernel copies at any offset about as fast as at congruent ones
 * (x86-64 with FSRM: tio__host_copies_any_offset), tensors whose output
 * offsets are not congruent with their source's (tenbin -> btf) go by
 * copy_file_range() on a disk file system: one call per run, the headers
 * between them written; where it does not, or on tmpfs, only a run that is
 * congruent by chance is. The file
 * holds the bytes of tio_save_memory either way, synced or not. */
static void test_copy_any_offset(void **state) {
    (void)state;
    char src[300], dst[300];
    any_asked = 0;
    tenbin_source("any", src, dst, sizeof src);
    assert_int_equal(any_asked, 0); /* a save from memory: no range, no question */
    tio_error e;
    bool tmpfs = dir_on_tmpfs();
#if defined(__linux__) && defined(__x86_64__)
    /* the question itself: what the kernel read from the CPU (cpuinfo's
     * flags) */
    FILE *ci = fopen("/proc/cpuinfo", "r");
    if (ci) {
        char line[8192];
        int fsrm = -1;
        while (fsrm < 0 && fgets(line, sizeof line, ci))
            if (strncmp(line, "flags", 5) == 0)
                fsrm = strstr(line, " fsrm ") != NULL || strstr(line, " fsrm\n") != NULL;
        fclose(ci);
        if (fsrm >= 0) assert_int_equal(__real_tio__host_copies_any_offset(), fsrm);
        fprintf(stderr, "this CPU: fsrm %d\n", fsrm);
    }
#else
    assert_int_equal(__real_tio__host_copies_any_offset(), 0);
#endif
    tio_container *m;
    assert_int_equal(tio_open(src, NULL, &m, &e), TIO_OK);
    int calls[2] = {0, 0};
    for (int any = 0; any < 2; any++) {
        for (int synced = 0; synced < 2; synced++) {
            tio_save_options o = {.format = "btf",
                                  .flags = TIO_SAVE_DROP_NAMES | (synced ? 0u : TIO_SAVE_NO_SYNC)};
            void *want;
            size_t want_n;
            assert_int_equal(tio_save_memory(m, &o, &want, &want_n, &e), TIO_OK);
            host_any = any;
            any_asked = copy_calls = 0;
            int rc = tio_save(m, dst, &o, &e);
            host_any = 0;
            if (rc != TIO_OK) fail_msg("any %d, synced %d: %s", any, synced, e.message);
            fprintf(stderr, "%s, any offset %d, synced %d: %d copy_file_range calls\n",
                    tmpfs ? "tmpfs" : "disk", any, synced, copy_calls);
            if (!file_is(dst, want, want_n))
                fail_msg("any %d, synced %d: the file differs from tio_save_memory", any,
                         synced);
            /* asked on a disk file system only, once a save, at the first
             * range at other offsets */
            assert_int_equal(any_asked, tmpfs ? 0 : 1);
            if (!any) /* a run congruent by chance, at most */
                assert_true(copy_calls < (int)MID_COUNT / 10);
            else if (!tmpfs) /* the 40 KiB ones and the larger */
                assert_true(copy_calls >= (int)MID_COUNT);
            else /* tmpfs: as without */
                assert_int_equal(copy_calls, calls[synced]);
            calls[synced] = copy_calls;
            tio_free(want);
        }
    }
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
        size_t len;
        uint8_t *file = read_file(path, &len);
        assert_int_equal(len, mem_size);
        assert_memory_equal(file, mem, len);
        free(file);
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
        cmocka_unit_test(test_copy_file_range),
        cmocka_unit_test(test_copy_runs),
        cmocka_unit_test(test_copy_cut),
        cmocka_unit_test(test_read_in),
        cmocka_unit_test(test_read_once),
        cmocka_unit_test(test_host_pieces),
        cmocka_unit_test(test_host_probe),
        cmocka_unit_test(test_host_kept),
        cmocka_unit_test(test_splice),
        cmocka_unit_test(test_copy_any_offset),
        cmocka_unit_test(test_read_range),
        cmocka_unit_test(test_listing_only_on_request),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
