/* SHA-256 through OpenSSL's libcrypto, loaded with dlopen() when the first
 * hash is made (core/dl.h): linked, its ~17,000 relocations made every
 * program using tensio start 2.8 ms later (5.4 ms against 2.6 ms for an empty
 * program here), also the many that never hash. */
#include "internal.h"

#include "core/dl.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* name, return type, parameters */
#define TIO_CRYPTO_FUNCS(X)                                                       \
    X(EVP_MD_CTX_new, EVP_MD_CTX *, (void))                                       \
    X(EVP_MD_CTX_free, void, (EVP_MD_CTX *))                                      \
    X(EVP_sha256, const EVP_MD *, (void))                                         \
    X(EVP_DigestInit_ex, int, (EVP_MD_CTX *, const EVP_MD *, ENGINE *))           \
    X(EVP_DigestUpdate, int, (EVP_MD_CTX *, const void *, size_t))                \
    X(EVP_DigestFinal_ex, int, (EVP_MD_CTX *, unsigned char *, unsigned int *))

#define TIO_CRYPTO_FIELD(f, R, A) R(*f) A;
typedef struct crypto_api {
    TIO_CRYPTO_FUNCS(TIO_CRYPTO_FIELD)
} crypto_api;
#undef TIO_CRYPTO_FIELD

/* each entry has the type openssl/evp.h declares (TIO_DL_CHECK) */
TIO_CRYPTO_FUNCS(TIO_DL_CHECK)

#define TIO_CRYPTO_SYM(f, R, A) TIO_DL_SYM(crypto_api, f, #f),
static const tio_dl_sym crypto_syms[] = {TIO_CRYPTO_FUNCS(TIO_CRYPTO_SYM)};

#ifndef TIO_CRYPTO_SONAME
#define TIO_CRYPTO_SONAME "libcrypto.so.3"
#endif

/* written once, under crypto_lib's lock; read-only after */
static crypto_api crypto_table;
static tio_dl_lib crypto_lib = TIO_DL_LIB(TIO_CRYPTO_SONAME, crypto_syms, crypto_table);

/* A context set up for SHA-256 in *out, loading libcrypto the first time
 * (thread-safe): TIO_OK, TIO_E_IO naming the library and what failed, or
 * TIO_E_NOMEM. */
static int ctx_new(EVP_MD_CTX **out, tio_error *err) {
    *out = NULL;
    if (!tio__dl_load(&crypto_lib))
        return tio__err(err, TIO_E_IO, NULL, -1, "%s (SHA-256 needs libcrypto)", crypto_lib.why);
    const crypto_api *a = &crypto_table;
    EVP_MD_CTX *ctx = a->EVP_MD_CTX_new();
    if (!ctx || a->EVP_DigestInit_ex(ctx, a->EVP_sha256(), NULL) != 1) {
        a->EVP_MD_CTX_free(ctx); /* NULL: nothing */
        return tio__nomem(err, NULL);
    }
    *out = ctx;
    return TIO_OK;
}

int tio__sha256_new(tio_sha256 **out, tio_error *err) {
    EVP_MD_CTX *ctx;
    int rc = ctx_new(&ctx, err);
    *out = (tio_sha256 *)ctx;
    return rc;
}

void tio__sha256_update(tio_sha256 *h, const void *p, size_t n) {
    if (n) crypto_table.EVP_DigestUpdate((EVP_MD_CTX *)h, p, n);
}

void tio__sha256_final(tio_sha256 *h, uint8_t out[32]) {
    unsigned int len = 0;
    crypto_table.EVP_DigestFinal_ex((EVP_MD_CTX *)h, out, &len);
    crypto_table.EVP_MD_CTX_free((EVP_MD_CTX *)h);
}

/* A job that may read its bytes from a file reads them in pieces of this,
 * which stay in the cache between the read and the hash. */
#define HASH_PIECE ((size_t)256 << 10)
/* From this size the two ways are timed: epochs of HASH_EPOCH bytes read,
 * mapped, read, mapped, then the rest the way whose better epoch took less
 * of the thread's CPU time. On an AMD EPYC under a paravirtual MMU (ext4,
 * Linux 6.18) hashing 1 GiB through its mapping took 1.10-1.21 s, populated
 * or not, and by pread() 0.69-0.71 s; where a mapping's pages come cheap,
 * the read is the extra copy. */
#define HASH_EPOCH ((size_t)16 << 20)
#define HASH_TRY_MIN ((size_t)64 << 20)

struct tio_sha256_job {
    const uint8_t *p;
    size_t n;
    int fd;       /* the same bytes at off in this file, or -1 */
    uint64_t off;
    EVP_MD_CTX *ctx; /* set up for SHA-256; the thread frees it */
    uint8_t digest[32];
    bool ok, threaded;
    pthread_t thread;
};

/* p[0..n), each piece read from the file where it can be (what the file
 * holds there is what the mapping shows), else from the mapping. */
static bool hash_read(const crypto_api *a, EVP_MD_CTX *c, uint8_t *buf,
                      const tio_sha256_job *j, size_t at, size_t n) {
    for (size_t k = 0; k < n;) {
        size_t m = n - k < HASH_PIECE ? n - k : HASH_PIECE;
        const void *from = tio__pread_full(j->fd, buf, m, j->off + at + k) == m ? buf
                                                                                : j->p + at + k;
        if (a->EVP_DigestUpdate(c, from, m) != 1) return false;
        k += m;
    }
    return true;
}

static bool hash_parts(tio_sha256_job *j, EVP_MD_CTX *c) {
    const crypto_api *a = &crypto_table; /* loaded by tio__sha256_start */
    bool reads = j->fd >= 0 && j->n;
    uint8_t *buf = reads ? malloc(HASH_PIECE) : NULL;
    bool ok = buf || !reads;
    /* 1: read, 0: the mapping, -1: trying */
    int way = !reads ? 0 : j->n >= HASH_TRY_MIN ? -1 : 1;
    uint64_t cost[2] = {UINT64_MAX, UINT64_MAX};
    unsigned epoch = 0;
    for (size_t at = 0; ok && at < j->n;) {
        int w = way >= 0 ? way : (int)(~epoch & 1u);
        size_t len = j->n - at;
        if (way < 0 && len > HASH_EPOCH) len = HASH_EPOCH;
        uint64_t t0 = tio__host_cpu_ns();
        ok = w ? hash_read(a, c, buf, j, at, len) : a->EVP_DigestUpdate(c, j->p + at, len) == 1;
        uint64_t t = tio__host_cpu_ns() - t0;
        if (way < 0 && t < cost[w]) cost[w] = t;
        if (way < 0 && ++epoch == 4) way = cost[1] <= cost[0];
        at += len;
    }
    unsigned int len = 0;
    ok = ok && a->EVP_DigestFinal_ex(c, j->digest, &len) == 1;
    a->EVP_MD_CTX_free(c);
    free(buf);
    return ok;
}

static void *job_run(void *arg) {
    tio_sha256_job *j = arg;
    j->ok = hash_parts(j, j->ctx);
    j->ctx = NULL; /* freed */
    return NULL;
}

int tio__sha256_start(tio_sha256_job **out, const void *p, size_t n, int fd, uint64_t off,
                      tio_error *err) {
    *out = NULL;
    tio_sha256_job *j = calloc(1, sizeof *j);
    if (!j) return tio__nomem(err, NULL);
    int rc = ctx_new(&j->ctx, err); /* loaded and set up here, not on the thread */
    if (rc) {
        free(j);
        return rc;
    }
    j->p = p;
    j->n = n;
    j->fd = fd;
    j->off = off;
    j->threaded = tio__spawn(&j->thread, job_run, j);
    *out = j;
    return TIO_OK;
}

bool tio__sha256_join(tio_sha256_job *j, uint8_t out[32]) {
    if (j->threaded)
        pthread_join(j->thread, NULL);
    else
        job_run(j);
    memcpy(out, j->digest, sizeof j->digest);
    bool ok = j->ok;
    free(j);
    return ok;
}
