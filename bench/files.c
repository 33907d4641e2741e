/* tio_bench files: the file cases and their baselines.
 *
 *   files open PATH --group G [--cold]        open + list every tensor (tensio)
 *   files readall PATH --group G [--cold]     baseline: read() the whole file
 *   files scan PATH --group G                 open + checksum every tensor's data
 *   files sha256 PATH --group G               open + SHA-256 every tensor; and
 *                                             OpenSSL over the same bytes in memory
 *   files memcpy --bytes N --group G          baselines: memcpy N bytes, checksum N
 *                                             bytes in memory
 *   files write --format F --size B --tensors N --out PATH --group G [--sync]
 *                                             tio_save of N borrowed tensors (with
 *                                             TIO_SAVE_NO_SYNC unless --sync), each
 *                                             repetition after a raw write() of the
 *                                             same bytes (base:write[+fsync])
 *   files spawn --case C --group G --subject S --out PATH [--warm B] [--bytes-of FILE]
 *               -- CMD ARGS...
 *       runs CMD once per repetition (PATH removed before each) and reports its
 *       wall time and its peak memory, sampled from /proc/PID/status: RssAnon,
 *       RssFile, RssShmem, and the kernel's peak RSS (VmHWM via wait4). --warm
 *       touches and frees B bytes first (see warm_memory). The bytes reported
 *       are OUT's size, or that of FILE with --bytes-of FILE (CMD's input, for
 *       a command whose output is small, such as a digest).
 *   files convert-once IN OUT FORMAT          open + save, once (spawned by run.sh
 *                                             through `files spawn`)
 *   files sha256-once IN OUT                  baseline: mmap IN, SHA-256 of the whole
 *                                             mapping in one EVP_Digest, hex to OUT
 *                                             (what rten's onnx_hash costs)
 *
 * --cold evicts the file from the page cache (posix_fadvise DONTNEED, untimed)
 * before each repetition; otherwise the cache is warm (a warm-up pass reads it). */
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
    char subject[64] = "tensio";
    for (int r = -x->warmup; r < x->reps; r++) {
        if (cold) evict(path);
        double t0 = bn_now();
        if (open_list(path, &n, &sink, subject, sizeof subject)) return 1;
        double t1 = bn_now();
        if (r >= 0) bn_emit(cold ? "open-cold" : "open", group, subject, t1 - t0, size, n);
    }
    bn_fact(cold ? "open-cold" : "open", group, subject, "tensors", "%" PRIu64, n);
    return sink == 0 && n ? bn_fail("open: nothing listed") : 0;
}

static int cmd_readall(bn_ctx *x, const char *path, const char *group, int cold) {
    uint64_t size = file_size(path);
    unsigned char *buf = bn_big_alloc((size_t)size);
    if (!buf) return bn_fail("readall: cannot allocate");
    memset(buf, 0, (size_t)size); /* the buffer is not what is measured */
    for (int r = -x->warmup; r < x->reps; r++) {
        if (cold) evict(path);
        double t0 = bn_now();
        int fd = open(path, O_RDONLY);
        if (fd < 0) return bn_fail("%s: %s", path, strerror(errno));
        uint64_t got = 0;
        while (got < size) {
            ssize_t k = read(fd, buf + got, (size_t)(size - got));
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) break;
            got += (uint64_t)k;
        }
        close(fd);
        double t1 = bn_now();
        if (got != size) return bn_fail("%s: short read", path);
        if (r >= 0) bn_emit(cold ? "open-cold" : "open", group, "base:read", t1 - t0, size, 1);
    }
    bn_big_free(buf, (size_t)size);
    return 0;
}

/* ------------------------------------------------------------ scan */

static int cmd_scan(bn_ctx *x, const char *path, const char *group) {
    uint64_t first = 0;
    char subject[64] = "tensio";
    for (int r = -x->warmup; r < x->reps; r++) {
        double t0 = bn_now();
        tio_container *c;
        tio_error e;
        if (tio_open(path, NULL, &c, &e)) return tio_failed(path, &e);
        subject_of(c, subject, sizeof subject);
        size_t n = tio_container_count(c);
        uint64_t acc = 0, bytes = 0;
        for (size_t i = 0; i < n; i++) {
            const tio_tensor *t = tio_container_tensor(c, i);
            size_t nb = tio_tensor_nbytes(t);
            acc = bn_checksum(tio_tensor_data(t), nb, acc);
            bytes += nb;
        }
        tio_container_free(c);
        double t1 = bn_now();
        if (r == -x->warmup) first = acc;
        if (acc != first) return bn_fail("scan: checksum changed between repetitions");
        if (r >= 0) bn_emit("scan", group, subject, t1 - t0, bytes, n);
    }
    bn_fact("scan", group, subject, "checksum", "%016" PRIx64, first);
    return 0;
}

static int cmd_sha256(bn_ctx *x, const char *path, const char *group) {
    tio_container *c;
    tio_error e;
    char subject[64] = "tensio";
    /* tensio: open + tio_tensor_sha256 of every tensor. */
    for (int r = -x->warmup; r < x->reps; r++) {
        double t0 = bn_now();
        if (tio_open(path, NULL, &c, &e)) return tio_failed(path, &e);
        subject_of(c, subject, sizeof subject);
        size_t n = tio_container_count(c);
        uint64_t bytes = 0;
        uint8_t d[32];
        for (size_t i = 0; i < n; i++) {
            const tio_tensor *t = tio_container_tensor(c, i);
            if (tio_tensor_sha256(t, TIO_HASH_VALUES, d, &e)) return tio_failed(path, &e);
            bytes += tio_tensor_nbytes(t);
        }
        tio_container_free(c);
        double t1 = bn_now();
        if (r >= 0) bn_emit("sha256", group, subject, t1 - t0, bytes, n);
    }
    /* baseline: OpenSSL SHA-256 of the same tensors copied to memory. */
    if (tio_open(path, NULL, &c, &e)) return tio_failed(path, &e);
    size_t n = tio_container_count(c);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += tio_tensor_nbytes(tio_container_tensor(c, i));
    unsigned char *buf = bn_big_alloc((size_t)total);
    if (!buf) return bn_fail("sha256: cannot allocate");
    size_t *len = calloc(n ? n : 1, sizeof *len);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        len[i] = tio_tensor_nbytes(t);
        memcpy(buf + at, tio_tensor_data(t), len[i]);
        at += len[i];
    }
    tio_container_free(c);
    for (int r = -x->warmup; r < x->reps; r++) {
        double t0 = bn_now();
        unsigned char md[32];
        unsigned int mdlen;
        at = 0;
        for (size_t i = 0; i < n; i++) {
            EVP_Digest(buf + at, len[i], md, &mdlen, EVP_sha256(), NULL);
            at += len[i];
        }
        double t1 = bn_now();
        if (r >= 0) bn_emit("sha256", group, "base:openssl-mem", t1 - t0, total, n);
    }
    free(len);
    bn_big_free(buf, (size_t)total);
    return 0;
}

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
    for (int r = -x->warmup; r < x->reps; r++) {
        double tr = raw_write(raw, data, bytes, durable);
        if (tr < 0) return bn_fail("%s: raw write: %s", raw, strerror(errno));
        unlink(out);
        sync(); /* each repetition starts with no dirty pages: untimed */
        warm_memory(bytes + bytes / 2);
        tio_error e;
        double t0 = bn_now();
        if (tio_save(c, out, &so, &e)) return tio_failed(out, &e);
        double t1 = bn_now();
        uint64_t fsz = file_size(out);
        if (r == -x->warmup) first = fsz;
        if (fsz != first) return bn_fail("write: output size changed between repetitions");
        if (r >= 0) {
            bn_emit("write", group, durable ? "base:write+fsync" : "base:write", tr, bytes, 1);
            bn_emit("write", group, subject, t1 - t0, fsz, count);
        }
    }
    bn_fact("write", group, subject, "file_bytes", "%" PRIu64, first);
    tio_container_free(c);
    bn_big_free(data, (size_t)bytes);
    unlink(out);
    return 0;
}

/* ------------------------------------------------------------ spawn */

static int cmd_spawn(bn_ctx *x, int argc, char **argv) {
    const char *cas = bn_opt(argc, argv, "--case", "convert");
    const char *group = bn_opt(argc, argv, "--group", "-");
    const char *subject = bn_opt(argc, argv, "--subject", NULL);
    const char *out = bn_opt(argc, argv, "--out", NULL);
    int dd = 1;
    while (dd < argc && strcmp(argv[dd], "--") != 0) dd++;
    if (!subject || !out || dd + 1 >= argc) return bn_fail("spawn: --subject --out -- CMD");
    char **cmd = argv + dd + 1;
    const char *bytes_of = bn_opt(argc, argv, "--bytes-of", out);
    uint64_t warm = bn_parse_size(bn_opt(argc, argv, "--warm", "0"));
    bn_mem worst = {0, 0, 0};
    long worst_hwm = 0;
    for (int r = -x->warmup; r < x->reps; r++) {
        unlink(out);
        if (warm) warm_memory(warm);
        bn_mem m = {0, 0, 0};
        struct rusage ru;
        int status = 0;
        double t0 = bn_now();
        pid_t pid = fork();
        if (pid < 0) return bn_fail("fork: %s", strerror(errno));
        if (pid == 0) {
            execvp(cmd[0], cmd);
            _exit(127);
        }
        for (;;) {
            pid_t w = wait4(pid, &status, WNOHANG, &ru);
            if (w == pid) break;
            if (w < 0 && errno != EINTR) return bn_fail("wait4: %s", strerror(errno));
            bn_mem_sample((int)pid, &m);
            struct timespec ts = {0, 500000};
            nanosleep(&ts, NULL);
        }
        double t1 = bn_now();
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            return bn_fail("spawn: %s failed (status %d)", cmd[0], status);
        uint64_t sz = file_size(bytes_of);
        if (r >= 0) {
            bn_emit(cas, group, subject, t1 - t0, sz, 1);
            if (m.anon > worst.anon) worst.anon = m.anon;
            if (m.file > worst.file) worst.file = m.file;
            if (m.shmem > worst.shmem) worst.shmem = m.shmem;
            if (ru.ru_maxrss > worst_hwm) worst_hwm = ru.ru_maxrss;
        }
    }
    bn_fact(cas, group, subject, "peak_anon_kib", "%" PRIu64, worst.anon);
    bn_fact(cas, group, subject, "peak_file_kib", "%" PRIu64, worst.file);
    bn_fact(cas, group, subject, "peak_shmem_kib", "%" PRIu64, worst.shmem);
    bn_fact(cas, group, subject, "maxrss_kib", "%ld", worst_hwm);
    bn_fact(cas, group, subject, "out_bytes", "%" PRIu64, file_size(out));
    unlink(out);
    return 0;
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
    if (strcmp(what, "scan") == 0 && argc > 2) return cmd_scan(x, argv[2], group);
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
