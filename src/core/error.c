/* Errors: stable codes, their names, and message formatting. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    const char *text;
} status_table[] = {
    [TIO_OK] = {"TIO_OK", "success"},
    [TIO_E_ARGUMENT] = {"TIO_E_ARGUMENT", "invalid argument"},
    [TIO_E_NOMEM] = {"TIO_E_NOMEM", "out of memory"},
    [TIO_E_IO] = {"TIO_E_IO", "input/output error"},
    [TIO_E_FORMAT] = {"TIO_E_FORMAT", "unknown or unrecognised format"},
    [TIO_E_TRUNCATED] = {"TIO_E_TRUNCATED", "data truncated"},
    [TIO_E_MAGIC] = {"TIO_E_MAGIC", "bad magic number"},
    [TIO_E_BOUNDS] = {"TIO_E_BOUNDS", "offset or length out of bounds"},
    [TIO_E_LIMIT] = {"TIO_E_LIMIT", "limit exceeded"},
    [TIO_E_OVERFLOW] = {"TIO_E_OVERFLOW", "size arithmetic overflow"},
    [TIO_E_DTYPE] = {"TIO_E_DTYPE", "unknown or unsupported dtype"},
    [TIO_E_CORRUPT] = {"TIO_E_CORRUPT", "inconsistent structure"},
    [TIO_E_UNSUPPORTED] = {"TIO_E_UNSUPPORTED", "not supported by this format"},
    [TIO_E_LOSSY] = {"TIO_E_LOSSY", "would lose information"},
    [TIO_E_NOT_FOUND] = {"TIO_E_NOT_FOUND", "not found"},
    [TIO_E_INVALID] = {"TIO_E_INVALID", "violates the format"},
    [TIO_E_TIMEOUT] = {"TIO_E_TIMEOUT", "timed out"},
    [TIO_E_TRANSPORT] = {"TIO_E_TRANSPORT", "message transport failed"},
};

#define STATUS_COUNT (sizeof status_table / sizeof status_table[0])

const char *tio_status_name(int code) {
    if (code < 0 || (size_t)code >= STATUS_COUNT) return "TIO_E_UNKNOWN";
    return status_table[code].name;
}

const char *tio_status_string(int code) {
    if (code < 0 || (size_t)code >= STATUS_COUNT) return "unknown error code";
    return status_table[code].text;
}

void tio_error_clear(tio_error *err) {
    if (!err) return;
    err->code = TIO_OK;
    err->format[0] = 0;
    err->offset = -1;
    err->message[0] = 0;
}

int tio__verr(tio_error *err, int code, const char *format, int64_t offset,
              const char *fmt, va_list ap) {
    if (!err) return code;
    err->code = code;
    err->offset = offset < 0 ? -1 : offset;
    snprintf(err->format, sizeof err->format, "%s", format ? format : "");
    int n;
    if (format && format[0] && offset >= 0)
        n = snprintf(err->message, sizeof err->message, "%s: offset %lld: ", format,
                     (long long)offset);
    else if (format && format[0])
        n = snprintf(err->message, sizeof err->message, "%s: ", format);
    else
        n = 0;
    if (n < 0) n = 0;
    if ((size_t)n < sizeof err->message)
        vsnprintf(err->message + n, sizeof err->message - (size_t)n, fmt, ap);
    return code;
}

int tio__err(tio_error *err, int code, const char *format, int64_t offset,
             const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tio__verr(err, code, format, offset, fmt, ap);
    va_end(ap);
    return code;
}

int tio__nomem(tio_error *err, const char *format) {
    return tio__err(err, TIO_E_NOMEM, format, -1, "out of memory");
}

void tio__escape(const uint8_t *p, size_t n, char *out, size_t cap) {
    static const char hx[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = p[i];
        size_t need = (b >= 0x20 && b < 0x7f && b != '"' && b != '\\') ? 1u : 4u;
        if (o + need + 4 > cap) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (need == 1) {
            out[o++] = (char)b;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hx[b >> 4];
            out[o++] = hx[b & 15];
        }
    }
    out[o] = '\0';
}

const char *tio__u64_dec(char buf[TIO__DEC_CAP], uint64_t v) {
    char *p = buf + TIO__DEC_CAP;
    *--p = '\0';
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return p;
}

void tio__shape_str(const int64_t *dims, size_t rank, char *out, size_t cap) {
    size_t o = 0;
    out[o++] = '[';
    for (size_t i = 0; i < rank; i++) {
        char tmp[24];
        int n = snprintf(tmp, sizeof tmp, "%s%lld", i ? "," : "", (long long)dims[i]);
        if (n < 0) n = 0;
        if (o + (size_t)n + 5 > cap) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(out + o, tmp, (size_t)n);
        o += (size_t)n;
    }
    out[o++] = ']';
    out[o] = '\0';
}
