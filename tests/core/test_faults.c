/* Faults during atomic saves (tio_save): SIGKILL at random moments, full
 * disks (EFBIG through RLIMIT_FSIZE; ENOSPC on a private tmpfs where a user
 * and mount namespace can be made), stale temporary files of dead processes,
 * unwritable and missing directories, file modes. Every case runs both the
 * O_TMPFILE path and the named-temporary-file fallback. Children never use
 * cmocka's asserts: they report through exit statuses and pipes. */
#define _GNU_SOURCE /* unshare, CLONE_NEW*, mount, O_TMPFILE, syscall */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "tensio.h"
#include "tvec.h"

#define EXPECT(cond, ...)                   \
    do {                                    \
        if (!(cond)) fail_msg(__VA_ARGS__); \
    } while (0)

/* Reads what a forked child wrote to its pipe (pfd[0]; closes both ends
 * here) and checks that it exited with status 0. */
static void child_result(int pfd[2], pid_t pid, char *res, size_t cap) {
    close(pfd[1]);
    size_t got = 0;
    ssize_t k;
    while (got + 1 < cap && (k = read(pfd[0], res + got, cap - 1 - got)) > 0) got += (size_t)k;
    res[got] = 0;
    close(pfd[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

/* The two ways tio_save can write: O_TMPFILE (where supported) and the
 * named-temporary fallback. */
static const unsigned modes[2] = {0, TIO__SAVE_NO_TMPFILE};
static const char *const mode_names[2] = {"O_TMPFILE", "named temp"};

/* ------------------------------------------------------------------ helpers */

static uint64_t rnd(uint64_t *s) { /* xorshift64*, deterministic */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ns(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void make_dir(char *tmpl) { EXPECT(mkdtemp(tmpl) != NULL, "mkdtemp: %s", strerror(errno)); }

/* Names in dir other than "." and "..", joined by spaces into buf; returns
 * their count. */
static int list_dir(const char *dir, char *buf, size_t cap) {
    DIR *d = opendir(dir);
    EXPECT(d != NULL, "opendir %s: %s", dir, strerror(errno));
    int n = 0;
    size_t used = 0;
    if (cap) buf[0] = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        n++;
        if (cap && used < cap) {
            int k = snprintf(buf + used, cap - used, "%s%s", used ? " " : "", de->d_name);
            if (k > 0) used += (size_t)k;
        }
    }
    closedir(d);
    return n;
}

/* Whether dir holds exactly one entry, `name`. */
static int only_entry(const char *dir, const char *name, char *listing, size_t cap) {
    int n = list_dir(dir, listing, cap);
    return n == 1 && strcmp(listing, name) == 0;
}

/* Entries of dir whose name starts with ".<base>.tio-" (temporary files). */
static int count_temps(const char *dir, const char *base) {
    char prefix[300];
    snprintf(prefix, sizeof prefix, ".%s.tio-", base);
    DIR *d = opendir(dir);
    EXPECT(d != NULL, "opendir %s: %s", dir, strerror(errno));
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (!strncmp(de->d_name, prefix, strlen(prefix))) n++;
    closedir(d);
    return n;
}

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    char p[512];
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (unlink(p) != 0) rmdir(p);
    }
    closedir(d);
    rmdir(dir);
}

static int read_file(const char *path, uint8_t **buf, size_t *len) {
    return tvec_read(path, buf, len);
}

static int same_bytes(const char *path, const uint8_t *want, size_t want_len) {
    uint8_t *b;
    size_t n;
    if (read_file(path, &b, &n) != 0) return 0;
    int same = n == want_len && memcmp(b, want, n) == 0;
    free(b);
    return same;
}

/* Adds an unnamed dense tensor filled with pseudo-random bytes. */
static void add_tensor(tio_container *c, tio_dtype dt, int64_t n, uint64_t *seed) {
    size_t nbytes = (size_t)n * tio_dtype_size(dt);
    uint8_t *data = malloc(nbytes);
    assert_non_null(data);
    for (size_t i = 0; i < nbytes; i += 8) {
        uint64_t r = rnd(seed);
        memcpy(data + i, &r, nbytes - i < 8 ? nbytes - i : 8);
    }
    if (dt == TIO_FLOAT32 || dt == TIO_FLOAT64) /* keep floats finite: clear exponent MSB */
        for (size_t i = tio_dtype_size(dt) - 1; i < nbytes; i += tio_dtype_size(dt))
            data[i] &= 0x3f;
    int64_t shape[1] = {n};
    tio_tensor_desc d = {.dtype = dt, .rank = 1, .shape = shape, .data = data, .nbytes = nbytes};
    tio_error e;
    EXPECT(tio_container_add(c, &d, 0, NULL, &e) == TIO_OK, "add: %s", e.message);
    free(data);
}

/* A container, its encoding in one format and its tensors' hashes. */
typedef struct version {
    tio_container *c;
    uint8_t *bytes;
    size_t len;
    uint8_t sha[8][32];
    size_t n;
} version;

static void version_init(version *v, const char *format, const tio_dtype *dts,
                         const int64_t *counts, size_t n, uint64_t seed) {
    memset(v, 0, sizeof *v);
    v->c = tio_container_new();
    assert_non_null(v->c);
    assert_true(n <= 8);
    for (size_t i = 0; i < n; i++) add_tensor(v->c, dts[i], counts[i], &seed);
    v->n = n;
    tio_error e;
    for (size_t i = 0; i < n; i++)
        EXPECT(tio_tensor_sha256(tio_container_tensor(v->c, i), TIO_HASH_DENSE, v->sha[i], &e) ==
                   TIO_OK,
               "sha256: %s", e.message);
    tio_save_options so = {0};
    so.format = format;
    void *buf;
    EXPECT(tio_save_memory(v->c, &so, &buf, &v->len, &e) == TIO_OK, "save_memory: %s",
           e.message);
    v->bytes = buf;
}

static void version_free(version *v) {
    tio_container_free(v->c);
    tio_free(v->bytes);
}

/* Whether the file at path opens and its tensors hash like v's. */
static int opens_as(const char *path, const version *v, char *why, size_t cap) {
    tio_container *r;
    tio_error e;
    if (tio_open(path, NULL, &r, &e) != TIO_OK) {
        if (snprintf(why, cap, "tio_open: %s", e.message) >= (int)cap) why[cap - 1] = 0;
        return 0;
    }
    int ok = tio_container_count(r) == v->n;
    if (!ok) snprintf(why, cap, "%zu tensors, expected %zu", tio_container_count(r), v->n);
    for (size_t i = 0; ok && i < v->n; i++) {
        uint8_t md[32];
        ok = tio_tensor_sha256(tio_container_tensor(r, i), TIO_HASH_DENSE, md, &e) == TIO_OK &&
             memcmp(md, v->sha[i], 32) == 0;
        if (!ok) snprintf(why, cap, "tensor %zu: hash differs", i);
    }
    tio_container_free(r);
    return ok;
}

/* Whether O_TMPFILE works in dir. */
static int tmpfile_supported(const char *dir) {
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) return 0;
    close(fd);
    return 1;
#else
    (void)dir;
    return 0;
#endif
}

/* ------------------------------------------------------- SIGKILL mid-save */

typedef struct kill_stats {
    int kills, before_rename, after_rename, finished, temps_left, temps_cleaned;
} kill_stats;

static void test_sigkill(void **state) {
    (void)state;
    static const struct {
        const char *format, *ext;
    } fmts[] = {{"btf", "btf"}, {"tenbin", "ten"}, {"zio", "zmsg"}};
    /* A: ~3 MiB in 4 tensors; B: ~5.2 MiB in 3 tensors. */
    static const tio_dtype dta[] = {TIO_FLOAT32, TIO_INT32, TIO_UINT8, TIO_FLOAT64};
    static const int64_t na[] = {262144, 262144, 1000000, 1000};
    static const tio_dtype dtb[] = {TIO_FLOAT32, TIO_INT16, TIO_UINT8};
    static const int64_t nb[] = {786432, 1048576, 12345};
    const int per_format = 40; /* 3 formats x 40 = 120 kills, modes alternating */
    uint64_t seed = 0x7e5710f00dull;
    kill_stats st[2];
    memset(st, 0, sizeof st);
    double tmin_all = 1e9, tmax_all = 0;
    int tmpfile_ok = 1;

    for (size_t fi = 0; fi < sizeof fmts / sizeof fmts[0]; fi++) {
        version A, B;
        version_init(&A, fmts[fi].format, dta, na, 4, 1);
        version_init(&B, fmts[fi].format, dtb, nb, 3, 2);
        assert_true(A.len != B.len);
        char dir[] = "/tmp/tio-faults-XXXXXX";
        make_dir(dir);
        char path[256], base[32], listing[1024], why[256];
        snprintf(base, sizeof base, "out.%s", fmts[fi].ext);
        snprintf(path, sizeof path, "%s/%s", dir, base);
        tmpfile_ok &= tmpfile_supported(dir);
        tio_error e;
        /* Calibrate: the fastest of 3 saves of B (both modes). */
        double t = 1e9;
        for (int k = 0; k < 3; k++) {
            double t0 = now_s();
            EXPECT(tio__save_file(B.c, path, NULL, modes[k % 2], &e) == TIO_OK, "%s", e.message);
            double dt = now_s() - t0;
            if (dt < t) t = dt;
            if (dt > tmax_all) tmax_all = dt;
        }
        if (t < tmin_all) tmin_all = t;
        EXPECT(same_bytes(path, B.bytes, B.len), "%s: not B after a save", path);
        EXPECT(tio_save(A.c, path, NULL, &e) == TIO_OK, "%s", e.message);
        EXPECT(same_bytes(path, A.bytes, A.len), "%s: not A after a save", path);
        uint64_t span = (uint64_t)(2 * t * 1e9) + 200000; /* 0 .. 2 saves + 0.2 ms */

        for (int i = 0; i < per_format; i++) {
            int m = i % 2;
            uint64_t delay = rnd(&seed) % span;
            int pfd[2];
            assert_int_equal(pipe(pfd), 0);
            fflush(NULL);
            pid_t pid = fork();
            assert_true(pid >= 0);
            if (pid == 0) {
                close(pfd[0]);
                char go = 1;
                if (write(pfd[1], &go, 1) != 1) _exit(3);
                tio_error ce;
                int rc = tio__save_file(B.c, path, NULL, modes[m], &ce);
                _exit(rc == TIO_OK ? 0 : 4);
            }
            close(pfd[1]);
            char go;
            EXPECT(read(pfd[0], &go, 1) == 1, "child did not start");
            close(pfd[0]);
            sleep_ns(delay); /* the save is under way from here */
            kill(pid, SIGKILL);
            int status;
            assert_int_equal(waitpid(pid, &status, 0), pid);
            kill_stats *s = &st[m];
            s->kills++;
            int is_a = same_bytes(path, A.bytes, A.len);
            int is_b = !is_a && same_bytes(path, B.bytes, B.len);
            EXPECT(is_a || is_b, "%s (%s, kill %d after %.3f ms): neither A nor B", path,
                   mode_names[m], i, (double)delay / 1e6);
            EXPECT(opens_as(path, is_a ? &A : &B, why, sizeof why), "%s: %s", path, why);
            if (WIFSIGNALED(status)) {
                assert_int_equal(WTERMSIG(status), SIGKILL);
                if (is_a)
                    s->before_rename++;
                else
                    s->after_rename++;
            } else {
                EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                       "child save failed (status %d)", status);
                EXPECT(is_b, "the child finished but the file is not B");
                s->finished++;
            }
            int temps = count_temps(dir, base);
            s->temps_left += temps;
            /* The next save (of A, so that the next kill starts from A again)
             * succeeds, and with TIO_SAVE_CLEANUP (or after tio_save_cleanup,
             * every third time) removes whatever the killed child left. */
            tio_save_options co = {0};
            co.flags = TIO_SAVE_CLEANUP;
            if (i % 3 == 2) {
                size_t gone = 0;
                EXPECT(tio_save_cleanup(dir, &gone, &e) == TIO_OK, "%s", e.message);
                EXPECT(gone == (size_t)temps, "tio_save_cleanup removed %zu of %d temp files",
                       gone, temps);
            }
            EXPECT(tio__save_file(A.c, path, i % 3 == 2 ? NULL : &co, modes[i / 2 % 2], &e) ==
                       TIO_OK,
                   "%s", e.message);
            EXPECT(only_entry(dir, base, listing, sizeof listing),
                   "after the parent's save %s holds: %s", dir, listing);
            EXPECT(same_bytes(path, A.bytes, A.len), "%s: not A after the parent's save", path);
            s->temps_cleaned += temps;
        }
        remove_tree(dir);
        version_free(&A);
        version_free(&B);
    }
    printf("[ faults   ] sigkill: save of B (5.2 MiB) took %.1f..%.1f ms (fastest per format "
           "calibrates the kill delay, uniform in 0..2x+0.2 ms); O_TMPFILE %s\n",
           tmin_all * 1e3, tmax_all * 1e3, tmpfile_ok ? "supported" : "NOT supported here");
    for (int m = 0; m < 2; m++)
        printf("[ faults   ] sigkill %-10s: %d kills: %d during the save with the file still A "
               "(before rename), %d after the rename (B, child not yet exited), %d after the "
               "child finished (B); temp files left by killed children: %d, all removed by the "
               "next cleaning save or tio_save_cleanup (%d)\n",
               mode_names[m], st[m].kills, st[m].before_rename, st[m].after_rename,
               st[m].finished, st[m].temps_left, st[m].temps_cleaned);
    int kills = st[0].kills + st[1].kills;
    assert_true(kills >= 100);
    /* Many kills landed mid-save, in both modes. */
    EXPECT(st[0].before_rename >= st[0].kills / 10 && st[1].before_rename >= st[1].kills / 10,
           "too few kills landed mid-save (%d, %d)", st[0].before_rename, st[1].before_rename);
    /* The named path leaves temps when killed; the next save removed them. */
    EXPECT(st[1].temps_left >= 1, "no kill left a named temp file (%d mid-save kills)",
           st[1].before_rename);
    /* With O_TMPFILE a temp name exists only between link and rename, so
     * nearly every mid-save kill leaves nothing (with named temps, each does). */
    if (tmpfile_ok)
        EXPECT(st[0].temps_left * 3 < st[0].before_rename,
               "O_TMPFILE saves left %d temp files in %d mid-save kills", st[0].temps_left,
               st[0].before_rename);
}

/* ------------------------------------------------------------- full disks */

/* Runs a save in a child with RLIMIT_FSIZE = limit and SIGXFSZ ignored; the
 * child sends rc and the message back through a pipe. */
static int save_limited(const tio_container *c, const char *path, unsigned mode, rlim_t limit,
                        char *msg, size_t cap) {
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        struct rlimit rl = {limit, limit};
        signal(SIGXFSZ, SIG_IGN);
        tio_error e;
        int rc;
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) {
            rc = -1;
            snprintf(e.message, sizeof e.message, "setrlimit: %s", strerror(errno));
        } else {
            rc = tio__save_file(c, path, NULL, mode, &e);
        }
        if (write(pfd[1], &rc, sizeof rc) != sizeof rc ||
            write(pfd[1], e.message, sizeof e.message) != sizeof e.message)
            _exit(3);
        _exit(0);
    }
    close(pfd[1]);
    int rc = -2;
    char m[TIO_ERROR_MESSAGE_MAX] = "";
    EXPECT(read(pfd[0], &rc, sizeof rc) == sizeof rc, "no result from the child");
    EXPECT(read(pfd[0], m, sizeof m) == sizeof m, "no message from the child");
    close(pfd[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    m[sizeof m - 1] = 0;
    snprintf(msg, cap, "%s", m);
    return rc;
}

static void test_efbig(void **state) {
    (void)state;
    static const tio_dtype dsmall[] = {TIO_INT32};
    static const int64_t nsmall[] = {1000};
    /* one large tensor (written straight from the data) and many small ones
     * (buffered; the limit is hit when the buffer is flushed) */
    static const tio_dtype dbig1[] = {TIO_FLOAT32};
    static const int64_t nbig1[] = {400000};
    static const tio_dtype dbig2[] = {TIO_UINT8, TIO_UINT8, TIO_UINT8, TIO_UINT8,
                                      TIO_UINT8, TIO_UINT8, TIO_UINT8, TIO_UINT8};
    static const int64_t nbig2[] = {90000, 90000, 90000, 90000, 90000, 90000, 90000, 90000};
    const char *formats[] = {"btf", "tenbin"}, *exts[] = {"btf", "ten"};
    int cases = 0;
    for (int fi = 0; fi < 2; fi++) {
        version small, big1, big2;
        version_init(&small, formats[fi], dsmall, nsmall, 1, 3);
        version_init(&big1, formats[fi], dbig1, nbig1, 1, 4);
        version_init(&big2, formats[fi], dbig2, nbig2, 8, 5);
        const version *bigs[2] = {&big1, &big2};
        char dir[] = "/tmp/tio-faults-XXXXXX";
        make_dir(dir);
        char path[256], base[32], listing[1024], msg[TIO_ERROR_MESSAGE_MAX];
        snprintf(base, sizeof base, "out.%s", exts[fi]);
        snprintf(path, sizeof path, "%s/%s", dir, base);
        tio_error e;
        EXPECT(tio_save(small.c, path, NULL, &e) == TIO_OK, "%s", e.message);
        for (int m = 0; m < 2; m++) {
            for (int b = 0; b < 2; b++) {
                int rc = save_limited(bigs[b]->c, path, modes[m], 256 * 1024, msg, sizeof msg);
                EXPECT(rc == TIO_E_IO, "%s, %s: rc %d (%s), expected TIO_E_IO", formats[fi],
                       mode_names[m], rc, msg);
                EXPECT(strstr(msg, path) != NULL, "message does not name the path: %s", msg);
                EXPECT(strstr(msg, strerror(EFBIG)) != NULL, "message lacks \"%s\": %s",
                       strerror(EFBIG), msg);
                EXPECT(same_bytes(path, small.bytes, small.len), "%s: target changed", path);
                EXPECT(only_entry(dir, base, listing, sizeof listing), "%s holds: %s", dir,
                       listing);
                if (cases++ == 0) printf("[ faults   ] EFBIG: \"%s\"\n", msg);
            }
        }
        /* without the limit the same save works */
        EXPECT(tio_save(big2.c, path, NULL, &e) == TIO_OK, "%s", e.message);
        EXPECT(same_bytes(path, big2.bytes, big2.len), "%s: not the new data", path);
        remove_tree(dir);
        version_free(&small);
        version_free(&big1);
        version_free(&big2);
    }
    printf("[ faults   ] EFBIG: %d failing saves (2 formats x 2 modes x 2 layouts), target "
           "intact and no temp file each time\n", cases);
}

static int write_text(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* In the child: a user + mount namespace with a 256 KiB tmpfs on dir.
 * Returns 0, or -1 with why filled in. */
static int private_tmpfs(const char *dir, char *why, size_t cap) {
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0) {
        char map[64];
        snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
        if (write_text("/proc/self/uid_map", map) != 0) {
            snprintf(why, cap, "writing uid_map: %s", strerror(errno));
            return -1;
        }
        write_text("/proc/self/setgroups", "deny");
        snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
        if (write_text("/proc/self/gid_map", map) != 0) {
            snprintf(why, cap, "writing gid_map: %s", strerror(errno));
            return -1;
        }
    } else {
        int e1 = errno;
        if (unshare(CLONE_NEWNS) != 0) {
            snprintf(why, cap, "unshare(CLONE_NEWUSER|CLONE_NEWNS): %s; unshare(CLONE_NEWNS): %s",
                     strerror(e1), strerror(errno));
            return -1;
        }
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        snprintf(why, cap, "making mounts private: %s", strerror(errno));
        return -1;
    }
    if (mount("tio-faults", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=256k,mode=0700") != 0) {
        snprintf(why, cap, "mounting a tmpfs: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static void test_enospc(void **state) {
    (void)state;
    static const tio_dtype dsmall[] = {TIO_INT32};
    static const int64_t nsmall[] = {1000};
    static const tio_dtype dbig[] = {TIO_FLOAT32, TIO_UINT8};
    static const int64_t nbig[] = {200000, 300000};
    version small, big;
    version_init(&small, "btf", dsmall, nsmall, 1, 6);
    version_init(&big, "btf", dbig, nbig, 2, 7);
    char dir[] = "/tmp/tio-faults-XXXXXX";
    make_dir(dir);
    char path[256];
    snprintf(path, sizeof path, "%s/out.btf", dir);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Reports one line: "UNAVAILABLE why", "FAIL why" or "OK message". */
        close(pfd[0]);
        char out[1024], why[512], listing[512];
        tio_error e;
        if (private_tmpfs(dir, why, sizeof why) != 0) {
            snprintf(out, sizeof out, "UNAVAILABLE %s", why);
        } else if (tio_save(small.c, path, NULL, &e) != TIO_OK) {
            snprintf(out, sizeof out, "FAIL saving the small target: %s", e.message);
        } else {
            snprintf(out, sizeof out, "OK");
            for (int m = 0; m < 2 && !strncmp(out, "OK", 2); m++) {
                int rc = tio__save_file(big.c, path, NULL, modes[m], &e);
                if (rc != TIO_E_IO)
                    snprintf(out, sizeof out, "FAIL %s: rc %d (%s), expected TIO_E_IO",
                             mode_names[m], rc, rc ? e.message : "");
                else if (!strstr(e.message, path) || !strstr(e.message, strerror(ENOSPC)))
                    snprintf(out, sizeof out, "FAIL %s: message lacks the path or \"%s\": %s",
                             mode_names[m], strerror(ENOSPC), e.message);
                else if (!same_bytes(path, small.bytes, small.len))
                    snprintf(out, sizeof out, "FAIL %s: the target changed", mode_names[m]);
                else if (!only_entry(dir, "out.btf", listing, sizeof listing))
                    snprintf(out, sizeof out, "FAIL %s: left: %s", mode_names[m], listing);
                else
                    snprintf(out, sizeof out, "OK %s", e.message);
            }
            /* space is back once the target is smaller again */
            if (!strncmp(out, "OK", 2) && tio_save(small.c, path, NULL, &e) != TIO_OK)
                snprintf(out, sizeof out, "FAIL a small save after ENOSPC: %s", e.message);
        }
        size_t n = strlen(out) + 1;
        _exit(write(pfd[1], out, n) == (ssize_t)n ? 0 : 3);
    }
    char res[1024];
    child_result(pfd, pid, res, sizeof res);
    char listing[256];
    assert_int_equal(list_dir(dir, listing, sizeof listing), 0); /* the tmpfs is gone */
    rmdir(dir);
    version_free(&small);
    version_free(&big);
    if (!strncmp(res, "UNAVAILABLE", 11)) {
        printf("[ faults   ] ENOSPC case NOT RUN: no private tmpfs here (%s); only the EFBIG "
               "case (test_efbig) checked full-disk behaviour\n", res + 12);
        return;
    }
    EXPECT(!strncmp(res, "OK", 2), "ENOSPC: %s", res);
    printf("[ faults   ] ENOSPC on a 256 KiB tmpfs (user+mount namespace), both modes: \"%s\"\n",
           res + 3);
}

/* ------------------------------------------------------------- stale temps */

static void touch(const char *dir, const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    EXPECT(fd >= 0, "create %s: %s", p, strerror(errno));
    EXPECT(write(fd, "x", 1) == 1, "write %s", p);
    close(fd);
}

static int exists(const char *dir, const char *name) {
    char p[512];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p) return 0;
    return lstat(p, &st) == 0;
}

/* Whether every one of the n names exists in dir (else fails naming it). */
static void expect_all(const char *dir, char (*names)[256], int n, const char *when) {
    for (int k = 0; k < n; k++) EXPECT(exists(dir, names[k]), "%s: %s was removed", when, names[k]);
}

static void expect_none(const char *dir, char (*names)[256], int n, const char *when) {
    for (int k = 0; k < n; k++)
        EXPECT(!exists(dir, names[k]), "%s: %s (dead pid) was not removed", when, names[k]);
}

/* A default save leaves temporary files alone (it never lists the
 * directory); TIO_SAVE_CLEANUP removes the target's of dead processes, and
 * tio_save_cleanup() those of every target. Neither ever removes a live
 * process's, this process's, a look-alike name, a symlink (nor its target)
 * or a directory. */
static void test_stale_temps(void **state) {
    (void)state;
    static const tio_dtype dt[] = {TIO_INT32};
    static const int64_t nn[] = {100};
    version v;
    version_init(&v, "tenbin", dt, nn, 1, 8);
    pid_t dead = (pid_t)tvec_dead_pid();
    assert_true(dead > 0);
    /* a live process other than this one: a child blocked on a pipe */
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t live = fork();
    assert_true(live >= 0);
    if (live == 0) {
        close(pfd[1]);
        char c;
        _exit(read(pfd[0], &c, 1) >= 0 ? 0 : 1);
    }
    close(pfd[0]);
    const char *hex = "0123456789abcdef";
    char longbase[256], longstem[256];
    memset(longbase, 'L', 210); /* a base name over the 200 bytes kept in temp names */
    memcpy(longbase + 210, ".ten", 5);
    memcpy(longstem, longbase, 200);
    longstem[200] = 0;
    tio_save_options cleanup = {0};
    cleanup.flags = TIO_SAVE_CLEANUP;
    for (int m = 0; m < 2; m++) {
        char dir[] = "/tmp/tio-faults-XXXXXX";
        make_dir(dir);
        char path[256], victim[256], outside[] = "/tmp/tio-faults-victim-XXXXXX";
        char longpath[512];
        snprintf(path, sizeof path, "%s/out.ten", dir);
        snprintf(longpath, sizeof longpath, "%s/%s", dir, longbase);
        make_dir(outside);
        snprintf(victim, sizeof victim, "%s/victim", outside);
        touch(outside, "victim");
        /* this target's stale temps; other targets' stale temps; kept names */
        char stale[2][256], others[3][256], keep[14][256];
        snprintf(stale[0], 256, ".out.ten.tio-%ld-%s.tmp", (long)dead, hex);
        snprintf(stale[1], 256, ".out.ten.tio-%ld-fedcba9876543210.tmp", (long)dead);
        snprintf(others[0], 256, ".other.ten.tio-%ld-%s.tmp", (long)dead, hex);
        snprintf(others[1], 256, ".x.tio-1.tio-%ld-%s.tmp", (long)dead, hex);
        snprintf(others[2], 256, ".%.200s.tio-%ld-%s.tmp", longstem, (long)dead, hex);
        int nk = 0;
        snprintf(keep[nk++], 256, ".out.ten.tio-%ld-%s.tmp", (long)getpid(), hex); /* ours */
        snprintf(keep[nk++], 256, ".out.ten.tio-%ld-%s.tmp", (long)live, hex);     /* alive */
        snprintf(keep[nk++], 256, ".out.ten.tio-%ld-%s.tmp.bak", (long)dead, hex);
        snprintf(keep[nk++], 256, ".out.ten.tio-%ld-0123456789abcde.tmp", (long)dead);
        snprintf(keep[nk++], 256, ".out.ten.tio-%ld-0123456789ABCDEF.tmp", (long)dead);
        snprintf(keep[nk++], 256, ".out.ten.tio-0%ld-%s.tmp", (long)dead, hex);
        snprintf(keep[nk++], 256, ".out.ten.tio-%s.tmp", hex);
        snprintf(keep[nk++], 256, ".out.ten.tio-%s", hex); /* the pre-pid pattern */
        snprintf(keep[nk++], 256, "out.ten.tio-%ld-%s.tmp", (long)dead, hex);
        snprintf(keep[nk++], 256, "..tio-%ld-%s.tmp", (long)dead, hex); /* empty stem */
        snprintf(keep[nk++], 256, ".%.200sL.tio-%ld-%s.tmp", longstem, (long)dead, hex); /* 201 */
        snprintf(keep[nk++], 256, ".out.ten.tio-99999999999-%s.tmp", hex); /* pid > 2^31 */
        for (int k = 0; k < 2; k++) touch(dir, stale[k]);
        for (int k = 0; k < 3; k++) touch(dir, others[k]);
        for (int k = 0; k < nk; k++) touch(dir, keep[k]);
        /* matching names that are not regular files */
        char lnk[256], sub[256], p[512];
        snprintf(lnk, sizeof lnk, ".out.ten.tio-%ld-aaaaaaaaaaaaaaaa.tmp", (long)dead);
        snprintf(p, sizeof p, "%s/%s", dir, lnk);
        assert_int_equal(symlink(victim, p), 0);
        snprintf(sub, sizeof sub, ".out.ten.tio-%ld-bbbbbbbbbbbbbbbb.tmp", (long)dead);
        snprintf(p, sizeof p, "%s/%s", dir, sub);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(keep[nk++], 256, "%s", lnk);
        snprintf(keep[nk++], 256, "%s", sub);
        char when[64], listing[4096];
        tio_error e;

        /* a default save removes nothing */
        snprintf(when, sizeof when, "%s, default save", mode_names[m]);
        EXPECT(tio__save_file(v.c, path, NULL, modes[m], &e) == TIO_OK, "%s", e.message);
        expect_all(dir, stale, 2, when);
        expect_all(dir, others, 3, when);
        expect_all(dir, keep, nk, when);
        EXPECT(same_bytes(path, v.bytes, v.len), "%s: not the saved data", path);

        /* TIO_SAVE_CLEANUP: this target's stale temps only */
        snprintf(when, sizeof when, "%s, TIO_SAVE_CLEANUP", mode_names[m]);
        EXPECT(tio__save_file(v.c, path, &cleanup, modes[m], &e) == TIO_OK, "%s", e.message);
        expect_none(dir, stale, 2, when);
        expect_all(dir, others, 3, when);
        expect_all(dir, keep, nk, when);
        EXPECT(exists(outside, "victim"), "%s: the symlink's target was removed", when);
        EXPECT(same_bytes(path, v.bytes, v.len), "%s: not the saved data", path);
        /* a long target name: its temps carry the first 200 bytes */
        EXPECT(tio__save_file(v.c, longpath, &cleanup, modes[m], &e) == TIO_OK, "%s",
               e.message);
        expect_none(dir, others + 2, 1, when);
        expect_all(dir, others, 2, when);
        expect_all(dir, keep, nk, when);
        touch(dir, others[2]);
        assert_int_equal(list_dir(dir, listing, sizeof listing), nk + 3 + 2);

        /* tio_save_cleanup: every target's */
        snprintf(when, sizeof when, "%s, tio_save_cleanup", mode_names[m]);
        touch(dir, stale[1]);
        size_t gone = 99;
        EXPECT(tio_save_cleanup(dir, &gone, &e) == TIO_OK, "%s", e.message);
        EXPECT(gone == 4, "%s: removed %zu files, expected 4", when, gone);
        expect_none(dir, stale + 1, 1, when);
        expect_none(dir, others, 3, when);
        expect_all(dir, keep, nk, when);
        EXPECT(exists(outside, "victim"), "%s: the symlink's target was removed", when);
        assert_int_equal(list_dir(dir, listing, sizeof listing), nk + 2);
        EXPECT(tio_save_cleanup(dir, NULL, &e) == TIO_OK, "%s", e.message); /* idempotent */
        assert_int_equal(list_dir(dir, listing, sizeof listing), nk + 2);
        unlink(victim);
        rmdir(outside);
        remove_tree(dir);
    }
    /* once the live process is gone, its temp goes too */
    char dir[] = "/tmp/tio-faults-XXXXXX";
    make_dir(dir);
    char path[256], name[128], listing[512];
    snprintf(path, sizeof path, "%s/out.ten", dir);
    snprintf(name, sizeof name, ".out.ten.tio-%ld-%s.tmp", (long)live, hex);
    touch(dir, name);
    tio_error e;
    tio_error_clear(&e);
    size_t gone = 99;
    EXPECT(tio_save(v.c, path, &cleanup, &e) == TIO_OK, "%s", e.message);
    EXPECT(tio_save_cleanup(dir, &gone, &e) == TIO_OK && gone == 0, "%s", e.message);
    EXPECT(exists(dir, name), "a live process's temp was removed");
    close(pfd[1]); /* the child exits */
    assert_int_equal(waitpid(live, NULL, 0), live);
    EXPECT(tio_save(v.c, path, NULL, &e) == TIO_OK, "%s", e.message);
    EXPECT(exists(dir, name), "a default save removed a temp");
    EXPECT(tio_save(v.c, path, &cleanup, &e) == TIO_OK, "%s", e.message);
    EXPECT(only_entry(dir, "out.ten", listing, sizeof listing), "%s holds: %s", dir, listing);
    touch(dir, name);
    EXPECT(tio_save_cleanup(dir, &gone, &e) == TIO_OK && gone == 1, "%s", e.message);
    EXPECT(only_entry(dir, "out.ten", listing, sizeof listing), "%s holds: %s", dir, listing);
    /* errors: no directory given; a directory that does not exist */
    assert_int_equal(tio_save_cleanup(NULL, &gone, &e), TIO_E_ARGUMENT);
    char missing[300];
    snprintf(missing, sizeof missing, "%s/missing", dir);
    gone = 99;
    assert_int_equal(tio_save_cleanup(missing, &gone, &e), TIO_E_IO);
    EXPECT(gone == 0 && strstr(e.message, missing) && strstr(e.message, strerror(ENOENT)),
           "%zu, %s", gone, e.message);
    remove_tree(dir);
    version_free(&v);
}

/* ------------------------------------------------- directories and modes */

/* Clears the effective capabilities (root then obeys mode bits like anyone;
 * lowering them is always permitted, in any user namespace). */
static int drop_caps(void) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) != 0) return -1;
    d[0].effective = d[1].effective = 0;
    return (int)syscall(SYS_capset, &h, d);
}

/* The read-only directory case, in a child without capabilities, so that
 * the mode bits apply even when the tests run as root. Sends "OK message"
 * or "FAIL why". */
static void readonly_child(const version *v, int out) {
    char res[1024];
    char dir[] = "/tmp/tio-faults-ro-XXXXXX";
    char probe[300];
    int pfd = -1;
    if (drop_caps() != 0) {
        snprintf(res, sizeof res, "FAIL dropping capabilities: %s", strerror(errno));
    } else if (!mkdtemp(dir)) {
        snprintf(res, sizeof res, "FAIL mkdtemp: %s", strerror(errno));
    } else {
        char path[256], listing[512];
        snprintf(path, sizeof path, "%s/out.ten", dir);
        tio_error e;
        if (tio_save(v->c, path, NULL, &e) != TIO_OK) {
            snprintf(res, sizeof res, "FAIL first save: %s", e.message);
        } else {
            chmod(dir, 0555);
            snprintf(probe, sizeof probe, "%s/probe", dir);
            pfd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (pfd >= 0) {
                close(pfd);
                unlink(probe);
                snprintf(res, sizeof res, "FAIL a 0555 directory is still writable here");
            } else {
                snprintf(res, sizeof res, "OK");
            }
            for (int m = 0; m < 2 && !strncmp(res, "OK", 2); m++) {
                int rc = tio__save_file(v->c, path, NULL, modes[m], &e);
                if (rc != TIO_E_IO)
                    snprintf(res, sizeof res, "FAIL %s: rc %d, expected TIO_E_IO",
                             mode_names[m], rc);
                else if (!strstr(e.message, path) || !strstr(e.message, strerror(EACCES)))
                    snprintf(res, sizeof res, "FAIL %s: message lacks the path or \"%s\": %s",
                             mode_names[m], strerror(EACCES), e.message);
                else if (!same_bytes(path, v->bytes, v->len))
                    snprintf(res, sizeof res, "FAIL %s: the target changed", mode_names[m]);
                else if (!only_entry(dir, "out.ten", listing, sizeof listing))
                    snprintf(res, sizeof res, "FAIL %s: left: %s", mode_names[m], listing);
                else
                    snprintf(res, sizeof res, "OK %s", e.message);
            }
            /* a stale temp that cannot be removed: TIO_E_IO naming it */
            char stale[128], sp[400];
            snprintf(stale, sizeof stale, ".out.ten.tio-%ld-0123456789abcdef.tmp",
                     tvec_dead_pid());
            snprintf(sp, sizeof sp, "%s/%s", dir, stale);
            chmod(dir, 0755);
            pfd = open(sp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (pfd >= 0) close(pfd);
            chmod(dir, 0555);
            size_t gone = 99;
            int rc = tio_save_cleanup(dir, &gone, &e);
            if (!strncmp(res, "OK", 2) &&
                (pfd < 0 || rc != TIO_E_IO || gone != 0 || !strstr(e.message, stale) ||
                 !strstr(e.message, strerror(EACCES)) || access(sp, F_OK) != 0))
                snprintf(res, sizeof res, "FAIL tio_save_cleanup in a 0555 directory: rc %d, "
                         "%zu removed: %s", rc, gone, rc ? e.message : "");
            chmod(dir, 0755);
            unlink(sp);
            unlink(path);
        }
        rmdir(dir);
    }
    size_t n = strlen(res) + 1;
    _exit(write(out, res, n) == (ssize_t)n ? 0 : 3);
}

static void test_directories(void **state) {
    (void)state;
    static const tio_dtype dt[] = {TIO_FLOAT32};
    static const int64_t nn[] = {1000};
    version v;
    version_init(&v, "tenbin", dt, nn, 1, 9);
    /* read-only directory */
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        readonly_child(&v, pfd[1]);
    }
    char res[1024];
    child_result(pfd, pid, res, sizeof res);
    EXPECT(!strncmp(res, "OK", 2), "read-only directory: %s", res);
    printf("[ faults   ] read-only directory: \"%s\"\n", res + 3);

    char dir[] = "/tmp/tio-faults-XXXXXX";
    make_dir(dir);
    char path[256], bad[300], listing[512];
    snprintf(path, sizeof path, "%s/out.ten", dir);
    tio_error e;
    EXPECT(tio_save(v.c, path, NULL, &e) == TIO_OK, "%s", e.message);
    tio_save_options nosync = {0};
    nosync.flags = TIO_SAVE_NO_SYNC;
    for (int k = 0; k < 4; k++) {
        int m = k % 2;
        const tio_save_options *o = k < 2 ? NULL : &nosync;
        /* missing directory */
        snprintf(bad, sizeof bad, "%s/missing/out.ten", dir);
        assert_int_equal(tio__save_file(v.c, bad, o, modes[m], &e), TIO_E_IO);
        EXPECT(strstr(e.message, bad) && strstr(e.message, strerror(ENOENT)), "%s",
               e.message);
        if (k == 0) printf("[ faults   ] missing directory: \"%s\"\n", e.message);
        /* the target is a directory: the rename fails after the temp was
         * linked or written; the temp is removed */
        snprintf(bad, sizeof bad, "%s/sub.ten", dir);
        assert_int_equal(mkdir(bad, 0755), 0);
        assert_int_equal(tio__save_file(v.c, bad, o, modes[m], &e), TIO_E_IO);
        EXPECT(strstr(e.message, bad) != NULL, "%s", e.message);
        if (k == 0) printf("[ faults   ] target is a directory: \"%s\"\n", e.message);
        assert_int_equal(rmdir(bad), 0);
        EXPECT(only_entry(dir, "out.ten", listing, sizeof listing), "%s holds: %s", dir,
               listing);
        EXPECT(same_bytes(path, v.bytes, v.len), "%s changed", path);
    }
    remove_tree(dir);
    version_free(&v);
}

/* Modes, for synced saves (the target is looked at before writing) and
 * unsynced ones (a new target is presumed; the target is looked at only when
 * linking the file as the target finds the name taken). */
static void test_modes(void **state) {
    (void)state;
    static const tio_dtype dt[] = {TIO_INT8};
    static const int64_t nn[] = {10};
    version v;
    version_init(&v, "btf", dt, nn, 1, 10);
    mode_t old = umask(022);
    tio_save_options nosync = {0};
    nosync.flags = TIO_SAVE_NO_SYNC;
    for (int k = 0; k < 4; k++) {
        int m = k % 2;
        const tio_save_options *o = k < 2 ? NULL : &nosync;
        const char *how = k < 2 ? "synced" : "unsynced";
        char dir[] = "/tmp/tio-faults-XXXXXX";
        make_dir(dir);
        char path[256], listing[512];
        snprintf(path, sizeof path, "%s/out.btf", dir);
        tio_error e;
        struct stat st;
        /* a new file: 0666 minus the umask */
        umask(022);
        EXPECT(tio__save_file(v.c, path, o, modes[m], &e) == TIO_OK, "%s", e.message);
        assert_int_equal(stat(path, &st), 0);
        EXPECT((st.st_mode & 07777) == 0644, "%s %s: mode %o", mode_names[m], how,
               (unsigned)(st.st_mode & 07777));
        unlink(path);
        umask(077);
        EXPECT(tio__save_file(v.c, path, o, modes[m], &e) == TIO_OK, "%s", e.message);
        assert_int_equal(stat(path, &st), 0);
        EXPECT((st.st_mode & 07777) == 0600, "%s %s: mode %o", mode_names[m], how,
               (unsigned)(st.st_mode & 07777));
        /* an existing target keeps its mode */
        umask(022);
        assert_int_equal(chmod(path, 0640), 0);
        EXPECT(tio__save_file(v.c, path, o, modes[m], &e) == TIO_OK, "%s", e.message);
        assert_int_equal(stat(path, &st), 0);
        EXPECT((st.st_mode & 07777) == 0640, "%s %s: mode %o", mode_names[m], how,
               (unsigned)(st.st_mode & 07777));
        EXPECT(same_bytes(path, v.bytes, v.len), "%s %s: not the saved data", mode_names[m],
               how);
        /* a symlink as the target is replaced by the file (its target
         * untouched), dangling or not; the mode of what it points to is kept */
        char victim[300], lnk[300];
        snprintf(victim, sizeof victim, "%s/victim", dir);
        snprintf(lnk, sizeof lnk, "%s/link.btf", dir);
        touch(dir, "victim");
        assert_int_equal(chmod(victim, 0604), 0);
        for (int dangling = 0; dangling < 2; dangling++) {
            assert_int_equal(symlink(dangling ? "nowhere" : "victim", lnk), 0);
            EXPECT(tio__save_file(v.c, lnk, o, modes[m], &e) == TIO_OK, "%s", e.message);
            assert_int_equal(lstat(lnk, &st), 0);
            EXPECT(S_ISREG(st.st_mode) && same_bytes(lnk, v.bytes, v.len),
                   "%s %s: the symlink was not replaced by the file", mode_names[m], how);
            EXPECT(dangling || (st.st_mode & 07777) == 0604, "%s %s: mode %o", mode_names[m],
                   how, (unsigned)(st.st_mode & 07777));
            unlink(lnk);
        }
        EXPECT(same_bytes(victim, (const uint8_t *)"x", 1), "the symlink's target changed");
        unlink(victim);
        EXPECT(only_entry(dir, "out.btf", listing, sizeof listing), "%s %s: %s holds: %s",
               mode_names[m], how, dir, listing);
        remove_tree(dir);
    }
    umask(old);
    version_free(&v);
}

/* A target that is a FIFO, or a character device (made where this runs as
 * root, which the save would otherwise replace: /dev/null), is refused in
 * every mode before any rename (TIO_E_ARGUMENT naming it); the node stays
 * and no temporary file is left. A symlink to a FIFO is replaced like any
 * symlink, the FIFO kept. */
static void test_special_targets(void **state) {
    (void)state;
    static const tio_dtype dt[] = {TIO_INT8};
    static const int64_t nn[] = {10};
    version v;
    version_init(&v, "btf", dt, nn, 1, 10);
    tio_save_options nosync = {0};
    nosync.flags = TIO_SAVE_NO_SYNC;
    int root = geteuid() == 0;
    if (!root) printf("[ faults   ] skipped: a character device target (needs root to mknod)\n");
    for (int kind = 0; kind < 2; kind++) {
        if (kind == 1 && !root) break;
        for (int k = 0; k < 4; k++) {
            int m = k % 2;
            const tio_save_options *o = k < 2 ? NULL : &nosync;
            const char *how = k < 2 ? "synced" : "unsynced";
            char dir[] = "/tmp/tio-faults-XXXXXX";
            make_dir(dir);
            char path[256], listing[512];
            snprintf(path, sizeof path, "%s/node.btf", dir);
            if (kind == 0)
                assert_int_equal(mkfifo(path, 0644), 0);
            else
                assert_int_equal(mknod(path, S_IFCHR | 0666, makedev(1, 3)), 0);
            tio_error e;
            int rc = tio__save_file(v.c, path, o, modes[m], &e);
            EXPECT(rc == TIO_E_ARGUMENT, "%s %s: %s", mode_names[m], how,
                   rc ? e.message : "saved over it");
            EXPECT(strstr(e.message, kind ? "is a character device" : "is a FIFO") &&
                       strstr(e.message, path),
                   "%s", e.message);
            if (kind == 0 && k == 0) printf("[ faults   ] a FIFO target: \"%s\"\n", e.message);
            struct stat st;
            assert_int_equal(lstat(path, &st), 0);
            EXPECT(kind ? S_ISCHR(st.st_mode) : S_ISFIFO(st.st_mode),
                   "%s %s: the node was replaced", mode_names[m], how);
            EXPECT(only_entry(dir, "node.btf", listing, sizeof listing), "%s %s: %s holds: %s",
                   mode_names[m], how, dir, listing);
            if (kind == 0) {
                char lnk[300];
                snprintf(lnk, sizeof lnk, "%s/link.btf", dir);
                assert_int_equal(symlink("node.btf", lnk), 0);
                EXPECT(tio__save_file(v.c, lnk, o, modes[m], &e) == TIO_OK, "%s", e.message);
                assert_int_equal(lstat(lnk, &st), 0);
                EXPECT(S_ISREG(st.st_mode) && same_bytes(lnk, v.bytes, v.len),
                       "%s %s: the symlink was not replaced by the file", mode_names[m], how);
                assert_int_equal(lstat(path, &st), 0);
                EXPECT(S_ISFIFO(st.st_mode), "%s %s: the FIFO changed", mode_names[m], how);
                unlink(lnk);
            }
            remove_tree(dir);
        }
    }
    version_free(&v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_special_targets),
        cmocka_unit_test(test_modes),       cmocka_unit_test(test_stale_temps),
        cmocka_unit_test(test_directories), cmocka_unit_test(test_efbig),
        cmocka_unit_test(test_enospc),      cmocka_unit_test(test_sigkill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
