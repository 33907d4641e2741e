/* The wrapped system calls and host questions of the save tests
 * (test_save_io.c, test_save_bytes.c; both linked with the same -Wl,--wrap
 * options, tests/CMakeLists.txt): each call counted, made to fail or come
 * short on demand; and the helpers both use (a temporary directory, a
 * container of tensor sizes straddling the sink's thresholds). */
#include "save_wrap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

int __real_fsync(int fd);
int __wrap_fsync(int fd);
int fsync_calls; /* this test program's own counter */

int __wrap_fsync(int fd) {
    fsync_calls++;
    return __real_fsync(fd);
}

DIR *__real_opendir(const char *name);
DIR *__wrap_opendir(const char *name);
int opendir_calls;

DIR *__wrap_opendir(const char *name) {
    opendir_calls++;
    return __real_opendir(name);
}

ssize_t __real_copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t n,
                               unsigned flags);
ssize_t __wrap_copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t n,
                               unsigned flags);
int copy_calls;
int copy_fail;       /* make the calls fail with this errno (0: no)… */
int copy_fail_after; /* …once this many have copied */
size_t copy_max;     /* copy at most this much per call (0: no limit) */
size_t copy_largest; /* the largest count asked for */
size_t copy_bytes;   /* what the calls copied */
long long copy_first_in = -1; /* the first call's source offset */
int copy_out_unaligned; /* calls after the first starting past a multiple of 2 MiB */

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
    ssize_t r = __real_copy_file_range(in, in_off, out, out_off, n, flags);
    if (r > 0) copy_bytes += (size_t)r;
    return r;
}

ssize_t __real_sendfile(int out, int in, off_t *off, size_t n);
ssize_t __wrap_sendfile(int out, int in, off_t *off, size_t n);
int sendfile_calls;
int sendfile_fail; /* make the calls fail with this errno (0: no) */

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
/* atomic: a zip writer's CRC job reads on a thread of its own */
_Atomic int pread_big; /* calls for 4 KiB or more (the sink's, not a reader's headers) */
_Atomic size_t pread_big_bytes; /* what those read */
int pread_fail;    /* make those fail with this errno (-1: return 0, an ended file)… */
_Atomic int pread_fail_after; /* …once this many have read */
/* …and those whose buffer lies under 64 bytes past the source offset modulo
 * 4096 (the sink avoids that: 4K aliasing slows the kernel's copy) */
_Atomic int pread_aliased;

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

/* The sink's reads into its buffer, several at once (sink.c: fills_do):
 * its entries of 4 KiB or more counted and checked as pread()s of the
 * sink, the call made to fail (or find the file ended) as one of them. */
ssize_t __real_preadv(int fd, const struct iovec *iov, int n, off_t off);
ssize_t __wrap_preadv(int fd, const struct iovec *iov, int n, off_t off);
_Atomic int preadv_calls, preadv_slots;
_Atomic size_t preadv_gap_bytes;

ssize_t __wrap_preadv(int fd, const struct iovec *iov, int n, off_t off) {
    preadv_calls++;
    bool big = false;
    off_t at = off;
    for (int k = 0; k < n; k++) {
        if (iov[k].iov_len >= (4u << 10)) {
            big = true;
            pread_big++;
            preadv_slots++;
            uintptr_t d = ((uintptr_t)iov[k].iov_base - (uintptr_t)at) & 4095u;
            if (d > 0 && d < 64) pread_aliased++;
        }
        at += (off_t)iov[k].iov_len;
    }
    if (big && pread_fail && pread_fail_after-- <= 0) {
        if (pread_fail < 0) return 0;
        errno = pread_fail;
        return -1;
    }
    ssize_t r = __real_preadv(fd, iov, n, off);
    size_t left = r > 0 ? (size_t)r : 0;
    for (int k = 0; k < n && left; k++) {
        size_t m = iov[k].iov_len < left ? iov[k].iov_len : left;
        if (iov[k].iov_len >= (4u << 10)) pread_big_bytes += m;
        else preadv_gap_bytes += m;
        left -= m;
    }
    return r;
}

ssize_t __real_writev(int fd, const struct iovec *iov, int n);
ssize_t __wrap_writev(int fd, const struct iovec *iov, int n);
int writev_count;    /* count the writes… */
int write_crossing;  /* …and of write() too, that cross a multiple of 64 KiB */
int writev_calls;    /* …of 64 KiB or more (the sink's) */
int writev_unaligned; /* …that start past a multiple of 256 KiB */
size_t writev_bytes;
/* …and the bytes in pieces of 4 KiB or more whose address is not congruent
 * with their offset in the file modulo 64 (the sink keeps them congruent:
 * the kernel's copy into the page cache then moves whole cache lines) */
size_t writev_misaligned;

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
int splice_in, splice_out, splice_out_whole;
size_t splice_in_bytes, splice_out_bytes;
int splice_fail_in, splice_fail_out, splice_fail_after;

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
    off_t at = into ? 0 : lseek(out, 0, SEEK_CUR);
    ssize_t r = __real_splice(in, in_off, out, out_off, n, flags);
    if (r > 0) *(into ? &splice_in_bytes : &splice_out_bytes) += (size_t)r;
    if (r > 0 && !into && at >= 0 && ((uint64_t)at + (uint64_t)r) % (512u << 10) == 0)
        splice_out_whole++;
    return r;
}

/* pipe2() made to fail, F_SETPIPE_SZ made to give less than asked or to
 * refuse more than 256 KiB. */
int __real_pipe2(int fds[2], int flags);
int __wrap_pipe2(int fds[2], int flags);
int __real_fcntl(int fd, int cmd, ...);
int __wrap_fcntl(int fd, int cmd, ...);
int pipe_fail, pipe_small;

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
    if (cmd == F_SETPIPE_SZ && pipe_small == 1) return __real_fcntl(fd, cmd, 65536);
    if (cmd == F_SETPIPE_SZ && pipe_small == 2 && (intptr_t)arg > (256 << 10)) {
        errno = EPERM; /* above pipe-max-size, unprivileged */
        return -1;
    }
    return __real_fcntl(fd, cmd, arg);
}

ssize_t __real_write(int fd, const void *p, size_t n);
ssize_t __wrap_write(int fd, const void *p, size_t n);
ssize_t __wrap_write(int fd, const void *p, size_t n) {
    count_crossing(fd, n);
    return __real_write(fd, p, n);
}

int writev_fail, writev_fail_after, writev_file_calls;
int writev_off_main, writev_on_main;
size_t writev_off_main_bytes, writev_on_main_bytes, writev_ok_bytes;
pthread_t wrap_main;

ssize_t __wrap_writev(int fd, const struct iovec *iov, int n) {
    struct stat st; /* into a pipe: the saving thread's, beside the writer's */
    if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) return __real_writev(fd, iov, n);
    size_t total = 0;
    for (int k = 0; k < n; k++) total += iov[k].iov_len;
    if (writev_fail && writev_file_calls++ >= writev_fail_after) {
        errno = writev_fail;
        return -1;
    }
    bool off_main = !pthread_equal(pthread_self(), wrap_main);
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
    ssize_t r = __real_writev(fd, iov, n);
    if (r > 0) {
        writev_ok_bytes += (size_t)r;
        *(off_main ? &writev_off_main : &writev_on_main) += 1;
        *(off_main ? &writev_off_main_bytes : &writev_on_main_bytes) += (size_t)r;
    }
    return r;
}

/* fallocate() and ftruncate(): counted, the last call's arguments kept,
 * made to fail on demand. */
int __real_fallocate(int fd, int mode, off_t off, off_t len);
int __wrap_fallocate(int fd, int mode, off_t off, off_t len);
int __real_ftruncate(int fd, off_t len);
int __wrap_ftruncate(int fd, off_t len);
int falloc_calls, falloc_mode, falloc_fail;
long long falloc_off, falloc_len;
int trunc_calls, trunc_fail;
long long trunc_len;

int __wrap_fallocate(int fd, int mode, off_t off, off_t len) {
    falloc_calls++;
    falloc_mode = mode;
    falloc_off = off;
    falloc_len = len;
    if (falloc_fail) {
        errno = falloc_fail;
        return -1;
    }
    return __real_fallocate(fd, mode, off, len);
}

int __wrap_ftruncate(int fd, off_t len) {
    trunc_calls++;
    trunc_len = len;
    if (trunc_fail) {
        errno = trunc_fail;
        return -1;
    }
    return __real_ftruncate(fd, len);
}

/* The wall clock: the real one, or one that passes wall_step a reading. */
uint64_t __real_tio__host_wall_ns(void);
uint64_t __wrap_tio__host_wall_ns(void);
uint64_t wall_step;

uint64_t __wrap_tio__host_wall_ns(void) {
    static uint64_t fake = 1;
    if (!wall_step) return __real_tio__host_wall_ns();
    fake += wall_step;
    return fake;
}

/* The saving thread's time run and waiting to run: the real one, or one
 * whose waits grow by sched_wait_step a reading (every sched_wait_every'th
 * reading only, where set; ran by 1 ms, or not at all with
 * sched_ran_still), or none (sched_fail). */
int __real_tio__host_run_wait_ns(uint64_t *ran, uint64_t *waited);
int __wrap_tio__host_run_wait_ns(uint64_t *ran, uint64_t *waited);
uint64_t sched_wait_step;
int sched_fake, sched_fail, sched_ran_still;
unsigned sched_wait_every;

int __wrap_tio__host_run_wait_ns(uint64_t *ran, uint64_t *waited) {
    static uint64_t r = 1, w = 1;
    static unsigned n;
    if (!sched_fake) return __real_tio__host_run_wait_ns(ran, waited);
    if (sched_fail) return -1;
    if (!sched_ran_still) r += 1000000;
    if (!sched_wait_every || ++n % sched_wait_every == 0) w += sched_wait_step;
    *ran = r;
    *waited = w;
    return 0;
}

/* What the host says to the sink's question (does it take free memory
 * back?), and how often the sink asked. */
int __real_tio__host_reports_free_pages(const char *balloon_dir);
int __wrap_tio__host_reports_free_pages(const char *balloon_dir);
int host_reports, host_asked;

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
uint64_t host_kept, host_kept_later;
unsigned kept_lo;
int kept_asked, kept_turns;

uint64_t __wrap_tio__host_kept_free(const char *buddyinfo, const char *reporting_order,
                                    unsigned lo, size_t page) {
    (void)buddyinfo;
    (void)reporting_order;
    kept_lo = (unsigned)(page << lo >> 10); /* in KiB */
    kept_asked++;
    return kept_turns && kept_asked > 1 ? host_kept_later : host_kept;
}

/* How much of it lies in blocks kept for movable pages (UINT64_MAX, what
 * the real one says where /proc/pagetypeinfo cannot be read, unless a test
 * says), and how often the sink asked. */
uint64_t __wrap_tio__host_kept_movable(const char *pagetypeinfo, const char *reporting_order,
                                       unsigned lo, size_t page);
uint64_t host_movable = UINT64_MAX;
int movable_asked;

uint64_t __wrap_tio__host_kept_movable(const char *pagetypeinfo, const char *reporting_order,
                                       unsigned lo, size_t page) {
    (void)pagetypeinfo;
    (void)reporting_order;
    (void)lo;
    (void)page;
    movable_asked++;
    return host_movable;
}

/* The processors the saving thread may use (the real count), and how often
 * the sink asked (once a save, when it takes its large buffer). */
unsigned __real_tio__host_cpus(void);
unsigned __wrap_tio__host_cpus(void);
int cpus_asked;

unsigned __wrap_tio__host_cpus(void) {
    cpus_asked++;
    return __real_tio__host_cpus();
}

/* The thread's CPU time (tio__host_cpu_ns): the real one, unless a test
 * prices the ways a file sink moves bytes at other offsets, in ns per byte
 * copied by copy_file_range(), read by pread() (of 4 KiB and more) and
 * spliced into the pipe, and the work a save does once, in ns per question
 * to the host that comes with it (tio__host_cpus, tio__host_kept_movable);
 * and how often the sink read it. */
uint64_t __real_tio__host_cpu_ns(void);
uint64_t __wrap_tio__host_cpu_ns(void);
uint64_t cost_copy, cost_read, cost_splice, cost_once;
int cpu_asked;

uint64_t __wrap_tio__host_cpu_ns(void) {
    cpu_asked++;
    if (!cost_copy && !cost_read && !cost_splice) return __real_tio__host_cpu_ns();
    return 1000000000u + cost_copy * copy_bytes + cost_read * pread_big_bytes +
           cost_splice * splice_in_bytes + cost_once * (uint64_t)(cpus_asked + movable_asked);
}

char dir[256];

int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tio-save-io-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

int teardown(void **state) {
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

uint8_t *read_file(const char *path, size_t *n) {
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
/* A container of n float32 vectors of sz[i] bytes each, borrowed from data
 * one after another, named "w<i>" (or, reversed, "t<n-1-i>" zero-padded to
 * 3 digits, so that sorting the names reverses them). */
tio_container *float_tensors(uint8_t *data, const size_t *sz, size_t n, bool reversed) {
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

/* The files are compared a MiB at a time: a whole copy of a file of
 * hundreds of MiB was fresh memory each time, which the sanitizers' shadow
 * doubles (under ThreadSanitizer the page faults of it were most of
 * test_save_io's time). b: the second file, or NULL to compare with want. */
enum { CMP_CHUNK = 1 << 20 };
static bool same_bytes(const char *a, const char *b, const uint8_t *want, size_t n) {
    FILE *f = fopen(a, "rb"), *g = b ? fopen(b, "rb") : NULL;
    assert_non_null(f);
    if (b) assert_non_null(g);
    uint8_t *x = malloc(CMP_CHUNK), *y = b ? malloc(CMP_CHUNK) : NULL;
    assert_non_null(x);
    if (b) assert_non_null(y);
    size_t at = 0, got;
    bool same = true;
    while (same && (got = fread(x, 1, CMP_CHUNK, f)) > 0) {
        if (g) same = fread(y, 1, got, g) == got && memcmp(x, y, got) == 0;
        else same = got <= n - at && memcmp(x, want + at, got) == 0;
        at += got;
    }
    same = same && !ferror(f) && (g ? fgetc(g) == EOF && !ferror(g) : at == n);
    free(x);
    free(y);
    fclose(f);
    if (g) fclose(g);
    return same;
}

bool file_holds(const char *path, const void *want, size_t n) {
    return same_bytes(path, NULL, want, n);
}

bool file_is(const char *path, const void *want, size_t n) {
    bool same = file_holds(path, want, n);
    unlink(path);
    return same;
}

bool files_same(const char *a, const char *b) {
    return same_bytes(a, b, NULL, 0);
}

/* Tensor sizes straddling the sink's thresholds: the 8 KiB first copy
 * buffer (inside the sink), the 32 KiB reference minimum, the 1 MiB copy
 * buffer that replaces it, many small ones (more pieces than one writev
 * takes), and one over the 8 MiB flush point. */
static const size_t sizes[] = {4,           8192 - 8,       8192,     8192 + 4,       32768 - 4,
                               32768,       32768 + 4,      100,      (1u << 20) - 4, 1u << 20,
                               (1u << 20) + 4, 12,          9u << 20};

/* n bytes of the generator from `seed` (freed by the caller). */
uint8_t *random_bytes(size_t n, uint64_t seed) {
    uint8_t *data = malloc(n);
    assert_non_null(data);
    /* the generator's bytes stored eight at a time (one store each for
     * the sanitizers to check, not eight) */
    size_t i = 0;
    for (; n - i >= 8; i += 8) {
        uint8_t w[8];
        for (int k = 0; k < 8; k++) w[k] = (uint8_t)tvec_rand(&seed);
        memcpy(data + i, w, 8);
    }
    for (; i < n; i++) data[i] = (uint8_t)tvec_rand(&seed);
    return data;
}

tio_container *build(const char *format, uint8_t **data_out) {
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

void on_progress(void *ctx, uint64_t done, uint64_t total) {
    prog *p = ctx;
    if (p->calls && done < p->last_done) p->backwards = 1;
    p->calls++;
    p->last_done = done;
    p->last_total = total;
}
