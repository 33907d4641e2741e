/* Public queries over the format registry. */
#include "internal.h"

#include <string.h>
#include <strings.h>

size_t tio_format_count(void) { return tio__format_count(); }

const char *tio_format_name(size_t i) {
    const tio_format_desc *f = tio__format_at(i);
    return f ? f->name : NULL;
}

const char *tio_format_description(const char *format) {
    const tio_format_desc *f = tio__format_find(format);
    return f ? f->description : NULL;
}

const char *tio_format_extensions(const char *format) {
    const tio_format_desc *f = tio__format_find(format);
    return f ? f->extensions : NULL;
}

unsigned tio_format_caps(const char *format) {
    const tio_format_desc *f = tio__format_find(format);
    return f ? f->caps & TIO__CAP_PUBLIC : 0;
}

int tio_format_can_write(const char *format) {
    const tio_format_desc *f = tio__format_find(format);
    return f && f->write;
}

int tio_format_supports_dtype(const char *format, tio_dtype dtype) {
    const tio_format_desc *f = tio__format_find(format);
    if (!f || (unsigned)dtype >= TIO_DTYPE_COUNT) return 0;
    return (f->dtypes & TIO_DTYPE_BIT(dtype)) != 0;
}

/* Does `path` end with extension `ext` (".btf"), ignoring case? */
static int has_ext(const char *path, const char *ext, size_t elen) {
    size_t plen = strlen(path);
    if (plen <= elen) return 0;
    return strncasecmp(path + plen - elen, ext, elen) == 0 && path[plen - elen - 1] != '/';
}

const char *tio_format_for_path(const char *path) {
    if (!path) return NULL;
    for (size_t i = 0; i < tio__format_count(); i++) {
        const tio_format_desc *f = tio__format_at(i);
        const char *e = f->extensions;
        while (e && *e) {
            while (*e == ' ') e++;
            size_t n = strcspn(e, " ");
            if (n && has_ext(path, e, n)) return f->name;
            e += n;
        }
    }
    return NULL;
}

const char *tio_format_probe(const void *data, size_t size) {
    if (!data && size) return NULL;
    const tio_format_desc *best = NULL;
    int best_score = 0;
    for (size_t i = 0; i < tio__format_count(); i++) {
        const tio_format_desc *f = tio__format_at(i);
        int s = f->probe ? f->probe((const uint8_t *)data, size) : 0;
        if (s > best_score) {
            best_score = s;
            best = f;
        }
    }
    return best ? best->name : NULL;
}
