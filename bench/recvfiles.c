/* tio_bench recvfiles: `tensio recv -o` writing one file per message, against
 * a loop of write() + rename() of the same bytes.
 *
 *   recvfiles --cli TENSIO --msg FILE --dir DIR [--counts 1000,10000,100000]
 *             [--modes default,sync-each,no-sync[,base-fsync]] [--fresh-dirs]
 *
 * For each count N ("N files") and each repetition, one after the other in a
 * directory DIR/bench-files that is emptied (untimed) before each:
 *  - base:write+rename: this process writes N files of FILE's bytes, each
 *    created under a temporary name (open, write, close) and renamed to its
 *    final name, without fsync;
 *  - tensio:recv[ --MODE]: `TENSIO recv --bind tcp://127.0.0.1:* --count N -o
 *    DIR/bench-files/m-%06d.zmsg` (plus --MODE unless default; its lines go
 *    to a file), fed by `TENSIO send --count N ENDPOINT FILE` once recv has
 *    bound; timed from its first file (polled for) until it has exited:
 *    N - 1 files, the final sync and the exit. What comes before the first
 *    file (the sender's exec and connection, tens of ms here) is a fixed cost
 *    per run, not throughput; its largest value is reported as a fact.
 *  - base-fsync in --modes adds base:write+fsync+rename: the baseline with an
 *    fsync of each file before its close and of the directory after its
 *    rename (what a durable file costs; not run by default).
 * --fresh-dirs gives every run a new directory and removes them all at the
 * end, instead of emptying one: on a disk file system, creating files just
 * after deleting as many is slow (ext4 without a journal skips inode numbers
 * freed in the last minutes, reading the inode table for each), which would
 * charge one run for the previous one's deletions. It needs room for every
 * run's files at once.
 * FILE is a .zmsg (ZIO) message, so the files recv writes hold exactly its
 * bytes: --check compares the first and last file of every run with it and
 * counts the directory's entries. The time per file is what must not grow
 * with N: a save that listed its directory would grow linearly. */
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CASE "recvfiles"

typedef struct rf_ctx {
    const char *cli;
    const char *msg;    /* the message file */
    unsigned char *bytes;
    size_t len;
    char top[3800];     /* DIR/bench-files */
    char dir[4000];     /* where the run writes: top, or top/rNNNN (--fresh-dirs) */
    int check;
    int fresh;          /* --fresh-dirs */
    unsigned runs;      /* directories made (--fresh-dirs) */
} rf_ctx;

static int read_all(const char *path, unsigned char **out, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        close(fd);
        return -1;
    }
    *len = (size_t)st.st_size;
    *out = malloc(*len);
    size_t got = 0;
    while (*out && got < *len) {
        ssize_t k = read(fd, *out + got, *len - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    return *out && got == *len ? 0 : -1;
}

/* Counts the entries of the (flat) output directory, removing them with
 * `remove`; -1 when it cannot be listed. */
static long scan_dir(const char *dir, int remove) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    long n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (remove) unlinkat(dirfd(d), de->d_name, 0);
        n++;
    }
    closedir(d);
    return n;
}

/* Readies the directory of the next run: top emptied, or (--fresh-dirs) a
 * new one, the old ones kept until the end. Then syncs (untimed): no
 * write-back of the previous run while timing. */
static int next_dir(rf_ctx *c) {
    if (!c->fresh) {
        scan_dir(c->top, 1);
    } else {
        snprintf(c->dir, sizeof c->dir, "%s/r%04u", c->top, c->runs++);
        if (mkdir(c->dir, 0755) != 0) return bn_fail("recvfiles: %s: %s", c->dir, strerror(errno));
    }
    sync();
    return 0;
}

static int same_as_msg(const rf_ctx *c, const char *path) {
    unsigned char *b = NULL;
    size_t n = 0;
    int ok = read_all(path, &b, &n) == 0 && n == c->len && memcmp(b, c->bytes, n) == 0;
    free(b);
    return ok;
}

/* After a run of n files: the count and the first and last file's bytes. */
static int check_run(const rf_ctx *c, uint64_t n, const char *who) {
    if (!c->check) return 0;
    char p[4200];
    long have = scan_dir(c->dir, 0);
    if (have != (long)n)
        return bn_fail("recvfiles: %s left %ld entries, expected %" PRIu64, who, have, n);
    uint64_t which[2] = {0, n - 1};
    for (int k = 0; k < 2; k++) {
        snprintf(p, sizeof p, "%s/m-%06" PRIu64 ".zmsg", c->dir, which[k]);
        if (!same_as_msg(c, p))
            return bn_fail("recvfiles: %s: %s differs from %s", who, p, c->msg);
    }
    return 0;
}

/* The baseline: n files written by open/write/close under a temporary name
 * and rename() to the final one; with `durable`, each file fsynced before its
 * close and the directory after its rename. Returns seconds, or -1. */
static double base_run(const rf_ctx *c, uint64_t n, int durable) {
    char tmp[4200], fin[4200];
    int dfd = durable ? open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (durable && dfd < 0) return -1;
    double t0 = bn_now();
    for (uint64_t i = 0; i < n; i++) {
        snprintf(tmp, sizeof tmp, "%s/.m-%06" PRIu64 ".zmsg.tmp", c->dir, i);
        snprintf(fin, sizeof fin, "%s/m-%06" PRIu64 ".zmsg", c->dir, i);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (fd < 0) return -1;
        if (write(fd, c->bytes, c->len) != (ssize_t)c->len || (durable && fsync(fd) != 0)) {
            close(fd);
            return -1;
        }
        if (close(fd) != 0 || rename(tmp, fin) != 0 || (durable && fsync(dfd) != 0)) return -1;
    }
    double t = bn_now() - t0;
    if (dfd >= 0) close(dfd);
    return t;
}

static pid_t spawn(char *const argv[], int out_fd, int err_fd) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    dup2(null, 0);
    dup2(out_fd >= 0 ? out_fd : null, 1);
    dup2(err_fd >= 0 ? err_fd : null, 2);
    execv(argv[0], argv);
    _exit(127);
}

/* One `tensio recv -o` run of n messages fed by `tensio send`. recv's
 * stdout (a line per file, written in batches) goes to a file. The first
 * output file is polled for: *first gets the seconds from recv's "bound"
 * line to that file (the sender's start and connection: a fixed cost, not
 * throughput). Returns the seconds from the first file until recv has exited
 * (n - 1 files, the final sync and the exit), or -1. */
static double recv_run(const rf_ctx *c, uint64_t n, const char *mode, double *first) {
    char count[32], pattern[4200], opt[32], outp[4200];
    snprintf(count, sizeof count, "%" PRIu64, n);
    snprintf(pattern, sizeof pattern, "%s/m-%%06d.zmsg", c->dir);
    snprintf(outp, sizeof outp, "%s.lines", c->dir);
    snprintf(opt, sizeof opt, "--%s", mode ? mode : "");
    char *rargv[] = {(char *)c->cli, "recv", "--bind", "tcp://127.0.0.1:*", "--count", count,
                     "--timeout", "60", "-o", pattern, mode ? opt : NULL, NULL};
    int pfd[2];
    int out = open(outp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0 || pipe(pfd) != 0) return -1;
    fflush(NULL);
    pid_t rp = spawn(rargv, out, pfd[1]);
    close(pfd[1]);
    if (rp < 0) {
        close(pfd[0]);
        close(out);
        return -1;
    }
    /* "tensio recv: bound ENDPOINT\n" */
    char err[8192], ep[256] = "";
    size_t used = 0;
    while (!ep[0] && used + 1 < sizeof err) {
        ssize_t k = read(pfd[0], err + used, sizeof err - 1 - used);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        used += (size_t)k;
        err[used] = 0;
        const char *b = strstr(err, "bound ");
        const char *nl = b ? strchr(b, '\n') : NULL;
        if (nl && (size_t)(nl - b - 6) < sizeof ep) {
            memcpy(ep, b + 6, (size_t)(nl - b - 6));
            ep[nl - b - 6] = 0;
        }
    }
    double t0 = bn_now(), t1 = t0;
    char *sargv[] = {(char *)c->cli, "send", "--count", count, "--timeout", "60", ep,
                     (char *)c->msg, NULL};
    pid_t sp = ep[0] ? spawn(sargv, -1, -1) : -1;
    /* the first file, polled every 50 us */
    char first_file[4200];
    snprintf(first_file, sizeof first_file, "%s/m-000000.zmsg", c->dir);
    int rs = 0, ss = 0, done = 0;
    struct stat st;
    while (sp > 0 && stat(first_file, &st) != 0) {
        if (waitpid(rp, &rs, WNOHANG) == rp) {
            done = 1;
            break;
        }
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
    t1 = bn_now();
    *first = t1 - t0;
    /* recv's stderr (its summary) until it exits */
    char rest[4096];
    ssize_t k;
    while ((k = read(pfd[0], rest, sizeof rest)) != 0)
        if (k < 0 && errno != EINTR) break;
    close(pfd[0]);
    if (sp < 0) kill(rp, SIGTERM);
    if (!done) waitpid(rp, &rs, 0);
    double t2 = bn_now();
    if (sp > 0) waitpid(sp, &ss, 0);
    close(out);
    unlink(outp);
    if (sp < 0 || !WIFEXITED(rs) || WEXITSTATUS(rs) != 0 || !WIFEXITED(ss) ||
        WEXITSTATUS(ss) != 0) {
        bn_fail("recvfiles: recv (status %d) or send (status %d) failed; recv said: %s", rs, ss,
                err);
        return -1;
    }
    return t2 - t1;
}

int bn_cmd_recvfiles(bn_ctx *x, int argc, char **argv) {
    rf_ctx c;
    memset(&c, 0, sizeof c);
    c.cli = bn_opt(argc, argv, "--cli", NULL);
    c.msg = bn_opt(argc, argv, "--msg", NULL);
    const char *dir = bn_opt(argc, argv, "--dir", NULL);
    char counts[256], modes[256];
    snprintf(counts, sizeof counts, "%s", bn_opt(argc, argv, "--counts", "1000,10000,100000"));
    snprintf(modes, sizeof modes, "%s", bn_opt(argc, argv, "--modes", "default,sync-each,no-sync"));
    c.check = x->check;
    if (!c.cli || !c.msg || !dir) return bn_fail("recvfiles: --cli, --msg and --dir needed");
    if (read_all(c.msg, &c.bytes, &c.len) != 0) return bn_fail("recvfiles: cannot read %s", c.msg);
    c.fresh = bn_flag(argc, argv, "--fresh-dirs");
    snprintf(c.top, sizeof c.top, "%s/bench-files", dir);
    snprintf(c.dir, sizeof c.dir, "%s", c.top);
    if (mkdir(c.top, 0755) != 0)
        return bn_fail("recvfiles: %s: %s (left by an earlier run?)", c.top, strerror(errno));
    char *mode_list[8];
    int nmodes = 0;
    for (char *m = strtok(modes, ","); m && nmodes < 8; m = strtok(NULL, ",")) mode_list[nmodes++] = m;
    int rc = 0;
    for (char *cs = strtok(counts, ","); cs && !rc; cs = strtok(NULL, ",")) {
        uint64_t n = strtoull(cs, NULL, 10);
        if (n == 0) {
            rc = bn_fail("recvfiles: bad count '%s'", cs);
            break;
        }
        if (n < 2) {
            rc = bn_fail("recvfiles: a count is at least 2 (the first file starts the clock)");
            break;
        }
        char group[64];
        snprintf(group, sizeof group, "%" PRIu64 " files", n);
        double first_max[8] = {0};
        for (int r = -x->warmup; r < x->reps && !rc; r++) {
            if ((rc = next_dir(&c)) != 0) break;
            double t = base_run(&c, n, 0);
            if (t < 0) {
                rc = bn_fail("recvfiles: baseline: %s", strerror(errno));
                break;
            }
            if ((rc = check_run(&c, n, "base:write+rename")) != 0) break;
            if (r >= 0) bn_emit(CASE, group, "base:write+rename", t, (uint64_t)c.len * n, n);
            for (int m = 0; m < nmodes && !rc; m++) {
                if (!strcmp(mode_list[m], "base-fsync")) {
                    const char *who = "base:write+fsync+rename";
                    if ((rc = next_dir(&c)) != 0) break;
                    t = base_run(&c, n, 1);
                    if (t < 0) rc = bn_fail("recvfiles: baseline: %s", strerror(errno));
                    if (!rc) rc = check_run(&c, n, who);
                    if (!rc && r >= 0) bn_emit(CASE, group, who, t, (uint64_t)c.len * n, n);
                    continue;
                }
                const char *mode = strcmp(mode_list[m], "default") ? mode_list[m] : NULL;
                char subject[64];
                snprintf(subject, sizeof subject, "tensio:recv%s%s", mode ? " --" : "",
                         mode ? mode : "");
                if ((rc = next_dir(&c)) != 0) break;
                double first = 0;
                t = recv_run(&c, n, mode, &first);
                if (t < 0) {
                    rc = 1;
                    break;
                }
                if ((rc = check_run(&c, n, subject)) != 0) break;
                if (r >= 0) {
                    bn_emit(CASE, group, subject, t, (uint64_t)c.len * (n - 1), n - 1);
                    if (first > first_max[m]) first_max[m] = first;
                }
            }
        }
        for (int m = 0; m < nmodes && !rc; m++) {
            if (!strcmp(mode_list[m], "base-fsync")) continue;
            const char *mode = strcmp(mode_list[m], "default") ? mode_list[m] : NULL;
            char subject[64];
            snprintf(subject, sizeof subject, "tensio:recv%s%s", mode ? " --" : "",
                     mode ? mode : "");
            bn_fact(CASE, group, subject, "first_file_max_s", "%.6f", first_max[m]);
        }
    }
    for (unsigned k = 0; k < c.runs; k++) {
        snprintf(c.dir, sizeof c.dir, "%s/r%04u", c.top, k);
        scan_dir(c.dir, 1);
        rmdir(c.dir);
    }
    scan_dir(c.top, 1);
    rmdir(c.top);
    free(c.bytes);
    return rc;
}
