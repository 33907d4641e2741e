/* Writing WebDataset shards: POSIX ustar members (pax 'x' headers only for
 * names and sizes ustar cannot hold), through an atomic file and its sink. */
#include "core/sink.h"
#include "tar/tar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FMT "tar"
#define RECORD_DEFAULT 10240u
/* 11 octal digits: the largest size and mtime a ustar field holds */
#define OCTAL11_MAX 077777777777ull
/* A member at least this large is handed to the sink by reference and
 * written at once (no copy into the sink's buffer). */
#define REF_MIN (1u << 20)

struct tio_shard_writer {
    tio__afile *file;
    tio_sink sink;
    uint64_t mtime;
    uint32_t record;
    uint64_t count;
    int failed; /* a write failed: the archive is incomplete */
};

int tio_shard_check_name(const char *name, tio_error *err) {
    if (!name) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "NULL member name");
    size_t n = strlen(name);
    if (n == 0) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "empty member name");
    if (n > TIO_DEFAULT_MAX_NAME_BYTES)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1,
                        "member name of %zu bytes: at most %u", n, TIO_DEFAULT_MAX_NAME_BYTES);
    char shown[80];
    tio__escape((const uint8_t *)name, n, shown, sizeof shown);
    if (name[0] == '/')
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1,
                        "member name \"%s\" is an absolute path", shown);
    for (const char *c = name;;) { /* "." and empty components are harmless */
        const char *e = strchr(c, '/');
        size_t k = e ? (size_t)(e - c) : strlen(c);
        if (k == 2 && c[0] == '.' && c[1] == '.')
            return tio__err(err, TIO_E_ARGUMENT, FMT, -1,
                            "member name \"%s\" has a \"..\" component", shown);
        if (!e && (k == 0 || (k == 1 && c[0] == '.')))
            return tio__err(err, TIO_E_ARGUMENT, FMT, -1,
                            "member name \"%s\" names a directory, not a file", shown);
        if (!e) break;
        c = e + 1;
    }
    return TIO_OK;
}

/* v as `digits` octal digits and a NUL (tarfile's and GNU tar's form). */
static void octal(uint8_t *field, size_t digits, uint64_t v) {
    field[digits] = 0;
    for (size_t i = digits; i-- > 0;) {
        field[i] = (uint8_t)('0' + (v & 7u));
        v >>= 3;
    }
}

/* Where `name` (n bytes) splits into prefix "/" rest with the prefix at most
 * 155 bytes and the rest 1..100: the last such '/' (as tarfile picks it), or
 * 0 when none does. */
static size_t ustar_split(const char *name, size_t n) {
    size_t i = n < 156 ? n : 156;
    while (i-- > 0) {
        if (name[i] != '/') continue;
        return i > 0 && n - i - 1 >= 1 && n - i - 1 <= 100 ? i : 0;
    }
    return 0;
}

/* One ustar header block: name (already fitted, or cut when a pax record
 * holds it), size (0 when a pax record holds it), type. */
static void header(uint8_t b[TIO_TAR_BLOCK], const char *name, size_t n, uint64_t size,
                   char type, uint64_t mtime) {
    memset(b, 0, TIO_TAR_BLOCK);
    size_t split = n > 100 ? ustar_split(name, n) : 0;
    if (split) {
        memcpy(b + 345, name, split);
        memcpy(b, name + split + 1, n - split - 1);
    } else {
        memcpy(b, name, n < 100 ? n : 100);
    }
    octal(b + 100, 7, 0644);
    octal(b + 108, 7, 0);
    octal(b + 116, 7, 0);
    octal(b + 124, 11, size);
    octal(b + 136, 11, mtime);
    b[156] = (uint8_t)type;
    memcpy(b + 257, "ustar\0" "00", 8);
    octal(b + 329, 7, 0);
    octal(b + 337, 7, 0);
    memset(b + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < TIO_TAR_BLOCK; i++) sum += b[i];
    octal(b + 148, 6, sum); /* six digits, NUL, and the space that was there */
}

/* One pax record "LEN KEY=VALUE\n" appended to buf; LEN counts itself. */
static void pax_record(tio_buf *buf, const char *key, const char *value, size_t vlen) {
    size_t body = 1 + strlen(key) + 1 + vlen + 1; /* " KEY=VALUE\n" */
    size_t len = body + 1;
    char num[24];
    for (;;) {
        int d = snprintf(num, sizeof num, "%zu", len);
        if ((size_t)d + body == len) break;
        len = (size_t)d + body;
    }
    tio__buf_put(buf, num, strlen(num));
    tio__buf_put(buf, " ", 1);
    tio__buf_put(buf, key, strlen(key));
    tio__buf_put(buf, "=", 1);
    tio__buf_put(buf, value, vlen);
    tio__buf_put(buf, "\n", 1);
}

static int put(tio_shard_writer *w, const void *p, size_t n, tio_error *err) {
    int rc = tio__sink_write(&w->sink, p, n, err);
    if (rc) w->failed = 1;
    return rc;
}

static int pad(tio_shard_writer *w, uint64_t n, tio_error *err) {
    size_t k = (size_t)((TIO_TAR_BLOCK - n % TIO_TAR_BLOCK) % TIO_TAR_BLOCK);
    int rc = k ? tio__sink_zeros(&w->sink, k, err) : TIO_OK;
    if (rc) w->failed = 1;
    return rc;
}

static int io_error(const char *what, tio_error *err) {
    return tio__err(err, TIO_E_IO, FMT, -1,
                    "%s: an earlier write failed; the shard is incomplete", what);
}

int tio_shard_writer_open(const char *path, const tio_shard_writer_options *opts,
                          tio_shard_writer **out, tio_error *err) {
    if (!out) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "NULL argument");
    *out = NULL;
    if (!path) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "NULL argument");
    uint32_t record = opts && opts->record_size ? opts->record_size : RECORD_DEFAULT;
    uint64_t mtime = opts ? opts->mtime : 0;
    if (record % TIO_TAR_BLOCK)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1,
                        "record_size %u is not a multiple of 512", (unsigned)record);
    if (mtime > OCTAL11_MAX)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1,
                        "mtime %llu does not fit 11 octal digits", (unsigned long long)mtime);
    tio_shard_writer *w = calloc(1, sizeof *w);
    if (!w) return tio__err(err, TIO_E_NOMEM, FMT, -1, "out of memory");
    w->record = record;
    w->mtime = mtime;
    int rc = tio__afile_open(path, opts ? opts->flags : 0, &w->file, err);
    if (rc == TIO_OK) rc = tio__sink_init_fd(&w->sink, tio__afile_fd(w->file), err);
    if (rc) {
        tio__afile_abort(w->file);
        free(w);
        return rc;
    }
    *out = w;
    return TIO_OK;
}

int tio_shard_writer_add_bytes(tio_shard_writer *w, const char *name, const void *data,
                               uint64_t size, tio_error *err) {
    if (!w || (!data && size)) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "NULL argument");
    if (w->failed) return io_error("add", err);
    int rc = tio_shard_check_name(name, err);
    if (rc) return rc;
    if (size > SIZE_MAX)
        return tio__err(err, TIO_E_OVERFLOW, FMT, -1, "member of %llu bytes",
                        (unsigned long long)size);
    size_t n = strlen(name);
    int long_name = n > 100 && !ustar_split(name, n), big = size > OCTAL11_MAX;
    uint8_t b[TIO_TAR_BLOCK];
    if (long_name || big) {
        tio_buf pax;
        memset(&pax, 0, sizeof pax);
        if (long_name) pax_record(&pax, "path", name, n);
        if (big) {
            char num[24];
            int d = snprintf(num, sizeof num, "%llu", (unsigned long long)size);
            pax_record(&pax, "size", num, (size_t)d);
        }
        if (pax.oom) {
            free(pax.p);
            return tio__err(err, TIO_E_NOMEM, FMT, -1, "out of memory");
        }
        header(b, "././@PaxHeader", 14, pax.len, 'x', w->mtime);
        rc = put(w, b, sizeof b, err);
        if (rc == TIO_OK) rc = put(w, pax.p, pax.len, err);
        if (rc == TIO_OK) rc = pad(w, pax.len, err);
        free(pax.p);
        if (rc) return rc;
    }
    header(b, name, n, big ? 0 : size, '0', w->mtime);
    rc = put(w, b, sizeof b, err);
    if (rc == TIO_OK && size >= REF_MIN) {
        rc = tio__sink_write_ref(&w->sink, data, (size_t)size, err);
        if (rc == TIO_OK) rc = tio__sink_flush(&w->sink, err); /* data are the caller's */
        if (rc) w->failed = 1;
    } else if (rc == TIO_OK && size) {
        rc = put(w, data, (size_t)size, err);
    }
    if (rc == TIO_OK) rc = pad(w, size, err);
    if (rc == TIO_OK) w->count++;
    return rc;
}

/* The format's first extension without its dot (".safetensors .st" ->
 * "safetensors"), into buf. */
static int first_extension(const char *format, char *buf, size_t cap, tio_error *err) {
    const char *exts = tio_format_extensions(format);
    if (!exts)
        return tio__err(err, TIO_E_FORMAT, FMT, -1, "unknown format '%s'", format);
    if (*exts == '.') exts++;
    size_t k = strcspn(exts, " ");
    if (k == 0 || k >= cap)
        return tio__err(err, TIO_E_UNSUPPORTED, FMT, -1,
                        "format '%s' has no file extension", format);
    memcpy(buf, exts, k);
    buf[k] = 0;
    return TIO_OK;
}

int tio_shard_writer_add_container(tio_shard_writer *w, const char *key, const tio_container *c,
                                   const tio_save_options *save_opts, char **name_out,
                                   tio_error *err) {
    if (name_out) *name_out = NULL;
    if (!w || !key || !c || !save_opts || !save_opts->format)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1,
                        "NULL argument (save_opts->format is required)");
    char ext[64];
    int rc = first_extension(save_opts->format, ext, sizeof ext, err);
    if (rc) return rc;
    size_t kl = strlen(key), el = strlen(ext);
    char *name = malloc(kl + 1 + el + 1);
    if (!name) return tio__err(err, TIO_E_NOMEM, FMT, -1, "out of memory");
    memcpy(name, key, kl);
    name[kl] = '.';
    memcpy(name + kl + 1, ext, el + 1);
    rc = tio_shard_check_name(name, err);
    void *data = NULL;
    size_t size = 0;
    if (rc == TIO_OK) rc = tio_save_memory(c, save_opts, &data, &size, err);
    if (rc == TIO_OK) rc = tio_shard_writer_add_bytes(w, name, data, size, err);
    tio_free(data);
    if (rc == TIO_OK && name_out)
        *name_out = name;
    else
        free(name);
    return rc;
}

uint64_t tio_shard_writer_count(const tio_shard_writer *w) { return w ? w->count : 0; }

uint64_t tio_shard_writer_bytes(const tio_shard_writer *w) {
    return w ? tio__sink_pos(&w->sink) : 0;
}

int tio_shard_writer_close(tio_shard_writer *w, tio_error *err) {
    if (!w) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "NULL argument");
    int rc = w->failed ? io_error("close", err) : TIO_OK;
    if (rc == TIO_OK) { /* two zero blocks, then zeros up to a whole record */
        uint64_t end = tio__sink_pos(&w->sink) + 2 * TIO_TAR_BLOCK;
        uint64_t rem = end % w->record;
        uint64_t zeros = 2 * TIO_TAR_BLOCK + (rem ? w->record - rem : 0);
        rc = tio__sink_zeros(&w->sink, (size_t)zeros, err);
    }
    if (rc == TIO_OK) rc = tio__sink_flush(&w->sink, err);
    tio__sink_dispose(&w->sink);
    if (rc == TIO_OK)
        rc = tio__afile_commit(w->file, err);
    else
        tio__afile_abort(w->file);
    free(w);
    return rc;
}

void tio_shard_writer_abort(tio_shard_writer *w) {
    if (!w) return;
    tio__sink_dispose(&w->sink);
    tio__afile_abort(w->file);
    free(w);
}
