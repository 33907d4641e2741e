/* What happens to an open (mapped) file when someone changes it:
 *  - replaced by rename (what tio_save does): the container keeps reading
 *    the old bytes; the mapping holds the old inode.
 *  - truncated in place by another writer: touching the lost pages raises
 *    SIGBUS (the documented hazard, docs/security.md), shown in a child;
 *  - opened with TIO_OPEN_NO_MMAP: the bytes were read at open, truncation
 *    changes nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tensio.h"

#define NBYTES (4u << 20)

static char dir[] = "/tmp/tio-mmap-XXXXXX";

static tio_container *make(uint8_t fill) {
    tio_container *c = tio_container_new();
    assert_non_null(c);
    uint8_t *data = malloc(NBYTES);
    assert_non_null(data);
    memset(data, fill, NBYTES);
    int64_t shape[1] = {NBYTES};
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = TIO_UINT8;
    d.rank = 1;
    d.shape = shape;
    d.data = data;
    d.nbytes = NBYTES;
    tio_error e;
    assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    free(data);
    return c;
}

static void save(const char *path, uint8_t fill) {
    tio_container *c = make(fill);
    tio_save_options so = {0};
    so.format = "btf";
    tio_error e;
    assert_int_equal(tio_save(c, path, &so, &e), TIO_OK);
    tio_container_free(c);
}

static tio_container *open_file(const char *path, unsigned flags) {
    tio_open_options o = {0};
    o.flags = flags;
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(tio_open(path, &o, &c, &e), TIO_OK);
    return c;
}

/* Sum of the tensor's bytes: reads every page. */
static uint64_t sum(const tio_container *c) {
    const volatile uint8_t *p = tio_tensor_data(tio_container_tensor(c, 0));
    uint64_t s = 0;
    for (size_t i = 0; i < NBYTES; i++) s += p[i];
    return s;
}

static void test_replaced_by_rename(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "%s/r.btf", dir);
    save(path, 3);
    tio_container *c = open_file(path, 0);
    save(path, 5); /* temp + rename over the mapped file */
    assert_int_equal(sum(c), 3ull * NBYTES);
    tio_container *d = open_file(path, 0);
    assert_int_equal(sum(d), 5ull * NBYTES);
    tio_container_free(d);
    tio_container_free(c);
    unlink(path);
}

static void test_truncated_in_place(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "%s/t.btf", dir);
    /* mapped: the child dies of SIGBUS when it reads the lost pages */
    save(path, 7);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tio_container *c = open_file(path, 0);
        signal(SIGBUS, SIG_DFL); /* cmocka catches it otherwise */
        if (truncate(path, 4096) != 0) _exit(3);
        (void)sum(c);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGBUS);
    /* read at open: nothing changes */
    save(path, 9);
    tio_container *c = open_file(path, TIO_OPEN_NO_MMAP);
    assert_int_equal(truncate(path, 4096), 0);
    assert_int_equal(sum(c), 9ull * NBYTES);
    tio_container_free(c);
    unlink(path);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replaced_by_rename),
        cmocka_unit_test(test_truncated_in_place),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(dir);
    return rc;
}
