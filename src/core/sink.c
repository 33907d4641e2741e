/* Sinks: a growable memory buffer or a buffered file descriptor. */
/* copy_file_range() (Linux, glibc >= 2.27); everything else is POSIX. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sink.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#ifdef __linux__
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/vfs.h>
#endif


/* The large copy buffer: room for what is pending (up to twice flush_at on
 * a disk file system) and the skips that keep its bytes aligned (ALIGN). */
#define FILE_BUF (2u << 20)
/* A referenced write at least this large is not copied. */
#define REF_MIN (32u << 10)
/* Gathered bytes are written once they reach this. tmpfs: large writes let
 * it use large folios (64 KiB pieces ~25% slower). A disk file system (ext4,
 * Linux 6.18, 10,000 tensors from a mapping): 512 KiB writes cost 0.47 s of
 * CPU per GiB, 1 MiB 0.64 s, 2 MiB 0.78 s, 8 MiB 0.87 s; cp 0.43 s
 * (docs/performance.md). */
#define FLUSH_AT_TMPFS ((size_t)8 << 20)
#define FLUSH_AT_DISK ((size_t)512 << 10)
/* On a virtual machine whose balloon reports free pages to the host
 * (tio__host_reports_free_pages), a disk file system's writes go in pieces
 * ending at multiples of this. The page cache makes each new folio as large
 * as the write that creates it (512 KiB writes: folios of 256-512 KiB),
 * and once the free blocks of that size run out it splits the 2-4 MiB
 * blocks the host took back, each first touch a fault in the host: BTF ->
 * .ten of 1 GiB onto ext4 then took 1.0-2.2 s against cp's 0.3 s, in most
 * runs for an hour. cp's in-kernel copy writes 64 KiB at a time, from the
 * small free blocks, which are never reported; so do these pieces (64 KiB
 * pieces 0.35-0.66 s in the same runs, median 0.37 s; 128 KiB 0.33-1.14 s;
 * docs/performance.md). Pieces cost 10-15 % where the free blocks of
 * 256 KiB-1 MiB hold out (whole writes with two copies 0.93x cp, 64 KiB
 * pieces with one 0.85-0.89x), so a save on such a host asks how much free
 * memory lies in blocks that whole writes' folios come from and the host
 * does not take back (tio__host_kept_free: 256 KiB up to the reporting
 * order), and keeps whole writes while that holds KEPT_MARGIN times the
 * bytes left to write (tio_sink.expect), asking again every KEPT_AGAIN
 * bytes (a read of /proc/buddyinfo: ~10 us, 128 times a GiB). Elsewhere
 * the writes stay whole: large folios cost less where their memory is at
 * hand. The margin is there because buddyinfo counts every free block,
 * and the page cache's folios are movable pages: the blocks the kernel
 * keeps for unmovable and reclaimable ones (~290 MiB of 256 KiB-1 MiB here,
 * whatever the rest) serve them only once no movable block is left, the
 * host's included. Where /proc/pagetypeinfo can be read (root), a save
 * that buddyinfo leaves between KEPT_MOVABLE_PCT percent and KEPT_MARGIN
 * times its bytes asks it once, and keeps whole writes while the movable
 * blocks hold KEPT_MOVABLE_PCT percent of the bytes left. tmfile -> BTF of
 * 10,000 tensors, 1 GiB onto ext4, 5 rounds alternated with cp
 * (2026-12-05, free blocks taken by a process of 256 KiB folios): movable
 * 1,410 MiB, whole writes 0.22 s, pieces 0.28 s, cp 0.25 s; 1,095 MiB:
 * 0.23 s, 0.30 s, cp 0.24 s; 816 MiB: 0.80 s, 0.41 s, cp 0.25 s. */
#define WRITE_PIECE_HOST ((size_t)64 << 10)
#define KEPT_MARGIN 2u
#define KEPT_MOVABLE_PCT 125u
#define KEPT_UNKNOWN (UINT64_MAX - 1) /* kept_piece: pagetypeinfo not read */
#define KEPT_AGAIN ((uint64_t)8 << 20)
#define WRITE_MAX ((size_t)1 << 30)
/* sendfile() moves at most 0x7ffff000 bytes a call (Linux). */
#define SENDFILE_MAX ((size_t)0x7ffff000)
/* Copy runs (tio__sink_copy_range): a run starts with at least RUN_MIN
 * congruent bytes; bytes written after it join it when at most RUN_GAP lie
 * before the next congruent source bytes at the same distance; at most
 * PATCH_MAX bytes and PATCH_COUNT pieces of them differ from the source's.
 * With a progress function a run is copied once it holds RUN_PROGRESS
 * bytes, and in pieces of that size (the reports follow the copies). */
#define RUN_MIN ((size_t)32 << 10)
#define RUN_GAP ((size_t)64 << 10)
#define PATCH_MAX ((size_t)1 << 20)
#define PATCH_COUNT ((size_t)1 << 14)
#define RUN_PROGRESS ((size_t)64 << 20)
/* Where such a piece ends in the output: a multiple of this (the largest
 * folio of the page cache, a PMD). A piece that ended at any page boundary
 * left the next one misaligned for the page cache's large folios, which
 * must be aligned in the file: ext4 on Linux 6.18 then made 4x as many
 * folios for the copy (65,429 against cp's 16,388 for 1 GiB), 0.26 s
 * against cp's 0.20 s. */
#define RUN_CUT_ALIGN ((size_t)2 << 20)
/* Mapped bytes written from the mapping: their pages are populated in
 * windows of at least this (one madvise() call: faulting them in page by
 * page as the writes touch them cost ~1/3 of a 1 GiB save onto ext4). */
#define POP_WINDOW ((size_t)16 << 20)
/* Bytes of a source file read into the copy buffer (read_in): pieces that
 * stay in L2 between the read and the write (ext4, 1 GiB: 64 KiB 0.23 s,
 * 256 KiB 0.21 s, 1 MiB 0.20-0.89 s; cp 0.18 s). */
#define READ_PIECE ((size_t)256 << 10)
/* Bytes of the copy buffer lie at addresses congruent with their output
 * offsets modulo ALIGN (a cache line), so that the kernel's copy of a write
 * into the page cache reads and writes whole cache lines: misaligned, that
 * copy cost twice as much on an AMD EPYC (ext4, Linux 6.18; BTF -> .ten of
 * 1 GiB, docs/performance.md). The buffer starts each fill at the address
 * that makes it so (buf_empty); a piece of at least ALIGN_MIN bytes skips
 * up to ALIGN - 1 bytes where the pieces before it broke it (a small header
 * copied after a tensor's bytes). The read into the buffer does not care:
 * the buffer stays in the cache. */
#define ALIGN ((uintptr_t)64)
#define ALIGN_MIN ((size_t)4 << 10)
/* And a read into the buffer must not put its destination a little past
 * its source modulo ALIAS_PAGE (under ALIGN bytes): each load then waits on
 * the stores just made to addresses with the same low 12 bits (4K
 * aliasing). 1 GiB from page cache to page cache on that EPYC, destination
 * minus source 8 bytes: 0.49 s, 24: 0.29 s, 64 or -8: 0.24-0.26 s, cp
 * 0.27 s; a .ten of one tensor to BTF read into the buffer that way took
 * 0.53 s against 0.29 s. Such a destination moves ALIGN further on
 * (alias_skip). */
#define ALIAS_PAGE ((uintptr_t)4096)
/* Where writes go in pieces (WRITE_PIECE_HOST), the bytes read_in moves
 * go by splice(): from the source's page cache into a pipe of the sink's
 * own (what is pending before them written into it), and from the pipe into
 * the file in those pieces: one copy, in the kernel, what cp does, where
 * reading them in made two, the second into folios as small as cp's (BTF ->
 * .ten of 10,000 tensors, 1 GiB onto ext4, medians of four runs: 0.42-0.52 s
 * against 0.47-0.57 s, cp 0.36-0.48 s; docs/performance.md). Not for
 * ranges under SPLICE_MIN, nor, unless the save measured the ways
 * (TRY_EPOCH), where the output lies under ALIGN bytes past the source
 * modulo ALIAS_PAGE (the kernel's copy was 4K-aliased there on a CPU
 * without FSRM; read_in's buffer is not; with FSRM the distance made no
 * difference, so a save that measured the way takes it as measured). Where
 * writes stay whole, ranges of SPLICE_WHOLE_MIN bytes or more go that way
 * too, out in pieces that end at multiples of SPLICE_WHOLE of the file
 * (whole writes' folios): one tensor of 1 GiB, BTF -> .ten onto ext4, 10
 * rounds alternated: 0.228 s against 0.241 s through the buffer, cp
 * 0.214 s; a prototype's 64 KiB pieces cost 1.3x. Smaller ranges stay in
 * the buffer: 10,000 tensors of 105 KiB spliced took 0.282 s against
 * 0.259 s (a header's write and a splice() more per tensor; 2026-12-05,
 * docs/performance.md). The pipe holds SPLICE_PIPE bytes, or where the
 * system refuses that SPLICE_PIPE_MIN (then only pieces of 64 KiB are
 * spliced; where it refuses both, the bytes are read in): a piece that
 * starts inside a page takes one slot per page it touches, and each header
 * before a tensor one more. Pending bytes move into it when there are at
 * most SPLICE_HEAD_MAX of them (headers), else they are written first. */
/* read_in's reads wait in s->fill until what is pending is written or
 * looked at, and then go in as few calls as they can: reads that follow
 * one another in a source file with at most FILL_GAP bytes between them (a
 * BTF record header, a zip member's local header, GGUF's padding) are one
 * preadv(), into their slots of the buffer, the bytes between into a
 * scratch past the buffer's end (big_buf). Each slot stays where its output
 * offset wants it (ALIGN, ALIAS_PAGE), which reading across into one piece
 * of the buffer could not do. BTF of 10,000 tensors of 105 KiB to .ten:
 * 10,000 pread()s became ~2,000 preadv()s (docs/performance.md). */
#define FILL_MAX TIO__SINK_FILL
#define FILL_GAP ((size_t)2 << 10)
#define SPLICE_MIN ((size_t)4 << 10)
#define SPLICE_PIPE ((size_t)1 << 20)
#define SPLICE_PIPE_MIN ((size_t)256 << 10)
#define SPLICE_WHOLE ((size_t)512 << 10)
#define SPLICE_WHOLE_MIN ((size_t)1 << 20)
#define SPLICE_HEAD_MAX ((size_t)64 << 10)
/* A save of AW_MIN bytes or more onto a disk file system, where this
 * thread may run on two processors or more, hands what is pending to a
 * thread of the sink's own (sink_thread.c) once it is due for writing, and
 * reads the next bytes into a second buffer meanwhile: the two copies of
 * bytes read in (into the buffer, and from it into the page cache) run side
 * by side, not one after the other. BTF -> .ten of 10,000 tensors of
 * 105 KiB, 1 GiB onto ext4, 6 rounds alternated with cp (2026-12-05):
 * 0.225 s against 0.333 s on one thread, cp 0.270 s; GGUF -> safetensors
 * 0.187 s against 0.223 s, cp 0.185 s (docs/performance.md). Where the
 * process's cgroups allow it one processor's time (a CPU quota) the thread
 * gains nothing and its spinning spends the quota: tio__host_cpus counts
 * that limit, and no thread starts (safetensors -> .ten of 10,000 tensors
 * under a quota of one processor: 0.37-0.39 s against 0.42-0.46 s with the
 * thread stopped after its first window, in the runs the host did not slow). Where another process keeps a
 * processor busy the thread costs more than it gains (0.55 s against
 * 0.36-0.42 s with it stopped, cp 0.33 s; 2026-12-06): every AW_WINDOW
 * bytes, most of them through the thread, the save compares the process's
 * CPU time with the wall clock's, and where it was under AW_PAR_PCT percent
 * of it (the threads did not run side by side) and the saving thread
 * waited for a processor while it could run for AW_WAIT_PCT percent of the
 * window or more (tio__host_run_wait_ns: 13-26 % with that busy process),
 * it stops the thread and writes on its own. A window that was slow with
 * the processors free is not that: on a virtual machine whose host stalls
 * the guest's first touches of memory (a GiB touched and freed before each
 * conversion, as make bench does), such windows waited 0-1.2 %, the
 * writer waiting on the host while the saving thread slept, and stopping
 * the thread there (in 17 of 40 conversions) wrote the rest on one thread.
 * Where that wait cannot be read the check stops on the CPU time alone.
 * It stops only after AW_STRIKES such windows in a row: with nothing else
 * running but make bench's harness, a single window (17 ms) in which the
 * saving thread waited 9-28 % (other work on the other processor, once)
 * stopped the thread for the rest of 1 GiB in 2 and 5 of 21 one-tensor
 * conversions, 0.34 s against 0.25-0.27 s; with two in a row, 4 such
 * windows in 63, none followed by a second, no stop (docs/performance.md).
 * Another process's load shows in every window. */
#define AW_MIN ((uint64_t)64 << 20)
#define AW_WINDOW ((uint64_t)32 << 20)
#define AW_PAR_PCT 110u
#define AW_WAIT_PCT 5u
#define AW_STRIKES 2u
/* What is pending goes to the writer thread only from this many bytes:
 * less (a header before a range copied in the kernel, the tail of a save)
 * is written on this thread once the batch out is written. Handed over,
 * each header between two copy_file_range() calls cost a wake-up and a
 * wait: tmfile -> BTF of 10,000 tensors with the copy way, 1 GiB onto
 * ext4, 0.92 s of CPU time against 0.445 s on this thread (76,563 futex()
 * calls; wall 0.475 s against 0.445 s; docs/performance.md). */
#define AW_GIVE_MIN ((size_t)64 << 10)
/* On a disk file system, tensor bytes at offsets not congruent modulo the
 * page go one of three ways: read in (read_in: pread() into the copy
 * buffer, or splice() where writes go in 64 KiB pieces and for ranges of
 * SPLICE_WHOLE_MIN where they stay whole), read in through the buffer even
 * then, or copied by copy_file_range() in runs, as
 * congruent ones are. Which is fastest depends on the machine, and the
 * ranking flips between machines that look alike: the same kind of VM
 * (AMD EPYC of family 26, FSRM, ext4, Linux 6.18) measured copy_file_range()
 * 1.12-1.34x faster than reading in on 2026-12-02 and 1.3-1.5x slower on
 * 2026-12-03 (1 GiB at 40 -> 96, least of 8 runs: 0.42 s against 0.25 s,
 * cp 0.29 s), and in 64 KiB pieces the buffer 1.05x faster than splice()
 * that day (10,000 tensors, BTF -> .ten) where splice() had won on
 * 2026-12-01; without FSRM the copy cost 1.5-2x (docs/performance.md). So a
 * save that expects TRY_MIN bytes or more times the three on its first
 * TRY_EPOCHS epochs of TRY_EPOCH such bytes each, in the order of
 * try_order, by the thread's CPU time per byte written (what is pending
 * written at each epoch's end), and keeps the way whose better epoch cost
 * least (a range longer than what is left of an epoch is cut there:
 * tio__sink_copy_range). A way's second epoch is skipped where its first
 * cost more than TRY_LOSE_PCT percent of the best epoch measured so far:
 * its second would have to cost a third less than its first to win, and
 * the slow way's epochs were most of what trying cost (tmfile -> BTF of 10,000
 * tensors, 1 GiB onto ext4: copy_file_range() twice the CPU time of reading
 * in, the save 0.25 s against 0.235 s without a trial; since, 0.235 s
 * against 0.225 s, docs/performance.md). Smaller saves read in. */
#define TRY_EPOCH ((uint64_t)16 << 20)
#define TRY_EPOCHS 6u
#define TRY_LOSE_PCT 150u
#define TRY_MIN ((uint64_t)256 << 20)
#define ANY_READ 0  /* any_way: read in (also where no way is tried: tmpfs, a pipe) */
#define ANY_COPY 1  /* copied in runs */
#define ANY_BUF 2   /* read in, never spliced */
#define ANY_FIRST 3 /* a disk: to be decided at the first such range */
#define ANY_TRY 4   /* measuring: try_order[try_epoch] */
#define ANY_WAYS 3
static const int try_order[TRY_EPOCHS] = {ANY_READ, ANY_BUF, ANY_COPY, ANY_COPY, ANY_READ, ANY_BUF};
/* The way of the epoch being tried, or the one kept (or ANY_FIRST). */
static int way_now(const tio_sink *s) {
    return s->any_way == ANY_TRY ? try_order[s->try_epoch] : s->any_way;
}
/* Linux >= 5.14; older headers lack the constant (older kernels: EINVAL). */
#if defined(__linux__) && !defined(MADV_POPULATE_READ)
#define MADV_POPULATE_READ 22
#endif

struct tio__sink_patch {
    uint64_t at;     /* sink position */
    size_t off, len; /* in pbytes */
};

static int rd_take(tio_sink *s, tio_error *err);

/* Everything but the first buffer, which needs no clearing. */
#define SINK_HEAD offsetof(tio_sink, first)

void tio__sink_init_mem(tio_sink *s) {
    memset(s, 0, SINK_HEAD);
    s->fd = -1;
}

void tio__sink_init_fixed(tio_sink *s, void *buf, size_t cap) {
    tio__sink_init_mem(s);
    s->fixed = 1;
    s->buf = buf;
    s->cap = buf ? cap : 0;
}

#ifdef __linux__
#define TMPFS_MAGIC_ 0x01021994L
#define NFS_MAGIC_ 0x6969L
#define SMB2_MAGIC_ 0xfe534d42L
#define CIFS_MAGIC_ 0xff534d42L
#define EXT4_MAGIC_ 0xef53L /* ext2 and ext3 too: their files refuse fallocate() */
#endif

int tio__sink_init_fd(tio_sink *s, int fd, tio_error *err) {
    memset(s, 0, SINK_HEAD);
    s->fd = fd;
    s->kept_other = UINT64_MAX;
    /* writev() takes at most IOV_MAX entries (1024 on Linux; 16 guaranteed) */
    long m = sysconf(_SC_IOV_MAX);
    s->iov_max = m < 16 ? 16 : m > TIO__SINK_IOV ? TIO__SINK_IOV : (int)m;
    s->buf = s->first;
    s->cap = sizeof s->first;
    s->flush_at = FLUSH_AT_DISK;
    long pg = sysconf(_SC_PAGESIZE);
    s->page = pg >= 4096 && pg <= (1L << 20) ? (size_t)pg : 4096;
    off_t at = lseek(fd, 0, SEEK_CUR); /* a pipe or socket: no copies */
    s->base = at >= 0 ? (uint64_t)at : UINT64_MAX;
#ifdef __linux__
    struct statfs sf;
    if (fstatfs(fd, &sf) == 0) {
        long t = (long)sf.f_type;
        if (t == TMPFS_MAGIC_) s->flush_at = FLUSH_AT_TMPFS;
        /* the host is asked once pieces of that size are due (write_pending) */
        s->wprobe = t != TMPFS_MAGIC_ && s->base != UINT64_MAX;
        struct stat st;
        s->sp_on = s->wprobe && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        /* the server copies: no bytes cross the network, at any offset */
        s->copy_any = t == NFS_MAGIC_ || t == SMB2_MAGIC_ || t == CIFS_MAGIC_;
        /* a disk file system: bytes at other offsets read in or copied,
         * decided at the first such range (TRY_EPOCH) */
        if (!s->copy_any && s->sp_on) s->any_way = ANY_FIRST;
        s->aw_ok = !s->copy_any && s->sp_on;
        s->prealloc_ok = t == EXT4_MAGIC_ && s->sp_on;
    }
#endif
    (void)err;
    return TIO_OK;
}

/* On ext4, the blocks of what a large save expects to write are allocated
 * before its first write: fallocate() with FALLOC_FL_KEEP_SIZE (the file's
 * size still grows with the writes, and says what was written). A write
 * then fills blocks the file has, and ext4 does less for each of its
 * blocks than for a delayed allocation (a reservation, a delayed extent
 * inserted; ext4_da_get_block_prep). Linux 6.18, 1 GiB from memory onto
 * ext4: 64 KiB pwrite()s 0.205 -> 0.171 s, 512 KiB 0.133 -> 0.121 s; BTF ->
 * .ten of 10,000 tensors, writes in 64 KiB pieces, 0.248 -> 0.221 s
 * against cp's 0.225 s (docs/performance.md). Not on other file systems
 * (unmeasured; tmpfs would fill the pages with zeros first). A call that
 * fails (ENOSPC, a file without extents, a seccomp filter) leaves the save
 * as it was; tio__sink_trim frees what it did not fill. */
#define PREALLOC_MIN ((uint64_t)8 << 20)

void tio__sink_expect(tio_sink *s, uint64_t bytes) {
    s->expect = bytes;
#if defined(__linux__) && defined(FALLOC_FL_KEEP_SIZE)
    uint64_t at;
    if (!s->prealloc_ok || bytes < PREALLOC_MIN || bytes > (uint64_t)INT64_MAX ||
        tio__add64_ovf(s->base, s->pos, &at) || at > (uint64_t)INT64_MAX - bytes)
        return;
    if (fallocate(s->fd, FALLOC_FL_KEEP_SIZE, (off_t)at, (off_t)bytes) == 0)
        s->prealloc_end = at + bytes;
#endif
}

int tio__sink_trim(tio_sink *s, tio_error *err) {
    uint64_t end = s->prealloc_end;
    s->prealloc_end = 0;
    struct stat st;
    if (!end || s->fd < 0 || fstat(s->fd, &st) != 0 || (uint64_t)st.st_size >= end)
        return TIO_OK;
    /* a file's size set to what it is frees its blocks past it */
    if (ftruncate(s->fd, st.st_size) == 0) return TIO_OK;
    int e = errno;
    s->failed = 1; /* the save names its target */
    return tio__err(err, TIO_E_IO, NULL, -1,
                    "cannot free the blocks allocated past the end (%llu bytes): %s",
                    (unsigned long long)(end - (uint64_t)st.st_size), strerror(e));
}

/* Stops the writer thread (after its batch, whose errors are the caller's
 * to take first: aw_idle) and frees its buffer. */
static void aw_stop(tio_sink *s) {
    tio__sink_writer_stop(s->aw);
    free(s->aw_buf);
    s->aw = NULL;
    s->aw_buf = NULL;
    s->aw_busy = 0;
}

void tio__sink_dispose(tio_sink *s) {
    if (s->aw) aw_stop(s);
    if (s->buf != s->first && !s->fixed) free(s->buf);
    if (s->sp_open) {
        close(s->sp[0]);
        close(s->sp[1]);
        s->sp_open = 0;
        s->sp_len = 0;
    }
    free(s->patch);
    free(s->pbytes);
    s->patch = NULL;
    s->pbytes = NULL;
    s->npatch = s->patch_cap = s->plen = s->pcap = 0;
    s->run_len = 0;
    s->rd_len = 0;
    s->nfill = 0;
    s->buf = NULL;
    s->len = s->cap = 0;
    s->niov = 0;
    s->pending = 0;
}

static int write_failed(tio_sink *s, int e, uint64_t done, tio_error *err) {
    s->failed = 1;
    return tio__err(err, TIO_E_IO, NULL, -1, "write failed after %llu bytes: %s",
                    (unsigned long long)done, strerror(e));
}

/* Waits for the writer thread's batch, if one is out (before anything
 * else writes to the file, or looks at what is written): a write of it
 * that failed fails the save here. */
static int aw_idle(tio_sink *s, tio_error *err) {
    if (!s->aw_busy) return TIO_OK;
    s->aw_busy = 0;
    uint64_t done;
    int e = tio__sink_writer_wait(s->aw, &done);
    return e ? write_failed(s, e, s->aw_at + done, err) : TIO_OK;
}

/* Bytes a write starting at file offset `at` may take so that it ends at
 * a multiple of s->wpiece (SIZE_MAX: writes stay whole). */
static size_t piece_room(const tio_sink *s, uint64_t at) {
    return s->wpiece ? tio__room_to(s->wpiece, at) : SIZE_MAX;
}

/* Writes p[0..n) at the file position (sink position `at`), resuming
 * after short writes (in pieces of s->wpiece, as write_pending). */
static int write_all(tio_sink *s, const uint8_t *p, size_t n, uint64_t at, tio_error *err) {
    int rc = aw_idle(s, err);
    if (rc) return rc;
    while (n) {
        size_t k = n > s->flush_at ? s->flush_at : n;
        size_t room = piece_room(s, s->base + at);
        if (k > room) k = room;
        ssize_t w = write(s->fd, p, k);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return write_failed(s, w < 0 ? errno : EIO, at, err);
        p += (size_t)w;
        n -= (size_t)w;
        at += (uint64_t)w;
        tio__sink_progress_at(s, at);
    }
    return TIO_OK;
}

/* Writes p[0..n) at sink position `at` (pwrite(): the file position stays). */
static int pwrite_all(tio_sink *s, const uint8_t *p, size_t n, uint64_t at, tio_error *err) {
    int rc = aw_idle(s, err);
    if (rc) return rc;
    while (n) {
        uint64_t o;
        if (tio__add64_ovf(s->base, at, &o) || o > (uint64_t)INT64_MAX)
            return tio__err(err, TIO_E_OVERFLOW, NULL, -1, "output offset overflows");
        ssize_t w = pwrite(s->fd, p, n, (off_t)o);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return write_failed(s, w < 0 ? errno : EIO, at, err);
        p += (size_t)w;
        n -= (size_t)w;
        at += (uint64_t)w;
    }
    return TIO_OK;
}

/* Copies k bytes of the run from source offset *in_off to the output's
 * file position in the kernel: copy_file_range(), or, once that said EXDEV
 * (two file systems: the source on ext4, the output on tmpfs, say),
 * sendfile(), which copies across file systems through the page cache
 * without mapping the source. Returns what the call returned (errno set). */
static ssize_t run_copy(tio_sink *s, loff_t *in_off, size_t k) {
#ifdef __linux__
    if (s->by_sendfile) {
        if (k > SENDFILE_MAX) k = SENDFILE_MAX;
        off_t o = (off_t)*in_off;
        ssize_t w = sendfile(s->fd, s->run_fd, &o, k);
        if (w > 0) *in_off = (loff_t)o;
        return w;
    }
#endif
    return copy_file_range(s->run_fd, in_off, s->fd, NULL, k, 0);
}

/* Copies the run (one copy_file_range() call per GiB, or pieces of
 * RUN_PROGRESS with a progress function, the last up to twice that),
 * writing from the mapping what the kernel does not copy, then writes its
 * patches over it. A run copy_file_range() refuses with EXDEV before it
 * copied anything is tried again with sendfile(), and so are the runs
 * after it. The file position moves past the run; what is pending comes
 * after it. */
static int run_end(tio_sink *s, tio_error *err) {
    size_t n = s->run_len, done = 0;
    s->run_len = 0;
    int rc = aw_idle(s, err);
    if (rc) return rc;
    while (done < n && !s->no_copy) {
        loff_t in_off = (loff_t)(s->run_src + done); /* checked when the run grew */
        size_t k = n - done;
        if (s->progress && k >= 2 * RUN_PROGRESS) k = RUN_PROGRESS; /* no small last piece */
        if (k > WRITE_MAX) k = WRITE_MAX;
        ssize_t w = run_copy(s, &in_off, k);
        if (w < 0 && errno == EINTR) continue;
#ifdef __linux__
        if (w < 0 && errno == EXDEV && !s->by_sendfile && !s->copied) {
            s->by_sendfile = 1; /* the output's file position has not moved */
            continue;
        }
#endif
        if (w <= 0) { /* not here (EXDEV, ENOSYS, EINVAL…) or the source shrank */
            s->no_copy = 1;
            break;
        }
        s->copied = 1;
        done += (size_t)w;
        tio__sink_progress_at(s, s->run_dst + done);
    }
    if (done < n) rc = write_all(s, s->run_map + done, n - done, s->run_dst + done, err);
    for (size_t i = 0; rc == TIO_OK && i < s->npatch; i++) {
        const struct tio__sink_patch *q = &s->patch[i];
        rc = pwrite_all(s, s->pbytes + q->off, q->len, q->at, err);
    }
    s->npatch = 0;
    s->plen = 0;
    return rc;
}

/* Bytes to skip at the end of the copy buffer so that the next byte, at
 * output position pos, lies at an address congruent with its output offset
 * modulo ALIGN. */
static size_t align_skip(const tio_sink *s) {
    return (size_t)(((uintptr_t)(s->base + s->pos) - (uintptr_t)(s->buf + s->len)) & (ALIGN - 1));
}

/* Makes the next n bytes put into the copy buffer lie congruent with their
 * output offsets (align_skip), unless they continue the last piece gathered
 * and are few (under ALIGN_MIN: small pieces keep merging). Room: ALIGN - 1
 * bytes. */
static void buf_align(tio_sink *s, size_t n) {
    size_t skip = align_skip(s);
    if (skip == 0) return;
    if (n < ALIGN_MIN && s->niov > 0) {
        const struct iovec *last = &s->iov[s->niov - 1];
        if ((const uint8_t *)last->iov_base + last->iov_len == s->buf + s->len) return;
    }
    s->len += skip;
}

/* How far to move the destination of a copy from src to dst so that it does
 * not lie just past its source modulo ALIAS_PAGE: 0 or ALIGN. */
static size_t alias_skip(uintptr_t dst, uintptr_t src) {
    uintptr_t d = (dst - src) & (ALIAS_PAGE - 1);
    return d > 0 && d < ALIGN ? (size_t)ALIGN : 0;
}

/* Empties the copy buffer (the large one starts where align_skip says). */
static void buf_empty(tio_sink *s) {
    s->len = 0;
    if (s->buf != s->first) s->len = align_skip(s);
}

/* Writes a byte in each page of n bytes at p (a buffer just allocated). */
static void touch_pages(uint8_t *p, size_t n, size_t page) {
    for (size_t i = 0; i < n; i += page) p[i] = 0;
}

/* Replaces the first buffer, empty, with the large one. Where the save may
 * try the ways (TRY_MIN), the buffers' pages are touched here, and while
 * it is trying them the thread's CPU time spent here (the allocations, the
 * writer thread's start, the cgroup reads, those page faults: median
 * 0.9 ms, up to 13 ms in the state `make bench` leaves, where a 16 MiB
 * epoch's own cost is 4-5 ms) is left out of the epoch's (try_t0 moves by
 * it). It fell on the first epoch that used the buffer, which then lost by
 * far and was not tried again: 1 GiB of one tensor onto ext4, a BTF or
 * .npz source, the buffer's first epoch 600-1,000 ns/KiB, its second
 * 230-250, the way kept instead 0.30-0.37 s where the buffer's takes
 * 0.25-0.26 s (docs/performance.md). */
static int big_buf(tio_sink *s, tio_error *err) {
    bool trying = s->any_way == ANY_TRY && s->try_t0;
    uint64_t t0 = trying ? tio__host_cpu_ns() : 0;
    uint8_t *b = malloc(FILE_BUF + ALIGN + FILL_GAP); /* then the fills' scratch */
    if (!b) return tio__nomem(err, NULL);
    s->buf = b;
    s->cap = FILE_BUF + ALIGN;
    buf_empty(s);
    /* a writer thread where it pays (AW_MIN); none where it cannot start */
    if (s->aw_ok && s->expect >= AW_MIN && tio__host_cpus() >= 2 &&
        (s->aw_buf = malloc(FILE_BUF + ALIGN + FILL_GAP)) != NULL &&
        !(s->aw = tio__sink_writer_start(s->fd, s->iov_max))) {
        free(s->aw_buf);
        s->aw_buf = NULL;
    }
    if (s->expect >= TRY_MIN && (s->any_way == ANY_FIRST || s->any_way == ANY_TRY)) {
        touch_pages(b, FILE_BUF + ALIGN + FILL_GAP, s->page);
        if (s->aw_buf) touch_pages(s->aw_buf, FILE_BUF + ALIGN + FILL_GAP, s->page);
    }
    uint64_t t = trying ? tio__host_cpu_ns() : 0;
    if (t > t0 && t0) s->try_t0 += t - t0;
    return TIO_OK;
}

/* Nothing is pending any more: iov[] and the copy buffer are empty. */
static void pending_taken(tio_sink *s) {
    s->niov = 0;
    s->pending = 0;
    buf_empty(s);
}

/* Whether the saving thread, over a window of `wall` ns that ends with
 * readings ran and waited (tio__host_run_wait_ns; ok: they were read),
 * waited for a processor while it could run less than AW_WAIT_PCT percent
 * of it: the processors were free. False where either end's readings are
 * missing or show no time run (nothing accounted). */
static bool aw_free(const tio_sink *s, bool ok, uint64_t ran, uint64_t waited, uint64_t wall) {
    if (!ok || !s->aw_sched || ran <= s->aw_ran0 || waited < s->aw_wait0) return false;
    return (waited - s->aw_wait0) / AW_WAIT_PCT < wall / 100;
}

/* Every AW_WINDOW bytes of output, most of them given to the writer thread
 * (not copied in the kernel: a trial's epochs, say): where the save's
 * threads did not run side by side since the last time (AW_PAR_PCT)
 * because other work had the processors (aw_free), AW_STRIKES windows in a
 * row, the thread is stopped and the save writes on its own. */
static int aw_check(tio_sink *s, tio_error *err) {
    if (s->pos < s->aw_next) return TIO_OK;
    uint64_t wall = tio__host_wall_ns(), cpu = tio__host_proc_cpu_ns(), ran = 0, waited = 0;
    bool sched = tio__host_run_wait_ns(&ran, &waited) == 0;
    uint64_t given = s->aw_given, span = s->pos - s->aw_pos0;
    s->aw_given = 0;
    if (s->aw_wall0 && given >= span - span / 4) { /* a window the thread wrote */
        if (wall > s->aw_wall0 && cpu >= s->aw_cpu0 &&
            (cpu - s->aw_cpu0) / AW_PAR_PCT < (wall - s->aw_wall0) / 100 &&
            !aw_free(s, sched, ran, waited, wall - s->aw_wall0)) {
            if (++s->aw_strikes >= AW_STRIKES) {
                int rc = aw_idle(s, err);
                aw_stop(s);
                return rc;
            }
        } else {
            s->aw_strikes = 0;
        }
    }
    s->aw_wall0 = wall;
    s->aw_cpu0 = cpu;
    s->aw_sched = sched;
    s->aw_ran0 = ran;
    s->aw_wait0 = waited;
    s->aw_pos0 = s->pos;
    s->aw_next = s->pos + AW_WINDOW;
    return TIO_OK;
}

/* Hands what is pending to the writer thread, once its batch before is
 * written, and takes the other buffer. */
static int aw_give(tio_sink *s, tio_error *err) {
    int rc = aw_idle(s, err);
    if (rc) return rc;
    s->aw_at = s->pos - s->pending;
    s->aw_given += s->pending;
    tio__sink_writer_give(s->aw, s->iov, s->niov, s->base + s->aw_at, s->wpiece);
    s->aw_busy = 1;
    uint8_t *b = s->buf;
    s->buf = s->aw_buf;
    s->aw_buf = b;
    pending_taken(s);
    return aw_check(s, err);
}

/* Whether a host that takes free memory back has too little of it in the
 * blocks whole writes' folios come from (KEPT_MARGIN times the `left` bytes
 * still to write, or KEPT_MOVABLE_PCT percent of them in blocks kept for
 * movable pages): then writes go in pieces of WRITE_PIECE_HOST, which this
 * returns, else 0. *kept: the bytes in those blocks; *other: the part of
 * them not kept for movable pages, UINT64_MAX until asked (at most once a
 * save: the amount hardly moves, and asking costs ms), KEPT_UNKNOWN where
 * it cannot be told. */
static size_t kept_piece(uint64_t left, size_t page, uint64_t *kept, uint64_t *other) {
    /* the smallest folio whole writes make: half a flush (FLUSH_AT_DISK) */
    unsigned lo = 0;
    while ((page << (lo + 1)) <= FLUSH_AT_DISK / 2) lo++;
    *kept = tio__host_kept_free(TIO__BUDDYINFO, TIO__REPORTING_ORDER, lo, page);
    if (*kept / KEPT_MARGIN >= left) return 0;
    uint64_t need = left / 100 * KEPT_MOVABLE_PCT + left % 100 * KEPT_MOVABLE_PCT / 100;
    if (*kept < need || *other == KEPT_UNKNOWN) return WRITE_PIECE_HOST;
    if (*other == UINT64_MAX) {
        uint64_t mov = tio__host_kept_movable(TIO__PAGETYPEINFO, TIO__REPORTING_ORDER, lo, page);
        *other = mov == UINT64_MAX ? KEPT_UNKNOWN : *kept > mov ? *kept - mov : 0;
        if (*other == KEPT_UNKNOWN) return WRITE_PIECE_HOST;
    }
    /* a later count can be under the part measured at first */
    return *kept > *other && *kept - *other >= need ? 0 : WRITE_PIECE_HOST;
}

/* Asks the host, once, whether writes go in pieces (WRITE_PIECE_HOST);
 * where it takes free memory back and whole writes were kept, asks again
 * each KEPT_AGAIN bytes whether they still can be (other work takes free
 * blocks too: a source read from disk, say), for the bytes still to come. */
static void host_pieces(tio_sink *s) {
    if (s->wprobe) {
        s->wprobe = 0;
        if (!tio__host_reports_free_pages(TIO__BALLOON_DIR)) return;
    } else if (!s->kept_next || s->pos < s->kept_next) {
        return;
    }
    uint64_t kept;
    if (kept_piece(s->expect > s->pos ? s->expect - s->pos : 0, s->page, &kept, &s->kept_other)) {
        s->wpiece = WRITE_PIECE_HOST;
        s->kept_next = 0;
    } else {
        s->kept_next = s->pos + KEPT_AGAIN;
    }
}

size_t tio__sink_host_piece(uint64_t left, size_t page, uint64_t *kept) {
    *kept = 0;
    if (!tio__host_reports_free_pages(TIO__BALLOON_DIR)) return 0;
    uint64_t other = UINT64_MAX;
    return kept_piece(left, page, kept, &other);
}

#ifdef __linux__
/* The bytes in the splice pipe, when splice() will not move them into the
 * file (an O_APPEND file, a file system without it): read back and written
 * (4 KiB at a time). No more splicing. */
static int sp_read_back(tio_sink *s, tio_error *err) {
    uint8_t b[4096];
    s->sp_on = 0;
    while (s->sp_len) {
        uint64_t at = s->pos - s->pending - s->sp_len;
        ssize_t r = read(s->sp[0], b, s->sp_len < sizeof b ? s->sp_len : sizeof b);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return write_failed(s, r < 0 ? errno : EIO, at, err);
        int rc = write_all(s, b, (size_t)r, at, err);
        if (rc) return rc;
        s->sp_len -= (size_t)r;
    }
    return TIO_OK;
}

/* Moves the bytes in the splice pipe into the file: the pieces that end at
 * multiples of s->wpiece of the output, and with `all` the rest too. */
static int sp_drain(tio_sink *s, int all, tio_error *err) {
    int rc = aw_idle(s, err);
    if (rc) return rc;
    while (s->sp_len) {
        uint64_t at = s->pos - s->pending - s->sp_len; /* no copy run: see sink.h */
        size_t want = tio__room_to(s->wpiece ? s->wpiece : SPLICE_WHOLE, s->base + at);
        if (want > s->sp_len) {
            if (!all) break;
            want = s->sp_len;
        }
        ssize_t w = splice(s->sp[0], NULL, s->fd, NULL, want, 0);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EINVAL || errno == ENOSYS)) return sp_read_back(s, err);
        if (w <= 0) return write_failed(s, w < 0 ? errno : EIO, at, err);
        s->sp_len -= (size_t)w;
        tio__sink_progress_at(s, at + (uint64_t)w);
    }
    return TIO_OK;
}
#endif

static int source_failed(tio_sink *s, int e, size_t off, size_t n, tio_error *err);

/* One fill by itself: where one preadv() of several came back short or
 * failed, each says where the source ended. */
static int fill_one(tio_sink *s, const struct tio__sink_fill *f, tio_error *err) {
    size_t got = tio__pread_full(f->fd, f->dst, f->n, f->off);
    return got == f->n ? TIO_OK : source_failed(s, errno, f->off + got, f->n - got, err);
}

/* Makes the reads read_in left waiting (FILL_MAX), if any: the fills that
 * follow one another in one source, at most FILL_GAP apart, in one
 * preadv(). */
static int fills_do(tio_sink *s, tio_error *err) {
    if (s->nfill == 0) return TIO_OK;
    struct iovec v[2 * FILL_MAX];
    uint8_t *scratch = s->buf + s->cap; /* FILL_GAP bytes: big_buf */
    int i = 0, rc = TIO_OK;
    while (rc == TIO_OK && i < s->nfill) {
        const struct tio__sink_fill *f = &s->fill[i];
        size_t end = f->off, total = 0;
        int j = i, k = 0;
        for (; j < s->nfill; j++) {
            const struct tio__sink_fill *g = &s->fill[j];
            if (g->fd != f->fd || g->off < end || g->off - end > FILL_GAP) break;
            if (g->off > end) {
                v[k].iov_base = scratch;
                v[k++].iov_len = g->off - end;
                total += g->off - end;
            }
            v[k].iov_base = g->dst;
            v[k++].iov_len = g->n;
            total += g->n;
            end = g->off + g->n; /* <= INT64_MAX: read_in's caller checked */
        }
        ssize_t r;
        do r = k == 1 ? pread(f->fd, f->dst, f->n, (off_t)f->off)
                      : preadv(f->fd, v, k, (off_t)f->off);
        while (r < 0 && errno == EINTR);
        for (int q = i; r != (ssize_t)total && rc == TIO_OK && q < j; q++)
            rc = fill_one(s, &s->fill[q], err);
        i = j;
    }
    s->nfill = 0;
    return rc;
}

/* Writes iov[] in order with writev(), resuming after short writes (after
 * the bytes in the splice pipe and the copy run, which come first); in
 * pieces of s->wpiece where the host takes free memory back
 * (WRITE_PIECE_HOST). */
static int write_pending(tio_sink *s, tio_error *err) {
    int rc = fills_do(s, err);
    if (rc) return rc;
    if (s->pending + s->run_len > WRITE_PIECE_HOST) host_pieces(s);
#ifdef __linux__
    if (s->sp_len && (rc = sp_drain(s, 1, err))) return rc;
#endif
    if (s->run_len && (rc = run_end(s, err))) return rc;
    if (s->aw && s->pending >= AW_GIVE_MIN) return aw_give(s, err); /* aw: the large buffers */
    if ((rc = aw_idle(s, err))) return rc;
    uint64_t at = s->pos - s->pending, done;
    int e = tio__writev_pieces(s->fd, s->iov, s->niov, s->iov_max, s->base + at, s->wpiece, &done);
    if (e) return write_failed(s, e, at + done, err);
    pending_taken(s);
    return TIO_OK;
}

int tio__sink_flush(tio_sink *s, tio_error *err) {
    if (s->rd_len) {
        int rc = rd_take(s, err);
        if (rc) return rc;
    }
    if (s->fd < 0) return TIO_OK;
    int rc = s->niov || s->run_len || s->sp_len ? write_pending(s, err) : TIO_OK;
    return rc ? rc : aw_idle(s, err);
}

/* Appends p[0..n) to iov[] (n <= WRITE_MAX), extending the last entry when
 * p continues it. */
static int gather(tio_sink *s, const void *p, size_t n, tio_error *err) {
    if (s->niov > 0) {
        struct iovec *last = &s->iov[s->niov - 1];
        if ((const uint8_t *)last->iov_base + last->iov_len == (const uint8_t *)p &&
            last->iov_len <= WRITE_MAX - n) {
            last->iov_len += n;
            s->pending += n;
            return TIO_OK;
        }
    }
    if (s->niov == TIO__SINK_IOV) {
        int rc = write_pending(s, err);
        if (rc) return rc;
    }
    s->iov[s->niov].iov_base = (void *)(uintptr_t)p;
    s->iov[s->niov].iov_len = n;
    s->niov++;
    s->pending += n;
    return TIO_OK;
}

static int mem_reserve(tio_sink *s, size_t add, tio_error *err) {
    size_t need;
    if (tio__add_ovf(s->len, add, &need))
        return tio__err(err, TIO_E_OVERFLOW, NULL, -1, "output size overflows");
    if (need <= s->cap) return TIO_OK;
    size_t ncap = s->cap ? s->cap : 4096;
    while (ncap < need) ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
    uint8_t *nb = realloc(s->buf, ncap);
    if (!nb) {
        s->failed = 1;
        return tio__nomem(err, NULL);
    }
    s->buf = nb;
    s->cap = ncap;
    return TIO_OK;
}

/* Whether what is pending is written now, `ahead` bytes past s->pos: once
 * it reaches flush_at, at a multiple of READ_PIECE of the output (so that
 * the writes start and end there, see read_in), or at twice flush_at
 * wherever that falls. */
static int flush_due(const tio_sink *s, size_t ahead) {
    return s->pending >= s->flush_at &&
           ((s->base + s->pos + ahead) % READ_PIECE == 0 || s->pending / 2 >= s->flush_at);
}

static int file_write(tio_sink *s, const uint8_t *p, size_t n, int ref, tio_error *err) {
    while (n) {
        size_t k = n > WRITE_MAX ? WRITE_MAX : n;
        int rc;
        if (ref && k >= REF_MIN) {
            rc = gather(s, p, k, err);
        } else {
            /* Room in the buffer, and in iov[] for the piece: gather() must
             * not write what is pending (which empties the buffer) after the
             * bytes are copied in, or later copies overwrite them before
             * they are written. */
            if (s->cap - s->len < k + ALIGN || s->niov == TIO__SINK_IOV) {
                rc = write_pending(s, err);
                if (rc) return rc;
                if (s->buf == s->first && (rc = big_buf(s, err))) /* a large file */
                    return rc;
            }
            buf_align(s, k);
            if (k > s->cap - s->len) k = s->cap - s->len;
            memcpy(s->buf + s->len, p, k);
            rc = gather(s, s->buf + s->len, k, err);
            s->len += k;
        }
        if (rc) return rc;
        s->pos += k; /* before a write: write_pending places pieces by it */
        if (flush_due(s, 0) && (rc = write_pending(s, err))) return rc;
        p += k;
        n -= k;
    }
    return TIO_OK;
}

static int sink_put1(tio_sink *s, const void *p, size_t n, int ref, tio_error *err) {
    if (s->fd >= 0) return file_write(s, p, n, ref, err);
    if (s->fixed) {
        size_t end;
        if (tio__add_ovf(s->len, n, &end))
            return tio__err(err, TIO_E_OVERFLOW, NULL, -1, "output size overflows");
        if (s->len < s->cap) {
            size_t room = s->cap - s->len;
            memcpy(s->buf + s->len, p, n < room ? n : room);
        }
        s->len = end;
        s->pos += n;
        return TIO_OK;
    }
    int rc = mem_reserve(s, n, err);
    if (rc) return rc;
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->pos += n;
    return TIO_OK;
}

/* With a progress function, a large write goes in pieces of the progress
 * step, each reported once it is taken (a file sink writes what it gathered
 * every 8 MiB, so the counts follow the real writes). */
static int sink_put(tio_sink *s, const void *p, size_t n, int ref, tio_error *err) {
    if (s->failed) return tio__err(err, TIO_E_IO, NULL, -1, "write after a failed write");
    if (n == 0) return TIO_OK;
    if (s->rd_len) {
        int rc = rd_take(s, err);
        if (rc) return rc;
    }
    if (!s->progress) return sink_put1(s, p, n, ref, err);
    const uint8_t *q = p;
    while (n) {
        size_t k = n < TIO__PROGRESS_STEP ? n : TIO__PROGRESS_STEP;
        int rc = sink_put1(s, q, k, ref, err);
        if (rc) return rc;
        tio__sink_progress(s);
        q += k;
        n -= k;
    }
    return TIO_OK;
}

/* Adds the pending bytes p[0..n) at sink position `at` as a patch. Returns
 * 0 when the patches would pass PATCH_MAX bytes or PATCH_COUNT pieces. */
static int patch_add(tio_sink *s, uint64_t at, const uint8_t *p, size_t n) {
    if (n > PATCH_MAX - s->plen || s->npatch == PATCH_COUNT) return 0;
    if (s->npatch == s->patch_cap) {
        size_t nc = s->patch_cap ? 2 * s->patch_cap : 64; /* <= PATCH_COUNT */
        struct tio__sink_patch *np = realloc(s->patch, nc * sizeof *np);
        if (!np) return 0;
        s->patch = np;
        s->patch_cap = nc;
    }
    if (s->pcap - s->plen < n) {
        size_t nc = s->pcap ? s->pcap : 4096;
        while (nc - s->plen < n) nc *= 2; /* <= 2 * PATCH_MAX */
        uint8_t *nb = realloc(s->pbytes, nc);
        if (!nb) return 0;
        s->pbytes = nb;
        s->pcap = nc;
    }
    memcpy(s->pbytes + s->plen, p, n);
    s->patch[s->npatch].at = at;
    s->patch[s->npatch].off = s->plen;
    s->patch[s->npatch].len = n;
    s->npatch++;
    s->plen += n;
    return 1;
}

/* Whether the n bytes at p equal the source's at file offset `off` (mapped
 * at src). A few bytes (a record header, a length word between two tensors'
 * data) are read by pread(): compared in the mapping, each would fault in a
 * page that nothing else touches (the copy is the kernel's), which costs
 * more than the read under a slow MMU (tio_headsrc). */
#define SAME_READ_MAX 256u
static int same_as_source(int fd, uint64_t off, const uint8_t *src, const void *p, size_t n) {
    uint8_t b[SAME_READ_MAX];
    bool read = n <= sizeof b && tio__pread_full(fd, b, n, off) == n; /* else: the mapping */
    return memcmp(p, read ? b : src, n) == 0;
}

/* Whether the pending bytes can join a run as the source's bytes at file
 * offset soff (mapped at src), to be written at sink position `at`: those
 * that differ become patches. Then nothing is pending. */
static int pending_to_run(tio_sink *s, int in_fd, uint64_t soff, const uint8_t *src,
                          uint64_t at) {
    size_t npatch = s->npatch, plen = s->plen;
    for (int i = 0; i < s->niov; i++) {
        const struct iovec *v = &s->iov[i];
        if (!same_as_source(in_fd, soff, src, v->iov_base, v->iov_len) &&
            !patch_add(s, at, v->iov_base, v->iov_len)) {
            s->npatch = npatch; /* as it was: the run ends, the bytes stay pending */
            s->plen = plen;
            return 0;
        }
        src += v->iov_len;
        at += v->iov_len;
        soff += v->iov_len;
    }
    pending_taken(s);
    return 1;
}

/* Extends the run over what is pending and then n bytes at source offset
 * `off` (mapped at `mapped`), when these lie in the source right after the
 * run at the same distance from their output position; pending bytes that
 * differ from the source's become patches. Returns whether it did. */
static int run_extend(tio_sink *s, int in_fd, size_t off, const uint8_t *mapped, size_t n) {
    size_t gap = s->pending, len;
    uint64_t src_end;
    if (in_fd != s->run_fd || gap > RUN_GAP || tio__add_ovf(s->run_len, gap, &len) ||
        tio__add_ovf(len, n, &len) || tio__add64_ovf(s->run_src, (uint64_t)len, &src_end) ||
        src_end > (uint64_t)INT64_MAX || off != s->run_src + (s->run_len + gap) ||
        (uintptr_t)mapped - (uintptr_t)s->run_map != s->run_len + gap)
        return 0;
    /* the pending bytes against the source's, which lie mapped between */
    if (!pending_to_run(s, in_fd, s->run_src + s->run_len, s->run_map + s->run_len,
                        s->run_dst + s->run_len))
        return 0;
    s->run_len = len;
    return 1;
}

/* Starts a run of n bytes at source offset `off` (mapped at `mapped`, sink
 * position `at` in the file) back where the pending bytes begin, when that
 * is a page boundary of the output (and so, congruent, of the source) and
 * they lie there in the source too: a file system that clones (XFS, btrfs)
 * then remaps whole blocks from the first, where it would copy a run that
 * starts inside one (a same-format rewrite: the header and every tensor in
 * one clone). Pending bytes that differ from the source's become patches.
 * Returns whether it did. */
static int run_back(tio_sink *s, int in_fd, size_t off, const uint8_t *mapped, uint64_t at,
                    size_t n) {
    size_t gap = s->pending;
    if (!gap || s->sp_len || gap > RUN_GAP || gap > off || (at - gap) % s->page != 0 ||
        n > SIZE_MAX - gap ||
        !pending_to_run(s, in_fd, (uint64_t)(off - gap), mapped - gap, s->pos - gap))
        return 0;
    s->run_fd = in_fd;
    s->run_src = off - gap;
    s->run_dst = s->pos - gap;
    s->run_len = gap + n;
    s->run_map = mapped - gap;
    return 1;
}

/* With a progress function, a run of RUN_PROGRESS or more is copied as it
 * grows (its progress reported) rather than at its end: up to its last
 * RUN_CUT_ALIGN boundary in the output when nothing is pending and no patch waits, the
 * rest going on as the run from there (a file system that clones keeps
 * cloning whole blocks); else all of it. */
static int run_cut(tio_sink *s, tio_error *err) {
    size_t keep = (size_t)((s->base + s->run_dst + s->run_len) % RUN_CUT_ALIGN);
    if (s->pending || s->npatch || keep == 0 || keep >= s->run_len) return write_pending(s, err);
    size_t head = s->run_len - keep;
    s->run_len = head;
    int rc = run_end(s, err); /* the run is then empty */
    s->run_src += head;
    s->run_dst += head;
    s->run_map += head;
    s->run_len = rc ? 0 : keep;
    return rc;
}

/* Populates the pages of map[off, off + n) and, when they are not all
 * populated already, up to POP_WINDOW ahead of off (best effort: a kernel
 * without MADV_POPULATE_READ faults them in as before). The windows
 * populated last are remembered (s->pop), and none is populated again: a
 * writer whose reads take turns between places in the file (a .pt's
 * storages in the order of their keys as strings, "1001" between "10009"
 * and "10010") moved one window back and forth, walking 16 MiB of page
 * tables for each 1 KiB tensor (100,000 of them: 12 s). */
static void populate(tio_sink *s, const uint8_t *map, size_t map_size, size_t off, size_t n) {
#if defined(__linux__)
    const size_t nw = sizeof s->pop / sizeof s->pop[0];
    uintptr_t lo = (uintptr_t)map + off, hi = lo + n;
    for (size_t k = 0; k < nw; k++)
        if (lo >= s->pop[k].lo && hi <= s->pop[k].hi) return;
    size_t ahead = n > POP_WINDOW ? n : POP_WINDOW;
    size_t end = map_size - off > ahead ? off + ahead : map_size;
    uintptr_t page = (uintptr_t)s->page - 1;
    uintptr_t a = lo & ~page; /* inside the mapping: it starts at a page */
    uintptr_t b = (uintptr_t)map + end;
    size_t grow = nw; /* the window that ends where this one starts */
    for (size_t k = 0; k < nw; k++) {
        if (s->pop[k].lo <= a && a < s->pop[k].hi) { /* its start is populated */
            a = s->pop[k].hi & ~page;
            grow = k;
        }
        if (s->pop[k].lo > lo && s->pop[k].lo < b) b = s->pop[k].lo; /* and what lies ahead */
    }
    if (b < hi) b = hi;
    if (a >= b || madvise((void *)a, (size_t)(b - a), MADV_POPULATE_READ) != 0) return;
    if (grow < nw) {
        s->pop[grow].hi = b;
    } else {
        s->pop[s->pop_next].lo = a;
        s->pop[s->pop_next].hi = b;
        s->pop_next = (s->pop_next + 1) % (unsigned)nw;
    }
#else
    (void)s, (void)map, (void)map_size, (void)off, (void)n;
#endif
}

static int write_mapped(tio_sink *s, const uint8_t *map, size_t map_size, size_t off, size_t n,
                        tio_error *err) {
    if (s->fd >= 0) populate(s, map, map_size, off, n);
    return tio__sink_write_ref(s, map + off, n, err);
}

/* The source file ended, or could not be read, at `off`, n bytes before the
 * end of the range being saved. */
static int source_failed(tio_sink *s, int e, size_t off, size_t n, tio_error *err) {
    s->failed = 1;
    if (e == 0)
        return tio__err(err, TIO_E_IO, NULL, (int64_t)off,
                        "the source file ended at offset %zu, %zu bytes before the end of the "
                        "tensor data being saved (it shrank after it was opened)",
                        off, n);
    return tio__err(err, TIO_E_IO, NULL, (int64_t)off,
                    "reading the source file at offset %zu failed: %s", off, strerror(e));
}

#ifdef __linux__
/* Moves what is pending into the splice pipe, behind the bytes there. */
static int sp_take_pending(tio_sink *s, tio_error *err) {
    int rc = fills_do(s, err);
    if (rc) return rc;
    struct iovec *v = s->iov;
    int n = s->niov;
    while (n > 0) {
        ssize_t w = writev(s->sp[1], v, n > s->iov_max ? s->iov_max : n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EAGAIN) { /* full: to the file (whole pieces if it can) */
            size_t had = s->sp_len;
            rc = sp_drain(s, 0, err);
            if (rc == TIO_OK && s->sp_len == had) rc = sp_drain(s, 1, err);
            if (rc) return rc;
            if (!s->sp_on) { /* read back: the rest is written */
                memmove(s->iov, v, (size_t)n * sizeof *v);
                s->niov = n;
                return write_pending(s, err);
            }
            continue;
        }
        if (w <= 0) return write_failed(s, w < 0 ? errno : EIO, s->pos - s->pending, err);
        s->sp_len += (size_t)w;
        s->pending -= (size_t)w;
        v = tio__iov_skip(v, &n, (size_t)w);
    }
    pending_taken(s);
    return TIO_OK;
}

/* Moves *n bytes at offset *off of in_fd into the file by splice() through
 * the sink's pipe, what is pending first. Returns TIO_OK with *n 0, or with
 * *n > 0 where splice() was refused (no pipe, a source file system without
 * it): the rest, and every range after it, is read in (sp_on 0). */
static int sp_range(tio_sink *s, int in_fd, size_t *off, size_t *n, tio_error *err) {
    if (!s->sp_open) {
        if (pipe2(s->sp, O_NONBLOCK | O_CLOEXEC) != 0) {
            s->sp_on = 0;
            return TIO_OK;
        }
        s->sp_open = 1;
        /* a smaller pipe cannot hold a piece that starts inside a page */
        int got = fcntl(s->sp[1], F_SETPIPE_SZ, (int)SPLICE_PIPE);
        if (got < (int)SPLICE_PIPE) got = fcntl(s->sp[1], F_SETPIPE_SZ, (int)SPLICE_PIPE_MIN);
        if (got < (int)SPLICE_PIPE_MIN) {
            s->sp_on = 0;
            return TIO_OK;
        }
        s->sp_whole = got >= (int)SPLICE_PIPE;
    }
    if (!s->wpiece && !s->sp_whole) return TIO_OK; /* no room for whole pieces: read in */
    int rc = TIO_OK;
    if (s->niov)
        rc = s->pending > SPLICE_HEAD_MAX ? write_pending(s, err) : sp_take_pending(s, err);
    while (rc == TIO_OK && *n && s->sp_on) {
        loff_t o = (loff_t)*off; /* <= INT64_MAX: the caller checked */
        ssize_t r = splice(in_fd, &o, s->sp[1], NULL, *n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && errno == EAGAIN && s->sp_len) { /* the pipe is full */
            size_t had = s->sp_len;
            rc = sp_drain(s, 0, err);
            if (rc == TIO_OK && s->sp_len == had) rc = sp_drain(s, 1, err);
            continue;
        }
        if (r == 0) return source_failed(s, 0, *off, *n, err);
        if (r < 0 && (errno == EINVAL || errno == ENOSYS || errno == EAGAIN)) {
            s->sp_on = 0; /* not for this source: read in */
            break;
        }
        if (r < 0) return source_failed(s, errno, *off, *n, err);
        s->sp_len += (size_t)r;
        s->pos += (size_t)r;
        *off += (size_t)r;
        *n -= (size_t)r;
        rc = sp_drain(s, 0, err);
    }
    return rc;
}

/* Whether read_in splices n bytes at source offset off (SPLICE_MIN, or
 * SPLICE_WHOLE_MIN where writes stay whole; not while the way is ANY_BUF,
 * TRY_EPOCH; 4K-aliased only where the save measured the way). */
static int sp_wanted(tio_sink *s, size_t off, size_t n) {
    if (!s->sp_on || s->run_len || n < SPLICE_MIN || way_now(s) == ANY_BUF) return 0;
    if (s->pending + n > WRITE_PIECE_HOST) host_pieces(s); /* as write_pending */
    if (!s->wpiece && n < SPLICE_WHOLE_MIN) return 0;
    if (s->any_way == ANY_TRY || s->try_cost[ANY_READ]) return 1; /* measured */
    uintptr_t d = (uintptr_t)(s->base + s->pos - (uint64_t)off) & (ALIAS_PAGE - 1);
    return d == 0 || d >= ALIGN;
}
#endif

/* Reads n bytes at offset `off` of in_fd into the copy buffer, READ_PIECE
 * at a time, and writes them with what is pending: what cat does, and on a
 * virtual machine (nested paging) 2-5x faster than writing the same bytes
 * from the mapping, whose 4 KiB pages each cost a TLB walk (ext4 and tmpfs,
 * Linux 6.18: docs/performance.md). A source shorter than when it was
 * mapped is an error, not a SIGBUS. Each piece is read into a slot of its
 * own, where its output offset wants it (ALIGN), when what is pending is
 * written (fills_do): pieces that follow one another in the source go in
 * one preadv() even with a header between. Read into one piece of the
 * buffer, the bytes of the next range would lie where its output offset
 * wants them only by chance, and moving them there cost more than the
 * pread() it saved (docs/performance.md). */
static int read_in(tio_sink *s, int in_fd, size_t off, size_t n, tio_error *err) {
#ifdef __linux__
    if (sp_wanted(s, off, n)) {
        int rc = sp_range(s, in_fd, &off, &n, err);
        if (rc || n == 0) return rc;
    }
#endif
    while (n) {
        /* The piece that makes what is pending due for writing (flush_due),
         * or fills the buffer, ends where the output reaches a multiple of
         * READ_PIECE, so that the writes start and end there: the page
         * cache's large folios must be aligned in the file, and writes that
         * started at the header's offset past each boundary made small ones
         * (ext4, Linux 6.18, 1 GiB: 16,385 folios, 4,743 aligned). Other
         * pieces are whole tensors (one pread each) up to READ_PIECE. */
        size_t want = n < READ_PIECE ? n : READ_PIECE;
        size_t edge = READ_PIECE - (size_t)((s->base + s->pos) % READ_PIECE);
        if (want > edge && (s->pending + want >= s->flush_at || s->buf == s->first ||
                            s->cap - s->len < want + READ_PIECE))
            want = edge;
        if (s->buf == s->first || s->cap - s->len < want + 2 * ALIGN ||
            s->niov == TIO__SINK_IOV) {
            int rc = write_pending(s, err);
            if (rc) return rc;
            if (s->buf == s->first && (rc = big_buf(s, err))) return rc;
        }
        buf_align(s, want);
        if (want >= ALIGN_MIN) s->len += alias_skip((uintptr_t)(s->buf + s->len), off);
        int rc = s->nfill == FILL_MAX ? fills_do(s, err) : TIO_OK;
        if (rc) return rc;
        /* read when what is pending is written (fills_do); off <= INT64_MAX */
        s->fill[s->nfill++] = (struct tio__sink_fill){in_fd, s->buf + s->len, off, want};
        rc = gather(s, s->buf + s->len, want, err); /* room in iov[] was made above */
        if (rc) return rc;
        s->len += want;
        s->pos += want;
        off += want;
        n -= want;
        tio__sink_progress(s);
        if (flush_due(s, 0) && (rc = write_pending(s, err))) return rc;
    }
    return TIO_OK;
}

/* The range goes to read_in, and so would a range that continues it in the
 * source (at the same distance: not congruent either): it waits as the read
 * range, which such ranges join. */
static int rd_defer(tio_sink *s, int in_fd, size_t off, size_t n) {
    s->rd_fd = in_fd;
    s->rd_off = off;
    s->rd_len = n;
    return TIO_OK;
}

/* Reads the read range in (read_in): one call however many ranges joined
 * it, so that a run of tensors that lie back to back in the source and in
 * the output (GGUF -> safetensors at offsets not congruent) takes one
 * splice() or pread() per piece, not per tensor. */
static int rd_take(tio_sink *s, tio_error *err) {
    size_t n = s->rd_len;
    s->rd_len = 0;
    return read_in(s, s->rd_fd, s->rd_off, n, err);
}

/* The run grew by n bytes: the position moves past them, and with a
 * progress function a long run is copied as it grows (run_cut). */
static int run_grown(tio_sink *s, size_t n, tio_error *err) {
    s->pos += n;
    return s->progress && s->run_len >= RUN_PROGRESS ? run_cut(s, err) : TIO_OK;
}

/* n bytes at source offset `off` (mapped at `mapped`, sink position `at`
 * in the file) into the open run, or a run started with them (back where
 * the pending bytes begin, where it can); fewer than RUN_MIN read in. */
static int run_add(tio_sink *s, int in_fd, size_t off, const uint8_t *mapped, uint64_t at,
                   size_t n, tio_error *err) {
    if (n < RUN_MIN) return read_in(s, in_fd, off, n, err); /* a run may start back here */
    int rc = fills_do(s, err); /* run_back compares what is pending */
    if (rc) return rc;
    if (!s->run_len && run_back(s, in_fd, off, mapped, at, n)) return run_grown(s, n, err);
    rc = write_pending(s, err); /* what came before goes first (a run too) */
    if (rc) return rc;
    s->run_fd = in_fd;
    s->run_src = off;
    s->run_dst = s->pos;
    s->run_len = n;
    s->run_map = mapped;
    return run_grown(s, n, err);
}

/* The way bytes at non-congruent offsets go now (TRY_EPOCH); the first
 * such range of a save decides whether it tries the ways. */
static int any_way(tio_sink *s) {
    if (s->any_way == ANY_FIRST) {
        s->any_way = s->expect >= TRY_MIN ? ANY_TRY : ANY_READ;
        if (s->any_way == ANY_TRY) {
            /* the host is asked before the clock starts: the first
             * question may read /proc/pagetypeinfo (8-17 ms of the
             * kernel's counting, more than a 16 MiB epoch's 4-5 ms), which
             * fell on the first epoch's way, as big_buf's setup did */
            host_pieces(s);
            s->try_t0 = tio__host_cpu_ns();
            s->try_pos0 = tio__sink_pos(s);
        }
    }
    return way_now(s);
}

/* The way whose epoch cost least so far (read in where none was measured:
 * no clock). */
static int try_best(const tio_sink *s) {
    int best = ANY_READ;
    for (int w = 0; w < ANY_WAYS; w++)
        if (s->try_cost[w] && (!s->try_cost[best] || s->try_cost[w] < s->try_cost[best]))
            best = w;
    return best;
}

/* Whether the way has lost by far: its epoch cost more than TRY_LOSE_PCT
 * percent of the best epoch of any way (a product past 2^64 has lost). */
static bool try_lost(const tio_sink *s, int way) {
    uint64_t best = s->try_cost[try_best(s)], mine, theirs;
    if (!best || !s->try_cost[way]) return false;
    if (tio__mul64_ovf(s->try_cost[way], 100, &mine)) return true;
    return !tio__mul64_ovf(best, TRY_LOSE_PCT, &theirs) && mine > theirs;
}

/* Counts n bytes of the epoch being tried; at its end writes what is
 * pending, takes the epoch's cost (thread CPU ns per KiB written since it
 * began), skips the epochs of ways that lost by far, and after the last
 * epoch keeps the way that cost least. */
static int try_count(tio_sink *s, size_t n, tio_error *err) {
    s->try_bytes += n;
    if (s->try_bytes < TRY_EPOCH) return TIO_OK;
    int rc = tio__sink_flush(s, err);
    if (rc) return rc;
    uint64_t t = tio__host_cpu_ns(), pos = tio__sink_pos(s);
    uint64_t kib = (pos - s->try_pos0) >> 10; /* >= TRY_EPOCH / 1 KiB */
    int way = try_order[s->try_epoch];
    if (s->try_t0 && t > s->try_t0 && kib) {
        uint64_t cost = (t - s->try_t0) / kib;
        if (cost == 0) cost = 1;
        if (!s->try_cost[way] || cost < s->try_cost[way]) s->try_cost[way] = cost;
    }
    do s->try_epoch++;
    while (s->try_epoch < TRY_EPOCHS && try_lost(s, try_order[s->try_epoch]));
    if (s->try_epoch == TRY_EPOCHS) {
        s->any_way = try_best(s);
        return TIO_OK;
    }
    s->try_t0 = t;
    s->try_pos0 = pos;
    s->try_bytes = 0;
    return TIO_OK;
}

static int copy_range1(tio_sink *s, int in_fd, const void *map_, size_t map_size, size_t off,
                       size_t n, tio_error *err) {
    if (s->failed) return tio__err(err, TIO_E_IO, NULL, -1, "write after a failed write");
    if (n == 0) return TIO_OK;
    if (s->rd_len) {
        /* nothing was written since: the output continues it too */
        if (in_fd == s->rd_fd && off == s->rd_off + s->rd_len && n <= SIZE_MAX - s->rd_len) {
            s->rd_len += n;
            return s->any_way == ANY_TRY ? try_count(s, n, err) : TIO_OK;
        }
        int rc = rd_take(s, err);
        if (rc) return rc;
    }
    const uint8_t *map = map_, *mapped = map + off;
    if (s->fd < 0 || in_fd < 0 || (uint64_t)map_size > (uint64_t)INT64_MAX)
        return write_mapped(s, map, map_size, off, n, err);
    if (s->no_copy || s->base == UINT64_MAX) return rd_defer(s, in_fd, off, n);
    uint64_t at;
    if (tio__add64_ovf(s->base, s->pos, &at))
        return tio__err(err, TIO_E_OVERFLOW, NULL, -1, "output size overflows");
    bool other = !s->copy_any && at % s->page != off % s->page;
    /* a run compares what is pending with the source's bytes (run_extend) */
    int rc = s->run_len ? fills_do(s, err) : TIO_OK;
    if (rc) return rc;
    if (s->run_len && run_extend(s, in_fd, off, mapped, n)) { /* at the run's distance */
        rc = run_grown(s, n, err);
    } else if (!other) {
        return run_add(s, in_fd, off, mapped, at, n, err);
    } else if (any_way(s) == ANY_COPY) {
        rc = run_add(s, in_fd, off, mapped, at, n, err);
    } else {
        rc = rd_defer(s, in_fd, off, n);
    }
    return rc == TIO_OK && other && s->any_way == ANY_TRY ? try_count(s, n, err) : rc;
}

int tio__sink_copy_range(tio_sink *s, int in_fd, const void *map, size_t map_size, size_t off,
                         size_t n, tio_error *err) {
    /* while the ways may be tried, a range goes in parts that end where an
     * epoch would: a file of one large tensor tries the ways too */
    while (s->any_way == ANY_TRY || (s->any_way == ANY_FIRST && s->expect >= TRY_MIN)) {
        uint64_t k = TRY_EPOCH - s->try_bytes; /* try_bytes < TRY_EPOCH */
        if (k >= n) break;
        int rc = copy_range1(s, in_fd, map, map_size, off, (size_t)k, err);
        if (rc) return rc;
        off += (size_t)k;
        n -= (size_t)k;
    }
    return copy_range1(s, in_fd, map, map_size, off, n, err);
}

int tio__sink_write(tio_sink *s, const void *p, size_t n, tio_error *err) {
    return sink_put(s, p, n, 0, err);
}

int tio__sink_write_ref(tio_sink *s, const void *p, size_t n, tio_error *err) {
    return sink_put(s, p, n, 1, err);
}

int tio__sink_zeros(tio_sink *s, size_t n, tio_error *err) {
    static const uint8_t zeros[4096];
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        int rc = tio__sink_write(s, zeros, k, err);
        if (rc) return rc;
        n -= k;
    }
    return TIO_OK;
}

uint64_t tio__sink_pos(const tio_sink *s) { return s->pos + s->rd_len; }

/* Patches [at, at + n) in place when all of it is still pending in the copy
 * buffer (not written yet, not a caller's referenced bytes): a header
 * patched after its data costs no flush and pwrite(). Checks first (apply
 * 0), then copies (apply 1); returns whether it can / did. */
static int patch_pending(tio_sink *s, uint64_t at, const uint8_t *p, size_t n, int apply) {
    uint64_t o = s->pos - s->pending;
    if (at < o) return 0;
    uintptr_t lo = (uintptr_t)s->buf, hi = lo + s->len; /* the copy buffer's bytes */
    for (int i = 0; i < s->niov && n; i++) {
        const struct iovec *v = &s->iov[i];
        if (at >= o + v->iov_len) {
            o += v->iov_len;
            continue;
        }
        size_t skip = (size_t)(at - o), k = v->iov_len - skip;
        if (k > n) k = n;
        uint8_t *q = (uint8_t *)v->iov_base + skip;
        uintptr_t a = (uintptr_t)q;
        if (a < lo || a > hi || k > hi - a) return 0;
        if (apply) memcpy(q, p, k);
        p += k;
        at += k;
        n -= k;
        o += v->iov_len;
    }
    return n == 0;
}

int tio__sink_patch(tio_sink *s, uint64_t at, const void *p, size_t n, tio_error *err) {
    if (s->failed) return tio__err(err, TIO_E_IO, NULL, -1, "write after a failed write");
    int rc = s->rd_len ? rd_take(s, err) : TIO_OK;
    if (rc == TIO_OK) rc = fills_do(s, err); /* the bytes patched may be a fill's */
    if (rc) return rc;
    if (at > s->pos || n > s->pos - at)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "patch past the end of the output");
    if (s->fd < 0) {
        if (s->fixed) { /* the part inside the caller's buffer */
            if (at >= s->cap) return TIO_OK;
            if (n > s->cap - at) n = (size_t)(s->cap - at);
        }
        memcpy(s->buf + at, p, n);
        return TIO_OK;
    }
    if (patch_pending(s, at, p, n, 0)) {
        patch_pending(s, at, p, n, 1);
        return TIO_OK;
    }
    rc = tio__sink_flush(s, err);
    const uint8_t *q = p;
    while (rc == TIO_OK && n) {
        ssize_t w = pwrite(s->fd, q, n, (off_t)at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return write_failed(s, w < 0 ? errno : EIO, at, err);
        q += (size_t)w;
        at += (uint64_t)w;
        n -= (size_t)w;
    }
    return rc;
}

void tio__buf_put(tio_buf *b, const void *s, size_t n) {
    if (b->oom || n == 0) return;
    if (b->cap - b->len < n) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc - b->len < n) {
            if (nc > SIZE_MAX / 2) {
                b->oom = 1;
                return;
            }
            nc *= 2;
        }
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}
