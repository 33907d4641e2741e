/* String helpers the formats share: UTF-8 validation (RFC 3629: no
 * overlong forms, no surrogates, nothing past U+10FFFF) for formats whose
 * strings are UTF-8 (safetensors' JSON, PyTorch's pickled str), and finding
 * a repeated name. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static int str_cmp_p(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char *tio__sorted_dup(const char **v, size_t n) {
    if (n < 2) return NULL;
    qsort(v, n, sizeof *v, str_cmp_p);
    for (size_t i = 1; i < n; i++)
        if (strcmp(v[i - 1], v[i]) == 0) return v[i];
    return NULL;
}

size_t tio__utf8_bad(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n;) {
        uint8_t b = p[i];
        size_t k = b < 0x80 ? 1 : (b >= 0xC2 && b <= 0xDF) ? 2 : (b >= 0xE0 && b <= 0xEF) ? 3
                                 : (b >= 0xF0 && b <= 0xF4) ? 4 : 0;
        int ok = k != 0 && n - i >= k;
        for (size_t j = 1; ok && j < k; j++) ok = (p[i + j] & 0xC0) == 0x80;
        if (ok && k == 3)
            ok = !(b == 0xE0 && p[i + 1] < 0xA0) && !(b == 0xED && p[i + 1] >= 0xA0);
        if (ok && k == 4)
            ok = !(b == 0xF0 && p[i + 1] < 0x90) && !(b == 0xF4 && p[i + 1] >= 0x90);
        if (!ok) return i;
        i += k;
    }
    return n;
}

size_t tio__utf8_put(uint8_t *out, uint32_t cp) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}
