/* tio_bench: shared helpers. Every measurement is printed as one line of
 * tab-separated fields on stdout, read by bench/report.py:
 *
 *   R <case> <group> <subject> <seconds> <bytes> <items>     one timed repetition
 *   M <case> <group> <subject> <key> <value>                 a fact (memory, counts)
 *   P <case> <group> <subject> <baseline> <ratio>            one paired repetition:
 *                                                            baseline time / subject time
 *
 * A case compared with a baseline runs them interleaved (bn_paired below):
 * repetition i of every subject back to back, the order rotating, so that a
 * change in the machine's load hits both alike; the ratio of a case is the
 * median of its P lines.
 *
 * <subject> is "tensio:<what>" for the library, "base:<what>" for a baseline
 * measured in the same run, or "alt:<what>" for another implementation. */
#ifndef TIO_BENCH_H
#define TIO_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct bn_ctx {
    int reps;     /* timed repetitions (>= 1) */
    int warmup;   /* untimed repetitions before them */
    int check;    /* selftest: verify results, report failures as errors */
    int max_reps; /* paired cases: at most this many timed repetitions (>= reps) */
} bn_ctx;

double bn_now(void); /* monotonic seconds */
void bn_emit(const char *cas, const char *group, const char *subject, double seconds,
             uint64_t bytes, uint64_t items);
void bn_fact(const char *cas, const char *group, const char *subject, const char *key,
             const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* A fast non-cryptographic checksum (4 lanes of multiply-xor over 64-bit
 * words; not a standard hash, only stable within this program). */
uint64_t bn_checksum(const void *p, size_t n, uint64_t acc);
/* Deterministic pseudo-random bytes (xorshift64*). */
void bn_fill(void *p, size_t n, uint64_t seed);

/* "1G" "64KiB" "4096" -> bytes; 0 on a bad value. */
uint64_t bn_parse_size(const char *s);
/* "1 KiB", "64 MiB" (exact binary units when they fit, else bytes). */
void bn_size_label(uint64_t n, char *out, size_t cap);
/* --name value from argv, or def. */
const char *bn_opt(int argc, char **argv, const char *name, const char *def);
int bn_flag(int argc, char **argv, const char *name);

/* Memory of a process (KiB), from /proc/PID/status. bn_mem_sample raises
 * each field of m to the current value where that is higher (peaks). */
typedef struct bn_mem {
    uint64_t anon, file, shmem; /* RssAnon, RssFile, RssShmem */
} bn_mem;
void bn_mem_sample(int pid, bn_mem *m);

/* Prints "tio_bench: <msg>" to stderr and returns 1. */
int bn_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* read() of the whole file PATH (size bytes) into buf, open to close:
 * seconds, or < 0 (cannot open, or short). */
double bn_read_whole(const char *path, unsigned char *buf, uint64_t size);

/* Maps PATH read-only, reads one byte of `touches` pages spread evenly over
 * it (0: every 4 KiB page), unmaps: seconds (mmap to munmap), or < 0.
 * *done is the number of touches, *sink gets the bytes read. */
double bn_touch(const char *path, uint64_t touches, uint64_t *done, uint64_t *sink);

/* Paired, interleaved repetitions of a baseline (subject 0) and up to
 * BN_PAIR_MAX - 1 subjects, run until the last x->reps repetitions are
 * steady or x->max_reps have run:
 *
 *   bn_paired p;
 *   if (bn_paired_init(&p, x, "open", group, "base:read", "tensio")) ...;
 *   for (int r = -x->warmup; r < 0 || bn_paired_more(&p); r++) {
 *       for (int k = 0; k < p.nsub; k++) {
 *           int s = bn_paired_order(&p, r, k);
 *           ... time subject s ...
 *           if (r >= 0) bn_paired_set(&p, s, seconds, bytes, items);
 *       }
 *       if (r >= 0) p.n++;
 *   }
 *   bn_paired_emit(&p);  bn_paired_free(&p);
 *
 * Two subjects by default; more: set p.subject[2..] and p.nsub.
 * Steady: in the window of the last x->reps repetitions, every subject's
 * paired ratios (baseline time / subject time, repetition by repetition)
 * lie within +-BN_STEADY of their median. bn_paired_emit prints the R and P
 * lines of the steady window, or, when the cap was reached first, of the
 * window with the smallest spread, and a fact "reps" saying which; in that
 * case also a fact "all_pairs" per subject ("N MEDIAN LEAST SLOW0 SLOW": the
 * median of all N paired ratios, the ratio of each side's least time over
 * all N, and how many of the N runs of the baseline and of the subject took
 * more than BN_SLOW times their own least), since the steadiest window of a
 * bimodal host can be one where a single side was slow in every pair. */
#define BN_PAIR_MAX 4
#define BN_STEADY 0.10
#define BN_SLOW 2.0
typedef struct bn_paired {
    const char *cas, *group;
    int nsub;                       /* subject[0] is the baseline */
    char subject[BN_PAIR_MAX][64];
    double *t;                      /* t[rep * BN_PAIR_MAX + subject] */
    uint64_t bytes[BN_PAIR_MAX], items[BN_PAIR_MAX];
    int reps, max, n;               /* window, cap, repetitions recorded */
} bn_paired;
int bn_paired_init(bn_paired *p, const bn_ctx *x, const char *cas, const char *group,
                   const char *base, const char *subject);
int bn_paired_order(const bn_paired *p, int r, int k);
void bn_paired_set(bn_paired *p, int s, double seconds, uint64_t bytes, uint64_t items);
int bn_paired_more(const bn_paired *p);
void bn_paired_emit(const bn_paired *p);
void bn_paired_free(bn_paired *p);

/* Subcommands (bench/b_*.c). argv[0] is the subcommand. */
int bn_cmd_gen(bn_ctx *x, int argc, char **argv);
int bn_cmd_files(bn_ctx *x, int argc, char **argv);
int bn_cmd_zmq(bn_ctx *x, int argc, char **argv);
int bn_cmd_model(bn_ctx *x, int argc, char **argv);
int bn_cmd_recvfiles(bn_ctx *x, int argc, char **argv);
int bn_cmd_machine(bn_ctx *x, int argc, char **argv);
int bn_cmd_host(bn_ctx *x, int argc, char **argv);
int bn_cmd_hold(bn_ctx *x, int argc, char **argv);
int bn_cmd_lmdb(bn_ctx *x, int argc, char **argv);
int bn_cmd_shards(bn_ctx *x, int argc, char **argv);

#endif
