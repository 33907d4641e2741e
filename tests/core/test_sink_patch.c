/* tio__sink_patch on a file sink: bytes still pending in the copy buffer
 * are patched in place, bytes the caller lent (tio__sink_write_ref) are
 * never written into (the patch goes to the file after a flush), and a
 * patch spanning both or bytes already written lands in the file too. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sink.h"

enum { SMALL = 100, BIG = 64 << 10 };

static int tmpfile_fd(char *path) {
    strcpy(path, "/tmp/tio_test_patch_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    return fd;
}

static void read_back(int fd, uint8_t *out, size_t n) {
    assert_int_equal(pread(fd, out, n, 0), (ssize_t)n);
}

static void test_patch_pending_and_ref(void **state) {
    (void)state;
    char path[64];
    int fd = tmpfile_fd(path);
    tio_sink *s = malloc(sizeof *s);
    assert_non_null(s);
    tio_error e;
    assert_int_equal(tio__sink_init_fd(s, fd, &e), TIO_OK);
    uint8_t head[SMALL], tail[SMALL];
    memset(head, 'h', sizeof head);
    memset(tail, 't', sizeof tail);
    uint8_t *lent = malloc(BIG), *keep = malloc(BIG);
    assert_non_null(lent);
    assert_non_null(keep);
    for (size_t i = 0; i < BIG; i++) lent[i] = (uint8_t)i;
    memcpy(keep, lent, BIG);
    assert_int_equal(tio__sink_write(s, head, sizeof head, &e), TIO_OK);
    assert_int_equal(tio__sink_write_ref(s, lent, BIG, &e), TIO_OK);
    assert_int_equal(tio__sink_write(s, tail, sizeof tail, &e), TIO_OK);
    /* pending, copied: patched in place, nothing written yet */
    assert_int_equal(tio__sink_patch(s, 10, "ABCD", 4, &e), TIO_OK);
    assert_true(s->niov > 0);
    assert_int_equal(tio__sink_patch(s, SMALL + BIG + 5, "WXYZ", 4, &e), TIO_OK);
    assert_true(s->niov > 0);
    /* the lent bytes, and a patch spanning copied and lent bytes: to the file */
    assert_int_equal(tio__sink_patch(s, SMALL + 7, "lent", 4, &e), TIO_OK);
    assert_int_equal(tio__sink_patch(s, SMALL - 2, "span", 4, &e), TIO_OK);
    assert_memory_equal(lent, keep, BIG);
    /* now all written: a patch of written bytes */
    assert_int_equal(tio__sink_patch(s, 0, "0", 1, &e), TIO_OK);
    assert_int_equal(tio__sink_patch(s, 1, "xh", 2, &e), TIO_OK);
    assert_int_equal(tio__sink_flush(s, &e), TIO_OK);
    assert_int_equal(tio__sink_patch(s, SMALL + BIG + SMALL - 1, "xy", 2, &e), TIO_E_ARGUMENT);

    size_t total = SMALL + BIG + SMALL;
    uint8_t *want = malloc(total), *got = malloc(total);
    assert_non_null(want);
    assert_non_null(got);
    memcpy(want, head, SMALL);
    memcpy(want + SMALL, keep, BIG);
    memcpy(want + SMALL + BIG, tail, SMALL);
    memcpy(want + 10, "ABCD", 4);
    memcpy(want + SMALL + BIG + 5, "WXYZ", 4);
    memcpy(want + SMALL + 7, "lent", 4);
    memcpy(want + SMALL - 2, "span", 4);
    memcpy(want, "0x", 2);
    read_back(fd, got, total);
    assert_memory_equal(got, want, total);
    assert_memory_equal(lent, keep, BIG);
    tio__sink_dispose(s);
    free(s);
    free(want);
    free(got);
    free(lent);
    free(keep);
    close(fd);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_patch_pending_and_ref),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
