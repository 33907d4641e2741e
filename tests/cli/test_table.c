/* The CLI's text tables (tools/cli_util.c): a table reserved for its rows
 * prints the same as one grown cell by cell, also when the reservation is
 * too small or absurd; columns pad to their widest cell. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Fills t with a heading and n rows; returns the printed text (malloc). */
static char *fill_and_print(cli_table *t, size_t n) {
    cli_table_add(t, "INDEX");
    cli_table_add(t, "NAME");
    cli_table_add(t, "NBYTES");
    for (size_t i = 0; i < n; i++) {
        cli_table_add(t, "%zu", i);
        cli_table_add(t, "%s", i % 7 ? "w" : "a much longer name, to widen the column");
        cli_table_add(t, "%llu", (unsigned long long)i * 4096u);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(cli_table_print(t, f), CLI_EXIT_OK);
    assert_int_equal(fclose(f), 0);
    return buf;
}

static void test_reserve(void **state) {
    (void)state;
    cli_table plain, exact, small, absurd;
    cli_table_init(&plain, 3, 1u << 0 | 1u << 2);
    cli_table_init(&exact, 3, 1u << 0 | 1u << 2);
    cli_table_init(&small, 3, 1u << 0 | 1u << 2);
    cli_table_init(&absurd, 3, 1u << 0 | 1u << 2);
    cli_table_reserve(&exact, 5001, 64);
    assert_true(exact.cap >= 5001 * 3 && exact.tcap >= 5001 * 64);
    cli_table_reserve(&small, 10, 2); /* grows past it */
    cli_table_reserve(&absurd, SIZE_MAX / 4, SIZE_MAX / 4); /* ignored */
    assert_int_equal(absurd.cap, 0);
    assert_false(absurd.nomem);
    char *a = fill_and_print(&plain, 5000), *b = fill_and_print(&exact, 5000),
         *c = fill_and_print(&small, 5000), *d = fill_and_print(&absurd, 5000);
    assert_string_equal(a, b);
    assert_string_equal(a, c);
    assert_string_equal(a, d);
    /* the heading right-aligned over its column, rows padded to the widest */
    assert_memory_equal(a, "INDEX  NAME", 11);
    assert_non_null(strstr(a, "\n 4999  w  "));
    free(a);
    free(b);
    free(c);
    free(d);
    cli_table_free(&plain);
    cli_table_free(&exact);
    cli_table_free(&small);
    cli_table_free(&absurd);
}

/* The format-free entry points (a listing's hot path) give the cells that
 * cli_table_add gives: the same printed table, to the last byte; a NULL
 * string is "(null)", as glibc's printf; 0 and UINT64_MAX as numbers. */
static void test_plain_cells(void **state) {
    (void)state;
    cli_table f, p;
    cli_table_init(&f, 3, 1u << 0 | 1u << 2);
    cli_table_init(&p, 3, 1u << 0 | 1u << 2);
    static const uint64_t nums[] = {0, 7, 4096, 1000000007u, UINT64_MAX};
    static const char *const strs[] = {"", "w", "caf\xc3\xa9 au lait", NULL, "tab\there"};
    for (size_t i = 0; i < 5; i++) {
        cli_table_add(&f, "%llu", (unsigned long long)nums[i]);
        cli_table_add(&f, "%s", strs[i] ? strs[i] : "(null)");
        cli_table_add(&f, "%zu", (size_t)i);
        cli_table_add_u64(&p, nums[i]);
        cli_table_add_str(&p, strs[i]);
        cli_table_add_u64(&p, i);
    }
    char *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;
    FILE *fa = open_memstream(&a, &la), *fb = open_memstream(&b, &lb);
    assert_non_null(fa);
    assert_non_null(fb);
    assert_int_equal(cli_table_print(&f, fa), CLI_EXIT_OK);
    assert_int_equal(cli_table_print(&p, fb), CLI_EXIT_OK);
    assert_int_equal(fclose(fa), 0);
    assert_int_equal(fclose(fb), 0);
    assert_string_equal(a, b);
    /* numbers right-aligned, text padded to the widest (display) width */
    assert_non_null(strstr(b, "18446744073709551615  tab\there      4\n"));
    assert_non_null(strstr(b, "                   0                0\n"));
    free(a);
    free(b);
    cli_table_free(&f);
    cli_table_free(&p);
}

/* Shapes into a caller's buffer: the bytes cli_shape_string gives, or the
 * size needed when the buffer is short (and the buffer untouched). */
static void test_shape_into(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    assert_non_null(c);
    static const int64_t shape[8] = {2, 0, 1, 3, 1, 1, 1, 5};
    static const float x[30] = {0};
    for (size_t rank = 0; rank <= 8; rank += 4) {
        tio_tensor_desc d = {.dtype = TIO_FLOAT32, .rank = rank, .shape = shape,
                             .layout = TIO_LAYOUT_DENSE, .data = x,
                             .nbytes = rank ? 0 : sizeof(float)};
        tio_error e;
        assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
    }
    static const char *const want[] = {"[]", "[2, 0, 1, 3]", "[2, 0, 1, 3, 1, 1, 1, 5]"};
    for (size_t i = 0; i < 3; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        char buf[3 + 8 * 22], tiny[4];
        memset(tiny, 'x', sizeof tiny);
        assert_int_equal(cli_shape_into(t, buf, sizeof buf), 0);
        assert_string_equal(buf, want[i]);
        char *s = cli_shape_string(t);
        assert_string_equal(s, want[i]);
        free(s);
        size_t need = cli_shape_into(t, tiny, sizeof tiny);
        assert_int_equal(need, i ? 3 + 4 * i * 22 : 0);
        if (need) assert_memory_equal(tiny, "xxxx", 4);
    }
    tio_container_free(c);
    assert_true(cli_text_plain("t000001 caf\xc3\xa9"));
    assert_false(cli_text_plain("a\tb"));
    assert_false(cli_text_plain("del\x7f"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_plain_cells),
        cmocka_unit_test(test_shape_into),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
