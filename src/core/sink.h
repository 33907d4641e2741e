/* Sink internals shared by sink.c and save.c. */
#ifndef TIO_SINK_H
#define TIO_SINK_H

#include "internal.h"

#include <sys/uio.h>

#define TIO__SINK_IOV 256
#define TIO__SINK_FIRST 8192
#define TIO__SINK_FILL 64

typedef struct tio__sink_writer tio__sink_writer;

/* A file sink gathers what it is given into iov[]: small writes are copied
 * into buf (an iovec over the copied range), large ones are referenced
 * (tio__sink_write_ref), and one writev() sends them all. The copy buffer
 * starts as `first`, inside the sink: a small file costs no allocation (a
 * 2 MiB malloc is an mmap and munmap per save); once that fills up, the
 * pending pieces are written and a 2 MiB buffer takes over, its bytes at
 * addresses congruent with their output offsets modulo 64 (sink.c: ALIGN). */
struct tio_sink {
    int fd;        /* -1: memory sink */
    uint8_t *buf;  /* memory: the output; file: the copy buffer (first or malloc'ed) */
    size_t len, cap;
    uint64_t pos;  /* bytes written so far */
    int failed;
    int fixed;     /* memory: buf is the caller's, cap bytes; more is counted, not kept */
    struct iovec iov[TIO__SINK_IOV]; /* file: pending, in order */
    int niov;
    int iov_max;    /* entries one writev() takes */
    size_t pending; /* bytes in iov[] */
    /* tio_save_options.progress: called when pos passes progress_next */
    void (*progress)(void *ctx, uint64_t done, uint64_t total);
    void *progress_ctx;
    uint64_t progress_total, progress_next;
    int no_copy; /* copy_file_range() failed once: write the mapped bytes */
    int copied;      /* a run copy has copied bytes */
    int by_sendfile; /* copy_file_range() said EXDEV at once: runs go by sendfile() */
    /* File: how bytes of a mapped source file go (tio__sink_copy_range). */
    size_t flush_at;   /* gathered bytes are written once they reach this */
    uint64_t base;     /* the file offset of position 0; UINT64_MAX: not a file */
    size_t page;       /* congruence: source and output offsets equal modulo this */
    int copy_any;      /* copy_file_range() also at non-congruent offsets (NFS, SMB) */
    /* A disk: bytes at non-congruent offsets are read in (spliced or not)
     * or copied, the way the save's first bytes measured fastest (sink.c, TRY_EPOCH): any_way
     * is sink.c's ANY_*; an epoch of the trial began at thread CPU time
     * try_t0 and sink position try_pos0, and has taken try_bytes such
     * bytes; try_cost: per way, the least ns per KiB written of its epochs
     * (0: none measured). */
    int any_way;
    unsigned try_epoch;
    uint64_t try_t0, try_pos0, try_bytes;
    uint64_t try_cost[3];
    /* The copy run: run_len bytes at run_src of run_fd (mapped at run_map)
     * that go at position run_dst, copied in one copy_file_range() once the
     * run ends; bytes written after it are pending in iov[] and, when the
     * run is extended over them, become patches where they differ from the
     * source's. run_len 0: no run. */
    int run_fd;
    uint64_t run_src, run_dst;
    size_t run_len;
    const uint8_t *run_map;
    struct tio__sink_patch *patch; /* pwrite()n over the run once it is copied */
    size_t npatch, patch_cap;
    uint8_t *pbytes;               /* the patches' bytes */
    size_t plen, pcap;
    /* the source mappings' pages populated last (sink.c's populate) */
    struct { uintptr_t lo, hi; } pop[8];
    unsigned pop_next;             /* the slot to take next */
    /* writev() in pieces ending at multiples of wpiece of the file (0: whole);
     * wprobe: whether to ask the host once pieces are due (sink.c) */
    size_t wpiece;
    int wprobe;
    uint64_t expect;    /* bytes the save will write, about (its tensors'); 0: few */
    /* ext4: blocks allocated before the writes, up to this file offset (0:
     * none; tio__sink_expect, tio__sink_trim); prealloc_ok: they may be */
    uint64_t prealloc_end;
    int prealloc_ok;
    uint64_t kept_next; /* writes kept whole on such a host: pos at which to ask again */
    uint64_t kept_other; /* of the kept blocks, those not for movable pages (kept_piece) */
    /* read_in where writes go in pieces (wpiece), and its large ranges
     * where they stay whole: source bytes spliced into a pipe of the sink's
     * own and from it into the file (sink.c: SPLICE_MIN). sp_len bytes are
     * in the pipe; they come before what is pending in iov[], and no copy
     * run is open while there are any. */
    int sp_on;   /* splice may be tried (a regular file, not tmpfs; no call refused) */
    int sp_open; /* sp[] is a pipe */
    int sp[2];
    size_t sp_len;
    int sp_whole;  /* the pipe holds SPLICE_PIPE: room for whole pieces */
    /* A range of a source file that goes to read_in, not read yet: the next
     * range that continues it in the source joins it (sink.c: rd_take).
     * rd_len bytes at rd_off of rd_fd, after what is pending; pos does not
     * count them (tio__sink_pos does). */
    int rd_fd;
    size_t rd_off, rd_len;
    /* read_in's reads not made yet (sink.c: FILL_MAX): each of n bytes at
     * off of fd into dst, a slot of the copy buffer already in iov[]; made
     * before anything writes or looks at what is pending */
    int nfill;
    /* A large save onto a disk file system where it may use two processors:
     * what is pending is written by a thread of the sink's own (aw) while
     * the next bytes are read into the second buffer (aw_buf, the buffer
     * the batch out is in); aw_busy: a batch is out, its first byte at
     * sink position aw_at. Every AW_WINDOW bytes the save asks whether the
     * two ran side by side, from the wall clock at aw_wall0 and the process's
     * CPU time at aw_cpu0, and stops the thread where they did not because
     * other work had the processors, as the saving thread's time run and
     * waiting to run since aw_ran0 and aw_wait0 tells (aw_sched: those were
     * read; sink.c, AW_MIN), AW_STRIKES windows in a row (aw_strikes so
     * far); aw_given: the bytes given since aw_pos0. */
    tio__sink_writer *aw;
    uint8_t *aw_buf;
    int aw_ok; /* a disk file system's regular file: a thread may write */
    int aw_busy;
    uint64_t aw_at, aw_next, aw_wall0, aw_cpu0, aw_pos0, aw_given, aw_ran0, aw_wait0;
    int aw_sched;
    unsigned aw_strikes;
    uint8_t first[TIO__SINK_FIRST]; /* file: the first copy buffer */
    struct tio__sink_fill {
        int fd;
        uint8_t *dst;
        size_t off, n;
    } fill[TIO__SINK_FILL];
};

/* The file sink's writes (sink_thread.c). Bytes from file offset `at` to
 * the next multiple of piece: */
size_t tio__room_to(size_t piece, uint64_t at);
/* The *n entries at v less their first m bytes (taken by a write): returns
 * where they now start, *n less those taken whole. */
struct iovec *tio__iov_skip(struct iovec *v, int *n, size_t m);
/* Writes v[0..n) at fd's file position with writev() (at most iov_max
 * entries a call), resuming after short writes, in pieces that end at
 * multiples of `piece` of the file (at: the file offset of the first byte;
 * piece 0: whole). v is consumed. Returns 0 or the errno of the write that
 * failed; *done: the bytes written. */
int tio__writev_pieces(int fd, struct iovec *v, int n, int iov_max, uint64_t at, size_t piece,
                       uint64_t *done);
/* The sink's writer thread, which writes a batch at a time: NULL where it
 * cannot start (no memory, pthread_create failed). */
tio__sink_writer *tio__sink_writer_start(int fd, int iov_max);
/* Gives the writer v[0..n) (the entries copied; their bytes must stay until
 * the batch is waited for) to write as tio__writev_pieces; it is idle. */
void tio__sink_writer_give(tio__sink_writer *w, const struct iovec *v, int n, uint64_t at,
                           size_t piece);
/* Waits until the batch given last is written: 0, or the errno of the
 * write that failed; *done: the batch's bytes written. */
int tio__sink_writer_wait(tio__sink_writer *w, uint64_t *done);
/* Waits for its batch, stops the thread, joins it, frees w (NULL ok). */
void tio__sink_writer_stop(tio__sink_writer *w);

void tio__sink_init_mem(tio_sink *s);
/* Tells a file sink the bytes the save will write, about (its tensors';
 * tio_sink.expect): on ext4 they are allocated in the file before it
 * writes them (sink.c, PREALLOC_MIN), where the file system lets it. */
void tio__sink_expect(tio_sink *s, uint64_t bytes);
/* After the last write: frees the blocks allocated by tio__sink_expect
 * past the file's end (ftruncate() to its size), where the save wrote
 * fewer bytes than it expected. TIO_E_IO where that fails. */
int tio__sink_trim(tio_sink *s, tio_error *err);
/* A memory sink over the caller's buffer of cap bytes (buf may be NULL when
 * cap is 0): writes past cap only count (len, pos), as snprintf does. */
void tio__sink_init_fixed(tio_sink *s, void *buf, size_t cap);
int tio__sink_init_fd(tio_sink *s, int fd, tio_error *err);
int tio__sink_flush(tio_sink *s, tio_error *err);
/* The pieces a save onto a disk file system of `left` bytes more would
 * write in on this host, decided as a save decides it at its start:
 * 64 KiB where the virtual machine's balloon hands free memory back to the
 * host and too little is kept in blocks the host leaves alone (sink.c), 0
 * where writes stay whole. *kept: the bytes in those blocks (0 where the
 * balloon does not report free pages). For the bench's report. */
size_t tio__sink_host_piece(uint64_t left, size_t page, uint64_t *kept);
void tio__sink_dispose(tio_sink *s);
/* Writes the n bytes at offset `off` of file in_fd, which is mapped whole
 * at `map` (map_size bytes, valid until the sink is flushed). A file sink
 * copies them in the kernel (copy_file_range(), what cp does: the mapping is
 * not touched) when the output offset is congruent with `off` modulo the
 * page size, in one call per run of source bytes that lie at the same
 * distance in the output (pieces written between them that differ from the
 * source's bytes are written over the copy with pwrite()); it falls back to
 * by sendfile() where copy_file_range() says EXDEV (two file systems), and
 * writes the mapped bytes where the kernel cannot copy (EINVAL, ENOSYS…) or
 * the source shrank. Other bytes are read into the sink's buffer and
 * written with what is pending, or, where writes go in 64 KiB pieces
 * (sink.c, WRITE_PIECE_HOST), moved by splice() through a pipe of the
 * sink's own; ranges that continue one another in the source with nothing
 * written between go as one (rd_len). On a disk file system a large save
 * times that, spliced and not, against copy_file_range() at those offsets
 * on its first such bytes and keeps the fastest (sink.c, TRY_EPOCH). Memory sinks, and sources without a
 * descriptor (in_fd -1), write the mapped bytes, the mapping's pages
 * populated ahead in one call (MADV_POPULATE_READ) rather than faulted in
 * by the writes (docs/performance.md). The caller checked off + n <=
 * map_size. Returns TIO_OK or an error. */
static inline int tio__sink_is_file(const tio_sink *s) { return s->fd >= 0; }
int tio__sink_copy_range(tio_sink *s, int in_fd, const void *map, size_t map_size, size_t off,
                         size_t n, tio_error *err);
#define TIO__PROGRESS_STEP (1u << 20)
/* Reports progress at `at` bytes if a MiB passed since the last report. */
static inline void tio__sink_progress_at(tio_sink *s, uint64_t at) {
    if (s->progress && at >= s->progress_next) {
        s->progress(s->progress_ctx, at, s->progress_total > at ? s->progress_total : at);
        s->progress_next = at + TIO__PROGRESS_STEP;
    }
}
/* Reports progress at the sink's position, if a MiB passed since the last
 * report; not while a copy run is pending (its bytes are not written yet). */
static inline void tio__sink_progress(tio_sink *s) {
    if (s->run_len == 0) tio__sink_progress_at(s, s->pos);
}

#endif
