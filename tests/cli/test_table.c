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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
