/* The processors a save may use (src/core/host.c): tio__host_cpu_quota
 * over cgroup trees made here, in the texts of /proc/self/cgroup and
 * /proc/self/mountinfo that point at them (cgroup v2 and v1, a container's
 * view, escapes, text no kernel writes), and tio__host_cpus in a real
 * cgroup with a CPU quota where this machine lets the test make one. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/internal.h"

static char dir[PATH_MAX];

/* a/b into out (cap bytes), which must hold it */
static void join(char *out, size_t cap, const char *a, const char *b) {
    int n = snprintf(out, cap, "%s/%s", a, b);
    assert_true(n > 0 && (size_t)n < cap);
}

/* Writes text to dir/rel, making the directories before it. */
static void put(const char *rel, const char *text) {
    char p[PATH_MAX];
    join(p, sizeof p, dir, rel);
    for (char *c = p + strlen(dir) + 1; (c = strchr(c, '/')) != NULL; c++) {
        *c = 0;
        assert_true(mkdir(p, 0755) == 0 || errno == EEXIST);
        *c = '/';
    }
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void gone(const char *rel) {
    char p[PATH_MAX];
    join(p, sizeof p, dir, rel);
    assert_int_equal(unlink(p), 0);
}

/* A mountinfo line mounting fs (with super options opts) at dir/at, the
 * hierarchy's root there being root. */
static char *mountinfo(char *buf, size_t cap, const char *root, const char *at, const char *fs,
                       const char *opts) {
    int n = snprintf(buf, cap,
                     "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
                     "30 22 0:26 %s %s/%s rw,nosuid,nodev shared:4 - %s cgroup %s\n"
                     "31 22 0:27 / /proc rw - proc proc rw\n",
                     root, dir, at, fs, opts);
    assert_true(n > 0 && (size_t)n < cap);
    return buf;
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "%s/tests/host-XXXXXX", TIO_BUILD_DIR);
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* cgroup v2: cpu.max "QUOTA PERIOD" or "max PERIOD" at each level from the
 * process's cgroup up to the mount; the least limit counts. */
static void test_quota_v2(void **state) {
    (void)state;
    char mi[2 * PATH_MAX];
    mountinfo(mi, sizeof mi, "/", "v2", "cgroup2", "rw,nsdelegate");
    const char *cg = "0::/a/b\n";
    assert_int_equal(tio__host_cpu_quota(cg, mi), 0); /* nothing there */
    put("v2/a/b/cgroup.procs", "");
    assert_int_equal(tio__host_cpu_quota(cg, mi), 0); /* no cpu.max: no controller */
    put("v2/a/b/cpu.max", "max 100000\n");
    assert_int_equal(tio__host_cpu_quota(cg, mi), 0);
    put("v2/a/cpu.max", "150000 100000\n"); /* above it: 1.5 processors */
    assert_int_equal(tio__host_cpu_quota(cg, mi), 1);
    put("v2/a/b/cpu.max", "400000 100000\n");
    put("v2/a/cpu.max", "max 100000\n");
    assert_int_equal(tio__host_cpu_quota(cg, mi), 4);
    put("v2/a/cpu.max", "200000 50000\n"); /* 4 too: the least of equals */
    assert_int_equal(tio__host_cpu_quota(cg, mi), 4);
    put("v2/a/cpu.max", "300000 100000\n");
    assert_int_equal(tio__host_cpu_quota(cg, mi), 3);
    put("v2/a/b/cpu.max", "50000 100000\n"); /* half a processor: at least 1 */
    assert_int_equal(tio__host_cpu_quota(cg, mi), 1);
    /* the mount's own directory counts (a container's cgroup namespace) */
    put("v2/a/b/cpu.max", "max 100000\n");
    put("v2/a/cpu.max", "max 100000\n");
    put("v2/cpu.max", "200000 100000\n");
    assert_int_equal(tio__host_cpu_quota(cg, mi), 2);
    assert_int_equal(tio__host_cpu_quota("0::/\n", mi), 2);
    gone("v2/cpu.max");
    /* a line for v1 hierarchies beside it, and a slash at the path's end */
    put("v2/a/b/cpu.max", "700000 100000");
    assert_int_equal(tio__host_cpu_quota("1:name=systemd:/\n0::/a/b/\n", mi), 7);
    /* mounted at a path ending in a slash */
    char mi2[2 * PATH_MAX];
    mountinfo(mi2, sizeof mi2, "/", "v2/", "cgroup2", "rw");
    assert_int_equal(tio__host_cpu_quota(cg, mi2), 7);
    /* not cgroup2, or no v2 line: nothing asked */
    assert_int_equal(tio__host_cpu_quota(cg, mountinfo(mi2, sizeof mi2, "/", "v2", "tmpfs", "rw")),
                     0);
    assert_int_equal(tio__host_cpu_quota("1:name=systemd:/a/b\n", mi), 0);
    gone("v2/a/b/cpu.max");
    gone("v2/a/cpu.max");
}

/* cgroup v1: the hierarchy whose super options and cgroup line name the cpu
 * controller; cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us. */
static void test_quota_v1(void **state) {
    (void)state;
    char mi[2 * PATH_MAX];
    mountinfo(mi, sizeof mi, "/", "cpu", "cgroup", "rw,cpu,cpuacct");
    const char *cg = "4:memory:/m\n3:cpu,cpuacct:/a/b\n2:cpuset:/\n";
    put("cpu/a/b/cpu.cfs_quota_us", "-1\n");
    put("cpu/a/b/cpu.cfs_period_us", "100000\n");
    assert_int_equal(tio__host_cpu_quota(cg, mi), 0);
    put("cpu/a/b/cpu.cfs_quota_us", "200000\n");
    assert_int_equal(tio__host_cpu_quota(cg, mi), 2);
    put("cpu/a/cpu.cfs_quota_us", "100000\n"); /* above it, no period: not read */
    assert_int_equal(tio__host_cpu_quota(cg, mi), 2);
    put("cpu/a/cpu.cfs_period_us", "100000\n");
    assert_int_equal(tio__host_cpu_quota(cg, mi), 1);
    /* "cpuacct" and "cpuset" are not "cpu": their hierarchies are not asked */
    char other[2 * PATH_MAX];
    mountinfo(other, sizeof other, "/", "cpu", "cgroup", "rw,cpuacct");
    assert_int_equal(tio__host_cpu_quota("3:cpuacct:/a/b\n", other), 0);
    mountinfo(other, sizeof other, "/", "cpu", "cgroup", "rw,cpuset");
    assert_int_equal(tio__host_cpu_quota("3:cpuset:/a/b\n", other), 0);
    assert_int_equal(tio__host_cpu_quota("3:cpuacct,cpuset:/a/b\n", mi), 0);
    /* a container's view (no cgroup namespace): the mount's root is the
     * container's cgroup, which /proc/self/cgroup names in full */
    mountinfo(other, sizeof other, "/docker/c1", "cpu/a", "cgroup", "rw,cpu");
    assert_int_equal(tio__host_cpu_quota("3:cpu:/docker/c1/b\n", other), 1);
    gone("cpu/a/cpu.cfs_quota_us");
    assert_int_equal(tio__host_cpu_quota("3:cpu:/docker/c1/b\n", other), 2);
    assert_int_equal(tio__host_cpu_quota("3:cpu:/docker/c1\n", other), 0);
    /* a path outside the mount's root: the mount's own directory */
    put("cpu/a/cpu.cfs_quota_us", "300000\n");
    assert_int_equal(tio__host_cpu_quota("3:cpu:/elsewhere/x\n", other), 3);
    assert_int_equal(tio__host_cpu_quota("3:cpu:/docker/c10\n", other), 3); /* not below c1 */
    /* v1 and v2 both limit: the least */
    char both[4 * PATH_MAX];
    char v2[2 * PATH_MAX];
    mountinfo(v2, sizeof v2, "/", "v2", "cgroup2", "rw");
    put("v2/a/b/cpu.max", "100000 100000\n");
    snprintf(both, sizeof both, "%s%s", mi, v2);
    assert_int_equal(tio__host_cpu_quota("3:cpu,cpuacct:/a/b\n0::/a/b\n", both), 1);
    put("v2/a/b/cpu.max", "max 100000\n");
    assert_int_equal(tio__host_cpu_quota("3:cpu,cpuacct:/a/b\n0::/a/b\n", both), 2);
    put("cpu/a/b/cpu.cfs_quota_us", "400000\n");
    assert_int_equal(tio__host_cpu_quota("3:cpu,cpuacct:/a/b\n0::/a/b\n", both), 3);
    gone("cpu/a/cpu.cfs_quota_us");
    gone("cpu/a/cpu.cfs_period_us");
    assert_int_equal(tio__host_cpu_quota("3:cpu,cpuacct:/a/b\n0::/a/b\n", both), 4);
    gone("v2/a/b/cpu.max");
}

/* A mount point with a space (mountinfo writes it \040). */
static void test_quota_escapes(void **state) {
    (void)state;
    char mi[2 * PATH_MAX];
    put("c g/x/cpu.max", "300000 100000\n");
    mountinfo(mi, sizeof mi, "/", "c\\040g", "cgroup2", "rw");
    assert_int_equal(tio__host_cpu_quota("0::/x\n", mi), 3);
    mountinfo(mi, sizeof mi, "/", "c g", "cgroup2", "rw"); /* unescaped: another line */
    assert_int_equal(tio__host_cpu_quota("0::/x\n", mi), 0);
}

/* What no kernel writes: bad numbers, cut lines, no separator, paths past
 * PATH_MAX, more levels than are walked. No limit, nothing read outside. */
static void test_quota_hostile(void **state) {
    (void)state;
    char mi[2 * PATH_MAX];
    mountinfo(mi, sizeof mi, "/", "h", "cgroup2", "rw");
    const char *bad[] = {"", "abc\n", "100000\n", "100000  100000\n", "100000 0\n",
                         "0 100000\n", "-100000 100000\n", " 100000 100000\n", "max\n",
                         "100000\t100000\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        put("h/x/cpu.max", bad[i]);
        if (tio__host_cpu_quota("0::/x\n", mi) != 0) fail_msg("cpu.max \"%s\" set a limit", bad[i]);
    }
    put("h/x/cpu.max", "99999999999999999999999999 1\n"); /* saturates: no fewer than all */
    assert_int_equal(tio__host_cpu_quota("0::/x\n", mi), UINT_MAX);
    put("h/x/cpu.max", "300000 100000\n");
    assert_int_equal(tio__host_cpu_quota("0::/x\n", mi), 3);
    /* cgroup lines that are not */
    const char *cgs[] = {"", "0::", "0::x\n", "0:/x\n", "00::/x\n", "::/x\n", "0\n", "\n\n"};
    for (size_t i = 0; i < sizeof cgs / sizeof *cgs; i++)
        if (tio__host_cpu_quota(cgs[i], mi) != 0) fail_msg("cgroup \"%s\" found a limit", cgs[i]);
    /* mountinfo lines cut short, without " - ", with nothing after it */
    char cut[2 * PATH_MAX];
    snprintf(cut, sizeof cut, "30 22 0:26 / %s/h rw,nosuid shared:4 cgroup2 cgroup rw\n", dir);
    assert_int_equal(tio__host_cpu_quota("0::/x\n", cut), 0);
    snprintf(cut, sizeof cut, "30 22 0:26 / %s/h rw -", dir);
    assert_int_equal(tio__host_cpu_quota("0::/x\n", cut), 0);
    snprintf(cut, sizeof cut, "30 22 0:26 / %s/h", dir);
    assert_int_equal(tio__host_cpu_quota("0::/x\n", cut), 0);
    assert_int_equal(tio__host_cpu_quota("0::/x\n", ""), 0);
    assert_int_equal(tio__host_cpu_quota("0::/x\n", "- cgroup2 cgroup rw\n"), 0);
    /* a path longer than PATH_MAX, in the cgroup line and the mount point */
    size_t big = PATH_MAX + 100;
    char *longp = malloc(big + 16), *longmi = malloc(big + 256);
    assert_non_null(longp);
    assert_non_null(longmi);
    memcpy(longp, "0::", 3);
    memset(longp + 3, 'a', big);
    longp[3] = '/';
    longp[3 + big] = 0;
    assert_int_equal(tio__host_cpu_quota(longp, mi), 0);
    int n = snprintf(longmi, big + 256, "30 22 0:26 / /");
    memset(longmi + n, 'm', big);
    snprintf(longmi + n + big, 256 - (size_t)n, " rw - cgroup2 cgroup rw\n");
    assert_int_equal(tio__host_cpu_quota("0::/x\n", longmi), 0);
    free(longp);
    free(longmi);
    /* 100 levels: the walk stops after CG_DEPTH_MAX of them, the limit at
     * the top is not reached; one near the bottom is */
    char deep[PATH_MAX] = "0::";
    for (int i = 0; i < 100; i++) strcat(deep, "/d");
    char rel[PATH_MAX] = "h";
    for (int i = 0; i < 100; i++) strcat(rel, "/d");
    strcat(rel, "/cpu.max");
    put(rel, "max 100000\n");
    put("h/cpu.max", "100000 100000\n");
    assert_int_equal(tio__host_cpu_quota(deep, mi), 0);
    put(rel, "500000 100000\n");
    assert_int_equal(tio__host_cpu_quota(deep, mi), 5);
}

/* This process: at least 1, no more than its affinity allows. */
static void test_cpus_here(void **state) {
    (void)state;
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    unsigned k = tio__host_cpus();
    assert_true(k >= 1 && k <= (unsigned)CPU_COUNT(&set));
}

/* The saving thread's time run and waiting to run: read on Linux, the
 * time run growing as this thread works (and sleeps between, so that the
 * kernel accounts it), the wait never going back. */
static void test_run_wait(void **state) {
    (void)state;
    uint64_t ran0, waited0, ran1, waited1;
    assert_int_equal(tio__host_run_wait_ns(&ran0, &waited0), 0);
    volatile uint64_t x = 0;
    for (int k = 0; k < 20; k++) {
        for (uint64_t i = 0; i < 2000000; i++) x += i;
        usleep(1000);
    }
    assert_int_equal(tio__host_run_wait_ns(&ran1, &waited1), 0);
    assert_true(x > 0);
    fprintf(stderr, "ran %llu ns, waited %llu ns\n", (unsigned long long)(ran1 - ran0),
            (unsigned long long)(waited1 - waited0));
    assert_true(ran1 > ran0);
    assert_true(waited1 >= waited0);
}

/* A real cgroup with a quota of one processor's time and of two, made where
 * this machine has a CPU controller the test may use (root: cgroup v1's
 * cpu hierarchy, or v2 with the cpu controller given to children): a child
 * moved into it counts tio__host_cpus there. */
static int in_cgroup(const char *cg, const char *procs) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char p[PATH_MAX];
        join(p, sizeof p, cg, procs);
        FILE *f = fopen(p, "w");
        if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0) _exit(200);
        unsigned k = tio__host_cpus();
        _exit(k > 100 ? 100 : (int)k);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static bool put_abs(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

static void test_cpus_in_quota(void **state) {
    (void)state;
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    char cg[PATH_MAX], p[PATH_MAX], text[256] = "";
    int v2 = 0;
    snprintf(cg, sizeof cg, "/sys/fs/cgroup/cpu/tensio-test-%d", (int)getpid());
    if (access("/sys/fs/cgroup/cpu/cpu.cfs_period_us", F_OK) != 0 || mkdir(cg, 0755) != 0) {
        FILE *f = fopen("/sys/fs/cgroup/cgroup.subtree_control", "r");
        if (f) {
            if (!fgets(text, sizeof text, f)) text[0] = 0;
            fclose(f);
        }
        snprintf(cg, sizeof cg, "/sys/fs/cgroup/tensio-test-%d", (int)getpid());
        if (!strstr(text, "cpu") || mkdir(cg, 0755) != 0) {
            skip(); /* prints "[  SKIPPED ] test_cpus_in_quota" */
            return;
        }
        v2 = 1;
    }
    const char *procs = "cgroup.procs";
    bool ok;
    if (v2) {
        join(p, sizeof p, cg, "cpu.max");
        ok = put_abs(p, "100000 100000\n");
    } else {
        join(p, sizeof p, cg, "cpu.cfs_period_us");
        ok = put_abs(p, "100000\n");
        join(p, sizeof p, cg, "cpu.cfs_quota_us");
        ok = ok && put_abs(p, "100000\n");
    }
    int one = ok ? in_cgroup(cg, procs) : -1;
    ok = ok && put_abs(p, v2 ? "200000 100000\n" : "200000\n");
    int two = ok ? in_cgroup(cg, procs) : -1;
    ok = ok && put_abs(p, v2 ? "max 100000\n" : "-1\n");
    int all = ok ? in_cgroup(cg, procs) : -1;
    int removed = rmdir(cg);
    fprintf(stderr, "cgroup %s (v%d): one processor's quota %d, two %d, none %d\n", cg,
            v2 ? 2 : 1, one, two, all);
    assert_int_equal(removed, 0);
    assert_true(ok);
    unsigned here = (unsigned)CPU_COUNT(&set);
    assert_int_equal(one, 1);
    assert_int_equal(two, here < 2 ? (int)here : 2);
    assert_int_equal(all, (int)tio__host_cpus());
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quota_v2),     cmocka_unit_test(test_quota_v1),
        cmocka_unit_test(test_quota_escapes), cmocka_unit_test(test_quota_hostile),
        cmocka_unit_test(test_cpus_here),    cmocka_unit_test(test_run_wait),
        cmocka_unit_test(test_cpus_in_quota),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
