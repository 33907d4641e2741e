/*
 * CRC-32 of zip, gzip and zlib's crc32() (polynomial 0x04C11DB7, reflected
 * 0xEDB88320, register preset to and finally xored with 0xFFFFFFFF), with
 * zlib's continuation: tio__crc32(tio__crc32(0, a, n), b, m) is the CRC of
 * a then b. zlib's own crc32() runs at about 3 GB/s; on x86-64 processors
 * with PCLMULQDQ, large inputs are folded with carry-less multiplies instead
 * (about 5x that), 512 bits at a time where VPCLMULQDQ and AVX-512 are
 * there too, chosen per call. Everything else goes to zlib.
 *
 * The folding, written from the algebra (GF(2) polynomials; a "lane" is 16
 * bytes as loaded little-endian into 128 bits):
 *
 *   In the reflected bit order bit i of a lane is the coefficient of
 *   x^(127-i): the low 64 bits H (first in memory) are the high half, the
 *   high 64 bits L the low half, so the lane is X = H x^64 + L. Without the
 *   preset and final xor, the CRC of a message M is M x^32 mod P, and
 *   anything congruent to M mod P has the same CRC, so a lane followed by D
 *   more bits of message may be replaced by anything congruent to X x^D
 *   placed D bits later: H (x^(64+D) mod P) + L (x^D mod P), of degree < 96,
 *   which is xored into the lane D bits on.
 *
 *   A 64x64 carry-less multiply of two reflected values (bit i = x^(63-i))
 *   yields bit k = x^(126-k); read as a reflected 128-bit lane (bit k =
 *   x^(127-k)) that is the product times x. So the constants are one power
 *   lower: K_H = x^(64+D-1) mod P and K_L = x^(D-1) mod P, each stored
 *   reflected in 64 bits (coefficient x^j at bit 63-j, so they sit in bits
 *   32..63), K_H in the low qword (multiplied with H), K_L in the high one.
 *
 *   Four lanes are folded 64 bytes forward at a time (D = 512), then folded
 *   into one (D = 128 three times), then 16 bytes at a time (D = 128). The
 *   lane left over is congruent to the whole prefix folded so far, so the
 *   CRC of prefix + tail equals the CRC, from a zero register, of that lane's
 *   16 bytes + the tail (< 16 bytes), which zlib computes: crc32() with
 *   0xFFFFFFFF presets a zero register. The caller's crc enters as zlib's
 *   does: its complement (the preset register) xored into the first 4 bytes.
 *
 *   The constants were computed with a short Python script (x^k mod P by
 *   shifting and reducing k times, then reflecting into 64 bits), and the
 *   whole scheme checked there against zlib.crc32 before this was written:
 *     D = 512: K_H = x^575 mod P -> 0x653d982200000000
 *              K_L = x^511 mod P -> 0xcad38e8f00000000
 *     D = 128: K_H = x^191 mod P -> 0x65673b4600000000
 *              K_L = x^127 mod P -> 0x9ba54c6f00000000
 *   tests/core/test_crc32.c checks the result against zlib's crc32().
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* Below this, zlib's crc32() (the setup and the final lane cost more). */
#define CRC_FOLD_MIN 256u

static uint32_t crc_zlib(uint32_t crc, const uint8_t *p, size_t n) {
    while (n) {
        uInt k = n > UINT_MAX ? UINT_MAX : (uInt)n;
        crc = (uint32_t)crc32(crc, p, k);
        p += k;
        n -= k;
    }
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define CRC_HAVE_FOLD 1
#include <emmintrin.h>
#include <immintrin.h>
#include <wmmintrin.h>

#define CRC_FOLD_ATTR __attribute__((target("pclmul,sse2")))

/* x * x^D, folded onto the lane D bits on: k = {K_H, K_L}. */
CRC_FOLD_ATTR static inline __m128i crc_fold(__m128i x, __m128i k) {
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

#define CRC_LOAD(q) _mm_loadu_si128((const __m128i *)(const void *)(q))

/* {K_H, K_L} for D = 512 and D = 128 (above) */
#define CRC_K512_H 0x653d982200000000ull
#define CRC_K512_L 0xcad38e8f00000000ull
#define CRC_K128_H 0x65673b4600000000ull
#define CRC_K128_L 0x9ba54c6f00000000ull

/* Folds the rest of a run: x0..x3, the last 64 bytes taken with all before
 * them folded in, then p[0..n). */
CRC_FOLD_ATTR static uint32_t crc_fold_lanes(__m128i x0, __m128i x1, __m128i x2, __m128i x3,
                                             const uint8_t *p, size_t n) {
    const __m128i k512 = _mm_set_epi64x((long long)CRC_K512_L, (long long)CRC_K512_H);
    const __m128i k128 = _mm_set_epi64x((long long)CRC_K128_L, (long long)CRC_K128_H);
    while (n >= 64) {
        x0 = _mm_xor_si128(crc_fold(x0, k512), CRC_LOAD(p));
        x1 = _mm_xor_si128(crc_fold(x1, k512), CRC_LOAD(p + 16));
        x2 = _mm_xor_si128(crc_fold(x2, k512), CRC_LOAD(p + 32));
        x3 = _mm_xor_si128(crc_fold(x3, k512), CRC_LOAD(p + 48));
        p += 64;
        n -= 64;
    }
    x1 = _mm_xor_si128(crc_fold(x0, k128), x1);
    x2 = _mm_xor_si128(crc_fold(x1, k128), x2);
    x3 = _mm_xor_si128(crc_fold(x2, k128), x3);
    while (n >= 16) {
        x3 = _mm_xor_si128(crc_fold(x3, k128), CRC_LOAD(p));
        p += 16;
        n -= 16;
    }
    uint8_t lane[16];
    _mm_storeu_si128((__m128i *)(void *)lane, x3);
    return crc_zlib(crc_zlib(0xFFFFFFFFu, lane, sizeof lane), p, n);
}

/* n >= 64. */
CRC_FOLD_ATTR static uint32_t crc_fold_run(uint32_t crc, const uint8_t *p, size_t n) {
    __m128i x0 = _mm_xor_si128(CRC_LOAD(p), _mm_cvtsi32_si128((int)~crc));
    return crc_fold_lanes(x0, CRC_LOAD(p + 16), CRC_LOAD(p + 32), CRC_LOAD(p + 48), p + 64,
                          n - 64);
}

/* The same four lanes wide: where the processor has VPCLMULQDQ with
 * AVX-512, 16 lanes (256 bytes) are folded 256 bytes forward at a time
 * (D = 2048), the four 512-bit registers then folded into the last one
 * (D = 512: the constants above, in each 128-bit lane), whose four lanes
 * are x0..x3 of the run above. Constants as above:
 *   D = 2048: K_H = x^2111 mod P -> 0x7cc8e1e700000000
 *             K_L = x^2047 mod P -> 0x03f9f86300000000 */
#define CRC_WIDE_ATTR __attribute__((target("avx512f,vpclmulqdq,pclmul,sse2")))
#define CRC_WIDE_MIN 1024u
#define CRC_K2048_H 0x7cc8e1e700000000ull
#define CRC_K2048_L 0x03f9f86300000000ull

CRC_WIDE_ATTR static inline __m512i crc_fold_wide(__m512i x, __m512i k) {
    return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
                            _mm512_clmulepi64_epi128(x, k, 0x11));
}

/* n >= 256. */
CRC_WIDE_ATTR static uint32_t crc_fold_run_wide(uint32_t crc, const uint8_t *p, size_t n) {
    const __m512i k2048 =
        _mm512_broadcast_i32x4(_mm_set_epi64x((long long)CRC_K2048_L, (long long)CRC_K2048_H));
    const __m512i k512 =
        _mm512_broadcast_i32x4(_mm_set_epi64x((long long)CRC_K512_L, (long long)CRC_K512_H));
    __m512i first = _mm512_inserti32x4(_mm512_setzero_si512(), _mm_cvtsi32_si128((int)~crc), 0);
    __m512i z0 = _mm512_xor_si512(_mm512_loadu_si512((const void *)p), first);
    __m512i z1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i z2 = _mm512_loadu_si512((const void *)(p + 128));
    __m512i z3 = _mm512_loadu_si512((const void *)(p + 192));
    p += 256;
    n -= 256;
    while (n >= 256) {
        z0 = _mm512_xor_si512(crc_fold_wide(z0, k2048), _mm512_loadu_si512((const void *)p));
        z1 = _mm512_xor_si512(crc_fold_wide(z1, k2048),
                              _mm512_loadu_si512((const void *)(p + 64)));
        z2 = _mm512_xor_si512(crc_fold_wide(z2, k2048),
                              _mm512_loadu_si512((const void *)(p + 128)));
        z3 = _mm512_xor_si512(crc_fold_wide(z3, k2048),
                              _mm512_loadu_si512((const void *)(p + 192)));
        p += 256;
        n -= 256;
    }
    z1 = _mm512_xor_si512(crc_fold_wide(z0, k512), z1);
    z2 = _mm512_xor_si512(crc_fold_wide(z1, k512), z2);
    z3 = _mm512_xor_si512(crc_fold_wide(z2, k512), z3);
    return crc_fold_lanes(_mm512_extracti32x4_epi32(z3, 0), _mm512_extracti32x4_epi32(z3, 1),
                          _mm512_extracti32x4_epi32(z3, 2), _mm512_extracti32x4_epi32(z3, 3), p,
                          n);
}

/* __builtin_cpu_supports reads what libgcc / compiler-rt found at start-up
 * (AVX-512 only where the OS saves its registers) */
static int crc_wide(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq");
}
#else
#define CRC_HAVE_FOLD 0
#endif

uint32_t tio__crc32_with(uint32_t crc, const void *p, size_t n, int how) {
    const uint8_t *b = p;
#if CRC_HAVE_FOLD
    if (how != 1 && n >= CRC_FOLD_MIN && __builtin_cpu_supports("pclmul"))
        return how == 0 && n >= CRC_WIDE_MIN && crc_wide() ? crc_fold_run_wide(crc, b, n)
                                                           : crc_fold_run(crc, b, n);
#else
    (void)how;
#endif
    return crc_zlib(crc, b, n);
}

uint32_t tio__crc32(uint32_t crc, const void *p, size_t n) { return tio__crc32_with(crc, p, n, 0); }

int tio__crc32_folds(void) {
#if CRC_HAVE_FOLD
    return __builtin_cpu_supports("pclmul") ? 1 + crc_wide() : 0;
#else
    return 0;
#endif
}

/* ------------------------------------------------------------- a job */

struct tio_crc_job {
    const uint8_t *const *p;
    const size_t *n;
    size_t count;
    uint32_t *crc;
    tio__mapped *files; /* the mapped files read by pread() (a copy) */
    size_t nfiles;
    uint8_t *buf;       /* CRC_READ bytes, for reads from them */
    size_t done; /* buffers whose CRC is in crc[] (under mu) */
    bool stop;   /* under mu */
    bool threaded;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
};

/* Pieces read from the file: well inside L2, where the CRC finds them. */
#define CRC_READ ((size_t)256 << 10)

/* The CRC of p[0..n): bytes of the mapped file read from it by pread()
 * into the job's buffer, not through the mapping. Reading a mapping costs
 * a page fault (and, under a paravirtual MMU, a trap to the hypervisor)
 * per page the first time; a read copies from the kernel's own mapping
 * of the page cache: 1 GiB in 0.20-0.25 s, against 0.55-0.85 s through a
 * fresh mapping (docs/performance.md). A read that fails or comes short
 * (the file changed) leaves the rest to the mapping, as before. */
static uint32_t crc_item(const tio_crc_job *j, const uint8_t *p, size_t n) {
    uint32_t c = 0;
    size_t off;
    const tio__mapped *f = j->buf && p ? tio__mapped_find(j->files, j->nfiles, p, n, &off) : NULL;
    if (f && f->fd >= 0) {
        while (n) {
            size_t k = n < CRC_READ ? n : CRC_READ;
            ssize_t r = pread(f->fd, j->buf, k, (off_t)off);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            c = tio__crc32(c, j->buf, (size_t)r);
            off += (size_t)r;
            p += (size_t)r;
            n -= (size_t)r;
        }
    }
    return p && n ? tio__crc32(c, p, n) : c;
}

static void *crc_job_run(void *arg) {
    tio_crc_job *j = arg;
    for (size_t i = 0; i < j->count; i++) {
        pthread_mutex_lock(&j->mu);
        bool stop = j->stop;
        pthread_mutex_unlock(&j->mu);
        if (stop) break;
        uint32_t c = crc_item(j, j->p[i], j->n[i]);
        pthread_mutex_lock(&j->mu);
        j->crc[i] = c;
        j->done = i + 1;
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
    }
    return NULL;
}

const tio__mapped *tio__mapped_find(const tio__mapped *files, size_t n, const void *p,
                                    size_t len, size_t *off) {
    uintptr_t a = (uintptr_t)p;
    size_t lo = 0, hi = n; /* the last file whose map starts at or before p */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)files[mid].map <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo) return NULL;
    const tio__mapped *f = &files[lo - 1];
    size_t at = (size_t)(a - (uintptr_t)f->map);
    if (!f->map || at > f->size || len > f->size - at) return NULL;
    *off = at;
    return f;
}

tio_crc_job *tio__crc32_start(const uint8_t *const *p, const size_t *n, size_t count,
                              const tio__mapped *files, size_t nfiles) {
    tio_crc_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->crc = calloc(count ? count : 1, sizeof *j->crc);
    j->files = nfiles ? malloc(nfiles * sizeof *files) : NULL;
    bool mu = j->crc && (!nfiles || j->files) && pthread_mutex_init(&j->mu, NULL) == 0;
    if (!mu || pthread_cond_init(&j->cv, NULL) != 0) {
        if (mu) pthread_mutex_destroy(&j->mu);
        free(j->files);
        free(j->crc);
        free(j);
        return NULL;
    }
    j->p = p;
    j->n = n;
    j->count = count;
    if (nfiles) memcpy(j->files, files, nfiles * sizeof *files);
    j->nfiles = nfiles;
    /* no buffer: every CRC through the mapping */
    j->buf = nfiles ? malloc(CRC_READ) : NULL;
    j->threaded = tio__spawn(&j->thread, crc_job_run, j);
    return j;
}

uint32_t tio__crc32_wait(tio_crc_job *j, size_t i) {
    if (i >= j->count) return 0;
    if (!j->threaded) return crc_item(j, j->p[i], j->n[i]);
    pthread_mutex_lock(&j->mu);
    while (j->done <= i) pthread_cond_wait(&j->cv, &j->mu);
    uint32_t c = j->crc[i];
    pthread_mutex_unlock(&j->mu);
    return c;
}

void tio__crc32_join(tio_crc_job *j) {
    if (!j) return;
    if (j->threaded) {
        pthread_mutex_lock(&j->mu);
        j->stop = true;
        pthread_mutex_unlock(&j->mu);
        pthread_join(j->thread, NULL);
    }
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j->buf);
    free(j->files);
    free(j->crc);
    free(j);
}
