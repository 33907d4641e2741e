/* Assertions on the library's status codes for the cmocka tests: on
 * failure they print what was being done, the status's name and the error's
 * message before failing the test. The including file has cmocka.h,
 * stdio.h and tensio.h. */
#ifndef TIO_TEST_TASSERT_H
#define TIO_TEST_TASSERT_H

#define ASSERT_OK(rc, err, what)                                                          \
    do {                                                                                  \
        int rc_ = (rc);                                                                   \
        if (rc_ != TIO_OK) {                                                              \
            fprintf(stderr, "%s: %s: %s\n", (what), tio_status_name(rc_), (err).message); \
            fail();                                                                       \
        }                                                                                 \
    } while (0)

#endif
