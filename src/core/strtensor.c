/* String tensors (TIO_STRING): the layout checked (numel + 1 uint64 LE
 * offsets, then the bytes; include/tensio.h), built from a list of strings,
 * and read element by element. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int tio__strings_check(const uint8_t *data, size_t nbytes, uint64_t numel, const char *format,
                       int64_t offset, tio_error *err) {
    uint64_t head;
    if (tio__add64_ovf(numel, 1, &head) || tio__mul64_ovf(head, 8, &head) || head > nbytes)
        return tio__err(err, TIO_E_CORRUPT, format, offset,
                        "string tensor: data has %zu bytes, fewer than the %llu offsets of "
                        "%llu strings need",
                        nbytes, (unsigned long long)numel + 1, (unsigned long long)numel);
    if (!data) return tio__err(err, TIO_E_ARGUMENT, format, offset, "data is NULL");
    uint64_t len = nbytes - head, prev = 0;
    for (uint64_t i = 0; i <= numel; i++) {
        uint64_t o = tio__ld64(data + i * 8);
        if (o < prev || o > len || (i == 0 && o != 0) || (i == numel && o != len))
            return tio__err(err, TIO_E_CORRUPT, format, offset,
                            "string tensor: offset %llu is %llu (expected %s)",
                            (unsigned long long)i, (unsigned long long)o,
                            i == 0       ? "0"
                            : i == numel ? "the length of the strings, nbytes - 8 × (numel + 1)"
                                         : "between the previous offset and the length");
        prev = o;
    }
    return TIO_OK;
}

int tio__strbuild_init(tio_strbuild *b, uint64_t count, uint64_t max_bytes, const char *format,
                       int64_t offset, tio_error *err) {
    memset(b, 0, sizeof *b);
    b->format = format;
    b->offset = offset;
    b->max = max_bytes;
    uint64_t head;
    if (tio__add64_ovf(count, 1, &head) || tio__mul64_ovf(head, 8, &head) || head > max_bytes ||
        head > SIZE_MAX)
        return tio__err(err, TIO_E_LIMIT, format, offset,
                        "string tensor: %llu strings need more than %llu bytes of offsets "
                        "(tio_limits.max_dense_bytes)",
                        (unsigned long long)count, (unsigned long long)max_bytes);
    b->buf = malloc((size_t)head);
    if (!b->buf) return tio__nomem(err, format);
    b->cap = b->len = (size_t)head;
    b->count = count;
    tio__st64(b->buf, 0);
    return TIO_OK;
}

int tio__strbuild_add(tio_strbuild *b, const void *p, size_t n, tio_error *err) {
    if (b->done >= b->count)
        return tio__err(err, TIO_E_CORRUPT, b->format, b->offset,
                        "string tensor: more than the %llu strings the shape holds",
                        (unsigned long long)b->count);
    size_t need;
    if (tio__add_ovf(b->len, n, &need) || need > b->max)
        return tio__err(err, TIO_E_LIMIT, b->format, b->offset,
                        "string tensor: its strings take more than %llu bytes "
                        "(tio_limits.max_dense_bytes)",
                        (unsigned long long)b->max);
    if (need > b->cap) {
        size_t ncap = b->cap * 2 > need ? b->cap * 2 : need;
        if (ncap > b->max) ncap = (size_t)b->max;
        uint8_t *nb = realloc(b->buf, ncap);
        if (!nb) return tio__nomem(err, b->format);
        b->buf = nb;
        b->cap = ncap;
    }
    if (n) memcpy(b->buf + b->len, p, n);
    b->len = need;
    b->done++;
    tio__st64(b->buf + b->done * 8, b->len - (b->count + 1) * 8);
    return TIO_OK;
}

int tio__strbuild_finish(tio_strbuild *b, tio_error *err) {
    if (b->done != b->count)
        return tio__err(err, TIO_E_CORRUPT, b->format, b->offset,
                        "string tensor: %llu strings where the shape holds %llu",
                        (unsigned long long)b->done, (unsigned long long)b->count);
    return TIO_OK;
}

void tio__strbuild_free(tio_strbuild *b) {
    free(b->buf);
    b->buf = NULL;
}

int tio__string_at(const tio_tensor *t, uint64_t i, const uint8_t **p, size_t *n) {
    const uint8_t *d = t->data;
    uint64_t a = tio__ld64(d + i * 8), e = tio__ld64(d + (i + 1) * 8);
    *p = d + (t->numel + 1) * 8 + a; /* checked when the tensor was added */
    *n = (size_t)(e - a);
    return TIO_OK;
}

int tio_tensor_string_at(const tio_tensor *t, uint64_t i, const char **data, size_t *len,
                         tio_error *err) {
    if (!t || t->dtype != TIO_STRING)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "the tensor is not a string tensor");
    if (i >= t->numel)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "string %llu of a tensor of %llu strings", (unsigned long long)i,
                        (unsigned long long)t->numel);
    int frc = tio__need_fetched(t->owner, t, err);
    if (frc) return frc;
    const uint8_t *p;
    size_t n;
    tio__string_at(t, i, &p, &n);
    if (data) *data = (const char *)p;
    if (len) *len = n;
    return TIO_OK;
}

int tio_container_add_strings(tio_container *c, const char *name, size_t rank,
                              const int64_t *shape, const char *const *strings,
                              const size_t *lengths, tio_tensor **out, tio_error *err) {
    uint64_t numel;
    if (!c || (rank && !shape)) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    int rc = tio__shape_size(shape, rank, 1, &numel, NULL, NULL, -1, err);
    if (rc) return rc;
    if (numel && (!strings || !lengths))
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "strings or lengths is NULL");
    tio_strbuild b;
    rc = tio__strbuild_init(&b, numel, SIZE_MAX, NULL, -1, err);
    for (uint64_t i = 0; !rc && i < numel; i++) {
        if (lengths[i] && !strings[i])
            rc = tio__err(err, TIO_E_ARGUMENT, NULL, -1, "string %llu is NULL",
                          (unsigned long long)i);
        else
            rc = tio__strbuild_add(&b, strings[i], lengths[i], err);
    }
    tio_tensor *t = NULL;
    if (!rc) {
        tio_tensor_desc d = {name, TIO_STRING, rank, shape, TIO_LAYOUT_DENSE, b.buf, b.len,
                             0, NULL};
        rc = tio_container_add(c, &d, TIO_ADD_BORROW, &t, err);
    }
    if (rc) {
        tio__strbuild_free(&b);
        return rc;
    }
    t->owned_data = b.buf; /* the tensor takes the buffer */
    if (out) *out = t;
    return TIO_OK;
}
