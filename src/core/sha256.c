/* SHA-256 through OpenSSL's libcrypto. */
#include "internal.h"

#include <openssl/evp.h>

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
