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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* VIRTIO_BALLOON_F_REPORTING (the virtio specification, 5.5.3): the
 * driver reports free pages to the device, which may take them back. */
#define BALLOON_F_REPORTING 5u

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

unsigned tio__host_cpus(void) {
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int k = CPU_COUNT(&set);
        return k > 0 ? (unsigned)k : 1;
    }
#endif
    long k = sysconf(_SC_NPROCESSORS_ONLN);
    return k > 0 ? (unsigned)k : 1;
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

/* Reads up to cap - 1 bytes of a small file of the kernel's into buf, NUL
 * terminated. Returns the length, or -1. */
static ssize_t read_small(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t n = tio__pread_full(fd, buf, cap - 1, 0);
    close(fd);
    buf[n] = 0;
    return (ssize_t)n;
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
        if (c == end || *c < '0' || *c > '9') break;
        uint64_t count = 0;
        while (c < end && *c >= '0' && *c <= '9') {
            unsigned d = (unsigned)(*c++ - '0');
            count = count > (UINT64_MAX - d) / 10 ? UINT64_MAX : count * 10 + d;
        }
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
