/* Compressed shards read as streams (src/tar/decompress.c's incremental
 * decoder under src/tar/stream.c): a shard compressed by Debian's gzip,
 * bzip2, xz and zstd, streamed from the file, through pipe:cat and from
 * standard input ("-"), member by member equal to the mapped reader on the
 * uncompressed tar, also when it is split into several members/frames; a
 * corrupt and a truncated compressed stream failing with the byte offset in
 * the compressed data; bombs bounded by named limits: a member that
 * decompresses past max_member_bytes, endless output after the archive's
 * end past max_header_bytes, decoder windows past what max_member_bytes
 * allows. */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tensio.h"
#include "tvec.h"

#define OK(x) assert_int_equal((x), TIO_OK)

static char dir[256];
static tio_shard *ref; /* the uncompressed tar, mapped */
static size_t tar_size;

static const struct codec {
    const char *tool, *ext, *name;
} codecs[] = {{"gzip", "gz", "gzip"}, {"bzip2", "bz2", "bzip2"}, {"xz", "xz", "xz"},
              {"zstd -q", "zst", "zstd"}};

static char *path_of(const char *name) {
    static char p[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

static void sh(const char *fmt, ...) {
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (system(cmd) != 0) fail_msg("command failed: %s", cmd);
}

static uint64_t file_size(const char *p) {
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    return (uint64_t)st.st_size;
}

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "%s/stream_z_XXXXXX", TIO_BUILD_DIR);
    if (!mkdtemp(dir)) return -1;
    tio_shard_writer *w;
    tio_error e;
    if (tio_shard_writer_open(path_of("s.tar"), NULL, &w, &e) != TIO_OK) return -1;
    static uint8_t data[200000];
    uint32_t x = 12345;
    char name[64];
    int rc = 0;
    for (int i = 0; i < 60 && !rc; i++) {
        size_t n = i == 30 ? sizeof data : (size_t)(i * 97 % 5000);
        for (size_t j = 0; j < n; j++) { /* noise: the compressed file is not tiny */
            x = x * 1103515245u + 12345u;
            data[j] = (uint8_t)(i % 3 ? x >> 24 : j % 7);
        }
        snprintf(name, sizeof name, "d/%04d.%s", i / 2, i % 2 ? "cls" : "bin");
        rc = tio_shard_writer_add_bytes(w, name, data, n, &e);
    }
    if (rc || tio_shard_writer_close(w, &e) != TIO_OK) return -1;
    tar_size = (size_t)file_size(path_of("s.tar"));
    if (tio_shard_open(path_of("s.tar"), NULL, &ref, &e) != TIO_OK) return -1;
    /* each codec whole, and split in two members/frames at an odd offset */
    for (size_t c = 0; c < sizeof codecs / sizeof *codecs; c++) {
        const struct codec *k = &codecs[c];
        sh("%s -c %s > %s", k->tool, path_of("s.tar"), path_of(k->ext));
        sh("head -c 123457 %s | %s -c > %s/two.%s && tail -c +123458 %s | %s -c >> %s/two.%s",
           path_of("s.tar"), k->tool, dir, k->ext, path_of("s.tar"), k->tool, dir, k->ext);
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tio_shard_free(ref);
    sh("rm -rf %s", dir);
    return 0;
}

/* Streams source to its end: every member equal to the mapped tar's. */
static void stream_equal(const char *source, const tio_limits *lim) {
    tio_shard_stream *s;
    tio_error e;
    OK(tio_shard_stream_open(source, lim, &s, &e));
    const tio_shard_member *m;
    size_t i = 0;
    int rc;
    while ((rc = tio_shard_stream_next(s, &m, &e)) == TIO_OK && m) {
        const tio_shard_member *r = tio_shard_member_at(ref, i++);
        assert_non_null(r);
        assert_string_equal(m->name, r->name);
        assert_int_equal(m->offset, r->offset);
        assert_int_equal(m->size, r->size);
        assert_memory_equal(m->data, r->data, (size_t)m->size);
    }
    if (rc) fail_msg("%s: %s", source, e.message);
    assert_int_equal(i, tio_shard_member_count(ref));
    tio_shard_stream_free(s);
}

/* source "-" with a command's output on standard input */
static void stream_stdin(const char *file) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execl("/bin/cat", "cat", file, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    int saved = dup(0);
    assert_true(saved >= 0);
    dup2(fds[0], 0);
    close(fds[0]);
    stream_equal("-", NULL);
    dup2(saved, 0);
    close(saved);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
}

static void test_codecs(void **state) {
    (void)state;
    char src[700];
    stream_equal(path_of("s.tar"), NULL); /* the reference itself */
    for (size_t c = 0; c < sizeof codecs / sizeof *codecs; c++) {
        const char *f = path_of(codecs[c].ext);
        assert_true(file_size(f) < tar_size); /* compressed, really */
        stream_equal(f, NULL);
        snprintf(src, sizeof src, "pipe:cat %s", f);
        stream_equal(src, NULL);
        snprintf(src, sizeof src, "file:%s", f);
        stream_equal(src, NULL);
        stream_stdin(f);
        char two[64];
        snprintf(two, sizeof two, "two.%s", codecs[c].ext);
        stream_equal(path_of(two), NULL);
        snprintf(src, sizeof src, "pipe:cat %s", path_of(two));
        stream_equal(src, NULL);
        /* the mapped reader reads them too (the same decoder, whole) */
        tio_shard *s;
        tio_error e;
        OK(tio_shard_open(path_of(two), NULL, &s, &e));
        assert_int_equal(tio_shard_member_count(s), tio_shard_member_count(ref));
        assert_string_equal(tio_shard_compression(s), codecs[c].name);
        tio_shard_free(s);
    }
}

/* Streams source until it fails: the error, and the members before it. */
static int stream_fail(const char *source, const tio_limits *lim, tio_error *e,
                       size_t *members) {
    tio_shard_stream *s;
    OK(tio_shard_stream_open(source, lim, &s, e));
    const tio_shard_member *m;
    int rc;
    *members = 0;
    while ((rc = tio_shard_stream_next(s, &m, e)) == TIO_OK && m) (*members)++;
    tio_shard_stream_free(s);
    if (rc == TIO_OK) fail_msg("%s: no error", source);
    assert_int_equal(e->code, rc);
    return rc;
}

/* The offset in the message is the error's. */
static void says_offset(const tio_error *e) {
    char at[64];
    snprintf(at, sizeof at, "at byte %lld of the compressed data", (long long)e->offset);
    if (!strstr(e->message, at)) fail_msg("\"%s\" not in \"%s\"", at, e->message);
}

/* A valid first part, then a second member whose header is bad: the
 * members of the first part, then TIO_E_CORRUPT at the bad header. */
static void test_corrupt(void **state) {
    (void)state;
    static const struct {
        const char *bytes;
        size_t n;
    } bad[] = {{"\x1f\x8b\x07\x00\x00\x00\x00\x00\x00\x03", 10},  /* method 7 */
               {"BZh9\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 14}, /* no block magic */
               {"\xfd" "7zXZ\0\0\x01\xde\xad\xbe\xef", 12},         /* header CRC */
               {"\x28\xb5\x2f\xfd\x08\x00\x00\x00\x00\x00", 10}};   /* reserved bit */
    for (size_t c = 0; c < sizeof codecs / sizeof *codecs; c++) {
        char name[64], src[700];
        snprintf(name, sizeof name, "bad.%s", codecs[c].ext);
        const char *f = path_of(name);
        sh("head -c 123457 %s | %s -c > %s", path_of("s.tar"), codecs[c].tool, f);
        uint64_t good = file_size(f);
        FILE *fp = fopen(f, "ab");
        assert_non_null(fp);
        assert_int_equal(fwrite(bad[c].bytes, 1, bad[c].n, fp), bad[c].n);
        fclose(fp);
        for (int how = 0; how < 2; how++) {
            snprintf(src, sizeof src, how ? "pipe:cat %s" : "%s", f);
            tio_error e;
            size_t n;
            assert_int_equal(stream_fail(src, NULL, &e, &n), TIO_E_CORRUPT);
            assert_true(n > 10); /* those before byte 123457 of the tar */
            if (e.offset < (int64_t)good || e.offset > (int64_t)(good + bad[c].n))
                fail_msg("%s: offset %lld outside %llu..+%zu: %s", src, (long long)e.offset,
                         (unsigned long long)good, bad[c].n, e.message);
            says_offset(&e);
            char want[32];
            snprintf(want, sizeof want, "%s stream: ", codecs[c].name);
            assert_non_null(strstr(e.message, want));
            assert_non_null(strstr(e.message, src)); /* the source named */
        }
    }
}

/* Cut at 60 %: TIO_E_TRUNCATED at the cut (every byte taken). */
static void test_truncated(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof codecs / sizeof *codecs; c++) {
        char name[64], src[700];
        snprintf(name, sizeof name, "cut.%s", codecs[c].ext);
        uint64_t cut = file_size(path_of(codecs[c].ext)) * 6 / 10;
        sh("head -c %llu %s > %s", (unsigned long long)cut, path_of(codecs[c].ext),
           path_of(name));
        for (int how = 0; how < 2; how++) {
            snprintf(src, sizeof src, how ? "pipe:cat %s" : "%s", path_of(name));
            tio_error e;
            size_t n;
            assert_int_equal(stream_fail(src, NULL, &e, &n), TIO_E_TRUNCATED);
            assert_int_equal(e.offset, (int64_t)cut);
            says_offset(&e);
            assert_non_null(strstr(e.message, "the data end inside it"));
        }
    }
}

/* Bombs: small compressed files whose output is huge, each stopped by a
 * named limit with the memory it names, never the output's size. */
static void test_bombs(void **state) {
    (void)state;
    /* one member of 64 MiB of zeros, in a few KiB */
    size_t big = (size_t)64 << 20;
    uint8_t *zeros = calloc(1, big);
    assert_non_null(zeros);
    tio_shard_writer *w;
    tio_error e;
    OK(tio_shard_writer_open(path_of("bomb.tar"), NULL, &w, &e));
    OK(tio_shard_writer_add_bytes(w, "0.bin", zeros, big, &e));
    OK(tio_shard_writer_close(w, &e));
    free(zeros);
    sh("zstd -q -c %s > %s && gzip -c %s > %s && rm %s", path_of("bomb.tar"),
       path_of("bomb.tar.zst"), path_of("bomb.tar"), path_of("bomb.tar.gz"),
       path_of("bomb.tar"));
    assert_true(file_size(path_of("bomb.tar.gz")) < big / 256);
    tio_limits lim = {0};
    lim.max_member_bytes = (uint64_t)4 << 20;
    size_t n;
    assert_int_equal(stream_fail(path_of("bomb.tar.zst"), &lim, &e, &n), TIO_E_LIMIT);
    if (!strstr(e.message, "max_member_bytes (4194304)")) fail_msg("%s", e.message);
    assert_int_equal(stream_fail(path_of("bomb.tar.gz"), &lim, &e, &n), TIO_E_LIMIT);
    if (!strstr(e.message, "max_member_bytes (4194304)")) fail_msg("%s", e.message);
    /* endless output after the end of the archive (from a command) */
    char src[900];
    snprintf(src, sizeof src, "pipe:(cat %s; head -c 100000000 /dev/zero) | gzip -1",
             path_of("s.tar"));
    tio_limits lim2 = {0};
    lim2.max_header_bytes = (uint64_t)1 << 20;
    assert_int_equal(stream_fail(src, &lim2, &e, &n), TIO_E_LIMIT);
    assert_int_equal(n, tio_shard_member_count(ref));
    assert_non_null(strstr(e.message, "after the end-of-archive block"));
    /* decoder windows: xz -9 needs 65 MiB, a zstd frame of a pipe keeps its
     * 128 MiB window; max_member_bytes 4 MiB allows 16 MiB and 4 MiB */
    sh("xz -9 -c %s > %s", path_of("s.tar"), path_of("w9.tar.xz"));
    sh("cat %s | zstd -q --long=27 -c > %s", path_of("s.tar"), path_of("w27.tar.zst"));
    assert_int_equal(stream_fail(path_of("w9.tar.xz"), &lim, &e, &n), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "needs more than 16 MiB"));
    assert_int_equal(stream_fail(path_of("w27.tar.zst"), &lim, &e, &n), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "window larger than the bound"));
    stream_equal(path_of("w9.tar.xz"), NULL); /* the defaults allow both */
    stream_equal(path_of("w27.tar.zst"), NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codecs),
        cmocka_unit_test(test_corrupt),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_bombs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
