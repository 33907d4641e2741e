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

struct tio_sha256_job {
    const void *p;
    size_t n;
    uint8_t digest[32];
    bool ok, threaded;
    pthread_t thread;
};

static void *job_run(void *arg) {
    tio_sha256_job *j = arg;
    unsigned int len = 0;
    j->ok = EVP_Digest(j->n ? j->p : "", j->n, j->digest, &len, EVP_sha256(), NULL) == 1;
    return NULL;
}

tio_sha256_job *tio__sha256_start(const void *p, size_t n) {
    tio_sha256_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->p = p;
    j->n = n;
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
