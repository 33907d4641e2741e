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
