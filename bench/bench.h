/* tio_bench: shared helpers. Every measurement is printed as one line of
 * tab-separated fields on stdout, read by bench/report.py:
 *
 *   R <case> <group> <subject> <seconds> <bytes> <items>     one timed repetition
 *   M <case> <group> <subject> <key> <value>                 a fact (memory, counts)
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

/* Subcommands (bench/b_*.c). argv[0] is the subcommand. */
int bn_cmd_gen(bn_ctx *x, int argc, char **argv);
int bn_cmd_files(bn_ctx *x, int argc, char **argv);
int bn_cmd_zmq(bn_ctx *x, int argc, char **argv);
int bn_cmd_model(bn_ctx *x, int argc, char **argv);
int bn_cmd_recvfiles(bn_ctx *x, int argc, char **argv);
int bn_cmd_lmdb(bn_ctx *x, int argc, char **argv);

#endif
