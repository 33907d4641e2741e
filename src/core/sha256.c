/* SHA-256 through OpenSSL's libcrypto. */
#include "internal.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

tio_sha256 *tio__sha256_new(void) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx) return NULL;
    if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return NULL;
    }
    return (tio_sha256 *)ctx;
}

void tio__sha256_update(tio_sha256 *h, const void *p, size_t n) {
    if (n) EVP_DigestUpdate((EVP_MD_CTX *)h, p, n);
}

void tio__sha256_final(tio_sha256 *h, uint8_t out[32]) {
    unsigned int len = 0;
    EVP_DigestFinal_ex((EVP_MD_CTX *)h, out, &len);
    EVP_MD_CTX_free((EVP_MD_CTX *)h);
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
    uint8_t digest[32];
    bool ok, threaded;
    pthread_t thread;
};

/* p[0..n), each piece read from the file where it can be (what the file
 * holds there is what the mapping shows), else from the mapping. */
static bool hash_read(EVP_MD_CTX *c, uint8_t *buf, const tio_sha256_job *j, size_t at,
                      size_t n) {
    for (size_t k = 0; k < n;) {
        size_t m = n - k < HASH_PIECE ? n - k : HASH_PIECE;
        const void *from = tio__pread_full(j->fd, buf, m, j->off + at + k) == m ? buf
                                                                                : j->p + at + k;
        if (EVP_DigestUpdate(c, from, m) != 1) return false;
        k += m;
    }
    return true;
}

static bool hash_parts(tio_sha256_job *j) {
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    uint8_t *buf = malloc(HASH_PIECE);
    bool ok = c && buf && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1;
    int way = j->n >= HASH_TRY_MIN ? -1 : 1; /* 1: read, 0: the mapping, -1: trying */
    uint64_t cost[2] = {UINT64_MAX, UINT64_MAX};
    unsigned epoch = 0;
    for (size_t at = 0; ok && at < j->n;) {
        int w = way >= 0 ? way : (int)(~epoch & 1u);
        size_t len = j->n - at;
        if (way < 0 && len > HASH_EPOCH) len = HASH_EPOCH;
        uint64_t t0 = tio__host_cpu_ns();
        ok = w ? hash_read(c, buf, j, at, len) : EVP_DigestUpdate(c, j->p + at, len) == 1;
        uint64_t t = tio__host_cpu_ns() - t0;
        if (way < 0 && t < cost[w]) cost[w] = t;
        if (way < 0 && ++epoch == 4) way = cost[1] <= cost[0];
        at += len;
    }
    unsigned int len = 0;
    ok = ok && EVP_DigestFinal_ex(c, j->digest, &len) == 1;
    EVP_MD_CTX_free(c);
    free(buf);
    return ok;
}

static void *job_run(void *arg) {
    tio_sha256_job *j = arg;
    unsigned int len = 0;
    if (j->fd >= 0 && j->n)
        j->ok = hash_parts(j);
    else
        j->ok = EVP_Digest(j->n ? (const void *)j->p : "", j->n, j->digest, &len, EVP_sha256(),
                           NULL) == 1;
    return NULL;
}

tio_sha256_job *tio__sha256_start(const void *p, size_t n, int fd, uint64_t off) {
    tio_sha256_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->p = p;
    j->n = n;
    j->fd = fd;
    j->off = off;
    j->threaded = tio__spawn(&j->thread, job_run, j);
    return j;
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
