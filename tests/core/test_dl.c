/* Libraries loaded when first used (src/core/dl.c): libcrypto, libcurl and
 * libzmq are not mapped by a program that only reads files, and are mapped
 * by the first SHA-256, the first http:// source and the first stream;
 * tio__dl_bind fills a table from a real library and names the library, or
 * the missing function, when it cannot. (This program is linked with
 * --as-needed, tests/CMakeLists.txt: nothing of its own maps libcrypto.) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/dl.h"
#include "core/internal.h"
#include "tvec.h"

/* Whether a shared object whose file name starts with `prefix` is mapped. */
static int mapped(const char *prefix) {
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        const char *slash = strrchr(line, '/');
        if (slash && strncmp(slash + 1, prefix, strlen(prefix)) == 0) found = 1;
    }
    fclose(f);
    return found;
}

static void test_loaded_when_used(void **state) {
    (void)state;
    /* a file: neither library */
    char *path = tvec_path("btf/coo_empty_nnz0.btf");
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(tio_open(path, NULL, &c, &e), TIO_OK);
    tio_container_free(c);
    free(path);
    assert_false(mapped("libcurl"));
    assert_false(mapped("libzmq"));
    assert_false(mapped("libcrypto"));
    /* a SHA-256: libcrypto (the digest of "abc", FIPS 180-2's example) */
    c = tio_container_new();
    assert_non_null(c);
    int64_t three = 3;
    tio_tensor_desc d = {"abc", TIO_UINT8, 1, &three, TIO_LAYOUT_DENSE, "abc", 3, 0, NULL};
    tio_tensor *t = NULL;
    assert_int_equal(tio_container_add(c, &d, 0, &t, &e), TIO_OK);
    uint8_t md[32];
    char hex[65];
    assert_int_equal(tio_tensor_sha256(t, TIO_HASH_VALUES, md, &e), TIO_OK);
    tvec_hex(md, 32, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    tio_container_free(c);
    assert_true(mapped("libcrypto"));
    assert_false(mapped("libcurl"));
    /* an http:// source (nothing listens on port 1 of 127.0.0.1): libcurl */
    /* (refused at once: not a transient failure, so not retried) */
    assert_int_not_equal(tio_open("http://127.0.0.1:1/x.btf", NULL, &c, &e), TIO_OK);
    assert_int_equal(e.code, TIO_E_IO);
    assert_true(mapped("libcurl"));
    assert_false(mapped("libzmq"));
    /* a stream: libzmq */
    tio_stream *s = NULL;
    tio_stream_options so;
    memset(&so, 0, sizeof so);
    so.socket = TIO_SOCKET_PULL;
    so.flags = TIO_STREAM_BIND;
    assert_int_equal(tio_stream_open("inproc://test-dl", &so, &s, &e), TIO_OK);
    assert_true(mapped("libzmq"));
    assert_int_equal(tio_stream_close(s, &e), TIO_OK);
}

typedef struct zfns {
    const char *(*version)(void);
    unsigned long (*crc)(unsigned long, const unsigned char *, unsigned);
} zfns;

static void test_bind(void **state) {
    (void)state;
    static const tio_dl_sym syms[] = {TIO_DL_SYM(zfns, version, "zlibVersion"),
                                      TIO_DL_SYM(zfns, crc, "crc32")};
    zfns t;
    memset(&t, 0, sizeof t);
    tio_dl_lib lib = TIO_DL_LIB("libz.so.1", syms, t);
    assert_true(tio__dl_load(&lib));
    assert_true(tio__dl_load(&lib)); /* once: the second call only looks */
    assert_string_equal(t.version(), zlibVersion());
    const unsigned char b[] = "123456789";
    assert_int_equal(t.crc(0, b, 9), 0xcbf43926ul);

    /* a library that is not there: named, with dlerror's words */
    tio_dl_lib none = TIO_DL_LIB("libtensio-no-such-library.so.7", syms, t);
    assert_false(tio__dl_load(&none));
    assert_non_null(strstr(none.why, "libtensio-no-such-library.so.7 cannot be loaded: "));

    /* a function the library lacks: named */
    static const tio_dl_sym more[] = {TIO_DL_SYM(zfns, version, "zlibVersion"),
                                      TIO_DL_SYM(zfns, crc, "tio_no_such_function")};
    tio_dl_lib lacks = TIO_DL_LIB("libz.so.1", more, t);
    assert_false(tio__dl_load(&lacks));
    assert_false(tio__dl_load(&lacks));
    assert_string_equal(lacks.why, "libz.so.1 has no function tio_no_such_function (too old?)");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loaded_when_used),
        cmocka_unit_test(test_bind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
