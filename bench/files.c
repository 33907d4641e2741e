/* tio_bench files: the file cases and their baselines.
 *
 *   files open PATH --group G [--cold]        open + list every tensor (tensio),
 *                                             paired with base:read: read() of the
 *                                             whole file into a warm buffer; an
 *                                             open under 1 ms is timed as the mean
 *                                             of a batch of about 1 ms (fact
 *                                             "batch", from the fastest of 5)
 *   files readall PATH --group G [--cold]     baseline alone: read() the whole file
 *   files touch PATH --group G [--touches N]  baseline: map the file, read one byte
 *                                             of N pages spread over it (default
 *                                             every 4 KiB page), unmap (base:touch;
 *                                             items = touches: the fault cost)
 *   files scan PATH --group G                 open + checksum every tensor's data,
 *                                             paired with base:memcpy of as many
 *                                             bytes between two warm buffers
 *   files sha256 PATH --group G               open + SHA-256 every tensor, paired
 *                                             with OpenSSL over the same bytes in
 *                                             memory
 *   files memcpy --bytes N --group G          baselines: memcpy N bytes, checksum N
 *                                             bytes in memory
 *   files write --format F --size B --tensors N --out PATH --group G [--sync]
 *                                             tio_save of N borrowed tensors (with
 *                                             TIO_SAVE_NO_SYNC unless --sync), each
 *                                             repetition paired with a raw write()
 *                                             of the same bytes (base:write[+fsync])
 *   files spawn --case C --group G --subject S --out PATH [--warm B] [--bytes-of FILE]
 *               -- CMD ARGS...
 *   files spawn --case C --group G --out PATH [--warm B] [--quiet] [--sync-first]
 *               :: base:S0 CMD0 ARGS... :: S1 CMD1 ARGS... [:: S2 ...]
 *       runs CMD once per repetition (PATH removed before each) and reports its
 *       wall time and its peak memory, sampled from /proc/PID/status: RssAnon,
 *       RssFile, RssShmem, and the kernel's peak RSS (VmHWM via wait4). --warm
 *       touches and frees B bytes first (see warm_memory). The bytes reported
 *       are OUT's size, or that of FILE with --bytes-of FILE (CMD's input, for
 *       a command whose output is small, such as a digest). The second form
 *       runs the commands paired and interleaved (bench.h), S0 the baseline.
 *       --quiet sends the commands' standard output to /dev/null. --sync-first
 *       writes every dirty page back (sync(), untimed) before each run: onto a
 *       disk file system each run then starts without the last one's write-back.
 *   files convert-once IN OUT FORMAT          open + save, once (spawned by run.sh
 *                                             through `files spawn`)
 *   files sha256-once IN OUT                  baseline: mmap IN, SHA-256 of the whole
 *                                             mapping in one EVP_Digest, hex to OUT
 *                                             (what rten's onnx_hash costs)
 *
 * --cold evicts the file from the page cache (posix_fadvise DONTNEED, untimed)
 * before each repetition; otherwise the cache is warm (a warm-up pass reads it).
 * Every paired case repeats until steady, up to --max-reps (bench.h). */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gen.h"

static int tio_failed(const char *what, const tio_error *e) {
    return bn_fail("%s: %s: %s", what, tio_status_name(e->code), e->message);
}

static void evict(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
}

static uint64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* ------------------------------------------------------------ open + list */

/* "tensio:<format>" of the container c. */
static void subject_of(const tio_container *c, char *out, size_t cap) {
    const char *f = tio_container_format(c);
    snprintf(out, cap, "tensio:%s", f ? f : "?");
}

static int open_list(const char *path, uint64_t *count, uint64_t *sink, char *subject,
                     size_t cap) {
    tio_container *c;
    tio_error e;
    if (tio_open(path, NULL, &c, &e)) return tio_failed(path, &e);
    subject_of(c, subject, cap);
    size_t n = tio_container_count(c);
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        const char *name = tio_tensor_name(t);
        acc += (uint64_t)tio_tensor_dtype(t) + tio_tensor_rank(t) + tio_tensor_nbytes(t);
        acc += name ? (unsigned char)name[0] : 0;
        const int64_t *shape = tio_tensor_shape(t);
        for (size_t k = 0; k < tio_tensor_rank(t); k++) acc += (uint64_t)shape[k];
    }
    tio_container_free(c);
    *count = n;
    *sink += acc;
    return 0;
}

static int cmd_open(bn_ctx *x, const char *path, const char *group, int cold) {
    uint64_t size = file_size(path), n = 0, sink = 0;
    const char *cas = cold ? "open-cold" : "open";
    unsigned char *buf = bn_big_alloc((size_t)size);
    if (!buf) return bn_fail("open: cannot allocate");
    memset(buf, 0, (size_t)size); /* the buffer is not what is measured */
    bn_paired p;
    if (bn_paired_init(&p, x, cas, group, "base:read", "tensio")) return 1;
    /* An open of microseconds is timed over a batch of opens of about 1 ms
     * in all (at most 1000), the time divided by it: one preemption or timer
     * tick is then not the whole sample. Its size: from the fastest of 5. */
    int rc = 0, batch = 1;
    double fastest = 1;
    for (int i = 0; i < 5 && !cold && !rc; i++) {
        double t0 = bn_now();
        rc = open_list(path, &n, &sink, p.subject[1], sizeof p.subject[1]);
        double t = bn_now() - t0;
        if (t < fastest) fastest = t;
    }
    if (fastest > 0 && fastest < 1e-3)
        batch = fastest * 1000 < 1e-3 ? 1000 : (int)(1e-3 / fastest) + 1;
    for (int r = -x->warmup; !rc && (r < 0 || bn_paired_more(&p)); r++) {
        for (int k = 0; k < 2 && !rc; k++) {
            int s = bn_paired_order(&p, r, k);
            if (cold) evict(path);
            double t;
            if (s == 0) {
                t = bn_read_whole(path, buf, size);
                if (t < 0) rc = bn_fail("%s: short read", path);
            } else {
                double t0 = bn_now();
                for (int b = 0; b < batch && !rc; b++)
                    rc = open_list(path, &n, &sink, p.subject[1], sizeof p.subject[1]);
                t = (bn_now() - t0) / batch;
            }
            if (!rc && r >= 0) bn_paired_set(&p, s, t, size, s ? n : 1);
        }
        if (r >= 0) p.n++;
    }
    if (!rc) {
        bn_paired_emit(&p);
        bn_fact(cas, group, p.subject[1], "tensors", "%" PRIu64, n);
        bn_fact(cas, group, p.subject[1], "batch", "%d", batch);
    }
    bn_paired_free(&p);
    bn_big_free(buf, (size_t)size);
    if (rc) return rc;
    return sink == 0 && n ? bn_fail("open: nothing listed") : 0;
}

static int cmd_readall(bn_ctx *x, const char *path, const char *group, int cold) {
    uint64_t size = file_size(path);
    unsigned char *buf = bn_big_alloc((size_t)size);
    if (!buf) return bn_fail("readall: cannot allocate");
    memset(buf, 0, (size_t)size); /* the buffer is not what is measured */
    for (int r = -x->warmup; r < x->reps; r++) {
        if (cold) evict(path);
        double t = bn_read_whole(path, buf, size);
        if (t < 0) return bn_fail("%s: short read", path);
        if (r >= 0) bn_emit(cold ? "open-cold" : "open", group, "base:read", t, size, 1);
    }
    bn_big_free(buf, (size_t)size);
    return 0;
}

static int cmd_touch(bn_ctx *x, const char *path, const char *group, uint64_t touches) {
    uint64_t n = 0, sink = 0;
    for (int r = -x->warmup; r < x->reps; r++) {
        double t = bn_touch(path, touches, &n, &sink);
        if (t < 0) return bn_fail("%s: cannot map", path);
        if (r >= 0) bn_emit("open", group, "base:touch", t, file_size(path), n);
    }
    bn_fact("open", group, "base:touch", "touches", "%" PRIu64, n);
    return 0;
}

/* ------------------------------------------------------------ scan */

/* open + checksum of every tensor's data: seconds, or < 0 (reported). */
static double scan_once(const char *path, unsigned flags, uint64_t *acc, uint64_t *bytes,
                        uint64_t *count, char *subject, size_t cap) {
    double t0 = bn_now();
    tio_container *c;
    tio_error e;
    tio_open_options o = {.flags = flags};
    if (tio_open(path, &o, &c, &e)) return tio_failed(path, &e), -1;
    subject_of(c, subject, cap);
    size_t n = tio_container_count(c);
    *acc = 0;
    *bytes = 0;
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        size_t nb = tio_tensor_nbytes(t);
        *acc = bn_checksum(tio_tensor_bytes(t), nb, *acc);
        *bytes += nb;
    }
    tio_container_free(c);
    *count = n;
    return bn_now() - t0;
}

/* flags: TIO_OPEN_PREFETCH to populate the mapping in one call first. */
static int cmd_scan(bn_ctx *x, const char *path, const char *group, unsigned flags) {
    uint64_t first = 0, acc = 0, bytes = 0, n = 0;
    bn_paired p;
    if (bn_paired_init(&p, x, "scan", group, "base:memcpy", NULL)) return 1;
    /* the baseline copies as many bytes as the tensors hold */
    unsigned char *a = NULL, *b = NULL;
    if (scan_once(path, flags, &first, &bytes, &n, p.subject[1], sizeof p.subject[1]) < 0 ||
        !(a = bn_big_alloc((size_t)bytes)) || !(b = bn_big_alloc((size_t)bytes))) {
        bn_paired_free(&p);
        return bn_fail("scan: cannot open or allocate");
    }
    bn_fill(a, (size_t)bytes, 7);
    memset(b, 1, (size_t)bytes);
    int rc = 0;
    for (int r = -x->warmup; !rc && (r < 0 || bn_paired_more(&p)); r++) {
        for (int k = 0; k < 2 && !rc; k++) {
            int s = bn_paired_order(&p, r, k);
            double t;
            if (s == 0) {
                double t0 = bn_now();
                memcpy(b, a, (size_t)bytes);
                t = bn_now() - t0;
                acc += b[(size_t)r & 4095];
                if (r >= 0) bn_paired_set(&p, 0, t, bytes, 1);
                continue;
            }
            uint64_t sum = 0;
            t = scan_once(path, flags, &sum, &bytes, &n, p.subject[1], sizeof p.subject[1]);
            if (t < 0) rc = 1;
            else if (sum != first) rc = bn_fail("scan: checksum changed between repetitions");
            else if (r >= 0) bn_paired_set(&p, 1, t, bytes, n);
        }
        if (r >= 0) p.n++;
    }
    if (!rc) {
        bn_paired_emit(&p);
        bn_fact("scan", group, p.subject[1], "checksum", "%016" PRIx64, first);
    }
    bn_paired_free(&p);
    bn_big_free(a, (size_t)bytes);
    bn_big_free(b, (size_t)bytes);
    return rc ? rc : acc == UINT64_MAX ? 1 : 0;
}

static int cmd_sha256(bn_ctx *x, const char *path, const char *group) {
    tio_container *c;
    tio_error e;
    /* baseline: OpenSSL SHA-256 of the same tensors copied to memory. */
    if (tio_open(path, NULL, &c, &e)) return tio_failed(path, &e);
    size_t n = tio_container_count(c);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += tio_tensor_nbytes(tio_container_tensor(c, i));
    unsigned char *buf = bn_big_alloc((size_t)total);
    size_t *len = calloc(n ? n : 1, sizeof *len);
    if (!buf || !len) return bn_fail("sha256: cannot allocate");
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        len[i] = tio_tensor_nbytes(t);
        memcpy(buf + at, tio_tensor_data(t), len[i]);
        at += len[i];
    }
    tio_container_free(c);
    bn_paired p;
    if (bn_paired_init(&p, x, "sha256", group, "base:openssl-mem", "tensio")) return 1;
    int rc = 0;
    for (int r = -x->warmup; !rc && (r < 0 || bn_paired_more(&p)); r++) {
        for (int k = 0; k < 2 && !rc; k++) {
            int s = bn_paired_order(&p, r, k);
            double t0 = bn_now();
            if (s == 0) {
                unsigned char md[32];
                unsigned int mdlen;
                at = 0;
                for (size_t i = 0; i < n; i++) {
                    EVP_Digest(buf + at, len[i], md, &mdlen, EVP_sha256(), NULL);
                    at += len[i];
                }
                if (r >= 0) bn_paired_set(&p, 0, bn_now() - t0, total, n);
                continue;
            }
            /* tensio: open + tio_tensor_sha256 of every tensor. */
            if (tio_open(path, NULL, &c, &e)) {
                rc = tio_failed(path, &e);
                break;
            }
            subject_of(c, p.subject[1], sizeof p.subject[1]);
            uint8_t d[32];
            for (size_t i = 0; i < tio_container_count(c) && !rc; i++)
                if (tio_tensor_sha256(tio_container_tensor(c, i), TIO_HASH_VALUES, d, &e))
                    rc = tio_failed(path, &e);
            tio_container_free(c);
            if (!rc && r >= 0) bn_paired_set(&p, 1, bn_now() - t0, total, n);
        }
        if (r >= 0) p.n++;
    }
    if (!rc) bn_paired_emit(&p);
    bn_paired_free(&p);
    free(len);
    bn_big_free(buf, (size_t)total);
    return rc;
}

/* Standalone baselines (the scan table's reference rows). */
static int cmd_memcpy(bn_ctx *x, uint64_t bytes, const char *group) {
    unsigned char *a = bn_big_alloc((size_t)bytes), *b = bn_big_alloc((size_t)bytes);
    if (!a || !b) return bn_fail("memcpy: cannot allocate");
    bn_fill(a, (size_t)bytes, 7);
    memset(b, 1, (size_t)bytes);
    uint64_t acc = 0;
    for (int r = -x->warmup; r < x->reps; r++) {
        double t0 = bn_now();
        memcpy(b, a, (size_t)bytes);
        double t1 = bn_now();
        acc += b[bytes / 2];
        if (r >= 0) bn_emit("scan", group, "base:memcpy", t1 - t0, bytes, 1);
    }
    for (int r = -x->warmup; r < x->reps; r++) {
        double t0 = bn_now();
        acc += bn_checksum(a, (size_t)bytes, 0);
        double t1 = bn_now();
        if (r >= 0) bn_emit("scan", group, "base:checksum-mem", t1 - t0, bytes, 1);
    }
    bn_big_free(a, (size_t)bytes);
    bn_big_free(b, (size_t)bytes);
    return acc == 0 ? bn_fail("memcpy: impossible checksum") : 0;
}

/* ------------------------------------------------------------ write */

/* Touches and frees n bytes of fresh memory. On a virtual machine that hands
 * freed guest memory back to its host (free page reporting, ballooning), the
 * first touch of a page is a host fault: much slower, and by a varying amount.
 * Writing a file takes fresh pages, so each timed write is preceded by this,
 * for the baseline and tensio alike, to measure the write and not the host. */
static void warm_memory(uint64_t n) {
    unsigned char *p = bn_big_alloc((size_t)n);
    if (!p) return;
    for (uint64_t i = 0; i < n; i += 4096) p[i] = 1;
    bn_big_free(p, (size_t)n);
}

/* open + write() [+ fsync] + close of data[0..size) to out; seconds or < 0. */
static double raw_write(const char *out, const unsigned char *data, uint64_t size, int durable) {
    unlink(out);
    sync();
    warm_memory(size + size / 2);
    double t0 = bn_now();
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    uint64_t done = 0;
    while (done < size) {
        size_t m = size - done > (1u << 30) ? (1u << 30) : (size_t)(size - done);
        ssize_t k = write(fd, data + done, m);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            close(fd);
            return -1;
        }
        done += (uint64_t)k;
    }
    if (durable && fsync(fd) != 0) {
        close(fd);
        return -1;
    }
    if (close(fd) != 0) return -1;
    double t1 = bn_now();
    unlink(out);
    return t1 - t0;
}

/* Each repetition times the baseline (raw write of the same tensor bytes)
 * and then tio_save, one after the other, so that both see the same state
 * of the file system and its write-back. */
static int cmd_write(bn_ctx *x, int argc, char **argv, const char *group) {
    const char *format = bn_opt(argc, argv, "--format", NULL);
    const char *out = bn_opt(argc, argv, "--out", NULL);
    uint64_t size = bn_parse_size(bn_opt(argc, argv, "--size", "0"));
    uint64_t count = strtoull(bn_opt(argc, argv, "--tensors", "1"), NULL, 10);
    if (!format || !out || !size || !count) return bn_fail("write: --format --out --size --tensors");
    uint64_t bytes = bn_data_bytes(size, count);
    void *data = bn_big_alloc((size_t)bytes);
    if (!data) return bn_fail("write: cannot allocate");
    bn_fill(data, (size_t)bytes, 1);
    tio_container *c;
    if (bn_build(format, size, count, data, &c)) return 1;
    int durable = bn_flag(argc, argv, "--sync");
    tio_save_options so = bn_save_options(format);
    if (!durable) so.flags |= TIO_SAVE_NO_SYNC;
    char subject[64], raw[512];
    snprintf(subject, sizeof subject, "tensio:%s%s", format, durable ? "+fsync" : "");
    snprintf(raw, sizeof raw, "%s.raw", out);
    uint64_t first = 0;
    bn_paired p;
    if (bn_paired_init(&p, x, "write", group, durable ? "base:write+fsync" : "base:write",
                       subject))
        return 1;
    int rc = 0;
    for (int r = -x->warmup; !rc && (r < 0 || bn_paired_more(&p)); r++) {
        for (int k = 0; k < 2 && !rc; k++) {
            if (bn_paired_order(&p, r, k) == 0) {
                double tr = raw_write(raw, data, bytes, durable);
                if (tr < 0) rc = bn_fail("%s: raw write: %s", raw, strerror(errno));
                else if (r >= 0) bn_paired_set(&p, 0, tr, bytes, 1);
                continue;
            }
            unlink(out);
            sync(); /* each repetition starts with no dirty pages: untimed */
            warm_memory(bytes + bytes / 2);
            tio_error e;
            double t0 = bn_now();
            if (tio_save(c, out, &so, &e)) {
                rc = tio_failed(out, &e);
                break;
            }
            double t1 = bn_now();
            uint64_t fsz = file_size(out);
            if (r == -x->warmup) first = fsz;
            if (fsz != first) rc = bn_fail("write: output size changed between repetitions");
            else if (r >= 0) bn_paired_set(&p, 1, t1 - t0, fsz, count);
        }
        if (r >= 0) p.n++;
    }
    if (!rc) bn_paired_emit(&p);
    bn_paired_free(&p);
    if (rc) return rc;
    bn_fact("write", group, subject, "file_bytes", "%" PRIu64, first);
    tio_container_free(c);
    bn_big_free(data, (size_t)bytes);
    unlink(out);
    return 0;
}

/* ------------------------------------------------------------ spawn */

/* How often a spawned command's memory is sampled. Every 0.5 ms (until
 * 2026-12-05) the sampling took a share of a processor the command could
 * use: on two processors, tensio's two threads lost it where cp's one did
 * not (tmfile -> btf of 10,000 tensors on ext4, 3 series of 5 pairs each
 * way: medians of paired ratios 0.82-0.88x at 0.5 ms, 0.87-0.96x at 5 ms).
 * Anonymous memory that lives under 5 ms can be missed; the kernel's
 * high-water mark (ru_maxrss, all kinds together, reported beside) cannot. */
#define SPAWN_SAMPLE_NS 5000000L

/* One command of `files spawn`, and the worst memory seen while it ran. */
typedef struct spawn_cmd {
    char **argv;
    bn_mem worst;
    long worst_hwm;
    int quiet; /* stdout to /dev/null */
    int sync_first; /* sync() before each run, untimed */
} spawn_cmd;

/* Runs cmd once (out removed first, then with sync_first every dirty page
 * written back, warm bytes touched first): seconds, or < 0 (reported).
 * Peaks go to cmd->worst when keep. */
static double spawn_once(spawn_cmd *cmd, const char *out, uint64_t warm, int keep) {
    unlink(out);
    if (cmd->sync_first) sync();
    if (warm) warm_memory(warm);
    bn_mem m = {0, 0, 0};
    struct rusage ru;
    int status = 0;
    double t0 = bn_now();
    pid_t pid = fork();
    if (pid < 0) return bn_fail("fork: %s", strerror(errno)), -1;
    if (pid == 0) {
        if (cmd->quiet) {
            int fd = open("/dev/null", O_WRONLY);
            if (fd < 0 || dup2(fd, 1) < 0) _exit(126);
            close(fd);
        }
        execvp(cmd->argv[0], cmd->argv);
        _exit(127);
    }
    for (;;) {
        pid_t w = wait4(pid, &status, WNOHANG, &ru);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return bn_fail("wait4: %s", strerror(errno)), -1;
        bn_mem_sample((int)pid, &m);
        struct timespec ts = {0, SPAWN_SAMPLE_NS};
        nanosleep(&ts, NULL);
    }
    double t1 = bn_now();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return bn_fail("spawn: %s failed (status %d)", cmd->argv[0], status), -1;
    if (keep) {
        if (m.anon > cmd->worst.anon) cmd->worst.anon = m.anon;
        if (m.file > cmd->worst.file) cmd->worst.file = m.file;
        if (m.shmem > cmd->worst.shmem) cmd->worst.shmem = m.shmem;
        if (ru.ru_maxrss > cmd->worst_hwm) cmd->worst_hwm = ru.ru_maxrss;
    }
    return t1 - t0;
}

static void spawn_facts(const char *cas, const char *group, const char *subject,
                        const spawn_cmd *cmd, const char *out) {
    bn_fact(cas, group, subject, "peak_anon_kib", "%" PRIu64, cmd->worst.anon);
    bn_fact(cas, group, subject, "peak_file_kib", "%" PRIu64, cmd->worst.file);
    bn_fact(cas, group, subject, "peak_shmem_kib", "%" PRIu64, cmd->worst.shmem);
    bn_fact(cas, group, subject, "maxrss_kib", "%ld", cmd->worst_hwm);
    bn_fact(cas, group, subject, "out_bytes", "%" PRIu64, file_size(out));
}

static int cmd_spawn(bn_ctx *x, int argc, char **argv) {
    const char *cas = bn_opt(argc, argv, "--case", "convert");
    const char *group = bn_opt(argc, argv, "--group", "-");
    const char *subject = bn_opt(argc, argv, "--subject", NULL);
    const char *out = bn_opt(argc, argv, "--out", NULL);
    const char *bytes_of = bn_opt(argc, argv, "--bytes-of", out);
    uint64_t warm = bn_parse_size(bn_opt(argc, argv, "--warm", "0"));
    int quiet = bn_flag(argc, argv, "--quiet");
    int sync_first = bn_flag(argc, argv, "--sync-first");
    int dd = 1;
    while (dd < argc && strcmp(argv[dd], "--") != 0 && strcmp(argv[dd], "::") != 0) dd++;
    if (!out || dd + 1 >= argc) return bn_fail("spawn: --out, then -- CMD or :: S CMD ...");
    if (strcmp(argv[dd], "--") == 0) { /* one command, unpaired */
        if (!subject) return bn_fail("spawn: --subject S -- CMD");
        spawn_cmd cmd = {argv + dd + 1, {0, 0, 0}, 0, quiet, sync_first};
        for (int r = -x->warmup; r < x->reps; r++) {
            double t = spawn_once(&cmd, out, warm, r >= 0);
            if (t < 0) return 1;
            if (r >= 0) bn_emit(cas, group, subject, t, file_size(bytes_of), 1);
        }
        spawn_facts(cas, group, subject, &cmd, out);
        unlink(out);
        return 0;
    }
    /* :: S0 CMD0 ... :: S1 CMD1 ...: the "::" become the NULLs ending each argv */
    spawn_cmd cmds[BN_PAIR_MAX];
    bn_paired p;
    if (bn_paired_init(&p, x, cas, group, NULL, NULL)) return 1;
    int n = 0;
    for (int i = dd; i < argc; i++) {
        if (strcmp(argv[i], "::") != 0) continue;
        argv[i] = NULL;
        if (i + 2 >= argc || n == BN_PAIR_MAX) return bn_fail("spawn: :: SUBJECT CMD, at most %d",
                                                            BN_PAIR_MAX);
        snprintf(p.subject[n], sizeof p.subject[n], "%s", argv[i + 1]);
        cmds[n] = (spawn_cmd){argv + i + 2, {0, 0, 0}, 0, quiet, sync_first};
        n++;
    }
    if (n < 2 || strncmp(p.subject[0], "base:", 5) != 0)
        return bn_fail("spawn: a base: subject first, then one to %d others", BN_PAIR_MAX - 1);
    p.nsub = n;
    int rc = 0;
    for (int r = -x->warmup; !rc && (r < 0 || bn_paired_more(&p)); r++) {
        for (int k = 0; k < n && !rc; k++) {
            int s = bn_paired_order(&p, r, k);
            double t = spawn_once(&cmds[s], out, warm, r >= 0);
            if (t < 0) rc = 1;
            else if (r >= 0) bn_paired_set(&p, s, t, file_size(bytes_of), 1);
        }
        if (r >= 0) p.n++;
    }
    if (!rc) {
        bn_paired_emit(&p);
        for (int s = 0; s < n; s++) spawn_facts(cas, group, p.subject[s], &cmds[s], out);
    }
    bn_paired_free(&p);
    unlink(out);
    return rc;
}

static int cmd_convert_once(const char *in, const char *out, const char *format) {
    tio_container *c;
    tio_error e;
    if (tio_open(in, NULL, &c, &e)) return tio_failed(in, &e);
    tio_save_options so = bn_save_options(format);
    int rc = tio_save(c, out, &so, &e) ? tio_failed(out, &e) : 0;
    tio_container_free(c);
    return rc;
}

static int cmd_sha256_once(const char *in, const char *out) {
    int fd = open(in, O_RDONLY);
    if (fd < 0) return bn_fail("%s: %s", in, strerror(errno));
    size_t n = (size_t)file_size(in);
    void *p = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (p == MAP_FAILED) return bn_fail("%s: mmap: %s", in, strerror(errno));
    unsigned char md[32];
    unsigned int len = 0;
    int ok = EVP_Digest(p ? p : "", n, md, &len, EVP_sha256(), NULL) == 1;
    if (p) munmap(p, n);
    FILE *f = fopen(out, "w");
    if (!f) return bn_fail("%s: %s", out, strerror(errno));
    for (unsigned i = 0; i < len; i++) fprintf(f, "%02x", md[i]);
    fputc('\n', f);
    return fclose(f) == 0 && ok ? 0 : bn_fail("%s: sha256 failed", out);
}

int bn_cmd_files(bn_ctx *x, int argc, char **argv) {
    if (argc < 2) return bn_fail("files: which case?");
    const char *what = argv[1];
    const char *group = bn_opt(argc, argv, "--group", "-");
    int cold = bn_flag(argc, argv, "--cold");
    if (strcmp(what, "open") == 0 && argc > 2) return cmd_open(x, argv[2], group, cold);
    if (strcmp(what, "readall") == 0 && argc > 2) return cmd_readall(x, argv[2], group, cold);
    if (strcmp(what, "touch") == 0 && argc > 2)
        return cmd_touch(x, argv[2], group,
                         strtoull(bn_opt(argc, argv, "--touches", "0"), NULL, 10));
    if (strcmp(what, "scan") == 0 && argc > 2)
        return cmd_scan(x, argv[2], group,
                        bn_flag(argc, argv, "--prefetch") ? TIO_OPEN_PREFETCH : 0u);
    if (strcmp(what, "sha256") == 0 && argc > 2) return cmd_sha256(x, argv[2], group);
    if (strcmp(what, "memcpy") == 0)
        return cmd_memcpy(x, bn_parse_size(bn_opt(argc, argv, "--bytes", "0")), group);
    if (strcmp(what, "write") == 0) return cmd_write(x, argc, argv, group);
    if (strcmp(what, "spawn") == 0) return cmd_spawn(x, argc, argv);
    if (strcmp(what, "convert-once") == 0 && argc > 4)
        return cmd_convert_once(argv[2], argv[3], argv[4]);
    if (strcmp(what, "sha256-once") == 0 && argc > 3) return cmd_sha256_once(argv[2], argv[3]);
    return bn_fail("files: unknown case or missing path: %s", what);
}
