/* tio_bench: timing, output lines, checksum, options. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double bn_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bn_emit(const char *cas, const char *group, const char *subject, double seconds,
             uint64_t bytes, uint64_t items) {
    printf("R\t%s\t%s\t%s\t%.9f\t%" PRIu64 "\t%" PRIu64 "\n", cas, group, subject, seconds,
           bytes, items);
    fflush(stdout);
}

void bn_fact(const char *cas, const char *group, const char *subject, const char *key,
             const char *fmt, ...) {
    va_list ap;
    printf("M\t%s\t%s\t%s\t%s\t", cas, group, subject, key);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

int bn_fail(const char *fmt, ...) {
    va_list ap;
    fputs("tio_bench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

static inline uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Fletcher-style over 64-bit words, in 4 independent lanes so the compiler
 * vectorises it (util.c is built with -O3): a_k += w, b_k += a_k. Catches
 * changed, swapped and moved words; runs near memory bandwidth. */
uint64_t bn_checksum(const void *p, size_t n, uint64_t acc) {
    const unsigned char *b = p;
    uint64_t a[4] = {acc, acc, acc, acc}, s[4] = {0, 0, 0, 0};
    while (n >= 32) {
        for (int k = 0; k < 4; k++) {
            a[k] += load64(b + 8 * k);
            s[k] += a[k];
        }
        b += 32;
        n -= 32;
    }
    uint64_t tail = 0;
    memcpy(&tail, b, n);
    uint64_t h = tail ^ (uint64_t)n;
    for (int k = 0; k < 4; k++) {
        h = (h ^ a[k]) * UINT64_C(0x9E3779B97F4A7C15);
        h = (h ^ s[k]) * UINT64_C(0xC2B2AE3D27D4EB4F);
        h ^= h >> 29;
    }
    return h;
}

void bn_fill(void *p, size_t n, uint64_t seed) {
    unsigned char *b = p;
    uint64_t s = seed ? seed : 1;
    while (n >= 8) {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        uint64_t v = s * UINT64_C(2685821657736338717);
        memcpy(b, &v, 8);
        b += 8;
        n -= 8;
    }
    while (n--) *b++ = (unsigned char)(s >>= 8);
}

uint64_t bn_parse_size(const char *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return 0;
    uint64_t mul = 1;
    switch (*end) {
    case 'K': case 'k': mul = 1024; break;
    case 'M': case 'm': mul = 1024 * 1024; break;
    case 'G': case 'g': mul = 1024 * 1024 * 1024; break;
    case '\0': return v;
    default: return 0;
    }
    return (uint64_t)v * mul;
}

void bn_size_label(uint64_t n, char *out, size_t cap) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && n >= 1024 && n % 1024 == 0) {
        n /= 1024;
        u++;
    }
    snprintf(out, cap, "%" PRIu64 "%s", n, unit[u]);
}

const char *bn_opt(int argc, char **argv, const char *name, const char *def) {
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return def;
}

int bn_flag(int argc, char **argv, const char *name) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0) return 1;
    return 0;
}

void bn_mem_sample(int pid, bn_mem *m) {
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) return;
    buf[k] = '\0';
    static const struct {
        const char *key;
        size_t off;
    } keys[] = {{"RssAnon:", offsetof(bn_mem, anon)},
                {"RssFile:", offsetof(bn_mem, file)},
                {"RssShmem:", offsetof(bn_mem, shmem)}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *p = strstr(buf, keys[i].key);
        if (!p) continue;
        uint64_t v = strtoull(p + strlen(keys[i].key), NULL, 10);
        uint64_t *slot = (uint64_t *)(void *)((char *)m + keys[i].off);
        if (v > *slot) *slot = v;
    }
}

/* ------------------------------------------------------------ paired runs */

int bn_paired_init(bn_paired *p, const bn_ctx *x, const char *cas, const char *group,
                   const char *base, const char *subject) {
    memset(p, 0, sizeof *p);
    p->cas = cas;
    p->group = group;
    p->nsub = 2;
    snprintf(p->subject[0], sizeof p->subject[0], "%s", base ? base : "");
    snprintf(p->subject[1], sizeof p->subject[1], "%s", subject ? subject : "");
    p->reps = x->reps;
    p->max = x->max_reps > x->reps ? x->max_reps : x->reps;
    p->t = calloc((size_t)p->max * BN_PAIR_MAX, sizeof *p->t);
    return p->t ? 0 : bn_fail("paired: out of memory");
}

/* Repetition r runs subject (r + k) mod nsub k-th: each goes first in turn. */
int bn_paired_order(const bn_paired *p, int r, int k) {
    int v = (r + k) % p->nsub;
    return v < 0 ? v + p->nsub : v;
}

void bn_paired_set(bn_paired *p, int s, double seconds, uint64_t bytes, uint64_t items) {
    if (p->n >= p->max || s < 0 || s >= p->nsub) return;
    p->t[(size_t)p->n * BN_PAIR_MAX + (size_t)s] = seconds;
    p->bytes[s] = bytes;
    p->items[s] = items;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of r[0..n), n > 0, which it sorts. */
static double median_of(double *r, int n) {
    qsort(r, (size_t)n, sizeof *r, cmp_double);
    return n % 2 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
}

static double ratio_at(const bn_paired *p, int rep, int s) {
    const double *row = p->t + (size_t)rep * BN_PAIR_MAX;
    return row[s] > 0 ? row[0] / row[s] : 0;
}

/* The largest relative distance of a paired ratio from its subject's median
 * over repetitions [from, from + len). */
static double spread(const bn_paired *p, int from, int len) {
    double worst = 0, r[BN_PAIR_MAX * 64];
    if (len > (int)(sizeof r / sizeof r[0])) len = (int)(sizeof r / sizeof r[0]);
    for (int s = 1; s < p->nsub; s++) {
        for (int i = 0; i < len; i++) r[i] = ratio_at(p, from + i, s);
        double med = median_of(r, len);
        if (med <= 0) return 1e9;
        double d = r[len - 1] / med - 1;
        if (1 - r[0] / med > d) d = 1 - r[0] / med;
        if (d > worst) worst = d;
    }
    return worst;
}

int bn_paired_more(const bn_paired *p) {
    if (p->n < p->reps) return 1;
    if (p->n >= p->max) return 0;
    return spread(p, p->n - p->reps, p->reps) > BN_STEADY;
}

/* The fact "all_pairs" of subject s against the baseline: every repetition's
 * paired ratio's median, the ratio of each side's least time, and how many
 * runs of each side took more than BN_SLOW times that side's least (on a
 * host whose page faults strike either side at random: whether one side
 * draws them more often). */
static void all_pairs(const bn_paired *p, int s) {
    double *r = malloc((size_t)p->n * sizeof *r);
    if (!r) return;
    double least0 = 0, least = 0;
    for (int i = 0; i < p->n; i++) {
        const double *row = p->t + (size_t)i * BN_PAIR_MAX;
        r[i] = ratio_at(p, i, s);
        if (row[0] > 0 && (least0 == 0 || row[0] < least0)) least0 = row[0];
        if (row[s] > 0 && (least == 0 || row[s] < least)) least = row[s];
    }
    int slow0 = 0, slow = 0;
    for (int i = 0; i < p->n; i++) {
        const double *row = p->t + (size_t)i * BN_PAIR_MAX;
        slow0 += row[0] > BN_SLOW * least0;
        slow += row[s] > BN_SLOW * least;
    }
    double med = median_of(r, p->n);
    free(r);
    bn_fact(p->cas, p->group, p->subject[s], "all_pairs", "%d %.6f %.6f %d %d", p->n, med,
            least > 0 ? least0 / least : 0, slow0, slow);
}

void bn_paired_emit(const bn_paired *p) {
    int len = p->n < p->reps ? p->n : p->reps;
    if (len == 0) return;
    int from = p->n - len;
    double best = spread(p, from, len);
    if (best > BN_STEADY) /* the cap was reached: the steadiest window */
        for (int f = p->n - len - 1; f >= 0; f--) {
            double d = spread(p, f, len);
            if (d < best) {
                best = d;
                from = f;
            }
        }
    for (int i = from; i < from + len; i++)
        for (int s = 0; s < p->nsub; s++)
            bn_emit(p->cas, p->group, p->subject[s], p->t[(size_t)i * BN_PAIR_MAX + (size_t)s],
                    p->bytes[s], p->items[s]);
    for (int s = 1; s < p->nsub; s++) {
        for (int i = from; i < from + len; i++)
            printf("P\t%s\t%s\t%s\t%s\t%.6f\n", p->cas, p->group, p->subject[s], p->subject[0],
                   ratio_at(p, i, s));
        bn_fact(p->cas, p->group, p->subject[s], "reps", "%d of %d run (cap %d), %s", len, p->n,
                p->max, best <= BN_STEADY ? "steady" : "not steady");
        if (best > BN_STEADY && p->n > len) all_pairs(p, s);
    }
    fflush(stdout);
}

void bn_paired_free(bn_paired *p) {
    free(p->t);
    p->t = NULL;
}

double bn_read_whole(const char *path, unsigned char *buf, uint64_t size) {
    double t0 = bn_now();
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    uint64_t got = 0;
    while (got < size) {
        ssize_t k = read(fd, buf + got, (size_t)(size - got));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (uint64_t)k;
    }
    close(fd);
    double t1 = bn_now();
    return got == size ? t1 - t0 : -1;
}
