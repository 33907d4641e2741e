/* tvec_sha256_hex (tvec.h): OpenSSL's SHA-256, called directly, so that
 * the tests check the library's hashes against another implementation's
 * call. A file of its own: a test that never calls it (test_dl) does not
 * link libcrypto, and sees when the library loads it. */
#include "tvec.h"

#include <openssl/evp.h>

void tvec_sha256_hex(const void *p, size_t n, char out[65]) {
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL);
    tvec_hex(md, 32, out);
}
