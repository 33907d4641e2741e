/* ONNX external data (TensorProto.data_location = EXTERNAL): the tensor's
 * bytes are in a file beside the model, named by external_data's
 * "location", at "offset" for "length" bytes.
 *
 * The files are mapped (read-only, private), once per file per open, and the
 * tensors are views into the mappings, which the container keeps (its
 * `backing`) until it is freed. A model is input like any other: a location
 * that is absolute, has a ".." component, or resolves (realpath: symlinks
 * followed) outside the model's directory is refused unless the caller
 * opened with TIO_OPEN_EXTERNAL_ANYWHERE, so that a hostile model cannot
 * read /etc/passwd into a tensor. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "onnx/onnx.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct ox_extmap {
    char *real; /* realpath of the file */
    void *map;  /* NULL for an empty file */
    size_t size;
} ox_extmap;

typedef struct ox_extmaps {
    ox_extmap *v;
    size_t n, cap;
    uint64_t mapped; /* bytes mapped, summed over the files */
    uint64_t viewed; /* bytes the tensors view, summed */
    tio__names_lazy ix; /* the files by real path (names.c): one per tensor is possible */
} ox_extmaps;

static const char *ox_extmap_real(const void *m, size_t k) {
    return ((const ox_extmaps *)m)->v[k].real;
}

static void ox_extmaps_free(void *p) {
    ox_extmaps *m = p;
    if (!m) return;
    for (size_t k = 0; k < m->n; k++) {
        if (m->v[k].map) munmap(m->v[k].map, m->v[k].size);
        free(m->v[k].real);
    }
    free(m->v);
    tio__names_lazy_free(&m->ix);
    free(m);
}

/* The mappings of this container (created on first use). */
static int ox_maps(const char *fmt, tio_container *c, ox_extmaps **out, tio_error *err) {
    if (c->backing) {
        if (c->backing_free != ox_extmaps_free)
            return tio__err(err, TIO_E_UNSUPPORTED, fmt, -1,
                            "external data cannot be read into a container that already "
                            "holds other backing memory");
        *out = c->backing;
        return TIO_OK;
    }
    ox_extmaps *m = calloc(1, sizeof *m);
    if (!m) return tio__nomem(err, fmt);
    c->backing = m;
    c->backing_free = ox_extmaps_free;
    *out = m;
    return TIO_OK;
}

/* Whether `loc` (relative) has a ".." component. */
static bool ox_has_dotdot(const char *loc) {
    for (const char *p = loc; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') return true;
        if (!e) break;
        p = e + 1;
    }
    return false;
}

/* Maps (or finds mapped) the file at real path `real`. */
static int ox_map_file(const char *fmt, ox_extmaps *m, const char *real, const char *loc,
                       int64_t at, ox_extmap **out, tio_error *err) {
    size_t k = tio__names_lazy_find(&m->ix, m->n, real, ox_extmap_real, m);
    if (k != SIZE_MAX) {
        *out = &m->v[k];
        return TIO_OK;
    }
    if (m->n == m->cap) {
        size_t nc = m->cap ? 2 * m->cap : 4;
        ox_extmap *nv = realloc(m->v, nc * sizeof *nv);
        if (!nv) return tio__nomem(err, fmt);
        m->v = nv;
        m->cap = nc;
    }
    /* realpath resolved every symlink: the last component must not be one
     * now (a swap after the check). */
    int fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int e = errno;
        return tio__err(err, TIO_E_IO, fmt, at, "external data '%.200s': cannot open: %s",
                        loc, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tio__err(err, TIO_E_IO, fmt, at,
                        "external data '%.200s': not a regular file", loc);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return tio__err(err, TIO_E_LIMIT, fmt, at,
                        "external data '%.200s': the file is too large to map", loc);
    }
    ox_extmap x = {NULL, NULL, (size_t)st.st_size};
    if (x.size) {
        void *p = mmap(NULL, x.size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return tio__err(err, TIO_E_IO, fmt, at, "external data '%.200s': cannot map: %s",
                            loc, strerror(e));
        }
        x.map = p;
    }
    close(fd);
    x.real = strdup(real);
    if (!x.real) {
        if (x.map) munmap(x.map, x.size);
        return tio__nomem(err, fmt);
    }
    m->mapped += x.size;
    m->v[m->n] = x;
    *out = &m->v[m->n++];
    tio__names_lazy_added(&m->ix, m->n - 1, ox_extmap_real, m);
    return TIO_OK;
}

int tio__onnx_external(tio_read_ctx *ctx, const char *fmt, const char *loc, uint64_t offset,
                       bool has_length, uint64_t length, uint64_t nbytes, int64_t at,
                       const char *lbl, const uint8_t **data, tio_error *err) {
    static const uint8_t empty[1];
    bool anywhere = (ctx->flags & TIO_OPEN_EXTERNAL_ANYWHERE) != 0;
    if (!ctx->path)
        return tio__err(err, TIO_E_UNSUPPORTED, fmt, at,
                        "%s: the tensor's data are in an external file ('%.200s'): reading "
                        "it needs the model's path (tio_open), not a buffer",
                        lbl, loc);
    if (!loc[0])
        return tio__err(err, TIO_E_CORRUPT, fmt, at,
                        "%s: external data without a location", lbl);
    if (!anywhere && loc[0] == '/')
        return tio__err(err, TIO_E_UNSUPPORTED, fmt, at,
                        "%s: external data location '%.200s' is an absolute path; refused "
                        "(only files in the model's directory are read unless the caller "
                        "passes TIO_OPEN_EXTERNAL_ANYWHERE)",
                        lbl, loc);
    if (!anywhere && ox_has_dotdot(loc))
        return tio__err(err, TIO_E_UNSUPPORTED, fmt, at,
                        "%s: external data location '%.200s' has a '..' component; refused "
                        "(only files in the model's directory are read unless the caller "
                        "passes TIO_OPEN_EXTERNAL_ANYWHERE)",
                        lbl, loc);
    /* the model's directory, and the file joined to it */
    const char *slash = strrchr(ctx->path, '/');
    size_t dlen = slash ? (size_t)(slash - ctx->path) : 0;
    size_t llen = strlen(loc);
    char *dir = malloc(dlen + 2), *full = malloc(dlen + llen + 3);
    char *rdir = NULL, *rfull = NULL;
    int rc = TIO_OK;
    if (!dir || !full) {
        rc = tio__nomem(err, fmt);
        goto out;
    }
    if (slash) {
        memcpy(dir, ctx->path, dlen ? dlen : 1); /* "/x.onnx" -> "/" */
        dir[dlen ? dlen : 1] = 0;
    } else {
        strcpy(dir, ".");
    }
    if (loc[0] == '/') snprintf(full, dlen + llen + 3, "%s", loc);
    else snprintf(full, dlen + llen + 3, "%s/%s", dir, loc);
    rdir = realpath(dir, NULL);
    rfull = realpath(full, NULL);
    if (!rdir || !rfull) {
        int e = errno;
        rc = tio__err(err, TIO_E_IO, fmt, at,
                      "%s: external data '%.200s': cannot open: %s", lbl, loc, strerror(e));
        goto out;
    }
    size_t rl = strlen(rdir);
    bool inside = strncmp(rfull, rdir, rl) == 0 &&
                  (rfull[rl] == '/' || (rl == 1 && rdir[0] == '/'));
    if (!anywhere && !inside) {
        rc = tio__err(err, TIO_E_UNSUPPORTED, fmt, at,
                      "%s: external data location '%.200s' resolves to '%.200s', outside the "
                      "model's directory (a symbolic link); refused unless the caller passes "
                      "TIO_OPEN_EXTERNAL_ANYWHERE",
                      lbl, loc, rfull);
        goto out;
    }
    ox_extmaps *m = NULL;
    ox_extmap *x = NULL;
    if ((rc = ox_maps(fmt, ctx->c, &m, err))) goto out;
    if ((rc = ox_map_file(fmt, m, rfull, loc, at, &x, err))) goto out;
    if (offset > x->size) {
        rc = tio__err(err, TIO_E_BOUNDS, fmt, at,
                      "%s: external data '%.200s': offset %llu is past the file's %zu bytes",
                      lbl, loc, (unsigned long long)offset, x->size);
        goto out;
    }
    if (!has_length) length = nbytes;
    if (length > x->size - offset) {
        rc = tio__err(err, TIO_E_BOUNDS, fmt, at,
                      "%s: external data '%.200s': %llu bytes at offset %llu run past the "
                      "file's %zu bytes",
                      lbl, loc, (unsigned long long)length, (unsigned long long)offset,
                      x->size);
        goto out;
    }
    if (length != nbytes) {
        rc = tio__err(err, TIO_E_CORRUPT, fmt, at,
                      "%s: external data '%.200s': length %llu, the shape needs %llu bytes",
                      lbl, loc, (unsigned long long)length, (unsigned long long)nbytes);
        goto out;
    }
    /* As for views of the input: tensors may not alias the same bytes over
     * and over (every per-byte operation would multiply). */
    uint64_t cap = 2 * m->mapped + (64u << 10);
    if (tio__add64_ovf(m->viewed, nbytes, &m->viewed) || m->viewed > cap) {
        rc = tio__err(err, TIO_E_LIMIT, fmt, at,
                      "%s: the tensors view more than %llu bytes of external data (2 x the "
                      "%llu bytes of the external files + 64 KiB): they alias the same bytes",
                      lbl, (unsigned long long)cap, (unsigned long long)m->mapped);
        goto out;
    }
    *data = x->map ? (const uint8_t *)x->map + offset : empty;
out:
    free(dir);
    free(full);
    free(rdir);
    free(rfull);
    return rc;
}
