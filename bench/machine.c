/* tio_bench machine: what this machine's memory costs, for the header of
 * the report (lines of machine.tsv on stdout: key TAB value).
 *
 *   machine [--fault-dir DIR]... [--bytes B]
 *
 * For each DIR: a file of B bytes (default 256 MiB) is written there and
 * read once (page cache warm), then mapped read-only and touched, one byte
 * per 4 KiB page, and unmapped: the time of mmap + touches + munmap per page
 * (median of 5). Touching every page lets the kernel map its neighbours in
 * the same fault (fault-around, large folios), so a second figure touches
 * one byte every 128 KiB (about one tensor header per touch in a 1 GiB file
 * of 10,000 tensors): the cost of a fault on its own. And a pread() of 4
 * bytes every 128 KiB of the same file (median of 5): what reading one
 * tensor's length word costs when an open reads it instead of faulting its
 * page in (a .tflite buffer's).
 * Then memcpy of B bytes between two buffers already touched: GB/s (median
 * of 5).
 *
 *   host --bytes B --case C --group G --when W
 *
 * How a save of B bytes onto a disk file system would write now, asked of
 * the host as the library's sink asks it at a save's start: whole, or in
 * 64 KiB pieces where the virtual machine's balloon takes free memory back
 * and too little is kept in the blocks it leaves alone. One line of
 * latest.tsv, "H C G W TEXT", which the report shows beside the rows of
 * group G (W: before or after them). It reads the library's own decision
 * (tio__sink_host_piece, an internal function): the bench names the state
 * the rows ran in, so it must not reckon it a second way.
 *
 *   hold --kept M [--seconds S]
 *
 * Puts such a host in the state where it keeps little: takes (and touches,
 * in 4 KiB pages) fresh memory until about M MiB are left free in the
 * blocks the host does not take back (tio__host_kept_free), and every 2 s
 * takes again what rose more than 64 MiB above that; holds it until killed,
 * until its parent exits, or for S seconds. Never more than half of the
 * machine's memory. bench/run.sh runs it beside every case with
 * BENCH_HOLD_KEPT=M, so the rows of that state can be had at will. It
 * says on stderr its pid, and each time it takes more. */
#include "bench.h"
#include "core/internal.h"
#include "core/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"

#define PAGE 4096u

double bn_touch(const char *path, uint64_t touches, uint64_t *done, uint64_t *sink) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)PAGE) {
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    uint64_t pages = size / PAGE;
    if (touches == 0 || touches > pages) touches = pages;
    uint64_t stride = pages / touches; /* in pages */
    double t0 = bn_now();
    const volatile unsigned char *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if ((const void *)p == MAP_FAILED) {
        close(fd);
        return -1;
    }
    uint64_t acc = 0;
    for (uint64_t i = 0; i < touches; i++) acc += p[i * stride * PAGE];
    munmap((void *)(uintptr_t)p, size);
    double t1 = bn_now();
    close(fd);
    *done = touches;
    *sink += acc;
    return t1 - t0;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of 5 of bn_touch(path, touches): seconds per touch, or < 0. */
static double fault_cost(const char *path, uint64_t touches, uint64_t *sink) {
    double t[5];
    uint64_t n = 0;
    if (bn_touch(path, touches, &n, sink) < 0) return -1; /* warm-up */
    for (int i = 0; i < 5; i++)
        if ((t[i] = bn_touch(path, touches, &n, sink)) < 0) return -1;
    qsort(t, 5, sizeof t[0], cmp_d);
    return n ? t[2] / (double)n : -1;
}

/* Median of 5 passes of a 4-byte pread() every 128 KiB of path: seconds per
 * call, or < 0. */
static double pread_cost(const char *path, uint64_t bytes, uint64_t *sink) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    uint64_t n = bytes / (128 * 1024);
    double t[6];
    for (int i = 0; i < 6 && n; i++) { /* the first a warm-up */
        double t0 = bn_now();
        for (uint64_t k = 0; k < n; k++) {
            uint32_t w = 0;
            if (pread(fd, &w, sizeof w, (off_t)(k * 128 * 1024)) != (ssize_t)sizeof w) {
                close(fd);
                return -1;
            }
            *sink += w;
        }
        t[i] = bn_now() - t0;
    }
    close(fd);
    if (!n) return -1;
    qsort(t + 1, 5, sizeof t[0], cmp_d);
    return t[3] / (double)n;
}

static const char *fs_name(const char *dir) {
    struct statfs sf;
    if (statfs(dir, &sf) != 0) return "?";
    switch ((unsigned long)sf.f_type) {
    case 0x01021994UL: return "tmpfs";
    case 0xEF53UL: return "ext4";
    case 0x58465342UL: return "xfs";
    case 0x9123683EUL: return "btrfs";
    case 0x794c7630UL: return "overlayfs";
    default: return "disk";
    }
}

static int fault_line(const char *dir, uint64_t bytes, void *data, uint64_t *sink) {
    char path[4096];
    snprintf(path, sizeof path, "%s/bench-fault.bin", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return bn_fail("%s: %s", path, strerror(errno));
    uint64_t done = 0;
    while (done < bytes) {
        ssize_t k = write(fd, (unsigned char *)data + done, (size_t)(bytes - done));
        if (k <= 0) {
            close(fd);
            unlink(path);
            return bn_fail("%s: write: %s", path, strerror(errno));
        }
        done += (uint64_t)k;
    }
    fsync(fd); /* no write-back while timing */
    close(fd);
    uint64_t n = 0;
    bn_touch(path, 0, &n, sink); /* page cache warm */
    double every = fault_cost(path, 0, sink);
    uint64_t apart = bytes / (128 * 1024);
    double sparse = apart ? fault_cost(path, apart, sink) : -1;
    double pr = pread_cost(path, bytes, sink);
    unlink(path);
    if (every < 0) return bn_fail("%s: cannot map", path);
    char label[32];
    bn_size_label(bytes, label, sizeof label);
    printf("page fault, %s\t%.3f µs per 4 KiB page touching every page; ", fs_name(dir),
           every * 1e6);
    if (sparse >= 0) printf("%.2f µs per touch 128 KiB apart; ", sparse * 1e6);
    printf("mmap + touches + munmap of a %s file in the page cache (%s), median of 5\n",
           label, dir);
    if (pr >= 0)
        printf("pread, %s\t%.2f µs per pread() of 4 bytes, one every 128 KiB of the same file, "
               "median of 5\n",
               fs_name(dir), pr * 1e6);
    return 0;
}

int bn_cmd_machine(bn_ctx *x, int argc, char **argv) {
    (void)x;
    uint64_t bytes = bn_parse_size(bn_opt(argc, argv, "--bytes", "256M"));
    if (bytes < 1024 * 1024) bytes = 1024 * 1024;
    bytes &= ~(uint64_t)(PAGE - 1);
    unsigned char *a = bn_big_alloc((size_t)bytes), *b = bn_big_alloc((size_t)bytes);
    if (!a || !b) return bn_fail("machine: cannot allocate");
    bn_fill(a, (size_t)bytes, 3);
    memset(b, 1, (size_t)bytes);
    uint64_t sink = 0;
    int rc = 0;
    for (int i = 1; i + 1 < argc && !rc; i++)
        if (strcmp(argv[i], "--fault-dir") == 0) rc = fault_line(argv[++i], bytes, a, &sink);
    double t[5];
    memcpy(b, a, (size_t)bytes); /* warm-up */
    for (int i = 0; i < 5; i++) {
        double t0 = bn_now();
        memcpy(b, a, (size_t)bytes);
        t[i] = bn_now() - t0;
        sink += b[(size_t)i * 4096 % bytes];
    }
    qsort(t, 5, sizeof t[0], cmp_d);
    char label[32];
    bn_size_label(bytes, label, sizeof label);
    if (!rc)
        printf("memcpy\t%.2f GB/s (%s between two buffers already touched, median of 5)\n",
               (double)bytes / t[2] / 1e9, label);
    fflush(stdout);
    bn_big_free(a, (size_t)bytes);
    bn_big_free(b, (size_t)bytes);
    return rc ? rc : sink == 1 ? 1 : 0;
}

int bn_cmd_host(bn_ctx *x, int argc, char **argv) {
    (void)x;
    uint64_t bytes = bn_parse_size(bn_opt(argc, argv, "--bytes", "1G"));
    const char *c = bn_opt(argc, argv, "--case", NULL), *g = bn_opt(argc, argv, "--group", NULL),
               *w = bn_opt(argc, argv, "--when", "before");
    if (!c || !g) return bn_fail("host: --case and --group are required");
    long page = sysconf(_SC_PAGESIZE);
    uint64_t kept;
    size_t piece = tio__sink_host_piece(bytes, page > 0 ? (size_t)page : PAGE, &kept);
    uint64_t mib = kept >> 20;
    if (piece)
        printf("H\t%s\t%s\t%s\t%zu KiB pieces (%" PRIu64 " MiB kept)\n", c, g, w, piece >> 10,
               mib);
    else if (kept)
        printf("H\t%s\t%s\t%s\twhole (%" PRIu64 " MiB kept)\n", c, g, w, mib);
    else
        printf("H\t%s\t%s\t%s\twhole\n", c, g, w);
    return fflush(stdout) == 0 ? 0 : 1;
}

/* Fresh memory of n bytes in 4 KiB pages (not huge ones: those would come
 * from the large blocks, not the small ones this takes), every page
 * touched; NULL where it cannot be had. */
static void *take_small_pages(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
#ifdef MADV_NOHUGEPAGE
    (void)madvise(p, n, MADV_NOHUGEPAGE);
#endif
    for (size_t i = 0; i < n; i += PAGE) ((volatile unsigned char *)p)[i] = 1;
    return p;
}

int bn_cmd_hold(bn_ctx *x, int argc, char **argv) {
    (void)x;
    const char *k = bn_opt(argc, argv, "--kept", NULL);
    if (!k) return bn_fail("hold: --kept MiB is required");
    uint64_t target = strtoull(k, NULL, 10) << 20, held = 0;
    double seconds = atof(bn_opt(argc, argv, "--seconds", "0")), t0 = bn_now();
    long page = sysconf(_SC_PAGESIZE), pages = sysconf(_SC_PHYS_PAGES);
    size_t pg = page > 0 ? (size_t)page : PAGE;
    uint64_t cap = pages > 0 ? (uint64_t)pages * pg / 2 : 0;
    pid_t parent = getppid();
    uint64_t slack = 16u << 20;
    fprintf(stderr, "hold: pid %ld, until %" PRIu64 " MiB are kept, at most %" PRIu64
            " MiB held\n", (long)getpid(), target >> 20, cap >> 20);
    for (;;) {
        uint64_t kept = tio__host_kept_free(TIO__BUDDYINFO, TIO__REPORTING_ORDER, 0, pg);
        for (int tries = 0; tries < 6; tries++) {
            if (kept < target + slack) break;
            uint64_t want = kept - target;
            if (held + want > cap) want = cap > held ? cap - held : 0;
            want &= ~(uint64_t)(PAGE - 1);
            if (want == 0 || !take_small_pages((size_t)want)) break;
            held += want;
            uint64_t now = tio__host_kept_free(TIO__BUDDYINFO, TIO__REPORTING_ORDER, 0, pg);
            fprintf(stderr, "hold: %" PRIu64 " MiB kept, took %" PRIu64 " more (%" PRIu64
                    " MiB held), %" PRIu64 " MiB kept now\n", kept >> 20, want >> 20, held >> 20,
                    now >> 20);
            /* what is left is kept for other kinds of pages than these
             * (unmovable, reclaimable): they came from the large blocks */
            if (now > kept - want / 2) break;
            kept = now;
            slack = 16u << 20;
        }
        slack = 64u << 20;
        if (getppid() != parent || (seconds > 0 && bn_now() - t0 >= seconds)) return 0;
        struct timespec ts = {2, 0};
        nanosleep(&ts, NULL);
    }
}
