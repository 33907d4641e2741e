/* What the save tests share (save_wrap.c): the counters of the wrapped
 * calls (-Wl,--wrap, tests/CMakeLists.txt) and what makes them fail, the
 * host's answers to the sink's questions, a temporary directory, and the
 * containers and files the tests build. */
#ifndef TIO_TEST_SAVE_WRAP_H
#define TIO_TEST_SAVE_WRAP_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* F_SETPIPE_SZ */
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <sys/types.h>

#include "tensio.h"
#include "tvec.h"

/* the wrapped calls: counted, and made to fail or come short on demand */
extern int fsync_calls; /* this test program's own counter */
extern int opendir_calls;
extern int copy_calls;
extern int copy_fail;       /* make the calls fail with this errno (0: no)… */
extern int copy_fail_after; /* …once this many have copied */
extern size_t copy_max;     /* copy at most this much per call (0: no limit) */
extern size_t copy_largest; /* the largest count asked for */
extern size_t copy_bytes;   /* what the calls copied */
extern long long copy_first_in; /* the first call's source offset */
extern int copy_out_unaligned; /* calls after the first starting past a multiple of 2 MiB */
extern int sendfile_calls;
extern int sendfile_fail; /* make the calls fail with this errno (0: no) */
extern _Atomic int pread_big;     /* calls for 4 KiB or more (the sink's, not a reader's headers) */
extern _Atomic size_t pread_big_bytes; /* what those read */
extern int pread_fail;    /* make those fail with this errno (-1: return 0, an ended file)… */
extern _Atomic int pread_fail_after; /* …once this many have read */
extern _Atomic int pread_aliased;
/* preadv(): each entry of 4 KiB or more counts as a read above (pread_big,
 * its bytes, pread_aliased), made to fail as those are; the calls too */
extern _Atomic int preadv_calls, preadv_slots; /* calls; their entries counted above */
extern _Atomic size_t preadv_gap_bytes; /* read into entries under 4 KiB */
extern int writev_count;    /* count the writes… */
extern int write_crossing;  /* …and of write() too, that cross a multiple of 64 KiB */
extern int writev_calls;    /* …of 64 KiB or more (the sink's) */
extern int writev_unaligned; /* …that start past a multiple of 256 KiB */
extern size_t writev_bytes;
extern size_t writev_misaligned;
extern int splice_in, splice_out;
extern int splice_out_whole; /* splices out that end at a multiple of 512 KiB of the file */
extern size_t splice_in_bytes, splice_out_bytes;
extern int splice_fail_in, splice_fail_out, splice_fail_after;
extern int pipe_fail;
extern int pipe_small; /* 1: a pipe gets 64 KiB; 2: more than 256 KiB refused (EPERM) */
extern int host_reports, host_asked;
extern uint64_t host_kept, host_kept_later;
extern unsigned kept_lo;
extern int kept_asked, kept_turns;
extern uint64_t host_movable; /* of host_kept, kept for movable pages (UINT64_MAX: unknown) */
extern int movable_asked;
extern uint64_t cost_copy, cost_read, cost_splice; /* the clock's price per byte of each way */
extern uint64_t cost_once; /* and per question a save asks once (tio__host_cpus, _kept_movable) */
extern int cpu_asked, cpus_asked;
/* writev() to a regular file: made to fail (errno) from the writev_fail_after'th
 * such call; the calls and bytes made by a thread other than wrap_main (the
 * sink's writer thread) and by it; the bytes written before a failure */
extern int writev_fail, writev_fail_after, writev_file_calls;
extern int writev_off_main, writev_on_main;
extern size_t writev_off_main_bytes, writev_on_main_bytes, writev_ok_bytes;
extern pthread_t wrap_main;
/* the wall clock (tio__host_wall_ns) made to pass this much a reading (0: the real one) */
extern uint64_t wall_step;
/* the saving thread's time run and waiting (tio__host_run_wait_ns): faked
 * where sched_fake, its waits growing by sched_wait_step a reading, its time
 * run not growing with sched_ran_still, unreadable with sched_fail; the
 * waits growing only every sched_wait_every'th reading where set */
extern uint64_t sched_wait_step;
extern int sched_fake, sched_fail, sched_ran_still;
extern unsigned sched_wait_every;

/* fallocate() and ftruncate(): the calls, the last one's arguments, and
 * what makes them fail (an errno; 0: no) */
extern int falloc_calls, falloc_mode, falloc_fail;
extern long long falloc_off, falloc_len;
extern int trunc_calls, trunc_fail;
extern long long trunc_len;

/* the real host questions (src/core/host.c), beside the wrapped ones */
int __real_tio__host_reports_free_pages(const char *balloon_dir);
uint64_t __real_tio__host_kept_free(const char *buddyinfo, const char *reporting_order,
                                    unsigned lo, size_t page);
uint64_t __real_tio__host_cpu_ns(void);
uint64_t __real_tio__host_kept_movable(const char *pagetypeinfo, const char *reporting_order,
                                       unsigned lo, size_t page);
/* the sums they make of /proc/buddyinfo's and /proc/pagetypeinfo's lines
 * (src/core/host.c) */
uint64_t tio__buddy_free(const char *text, unsigned lo, unsigned hi, size_t page);
uint64_t tio__pagetype_movable(const char *text, unsigned lo, unsigned hi, size_t page,
                               unsigned *lines);

/* a temporary directory for the program's files (cmocka's group setup and
 * teardown) */
extern char dir[256];
int setup(void **state);
int teardown(void **state);

/* A whole file (freed by the caller). */
uint8_t *read_file(const char *path, size_t *n);
/* Whether the file at path holds the n bytes at want, and nothing more;
 * file_is removes it, file_holds keeps it. */
bool file_is(const char *path, const void *want, size_t n);
bool file_holds(const char *path, const void *want, size_t n);
/* Whether the two files hold the same bytes (both kept). */
bool files_same(const char *a, const char *b);
/* A container of n float32 vectors of sz[i] bytes each, borrowed from data
 * one after another, named "w<i>" (or, reversed, "t<n-1-i>"; both
 * zero-padded to 3 digits, so that sorting the names reverses them). */
tio_container *float_tensors(uint8_t *data, const size_t *sz, size_t n, bool reversed);
/* n bytes of the generator from `seed` (freed by the caller). */
uint8_t *random_bytes(size_t n, uint64_t seed);

/* build()'s tensors after its sizes straddling the sink's thresholds:
 * MID_COUNT tensors of MID_BYTES, apart in memory: each is referenced, not
 * copied, and its header copied, so that a file sink's pieces fill its
 * iov[] (2 per tensor) before they reach the 8 MiB flush point. */
#define MID_COUNT 300u
#define MID_BYTES (40u << 10)
/* A container for `format` of float32 tensors borrowed from *data_out:
 * sizes around the sink's thresholds, 600 small ones, then the MID ones
 * (a format of one array: the largest alone); a graph where the format
 * has one. */
tio_container *build(const char *format, uint8_t **data_out);

/* tio_save_options.progress / tio_open_options.progress: increasing byte
 * counts, at most one call per MiB plus the last, which is done == total ==
 * the output's (input's) size. */
typedef struct prog {
    uint64_t calls, last_done, last_total;
    int backwards;
} prog;
void on_progress(void *ctx, uint64_t done, uint64_t total);

#endif
