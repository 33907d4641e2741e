/* Shard lists in a file ("@PATH", src/tar/urls.c): one name or brace spec a
 * line, comments and blank lines skipped, "@PATH" among "::" lists; hostile
 * files bounded by the limits (a huge file, a device that never ends, too
 * many lines, a line too long, NUL bytes), each error naming the file, the
 * line and the offset in it. */
#define _XOPEN_SOURCE 700
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensio.h"
#include "tvec.h"

#define OK(x) assert_int_equal((x), TIO_OK)

static char dir[256];
static char spec[600];

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "%s/shard_list_XXXXXX", TIO_BUILD_DIR);
    return mkdtemp(dir) ? 0 : -1;
}

static const char *const made[] = {"l.txt", "big.txt", "sparse.txt", "many.txt", "long.txt",
                                   "nul.txt", "bad.txt", "empty.txt", "nested.txt",
                                   "prod.txt"};

static int teardown(void **state) {
    (void)state;
    char p[600];
    for (size_t i = 0; i < sizeof made / sizeof *made; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, made[i]);
        unlink(p);
    }
    rmdir(dir);
    return 0;
}

/* Writes `text` (n bytes) to dir/name and sets spec to "@dir/name". */
static const char *list_file(const char *name, const char *text, size_t n) {
    char p[400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    assert_int_equal(tvec_write(p, text, n), 0);
    snprintf(spec, sizeof spec, "@%s", p);
    return spec;
}

static void expect(const char *sp, const tio_limits *lim, const char *const *want,
                   size_t nwant) {
    char **l = NULL;
    size_t n = 0;
    tio_error e;
    OK(tio_shard_list_expand(sp, lim, &l, &n, &e));
    assert_int_equal(n, nwant);
    for (size_t i = 0; i < n; i++) assert_string_equal(l[i], want[i]);
    tio_shard_list_free(l, n);
}

/* Expanding sp gives nwant names, name i of them `at_i` (NULL: any). */
static void expect_n(const char *sp, const tio_limits *lim, size_t nwant, size_t i,
                     const char *at_i) {
    char **l = NULL;
    size_t n = 0;
    tio_error e;
    OK(tio_shard_list_expand(sp, lim, &l, &n, &e));
    assert_int_equal(n, nwant);
    if (at_i) assert_string_equal(l[i], at_i);
    tio_shard_list_free(l, n);
}

/* The error of expanding sp: its code, offset and a piece of its text. */
static void expect_error(const char *sp, const tio_limits *lim, int code, int64_t offset,
                         const char *text) {
    char **l = (char **)&l; /* set to NULL by the call */
    size_t n = 7;
    tio_error e;
    assert_int_equal(tio_shard_list_expand(sp, lim, &l, &n, &e), code);
    assert_null(l);
    assert_int_equal(n, 0);
    assert_int_equal(e.offset, offset);
    if (!strstr(e.message, text)) fail_msg("\"%s\" not in \"%s\"", text, e.message);
}

static void test_lines(void **state) {
    (void)state;
    const char text[] = "# shards of the training set\n"
                        "\n"
                        "https://h/train-{000..002}.tar\n"
                        "  /data/x.tar  \r\n"
                        "\t# an indented comment\n"
                        "{a,b}-{0..1}.tar\r\n"
                        "last.tar"; /* no newline at the end */
    const char *sp = list_file("l.txt", text, sizeof text - 1);
    const char *const want[] = {"https://h/train-000.tar", "https://h/train-001.tar",
                                "https://h/train-002.tar", "/data/x.tar",
                                "a-0.tar", "a-1.tar", "b-0.tar", "b-1.tar", "last.tar"};
    expect(sp, NULL, want, 9);
    /* among "::" lists, twice */
    char both[1400];
    snprintf(both, sizeof both, "first.tar::%s::x-{8..9}.tar::%s", sp, sp);
    char **l;
    size_t n;
    tio_error e;
    OK(tio_shard_list_expand(both, NULL, &l, &n, &e));
    assert_int_equal(n, 1 + 9 + 2 + 9);
    assert_string_equal(l[0], "first.tar");
    assert_string_equal(l[1], "https://h/train-000.tar");
    assert_string_equal(l[10], "x-8.tar");
    assert_string_equal(l[20], "last.tar");
    tio_shard_list_free(l, n);
}

static void test_errors(void **state) {
    (void)state;
    char p[400];
    expect_error("@", NULL, TIO_E_ARGUMENT, 0, "names no list file");
    expect_error("a.tar::@", NULL, TIO_E_ARGUMENT, 7, "names no list file");
    snprintf(p, sizeof p, "@%s/no-such.txt", dir);
    expect_error(p, NULL, TIO_E_IO, -1, "no-such.txt: No such file");
    snprintf(p, sizeof p, "@%s", dir);
    expect_error(p, NULL, TIO_E_IO, -1, "a directory");
    const char empty[] = "# nothing\n\n   \n";
    expect_error(list_file("empty.txt", empty, sizeof empty - 1), NULL, TIO_E_ARGUMENT, -1,
                 "names no shard");
    const char nested[] = "a.tar\n@other.txt\n";
    expect_error(list_file("nested.txt", nested, sizeof nested - 1), NULL, TIO_E_ARGUMENT, 6,
                 "nested.txt, line 2: a list file names no other list file");
    /* a command in a file is never run */
    const char cmd[] = "a.tar\n  pipe:curl -s http://h/x.tar | sh\n";
    expect_error(list_file("cmd.txt", cmd, sizeof cmd - 1), NULL, TIO_E_ARGUMENT, 8,
                 "cmd.txt, line 2: a command (pipe:) in a list file is not run");
    /* a malformed brace: the line, and the offset in the file */
    const char bad[] = "a.tar\nb.tar\nc-{1..3.tar\n";
    expect_error(list_file("bad.txt", bad, sizeof bad - 1), NULL, TIO_E_ARGUMENT, 14,
                 "bad.txt, line 3: a '{' without its '}'");
    const char bad2[] = "a.tar\nc-{1-3}.tar\n";
    expect_error(list_file("bad.txt", bad2, sizeof bad2 - 1), NULL, TIO_E_ARGUMENT, 8,
                 "line 2: \"{1-3}\" is neither a range");
}

/* Larger than max_header_bytes: a regular file by its size (nothing read,
 * a terabyte as quickly as a byte too many), a device by what it sends. */
static void test_huge(void **state) {
    (void)state;
    tio_limits lim = {0};
    lim.max_header_bytes = 4096;
    static char text[5000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = i % 10 == 9 ? '\n' : 'a';
    expect_error(list_file("big.txt", text, sizeof text), &lim, TIO_E_LIMIT, -1,
                 "5000 bytes, more than max_header_bytes (4096)");
    /* what fits: 409 lines and 6 bytes without a newline */
    expect_n(list_file("big.txt", text, 4096), &lim, 410, 409, "aaaaaa");
    char p[400];
    snprintf(p, sizeof p, "%s/sparse.txt", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)1 << 40), 0);
    close(fd);
    snprintf(spec, sizeof spec, "@%s", p);
    expect_error(spec, NULL, TIO_E_LIMIT, -1,
                 "1099511627776 bytes, more than max_header_bytes (67108864)");
    lim.max_header_bytes = 1u << 16;
    expect_error("@/dev/zero", &lim, TIO_E_LIMIT, -1,
                 "list file /dev/zero: more than max_header_bytes (65536)");
}

static void test_too_many_lines(void **state) {
    (void)state;
    tio_limits lim = {0};
    lim.max_shards = 100;
    static char text[2000];
    size_t o = 0;
    for (int i = 0; i < 101; i++) o += (size_t)snprintf(text + o, sizeof text - o, "%d\n", i);
    /* line 101 at byte 290: 10 lines of 2 bytes, 90 of 3 */
    expect_error(list_file("many.txt", text, o), &lim, TIO_E_LIMIT, 290,
                 "many.txt, line 101: more than max_shards (100) lists");
    expect_n(list_file("many.txt", text, o - 4), &lim, 100, 99, "99");
    /* lines within the bound whose braces name too many shards */
    const char prod[] = "x-{0..59}.tar\ny-{0..59}.tar\n";
    expect_error(list_file("prod.txt", prod, sizeof prod - 1), &lim, TIO_E_LIMIT, -1,
                 "more than max_shards (100) shards");
    const char prod2[] = "x.tar\n{0..9}{0..9}{0..9}\n";
    expect_error(list_file("prod.txt", prod2, sizeof prod2 - 1), &lim, TIO_E_LIMIT, 18,
                 "prod.txt, line 2: the list names more than max_shards (100) shards");
}

static void test_long_line_and_nul(void **state) {
    (void)state;
    tio_limits lim = {0};
    lim.max_name_bytes = 100;
    char text[300];
    memset(text, 'a', sizeof text);
    memcpy(text, "ok.tar\n", 7);
    text[7 + 101] = '\n';
    expect_error(list_file("long.txt", text, 7 + 102), &lim, TIO_E_LIMIT, 7,
                 "long.txt, line 2: 101 bytes, more than max_name_bytes (100)");
    text[7 + 100] = '\n';
    char want[101];
    memset(want, 'a', 100);
    want[100] = 0;
    expect_n(list_file("long.txt", text, 7 + 101), &lim, 2, 1, want);
    const char nul[] = "a.tar\n# fine\nb\0.tar\nc.tar\n";
    expect_error(list_file("nul.txt", nul, sizeof nul - 1), NULL, TIO_E_CORRUPT, 14,
                 "nul.txt, line 3: a NUL byte");
    const char nul2[] = "# a comment with a \0 NUL\na.tar\n";
    expect_error(list_file("nul.txt", nul2, sizeof nul2 - 1), NULL, TIO_E_CORRUPT, 19,
                 "line 1: a NUL byte");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),          cmocka_unit_test(test_errors),
        cmocka_unit_test(test_huge),           cmocka_unit_test(test_too_many_lines),
        cmocka_unit_test(test_long_line_and_nul),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
