/* Shards read as a stream (src/tar/stream.c): from a file, file:, and
 * pipe:COMMAND, member by member as tio_shard_open sees them; the member
 * bound (max_member_bytes); a command's exit status; a command stopped
 * when the stream is freed early; cut shards failing with the code, offset
 * and text of the mapped reader. (URLs: tests/source/test_http.py.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tensio.h"

#define OK(x) assert_int_equal((x), TIO_OK)

static char dir[64];
static char path[128];
static uint8_t *big;
#define BIG (1u << 20)

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/tio-stream-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    snprintf(path, sizeof path, "%s/s.tar", dir);
    big = malloc(BIG);
    if (!big) return -1;
    for (size_t i = 0; i < BIG; i++) big[i] = (uint8_t)(i * 7 + 3);
    tio_shard_writer *w;
    tio_error e;
    if (tio_shard_writer_open(path, NULL, &w, &e) != TIO_OK) return -1;
    char name[300];
    int rc = 0;
    for (int i = 0; i < 6 && !rc; i++) {
        snprintf(name, sizeof name, "d/%04d.cls", i / 2); /* two members per sample */
        if (i % 2) snprintf(name, sizeof name, "d/%04d.txt", i / 2);
        rc = tio_shard_writer_add_bytes(w, name, name, strlen(name), &e);
    }
    memset(name, 'n', 200); /* a pax path */
    memcpy(name + 200, ".long", 6);
    if (!rc) rc = tio_shard_writer_add_bytes(w, name, "x", 1, &e);
    if (!rc) rc = tio_shard_writer_add_bytes(w, "__meta__", "{}", 2, &e);
    if (!rc) rc = tio_shard_writer_add_bytes(w, "z/big.bin", big, BIG, &e);
    if (!rc) rc = tio_shard_writer_add_bytes(w, "z/tail.cls", "7", 1, &e);
    if (rc) {
        tio_shard_writer_abort(w);
        return -1;
    }
    return tio_shard_writer_close(w, &e) == TIO_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    free(big);
    return system(cmd) == 0 ? 0 : -1;
}

/* The stream of source yields the members of the mapped shard at mapped. */
static void same_as(const char *mapped, const char *source) {
    tio_error e;
    tio_shard *s;
    OK(tio_shard_open(mapped, NULL, &s, &e));
    tio_shard_stream *st;
    OK(tio_shard_stream_open(source, NULL, &st, &e));
    size_t n = 0;
    for (;;) {
        const tio_shard_member *m;
        OK(tio_shard_stream_next(st, &m, &e));
        if (!m) break;
        const tio_shard_member *r = tio_shard_member_at(s, n++);
        assert_non_null(r);
        assert_string_equal(m->name, r->name);
        assert_string_equal(m->key, r->key);
        assert_string_equal(m->ext, r->ext);
        assert_int_equal(m->offset, r->offset);
        assert_int_equal(m->size, r->size);
        assert_int_equal(m->sample, r->sample);
        assert_int_equal(m->duplicate, r->duplicate);
        assert_memory_equal(m->data, r->data, m->size);
    }
    assert_int_equal(n, tio_shard_member_count(s));
    assert_int_equal(tio_shard_stream_samples(st), tio_shard_sample_count(s));
    const tio_shard_member *m = (const void *)1;
    OK(tio_shard_stream_next(st, &m, &e)); /* past the end: still the end */
    assert_null(m);
    tio_shard_stream_free(st);
    tio_shard_free(s);
}

static void same_as_mapped(const char *source) { same_as(path, source); }

static void test_sources(void **state) {
    (void)state;
    char src[200];
    same_as_mapped(path);
    snprintf(src, sizeof src, "file:%s", path);
    same_as_mapped(src);
    snprintf(src, sizeof src, "pipe:cat '%s'", path);
    same_as_mapped(src);
    snprintf(src, sizeof src, "pipe:dd if='%s' bs=777 status=none", path); /* odd reads */
    same_as_mapped(src);
}

/* The stream's buffer: many members in more than its working size (4 MiB:
 * the front dropped after what was handed out), a member larger than it
 * (grown), small ones after it (dropped at once), from a file and in odd
 * reads of a command. */
static void test_buffer(void **state) {
    (void)state;
    char many[160], src[300];
    snprintf(many, sizeof many, "%s/many.tar", dir);
    tio_shard_writer *w;
    tio_error e;
    OK(tio_shard_writer_open(many, NULL, &w, &e));
    size_t large = (size_t)6 << 20;
    uint8_t *buf = malloc(large);
    assert_non_null(buf);
    for (size_t i = 0; i < large; i++) buf[i] = (uint8_t)(i * 13 + (i >> 12));
    char name[64];
    for (int i = 0; i < 420; i++) {
        size_t sz = i == 300 ? large : (size_t)(20000 + (i * 7919) % 17000);
        /* KEY.cls, KEY.bin, KEY.BIN: the third a duplicate (case ignored) */
        snprintf(name, sizeof name, "m/%05d.%s", i / 3, i % 3 ? i % 3 == 1 ? "bin" : "BIN" : "cls");
        OK(tio_shard_writer_add_bytes(w, name, buf + (size_t)i * 97 % 4096,
                                      sz > large - 4096 ? large - 4096 : sz, &e));
    }
    OK(tio_shard_writer_close(w, &e));
    free(buf);
    same_as(many, many);
    snprintf(src, sizeof src, "pipe:dd if='%s' bs=777 status=none", many);
    same_as(many, src);
}

static void test_member_limit(void **state) {
    (void)state;
    tio_limits lim = {0};
    lim.max_member_bytes = BIG / 4;
    tio_shard_stream *st;
    tio_error e;
    OK(tio_shard_stream_open(path, &lim, &st, &e));
    const tio_shard_member *m;
    size_t n = 0;
    int rc;
    while ((rc = tio_shard_stream_next(st, &m, &e)) == TIO_OK && m) n++;
    assert_int_equal(rc, TIO_E_LIMIT);
    assert_int_equal(n, 8); /* every member before the big one */
    assert_non_null(strstr(e.message, "max_member_bytes"));
    tio_shard_stream_free(st);
}

static void test_command_status(void **state) {
    (void)state;
    char src[200];
    tio_error e;
    tio_shard_stream *st;
    const tio_shard_member *m;
    int rc;
    snprintf(src, sizeof src, "pipe:cat '%s'; exit 4", path);
    OK(tio_shard_stream_open(src, NULL, &st, &e));
    while ((rc = tio_shard_stream_next(st, &m, &e)) == TIO_OK && m) {
    }
    assert_int_equal(rc, TIO_E_IO);
    assert_non_null(strstr(e.message, "exited with status 4"));
    tio_shard_stream_free(st);
    /* a command that fails before writing a shard: its status, not the tar's */
    OK(tio_shard_stream_open("pipe:echo nothing >&2; exit 3", NULL, &st, &e));
    assert_int_equal(tio_shard_stream_next(st, &m, &e), TIO_E_IO);
    assert_non_null(strstr(e.message, "status 3"));
    tio_shard_stream_free(st);
    /* output that is no tar: the tar's error, the command stopped */
    OK(tio_shard_stream_open("pipe:yes", NULL, &st, &e));
    assert_int_equal(tio_shard_stream_next(st, &m, &e), TIO_E_MAGIC);
    assert_non_null(strstr(e.message, "(in pipe:yes, read as a stream)"));
    tio_shard_stream_free(st);
    /* freed before the end: the command is stopped, free returns */
    snprintf(src, sizeof src, "pipe:cat '%s'; exec sleep 600", path);
    OK(tio_shard_stream_open(src, NULL, &st, &e));
    OK(tio_shard_stream_next(st, &m, &e));
    assert_non_null(m);
    tio_shard_stream_free(st);
    assert_int_equal(tio_shard_stream_open("/nonexistent/x.tar", NULL, &st, &e), TIO_E_IO);
    assert_null(st);
}

/* Cut shards: the stream fails as the mapped reader does. */
static void test_cuts(void **state) {
    (void)state;
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t data[BIG + 16384];
    size_t n = fread(data, 1, sizeof data, f);
    fclose(f);
    char cut[160];
    snprintf(cut, sizeof cut, "%s/cut.tar", dir);
    size_t points[] = {1, 100, 511, 512, 600, 1024, 1500, 4000, 6000, 9000, n / 2, n - 1024,
                       n - 512, n - 1};
    for (size_t k = 0; k < sizeof points / sizeof *points; k++) {
        size_t len = points[k];
        f = fopen(cut, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, len, f), len);
        fclose(f);
        tio_error em, es;
        tio_shard *s = NULL;
        int rm = tio_shard_open_memory(data, len, NULL, &s, &em);
        tio_shard_free(s);
        tio_shard_stream *st;
        OK(tio_shard_stream_open(cut, NULL, &st, &es));
        const tio_shard_member *m;
        int rs;
        while ((rs = tio_shard_stream_next(st, &m, &es)) == TIO_OK && m) {
        }
        tio_shard_stream_free(st);
        if (rm == TIO_OK) { /* the end-of-archive block is there */
            assert_int_equal(rs, TIO_OK);
            continue;
        }
        assert_int_equal(rs, rm);
        assert_int_equal(es.offset, em.offset);
        char want[600];
        snprintf(want, sizeof want, "%s (in %s, read as a stream)", em.message, cut);
        assert_string_equal(es.message, want);
    }
}

/* WebDataset's shard-list notation (tio_shard_list_expand). */
static void expect_list(const char *spec, const char *const *want, size_t nwant) {
    char **l;
    size_t n;
    tio_error e;
    OK(tio_shard_list_expand(spec, NULL, &l, &n, &e));
    assert_int_equal(n, nwant);
    for (size_t i = 0; i < n; i++) assert_string_equal(l[i], want[i]);
    tio_shard_list_free(l, n);
}

static void test_lists(void **state) {
    (void)state;
    const char *a[] = {"s-08.tar", "s-09.tar", "s-10.tar"};
    expect_list("s-{08..10}.tar", a, 3);
    const char *b[] = {"x/a-1", "x/a-2", "x/b-1", "x/b-2", "y3", "y2"};
    expect_list("x/{a,b}-{1..2}::y{3..2}", b, 6);
    const char *c[] = {"https://h/p.tar"};
    expect_list("https://h/p.tar", c, 1);
    const char *d[] = {"s-0.tar", "s-1.tar", "s-009.tar", "s-010.tar"};
    expect_list("s-{0..1}.tar::s-{9..010}.tar", d, 4); /* padded where written so */
    char **l;
    size_t n;
    tio_error e;
    const char *bad[] = {"a{1..2", "a}b", "a{x}b", "a{{1..2}}", "a{1..2}{"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(tio_shard_list_expand(bad[i], NULL, &l, &n, &e), TIO_E_ARGUMENT);
        assert_null(l);
    }
    tio_limits lim = {0};
    lim.max_shards = 100;
    OK(tio_shard_list_expand("{0..9}{0..9}", &lim, &l, &n, &e));
    assert_int_equal(n, 100);
    assert_string_equal(l[57], "57");
    tio_shard_list_free(l, n);
    assert_int_equal(tio_shard_list_expand("{0..9}{0..9}::z", &lim, &l, &n, &e), TIO_E_LIMIT);
    /* a huge product is refused before anything is made */
    assert_int_equal(tio_shard_list_expand("{0..999999}{0..999999}{0..999999}", NULL, &l, &n,
                                           &e), TIO_E_LIMIT);
    assert_int_equal(tio_shard_list_expand("{0..99999999999999999999}", NULL, &l, &n, &e),
                     TIO_E_ARGUMENT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sources),
        cmocka_unit_test(test_buffer),
        cmocka_unit_test(test_member_limit),
        cmocka_unit_test(test_command_status),
        cmocka_unit_test(test_cuts),
        cmocka_unit_test(test_lists),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
