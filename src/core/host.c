/* What the kernel tells about the machine under it (see internal.h,
 * tio__host_reports_free_pages, tio__host_kept_free, tio__host_kept_movable). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* VIRTIO_BALLOON_F_REPORTING (the virtio specification, 5.5.3): the
 * driver reports free pages to the device, which may take them back. */
#define BALLOON_F_REPORTING 5u
/* /proc/self/cgroup and /proc/self/mountinfo are read up to this many
 * bytes (a host of many mounts: longer, and then no limit is known), and
 * at most this many levels of cgroups walked up for a CPU limit. */
#define CG_TEXT_MAX ((size_t)1 << 20)
#define CG_DEPTH_MAX 64u

static uint64_t clock_ns(clockid_t c) {
    struct timespec t;
    if (clock_gettime(c, &t) == 0 && t.tv_sec >= 0)
        return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
    return 0;
}

uint64_t tio__host_cpu_ns(void) {
#ifdef CLOCK_THREAD_CPUTIME_ID
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
#else
    return 0;
#endif
}

uint64_t tio__host_proc_cpu_ns(void) {
#ifdef CLOCK_PROCESS_CPUTIME_ID
    return clock_ns(CLOCK_PROCESS_CPUTIME_ID);
#else
    return 0;
#endif
}

uint64_t tio__host_wall_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

/* Reads up to cap - 1 bytes of a small file of the kernel's into buf, NUL
 * terminated, by read() from its start. Returns the length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t n = 0;
    while (n < cap - 1) {
        ssize_t got = read(fd, buf + n, cap - 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
    }
    close(fd);
    buf[n] = 0;
    return (ssize_t)n;
}

/* An unsigned decimal at *c (digits only, saturating at UINT64_MAX), and c
 * moved past it; false where no digit starts it. */
static bool decimal(const char **c, uint64_t *v) {
    const char *p = *c;
    uint64_t x = 0;
    if (*p < '0' || *p > '9') return false;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p++ - '0');
        x = x > (UINT64_MAX - d) / 10 ? UINT64_MAX : x * 10 + d;
    }
    *c = p;
    *v = x;
    return true;
}

int tio__host_run_wait_ns(uint64_t *ran, uint64_t *waited) {
    char buf[96]; /* "RUN WAIT SLICES\n" */
    const char *c = buf;
    if (read_small("/proc/thread-self/schedstat", buf, sizeof buf) <= 0 || !decimal(&c, ran) ||
        *c++ != ' ' || !decimal(&c, waited))
        return -1;
    return 0;
}

/* The processors' worth of time that quota Q every period P allows: Q / P,
 * at least 1; 0 (no limit) where either is 0. */
static unsigned quota_cpus(uint64_t q, uint64_t p) {
    if (!q || !p) return 0;
    uint64_t k = q / p;
    return k == 0 ? 1 : k > UINT_MAX ? UINT_MAX : (unsigned)k;
}

/* The limit a cgroup directory sets itself: cgroup v2's cpu.max ("max P"
 * or "Q P"), cgroup v1's cpu.cfs_quota_us (-1: none) over
 * cpu.cfs_period_us. 0: none, or nothing there to read. */
static unsigned level_cpus(char *path, size_t len, int v2) {
    char buf[64];
    uint64_t q, p;
    const char *c = buf;
    if (v2) {
        memcpy(path + len, "/cpu.max", sizeof "/cpu.max");
        if (read_small(path, buf, sizeof buf) <= 0 || !decimal(&c, &q) || *c++ != ' ' ||
            !decimal(&c, &p))
            return 0;
        return quota_cpus(q, p);
    }
    memcpy(path + len, "/cpu.cfs_quota_us", sizeof "/cpu.cfs_quota_us");
    if (read_small(path, buf, sizeof buf) <= 0 || !decimal(&c, &q)) return 0; /* -1: none */
    memcpy(path + len, "/cpu.cfs_period_us", sizeof "/cpu.cfs_period_us");
    c = buf;
    if (read_small(path, buf, sizeof buf) <= 0 || !decimal(&c, &p)) return 0;
    return quota_cpus(q, p);
}

/* The field of a mountinfo line at c (up to a space or the line's end),
 * its octal escapes (\040 for a space) undone, into out (NUL terminated;
 * false where it does not fit or is empty), and c moved past it and the
 * spaces after it. */
static bool mi_field(const char **c, const char *end, char *out, size_t cap) {
    const char *p = *c;
    size_t n = 0;
    while (p < end && *p != ' ') {
        char ch = *p++;
        if (ch == '\\' && end - p >= 3 && p[0] >= '0' && p[0] <= '3' && p[1] >= '0' &&
            p[1] <= '7' && p[2] >= '0' && p[2] <= '7') {
            ch = (char)((p[0] - '0') * 64 + (p[1] - '0') * 8 + (p[2] - '0'));
            p += 3;
        }
        if (n + 1 >= cap) return false;
        out[n++] = ch;
    }
    out[n] = 0;
    while (p < end && *p == ' ') p++;
    *c = p;
    return n > 0;
}

/* Whether the comma-separated list [c, end) holds the word w. */
static bool has_word(const char *c, const char *end, const char *w) {
    size_t n = strlen(w);
    while (c < end) {
        const char *e = c;
        while (e < end && *e != ',') e++;
        if ((size_t)(e - c) == n && memcmp(c, w, n) == 0) return true;
        c = e < end ? e + 1 : e;
    }
    return false;
}

/* The path /proc/self/cgroup gives the hierarchy: cgroup v2's line
 * "0::PATH", or for v1 the line whose controllers hold "cpu"; into out. */
static bool cg_path(const char *cgroup, int v2, char *out, size_t cap) {
    for (const char *l = cgroup; *l;) {
        const char *end = strchr(l, '\n');
        if (!end) end = l + strlen(l);
        const char *a = memchr(l, ':', (size_t)(end - l));
        const char *b = a ? memchr(a + 1, ':', (size_t)(end - a - 1)) : NULL;
        bool mine = b && (v2 ? a - l == 1 && *l == '0' && b == a + 1
                             : has_word(a + 1, b, "cpu"));
        if (mine && (size_t)(end - b - 1) < cap) {
            memcpy(out, b + 1, (size_t)(end - b - 1));
            out[end - b - 1] = 0;
            return out[0] == '/';
        }
        l = *end ? end + 1 : end;
    }
    return false;
}

/* The least limit set from the cgroup at mount point mnt + rel up to mnt,
 * levels at most CG_DEPTH_MAX; 0: none. */
static unsigned walk_up(const char *mnt, const char *rel, int v2) {
    char path[PATH_MAX];
    size_t m = strlen(mnt), r = strlen(rel);
    while (m > 1 && mnt[m - 1] == '/') m--; /* "/sys/fs/cgroup/" */
    if (m + r + sizeof "/cpu.cfs_period_us" > sizeof path) return 0;
    memcpy(path, mnt, m);
    memcpy(path + m, rel, r + 1);
    size_t len = m + r;
    while (len > m && path[len - 1] == '/') len--;
    unsigned least = 0;
    for (unsigned d = 0; d < CG_DEPTH_MAX; d++) {
        unsigned k = level_cpus(path, len, v2);
        if (k && (!least || k < least)) least = k;
        if (len <= m) break;
        while (len > m && path[len - 1] != '/') len--; /* up a level */
        while (len > m && path[len - 1] == '/') len--;
    }
    return least;
}

unsigned tio__host_cpu_quota(const char *cgroup, const char *mountinfo) {
    unsigned least = 0;
    char root[PATH_MAX], mnt[PATH_MAX], fs[32], path[PATH_MAX], skip[PATH_MAX];
    for (const char *l = mountinfo; *l;) {
        const char *end = strchr(l, '\n');
        if (!end) end = l + strlen(l);
        const char *c = l, *sep = NULL;
        /* ID PARENT MAJ:MIN ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER */
        bool ok = mi_field(&c, end, skip, sizeof skip) && mi_field(&c, end, skip, sizeof skip) &&
                  mi_field(&c, end, skip, sizeof skip) && mi_field(&c, end, root, sizeof root) &&
                  mi_field(&c, end, mnt, sizeof mnt);
        for (const char *p = c; ok && p + 2 < end; p++)
            if (p[-1] == ' ' && p[0] == '-' && p[1] == ' ') {
                sep = p + 2;
                break;
            }
        const char *t = sep;
        if (sep && mi_field(&t, end, fs, sizeof fs) && mi_field(&t, end, skip, sizeof skip)) {
            int v2 = strcmp(fs, "cgroup2") == 0;
            /* v1: the super options name the controllers ("rw,cpu,cpuacct") */
            bool cpu = v2 || (strcmp(fs, "cgroup") == 0 && has_word(t, end, "cpu"));
            if (cpu && cg_path(cgroup, v2, path, sizeof path)) {
                /* the cgroup's path below the mount's root; the mount's own
                 * directory where it lies elsewhere (a container's view) */
                size_t n = strlen(root);
                const char *rel = "";
                if (strcmp(root, "/") == 0)
                    rel = path;
                else if (strncmp(path, root, n) == 0 && (path[n] == '/' || path[n] == 0))
                    rel = path + n;
                unsigned k = walk_up(mnt, rel, v2);
                if (k && (!least || k < least)) least = k;
            }
        }
        l = *end ? end + 1 : end;
    }
    return least;
}

/* Reads the whole small file at path (up to cap - 1 bytes) into a new
 * NUL-terminated buffer; NULL where it cannot, or it is longer. */
static char *read_text(const char *path, size_t cap) {
    char *b = malloc(cap);
    if (!b) return NULL;
    ssize_t n = read_small(path, b, cap);
    if (n <= 0 || (size_t)n == cap - 1) {
        free(b);
        return NULL;
    }
    return b;
}

unsigned tio__host_cpus(void) {
    unsigned k = 0;
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        k = (unsigned)CPU_COUNT(&set);
#endif
    if (!k) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        k = n > 0 ? (unsigned)n : 1;
    }
#ifdef __linux__
    if (k > 1) {
        char *cg = read_text("/proc/self/cgroup", CG_TEXT_MAX);
        char *mi = cg ? read_text("/proc/self/mountinfo", CG_TEXT_MAX) : NULL;
        unsigned q = mi ? tio__host_cpu_quota(cg, mi) : 0;
        free(cg);
        free(mi);
        if (q && q < k) k = q;
    }
#endif
    return k;
}

int tio__host_reports_free_pages(const char *balloon_dir) {
    DIR *d = opendir(balloon_dir);
    if (!d) return 0;
    int yes = 0;
    struct dirent *e;
    while (!yes && (e = readdir(d)) != NULL) {
        /* the driver's devices: virtio0, virtio1, ... (symbolic links) */
        if (strncmp(e->d_name, "virtio", 6) != 0) continue;
        char path[sizeof e->d_name + 16];
        size_t n = strlen(e->d_name);
        memcpy(path, e->d_name, n);
        memcpy(path + n, "/features", sizeof "/features");
        int fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        /* one character per feature bit, '0' or '1', bit 0 first */
        char bits[64];
        ssize_t got;
        do got = read(fd, bits, sizeof bits);
        while (got < 0 && errno == EINTR);
        close(fd);
        yes = got > (ssize_t)BALLOON_F_REPORTING && bits[BALLOON_F_REPORTING] == '1';
    }
    closedir(d);
    return yes;
}

/* Adds to sum the free blocks that the counts from c to end list (cK
 * blocks of 2^K pages), orders lo..hi, in bytes, saturating. Anything but
 * a count ends them (pagetypeinfo's ">100000", where the kernel stopped
 * counting a list, is counted as 100000). */
static uint64_t add_blocks(uint64_t sum, const char *c, const char *end, unsigned lo, unsigned hi,
                           size_t page) {
    for (unsigned k = 0; c < end && k < 64; k++) {
        while (c < end && *c == ' ') c++;
        if (c < end && *c == '>') c++; /* pagetypeinfo: more than it counted */
        uint64_t count = 0; /* a line ends at '\n' or the text's NUL: no digit */
        if (c == end || !decimal(&c, &count)) break;
        if (k < lo || k > hi || count == 0) continue;
        /* a block of 2^k pages (k up to 63), saturating */
        uint64_t block = page > UINT64_MAX >> k ? UINT64_MAX : (uint64_t)page << k;
        uint64_t add = block == 0                  ? 0
                       : count > UINT64_MAX / block ? UINT64_MAX
                                                    : count * block;
        sum = add > UINT64_MAX - sum ? UINT64_MAX : sum + add;
    }
    return sum;
}

/* The word at c (up to a space, a comma or end), and where it ends. */
static const char *word_end(const char *c, const char *end) {
    while (c < end && *c != ' ' && *c != ',') c++;
    return c;
}

static const char *skip_spaces(const char *c, const char *end) {
    while (c < end && *c == ' ') c++;
    return c;
}

/* The sum of tio__buddy_free and tio__pagetype_movable: each line that
 * names a zone adds its counts, where typed only those of the lines that
 * go on ", type Movable" (counted in *lines). */
static uint64_t zones_free(const char *text, unsigned lo, unsigned hi, size_t page, int typed,
                           unsigned *lines) {
    uint64_t sum = 0;
    const char *l = text;
    while (*l) {
        const char *end = strchr(l, '\n');
        if (!end) end = l + strlen(l);
        const char *z = strstr(l, "zone");
        if (z && z < end) {
            const char *name = skip_spaces(z + 4, end), *c = word_end(name, end);
            int dma = c - name == 3 && memcmp(name, "DMA", 3) == 0, movable = 0;
            if (typed) {
                if (c < end && *c == ',') c++;
                c = skip_spaces(c, end);
                if ((size_t)(end - c) > 4 && memcmp(c, "type", 4) == 0 && c[4] == ' ') {
                    const char *kind = skip_spaces(c + 4, end);
                    c = word_end(kind, end);
                    movable = c - kind == 7 && memcmp(kind, "Movable", 7) == 0;
                }
                if (movable && *lines < UINT_MAX) ++*lines;
            }
            if (!dma && (movable || !typed)) sum = add_blocks(sum, c, end, lo, hi, page);
        }
        l = *end ? end + 1 : end;
    }
    return sum;
}

/* Lines "Node 0, zone   Normal  c0 c1 ... c10": cK free blocks of 2^K
 * pages in that zone. Sums the blocks of orders lo..hi of every zone but
 * DMA (the first 16 MiB, which the page cache does not take from), in
 * bytes, saturating. Anything else on a line ends it. */
uint64_t tio__buddy_free(const char *text, unsigned lo, unsigned hi, size_t page) {
    unsigned none = 0;
    return zones_free(text, lo, hi, page, 0, &none);
}

/* Lines "Node 0, zone   Normal, type      Movable  c0 ... c10" of
 * /proc/pagetypeinfo: the free blocks of each zone by the kind of pages
 * the kernel keeps them for. The same sum as tio__buddy_free's, of the
 * Movable lines alone (the page cache's folios are movable: they come from
 * those blocks, and from the others only once no movable block is left);
 * *lines: how many such lines there were. The file's other lines (the
 * count of page blocks by kind, under a header of its own) name no type. */
uint64_t tio__pagetype_movable(const char *text, unsigned lo, unsigned hi, size_t page,
                               unsigned *lines) {
    *lines = 0;
    return zones_free(text, lo, hi, page, 1, lines);
}

/* The order free page reporting starts at (its default: pageblock_order,
 * 9 with 4 KiB pages), and the file path's text into buf (NUL terminated,
 * up to its last whole line where longer than buf): its length, or <= 0. */
static ssize_t read_orders(const char *path, const char *reporting_order, char *buf, size_t cap,
                           unsigned *order) {
    *order = 9;
    if (read_small(reporting_order, buf, 16) > 0 && buf[0] >= '0' && buf[0] <= '9') {
        char *e;
        unsigned long v = strtoul(buf, &e, 10);
        if (v < 64) *order = (unsigned)v;
    }
    ssize_t n = read_small(path, buf, cap);
    if (n > 0 && (size_t)n == cap - 1) { /* cut: the last whole line ends it */
        char *nl = strrchr(buf, '\n');
        *(nl ? nl : buf) = 0;
        n = (ssize_t)strlen(buf);
    }
    return n;
}

uint64_t tio__host_kept_free(const char *buddyinfo, const char *reporting_order, unsigned lo,
                             size_t page) {
    char buf[16384]; /* 32 zones' lines take ~3 KiB */
    unsigned order;
    ssize_t n = read_orders(buddyinfo, reporting_order, buf, sizeof buf, &order);
    return order <= lo || n <= 0 ? 0 : tio__buddy_free(buf, lo, order - 1, page);
}

uint64_t tio__host_kept_movable(const char *pagetypeinfo, const char *reporting_order,
                                unsigned lo, size_t page) {
    char buf[32768]; /* a node of 5 zones takes ~2.5 KiB */
    unsigned order, lines = 0;
    ssize_t n = read_orders(pagetypeinfo, reporting_order, buf, sizeof buf, &order);
    if (n <= 0) return UINT64_MAX; /* not there, or not ours to read */
    uint64_t sum = tio__pagetype_movable(buf, lo, order <= lo ? lo : order - 1, page, &lines);
    return !lines ? UINT64_MAX : order <= lo ? 0 : sum;
}
