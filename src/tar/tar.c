/* ustar / GNU / pax tar headers, read through the cursor. */
#include "tar/tar.h"

#include <stdlib.h>
#include <string.h>

#define FMT "tar"

/* Header field offsets and sizes (POSIX ustar). */
enum {
    H_NAME = 0, H_NAME_N = 100,
    H_SIZE = 124, H_SIZE_N = 12,
    H_CHKSUM = 148, H_CHKSUM_N = 8,
    H_TYPE = 156,
    H_MAGIC = 257,
    H_PREFIX = 345, H_PREFIX_N = 155
};

int tio__tar_number(const uint8_t *f, size_t n, uint64_t at, const char *what,
                    uint64_t *out, tio_error *err) {
    uint64_t v = 0;
    if (n && (f[0] & 0x80u)) { /* base-256, big-endian, two's complement */
        if (f[0] != 0x80u)
            return tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)at,
                            "%s: negative base-256 number (first byte 0x%02x)", what, f[0]);
        for (size_t i = 1; i < n; i++) {
            if (v >> 55)
                return tio__err(err, TIO_E_OVERFLOW, FMT, (int64_t)at,
                                "%s: base-256 number exceeds 63 bits", what);
            v = (v << 8) | f[i];
        }
        if (v >> 63)
            return tio__err(err, TIO_E_OVERFLOW, FMT, (int64_t)at,
                            "%s: base-256 number exceeds 63 bits", what);
        *out = v;
        return TIO_OK;
    }
    size_t i = 0;
    while (i < n && (f[i] == ' ' || f[i] == 0)) i++; /* leading spaces (and empty) */
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
        if (v >> 60)
            return tio__err(err, TIO_E_OVERFLOW, FMT, (int64_t)at,
                            "%s: octal number exceeds 63 bits", what);
        v = (v << 3) | (uint64_t)(f[i] - '0');
    }
    for (; i < n; i++) { /* then only terminators */
        if (f[i] != ' ' && f[i] != 0) {
            char shown[64];
            tio__escape(f, n, shown, sizeof shown);
            return tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)at,
                            "%s: expected an octal number, found \"%s\"", what, shown);
        }
    }
    *out = v;
    return TIO_OK;
}

static int all_zero(const uint8_t *b) {
    for (size_t i = 0; i < TIO_TAR_BLOCK; i++)
        if (b[i]) return 0;
    return 1;
}

static int check_sum(const uint8_t *h, uint64_t at, tio_error *err) {
    uint64_t stored = 0;
    int rc = tio__tar_number(h + H_CHKSUM, H_CHKSUM_N, at + H_CHKSUM, "header checksum",
                             &stored, err);
    if (rc != TIO_OK) return rc;
    /* the block's sum with the checksum field read as spaces: summed whole
     * (a loop the compiler vectorises), then the field's bytes replaced */
    uint64_t u = 0;
    int64_t s = 0; /* some old writers summed signed chars: accepted too */
    for (size_t i = 0; i < TIO_TAR_BLOCK; i++) {
        u += h[i];
        s += (int8_t)h[i];
    }
    for (size_t i = H_CHKSUM; i < H_CHKSUM + H_CHKSUM_N; i++) {
        u = u - h[i] + (uint8_t)' ';
        s = s - (int8_t)h[i] + (int8_t)' ';
    }
    if (stored != u && (s < 0 || stored != (uint64_t)s))
        return tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)(at + H_CHKSUM),
                        "header checksum: expected %llu, found %llu",
                        (unsigned long long)u, (unsigned long long)stored);
    return TIO_OK;
}

/* A name from a record's data (GNU 'L', pax path): up to the first NUL. */
static int set_name(char **name, size_t *len, const uint8_t *p, size_t n, uint64_t at,
                    const tio_limits *lim, tio_error *err) {
    const uint8_t *z = memchr(p, 0, n);
    size_t k = z ? (size_t)(z - p) : n;
    if (k > lim->max_name_bytes)
        return tio__err(err, TIO_E_LIMIT, FMT, (int64_t)at,
                        "member name of %zu bytes exceeds max_name_bytes %u", k,
                        (unsigned)lim->max_name_bytes);
    char *s = malloc(k + 1);
    if (!s) return tio__nomem(err, FMT);
    memcpy(s, p, k);
    s[k] = 0;
    free(*name);
    *name = s;
    *len = k;
    return TIO_OK;
}

/* pax extended header records "LEN KEY=VALUE\n": path and size applied. */
static int read_pax(const uint8_t *p, size_t n, uint64_t at, const tio_limits *lim,
                    char **name, size_t *name_len, uint64_t *size, int *has_size,
                    tio_error *err) {
    size_t i = 0;
    while (i < n) {
        uint64_t rec_at = at + i;
        size_t j = i, len = 0;
        if (p[i] == 0) break; /* NUL padding after the last record */
        while (j < n && p[j] >= '0' && p[j] <= '9') {
            if (len > (SIZE_MAX - 9) / 10)
                return tio__err(err, TIO_E_OVERFLOW, FMT, (int64_t)rec_at,
                                "pax record length overflows");
            len = len * 10 + (size_t)(p[j] - '0');
            j++;
        }
        if (j == i || j >= n || p[j] != ' ')
            return tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)rec_at,
                            "pax record: expected \"LENGTH \", found no length");
        if (len <= j - i + 1 || len > n - i)
            return tio__err(err, TIO_E_BOUNDS, FMT, (int64_t)rec_at,
                            "pax record length %zu: outside the %zu bytes left", len, n - i);
        const uint8_t *kv = p + j + 1, *end = p + i + len - 1;
        if (*end != '\n')
            return tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)(at + i + len - 1),
                            "pax record: expected a newline at its end");
        const uint8_t *eq = memchr(kv, '=', (size_t)(end - kv));
        if (!eq || eq == kv)
            return tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)rec_at,
                            "pax record: expected KEY=VALUE");
        size_t klen = (size_t)(eq - kv), vlen = (size_t)(end - eq - 1);
        const uint8_t *val = eq + 1;
        int rc = TIO_OK;
        if (klen == 4 && memcmp(kv, "path", 4) == 0) {
            if (memchr(val, 0, vlen))
                return tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)rec_at,
                                "pax path contains a NUL byte");
            rc = set_name(name, name_len, val, vlen, rec_at, lim, err);
        } else if (klen == 4 && memcmp(kv, "size", 4) == 0) {
            uint64_t v = 0;
            if (vlen == 0 || vlen > 19)
                return tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)rec_at,
                                "pax size: expected 1 to 19 decimal digits, found %zu bytes",
                                vlen);
            for (size_t k = 0; k < vlen; k++) {
                if (val[k] < '0' || val[k] > '9')
                    return tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)rec_at,
                                    "pax size: expected decimal digits");
                v = v * 10 + (uint64_t)(val[k] - '0');
            }
            if (v >> 63)
                return tio__err(err, TIO_E_OVERFLOW, FMT, (int64_t)rec_at,
                                "pax size exceeds 63 bits");
            *size = v;
            *has_size = 1;
        } else if (klen > 11 && memcmp(kv, "GNU.sparse.", 11) == 0) {
            return tio__err(err, TIO_E_UNSUPPORTED, FMT, (int64_t)rec_at,
                            "GNU sparse members are not supported");
        }
        if (rc != TIO_OK) return rc;
        i += len;
    }
    return TIO_OK;
}

int tio__tar_next(tio_cursor *c, uint64_t origin, const tio_limits *lim, tio_tar_entry *e,
                  int *done, tio_error *err) {
    char *name = NULL;
    size_t name_len = 0;
    uint64_t pax_size = 0, first = c->pos;
    int has_size = 0, pending = 0, rc = TIO_OK;
    *done = 0;
    for (;;) {
        uint64_t at = origin + c->pos; /* offsets in messages: the input's */
        const uint8_t *h;
        if (tio__cursor_left(c) == 0) {
            rc = tio__err(err, TIO_E_TRUNCATED, FMT, (int64_t)at,
                          "missing end-of-archive block (two zero blocks) at the end");
            break;
        }
        if (tio__cursor_left(c) < TIO_TAR_BLOCK) { /* (the cursor's words, at's offset) */
            rc = tio__err(err, TIO_E_TRUNCATED, FMT, (int64_t)at,
                          "header block: expected %u bytes, found %zu before the end of the "
                          "data", TIO_TAR_BLOCK, tio__cursor_left(c));
            break;
        }
        rc = tio__cursor_bytes(c, TIO_TAR_BLOCK, &h, "header block", err);
        if (rc != TIO_OK) break;
        if (all_zero(h)) {
            if (pending) {
                rc = tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)at,
                              "end-of-archive block after an extended header");
                break;
            }
            *done = 1; /* what follows (the second zero block, padding) is not read */
            break;
        }
        if (memcmp(h + H_MAGIC, "ustar", 5) != 0) {
            char shown[32];
            tio__escape(h + H_MAGIC, 6, shown, sizeof shown);
            rc = tio__err(err, TIO_E_MAGIC, FMT, (int64_t)(at + H_MAGIC),
                          "expected \"ustar\" magic, found \"%s\"", shown);
            break;
        }
        if ((rc = check_sum(h, at, err)) != TIO_OK) break;
        uint64_t size = 0;
        rc = tio__tar_number(h + H_SIZE, H_SIZE_N, at + H_SIZE, "member size", &size, err);
        if (rc != TIO_OK) break;
        uint8_t type = h[H_TYPE];
        /* a pax size replaces the next entry's (not that of a further extension record) */
        int extension = type == 'L' || type == 'K' || type == 'x' || type == 'g';
        if (has_size && !extension) size = pax_size;
        uint64_t data_in = c->pos, data = origin + data_in, padded;
        if (!tio__align_up(size, TIO_TAR_BLOCK, &padded) || padded > tio__cursor_left(c)) {
            rc = tio__err(err, TIO_E_BOUNDS, FMT, (int64_t)(at + H_SIZE),
                          "member data of %llu bytes at offset %llu run past the end "
                          "(%zu bytes left)",
                          (unsigned long long)size, (unsigned long long)data,
                          tio__cursor_left(c));
            break;
        }
        const uint8_t *body = c->base + data_in;
        if ((rc = tio__cursor_skip(c, padded, "member data", err)) != TIO_OK) break;
        if (type == 'L') { /* GNU long name: the next header's path */
            rc = set_name(&name, &name_len, body, (size_t)size, data, lim, err);
            pending = 1;
        } else if (type == 'x') {
            if (size > lim->max_header_bytes) {
                rc = tio__err(err, TIO_E_LIMIT, FMT, (int64_t)at,
                              "pax header of %llu bytes exceeds max_header_bytes",
                              (unsigned long long)size);
            } else {
                rc = read_pax(body, (size_t)size, data, lim, &name, &name_len, &pax_size,
                              &has_size, err);
            }
            pending = 1;
        } else if (type == 'S') {
            rc = tio__err(err, TIO_E_UNSUPPORTED, FMT, (int64_t)(at + H_TYPE),
                          "GNU sparse members are not supported");
        } else if (type == '0' || type == 0 || type == '7') {
            if (!name) {
                const uint8_t *n = h + H_NAME;
                const uint8_t *z = memchr(n, 0, H_NAME_N);
                size_t nl = z ? (size_t)(z - n) : H_NAME_N;
                const uint8_t *pre = h + H_PREFIX;
                z = memchr(pre, 0, H_PREFIX_N);
                size_t pl = z ? (size_t)(z - pre) : H_PREFIX_N;
                if (memcmp(h + H_MAGIC, "ustar\0", 6) != 0) pl = 0; /* GNU: not a prefix */
                char *s = malloc(pl + nl + 2);
                if (!s) {
                    rc = tio__nomem(err, FMT);
                    break;
                }
                size_t k = 0;
                if (pl) {
                    memcpy(s, pre, pl);
                    s[pl] = '/';
                    k = pl + 1;
                }
                memcpy(s + k, n, nl);
                s[k + nl] = 0;
                name = s;
                name_len = k + nl;
            }
            if (name_len == 0) {
                rc = tio__err(err, TIO_E_CORRUPT, FMT, (int64_t)at, "member with an empty name");
                break;
            }
            if (name_len > lim->max_name_bytes) {
                rc = tio__err(err, TIO_E_LIMIT, FMT, (int64_t)at,
                              "member name of %zu bytes exceeds max_name_bytes %u", name_len,
                              (unsigned)lim->max_name_bytes);
                break;
            }
            e->name = name;
            e->name_len = name_len;
            e->header = first;
            e->offset = data_in;
            e->size = size;
            return TIO_OK;
        } else if (extension) {
            /* 'g' global pax headers, GNU 'K' long link names: skipped, and
             * what an 'L' or 'x' before them set still applies */
        } else {
            /* directories, links, devices, fifos and vendor types: no member */
            free(name);
            name = NULL;
            name_len = 0;
            has_size = 0;
            pending = 0;
            first = c->pos;
        }
        if (rc != TIO_OK) break;
    }
    free(name);
    return rc;
}
