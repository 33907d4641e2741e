/* tio_save_options.cast: the rounding of each target at the values where it
 * matters (ties, the largest finite value and past it, subnormals, NaN,
 * float64 through float32), read back from safetensors written by
 * tio_save_memory; which tensors a spec casts; what is refused. PyTorch's
 * own conversions are the reference in tests/core/test_cast.py. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensio.h"

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void add(tio_container *c, const char *name, tio_dtype d, const void *data, size_t n) {
    int64_t shape[1] = {(int64_t)n};
    tio_tensor_desc desc = {name, d, 1, shape, TIO_LAYOUT_DENSE, data,
                            n * tio_dtype_size(d), 0, NULL};
    tio_error e;
    assert_int_equal(tio_container_add(c, &desc, 0, NULL, &e), TIO_OK);
}

/* c saved as safetensors with the cast, opened again (*out freed by the
 * caller with tio_container_free and free(*mem)). */
static int save_cast(const tio_container *c, const char *cast, tio_container **out, void **mem,
                     tio_error *e) {
    tio_save_options o = {.format = "safetensors"};
    o.cast = cast;
    size_t n = 0;
    *out = NULL;
    *mem = NULL;
    int rc = tio_save_memory(c, &o, mem, &n, e);
    if (rc) return rc;
    return tio_open_memory(*mem, n, NULL, out, e);
}

static const tio_tensor *named(const tio_container *c, const char *name) {
    for (size_t i = 0; i < tio_container_count(c); i++)
        if (strcmp(tio_tensor_name(tio_container_tensor(c, i)), name) == 0)
            return tio_container_tensor(c, i);
    fail_msg("no tensor %s", name);
    return NULL;
}

static uint16_t u16_at(const tio_tensor *t, size_t i) {
    const uint8_t *p = (const uint8_t *)tio_tensor_data(t) + 2 * i;
    return (uint16_t)(p[0] | p[1] << 8);
}

/* float32 inputs and their float16 and bfloat16 encodings */
static const struct {
    uint32_t in;
    uint16_t half, bf16;
} cases[] = {
    {0x3f800000u, 0x3c00u, 0x3f80u},  /* 1 */
    {0xbf800000u, 0xbc00u, 0xbf80u},  /* -1 */
    {0x00000000u, 0x0000u, 0x0000u},  /* +0 */
    {0x80000000u, 0x8000u, 0x8000u},  /* -0 */
    {0x3f801000u, 0x3c00u, 0x3f80u},  /* 1 + 2^-11: a half tie, to even (down) */
    {0x3f803000u, 0x3c02u, 0x3f80u},  /* 1 + 3*2^-11: a tie, to even (up) */
    {0x3f808000u, 0x3c04u, 0x3f80u},  /* 1 + 2^-8: a bfloat16 tie, down */
    {0x3f818000u, 0x3c0cu, 0x3f82u},  /* 1 + 3*2^-8: a bfloat16 tie, up */
    {0x477fe000u, 0x7bffu, 0x4780u},  /* 65504, the largest half */
    {0x477fefffu, 0x7bffu, 0x4780u},  /* just under 65520 */
    {0x477ff000u, 0x7c00u, 0x4780u},  /* 65520: a tie, to even, is infinity */
    {0x7f7fffffu, 0x7c00u, 0x7f80u},  /* the largest float: infinite in both */
    {0x7f800000u, 0x7c00u, 0x7f80u},  /* inf */
    {0xff800000u, 0xfc00u, 0xff80u},  /* -inf */
    {0x38800000u, 0x0400u, 0x3880u},  /* 2^-14, the smallest normal half */
    {0x387ff000u, 0x0400u, 0x3880u},  /* 2^-14 (1 - 2^-12): rounds up to it */
    {0x33800000u, 0x0001u, 0x3380u},  /* 2^-24, the smallest subnormal half */
    {0x33000000u, 0x0000u, 0x3300u},  /* 2^-25: a tie, to even, is zero */
    {0x33000001u, 0x0001u, 0x3300u},  /* just over it */
    {0x33c00000u, 0x0002u, 0x33c0u},  /* 1.5*2^-24: a tie, to even (2) */
    {0x80000001u, 0x8000u, 0x8000u},  /* the smallest negative subnormal float */
    {0x7fc00000u, 0x7e00u, 0x7fc0u},  /* NaN */
    {0xffc00001u, 0xfe00u, 0x7fc0u},  /* -NaN with a payload */
    {0x7f800001u, 0x7e00u, 0x7fc0u},  /* a signalling NaN */
};
#define NCASES (sizeof cases / sizeof cases[0])

static void test_rounding(void **state) {
    (void)state;
    float in[NCASES];
    for (size_t i = 0; i < NCASES; i++) in[i] = from_bits(cases[i].in);
    tio_container *c = tio_container_new();
    add(c, "x", TIO_FLOAT32, in, NCASES);
    const char *targets[2] = {"float16", "bfloat16"};
    for (int k = 0; k < 2; k++) {
        tio_container *r;
        void *mem;
        tio_error e;
        assert_int_equal(save_cast(c, targets[k], &r, &mem, &e), TIO_OK);
        const tio_tensor *t = named(r, "x");
        assert_int_equal(tio_tensor_dtype(t), k ? TIO_BFLOAT16 : TIO_FLOAT16);
        for (size_t i = 0; i < NCASES; i++) {
            uint16_t want = k ? cases[i].bf16 : cases[i].half, got = u16_at(t, i);
            if (got != want)
                fail_msg("%s of 0x%08x: 0x%04x, expected 0x%04x", targets[k],
                         (unsigned)cases[i].in, got, want);
        }
        tio_container_free(r);
        free(mem);
    }
    tio_container_free(c);
}

/* float64 goes through float32, as PyTorch's conversions do: a value a
 * direct rounding would take up ends on a tie at float32 and goes to even. */
static void test_float64(void **state) {
    (void)state;
    double in[4] = {1.0 + 0x1p-11 + 0x1p-40, 65519.99, 1e300, -0x1p-30};
    tio_container *c = tio_container_new();
    add(c, "d", TIO_FLOAT64, in, 4);
    tio_container *r;
    void *mem;
    tio_error e;
    assert_int_equal(save_cast(c, "float64=float16", &r, &mem, &e), TIO_OK);
    const tio_tensor *t = named(r, "d");
    assert_int_equal(u16_at(t, 0), 0x3c00u); /* directly rounded: 0x3c01 */
    assert_int_equal(u16_at(t, 1), 0x7bffu);
    assert_int_equal(u16_at(t, 2), 0x7c00u);
    assert_int_equal(u16_at(t, 3), 0x8000u);
    tio_container_free(r);
    free(mem);
    assert_int_equal(save_cast(c, "float32", &r, &mem, &e), TIO_OK);
    t = named(r, "d");
    assert_int_equal(tio_tensor_dtype(t), TIO_FLOAT32);
    const float *f = tio_tensor_data(t);
    assert_true(f[0] == (float)in[0] && isinf(f[2]) && f[3] == (float)in[3]);
    tio_container_free(r);
    free(mem);
    tio_container_free(c);
}

/* A spec's pairs cast what they name and nothing else; the widening ones
 * are exact; a cast to the dtype a tensor has is no change. */
static void test_pairs(void **state) {
    (void)state;
    float fl[3] = {1.5f, -2.25f, 1e-3f};
    double db[2] = {0.1, -3.0};
    uint16_t half[2] = {0x3c00u, 0xc000u}; /* 1, -2 */
    uint8_t e4[2] = {0x38u, 0x7eu};        /* 1, 448 (float8_e4m3fn) */
    int32_t in[2] = {7, -7};
    tio_container *c = tio_container_new();
    add(c, "f", TIO_FLOAT32, fl, 3);
    add(c, "d", TIO_FLOAT64, db, 2);
    add(c, "h", TIO_FLOAT16, half, 2);
    add(c, "e", TIO_FLOAT8_E4M3FN, e4, 2);
    add(c, "i", TIO_INT32, in, 2);
    tio_container *r;
    void *mem;
    tio_error e;
    assert_int_equal(save_cast(c, "float64=float32,float16=float64,float8_e4m3fn=bfloat16", &r,
                               &mem, &e),
                     TIO_OK);
    assert_int_equal(tio_tensor_dtype(named(r, "f")), TIO_FLOAT32);
    assert_memory_equal(tio_tensor_data(named(r, "f")), fl, sizeof fl);
    assert_int_equal(tio_tensor_dtype(named(r, "d")), TIO_FLOAT32);
    assert_true(((const float *)tio_tensor_data(named(r, "d")))[0] == 0.1f);
    assert_int_equal(tio_tensor_dtype(named(r, "h")), TIO_FLOAT64);
    assert_true(((const double *)tio_tensor_data(named(r, "h")))[1] == -2.0);
    assert_int_equal(tio_tensor_dtype(named(r, "e")), TIO_BFLOAT16);
    assert_int_equal(u16_at(named(r, "e"), 0), 0x3f80u);
    assert_int_equal(u16_at(named(r, "e"), 1), 0x43e0u); /* 448 */
    assert_int_equal(tio_tensor_dtype(named(r, "i")), TIO_INT32);
    tio_container_free(r);
    free(mem);
    /* one dtype: every float tensor; float32 to float32 is no change */
    assert_int_equal(save_cast(c, "float32", &r, &mem, &e), TIO_OK);
    const char *fnames[4] = {"f", "d", "h", "e"};
    for (size_t i = 0; i < 4; i++) assert_int_equal(tio_tensor_dtype(named(r, fnames[i])), TIO_FLOAT32);
    assert_int_equal(tio_tensor_dtype(named(r, "i")), TIO_INT32);
    assert_memory_equal(tio_tensor_data(named(r, "f")), fl, sizeof fl);
    assert_true(((const float *)tio_tensor_data(named(r, "e")))[1] == 448.0f);
    tio_container_free(r);
    free(mem);
    tio_container_free(c);
}

static void test_refused(void **state) {
    (void)state;
    float fl[2] = {1.0f, 2.0f};
    tio_container *c = tio_container_new();
    add(c, "f", TIO_FLOAT32, fl, 2);
    const char *bad[] = {"int8",          "float32=int8",     "int8=float16", "float32=",
                         "=float16",      "bfloat16,float16", "float32=float16,float32=bfloat16",
                         "float32=float16,bfloat16", ",", "float8_e5m2", "complex64=float32",
                         "float32=float16=bfloat16"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tio_container *r;
        void *mem;
        tio_error e;
        int rc = save_cast(c, bad[i], &r, &mem, &e);
        if (rc != TIO_E_ARGUMENT) fail_msg("cast \"%s\": %d, expected TIO_E_ARGUMENT", bad[i], rc);
        assert_non_null(strstr(e.message, "cast \""));
        free(mem);
    }
    /* a format without the target */
    tio_save_options o = {.format = "npz", .cast = "bfloat16"};
    tio_error e;
    assert_int_equal(tio_check_save(c, &o, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "the cast makes it bfloat16, which npz cannot store"));
    o.cast = "float16";
    assert_int_equal(tio_check_save(c, &o, &e), TIO_OK);
    o.cast = ""; /* none */
    assert_int_equal(tio_check_save(c, &o, &e), TIO_OK);
    tio_container_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounding),
        cmocka_unit_test(test_float64),
        cmocka_unit_test(test_pairs),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
