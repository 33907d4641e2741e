/* Opening containers: sources (mmap, buffers), format choice, decoding,
 * prefetching. */
#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* madvise (MADV_POPULATE_READ has no posix_madvise form) */
#endif
#include "internal.h"
#include "source/source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

tio_limits tio__limits_resolve(const tio_limits *l) {
    tio_limits r = {TIO_DEFAULT_MAX_TENSORS,      TIO_DEFAULT_MAX_RANK,
                    TIO_DEFAULT_MAX_HEADER_BYTES, TIO_DEFAULT_MAX_NAME_BYTES,
                    TIO_DEFAULT_MAX_DEPTH,        TIO_DEFAULT_MAX_OBJECTS,
                    TIO_DEFAULT_MAX_DENSE_BYTES,  TIO_DEFAULT_MAX_PICKLE_BYTES,
                    TIO_DEFAULT_MAX_PICKLE_OBJECTS, TIO_DEFAULT_MAX_PICKLE_DEPTH,
                    TIO_DEFAULT_MAX_SHARDS,       TIO_DEFAULT_MAX_REMOTE_BYTES,
                    TIO_DEFAULT_MAX_REDIRECTS,    TIO_DEFAULT_MAX_RETRIES,
                    TIO_DEFAULT_TIMEOUT_MS,       TIO_DEFAULT_MAX_MEMBER_BYTES};
    if (l) {
        if (l->max_depth) r.max_depth = l->max_depth;
        /* Nesting is walked recursively (graphs, subgraphs): a raised depth
         * must still fit any thread's stack. */
        if (r.max_depth > TIO_MAX_DEPTH_CAP) r.max_depth = TIO_MAX_DEPTH_CAP;
        if (l->max_objects) r.max_objects = l->max_objects;
        if (l->max_tensors) r.max_tensors = l->max_tensors;
        if (l->max_rank) r.max_rank = l->max_rank;
        if (l->max_header_bytes) r.max_header_bytes = l->max_header_bytes;
        if (l->max_name_bytes) r.max_name_bytes = l->max_name_bytes;
        if (l->max_dense_bytes) r.max_dense_bytes = l->max_dense_bytes;
        if (l->max_pickle_bytes) r.max_pickle_bytes = l->max_pickle_bytes;
        if (l->max_pickle_objects) r.max_pickle_objects = l->max_pickle_objects;
        if (l->max_pickle_depth) r.max_pickle_depth = l->max_pickle_depth;
        if (l->max_shards) r.max_shards = l->max_shards;
        if (l->max_remote_bytes) r.max_remote_bytes = l->max_remote_bytes;
        if (l->max_redirects) r.max_redirects = l->max_redirects;
        if (l->max_retries) r.max_retries = l->max_retries;
        if (l->timeout_ms) r.timeout_ms = l->timeout_ms;
        if (l->max_member_bytes) r.max_member_bytes = l->max_member_bytes;
        /* the reader walks a pickle's objects recursively */
        if (r.max_pickle_depth > TIO_MAX_PICKLE_DEPTH_CAP)
            r.max_pickle_depth = TIO_MAX_PICKLE_DEPTH_CAP;
    }
    return r;
}

/* Picks the format: forced, else content probe, else the path's extension. */
static int choose_format(const tio_open_options *o, const uint8_t *data, size_t size,
                         const char *path, const tio_format_desc **out, tio_error *err) {
    if (o && o->format) {
        *out = tio__format_find(o->format);
        if (!*out) return tio__err(err, TIO_E_FORMAT, NULL, -1, "unknown format '%s'", o->format);
        return TIO_OK;
    }
    const char *name = tio_format_probe(data, size);
    if (!name && path) name = tio_format_for_path(path);
    if (!name) {
        char head[40] = "";
        size_t n = size < 8 ? size : 8;
        for (size_t i = 0; i < n; i++) snprintf(head + 2 * i, 3, "%02x", data[i]);
        return tio__err(err, TIO_E_FORMAT, NULL, -1,
                        "no format recognises the data (%zu bytes%s%s) and the name has no "
                        "known extension",
                        size, n ? ", starting " : "", head);
    }
    *out = tio__format_find(name);
    return TIO_OK;
}

static int decode(tio_container *c, const tio_format_desc *f, const uint8_t *data,
                  size_t size, const char *path, tio_headsrc *head,
                  const tio_open_options *o, tio_error *err) {
    tio_read_ctx ctx;
    ctx.path = path;
    ctx.head = head;
    ctx.data = data;
    ctx.size = size;
    ctx.limits = tio__limits_resolve(o ? o->limits : NULL);
    ctx.flags = o ? o->flags : 0;
    ctx.c = c;
    c->format = f->name;
    c->source_size = size;
    c->limits = ctx.limits;
    return f->read(&ctx, err);
}

int tio_open_memory(const void *data, size_t size, const tio_open_options *opts,
                    tio_container **out, tio_error *err) {
    if (!out || (!data && size))
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    *out = NULL;
    static const uint8_t empty[1];
    const uint8_t *p = size ? (const uint8_t *)data : empty;
    const tio_format_desc *f;
    int rc = choose_format(opts, p, size, NULL, &f, err);
    if (rc) return rc;
    tio_container *c = tio_container_new();
    if (!c) return tio__nomem(err, NULL);
    if (opts && (opts->flags & TIO_OPEN_COPY) && size) {
        c->owned_buf = malloc(size);
        if (!c->owned_buf) {
            tio_container_free(c);
            return tio__nomem(err, NULL);
        }
        memcpy(c->owned_buf, data, size);
        p = c->owned_buf;
    }
    rc = decode(c, f, p, size, NULL, NULL, opts, err);
    if (rc) {
        tio_container_free(c);
        return rc;
    }
    *out = c;
    return TIO_OK;
}

/* Reads a non-regular file (pipe, character device) into memory. */
static int slurp(int fd, const char *path, const tio_open_options *opts, uint64_t expect,
                 uint8_t **buf, size_t *len, tio_error *err) {
    size_t cap = 1 << 16, n = 0, next = 1u << 20;
    uint8_t *b = malloc(cap);
    if (!b) return tio__nomem(err, NULL);
    for (;;) {
        if (n == cap) {
            if (cap > SIZE_MAX / 2) {
                free(b);
                return tio__err(err, TIO_E_LIMIT, NULL, -1, "%s: input too large", path);
            }
            uint8_t *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                return tio__nomem(err, NULL);
            }
            b = nb;
            cap *= 2;
        }
        /* by MiB with a progress function: a call per MiB, not per doubling */
        size_t want = cap - n;
        if (opts && opts->progress && want > (1u << 20)) want = 1u << 20;
        ssize_t r = read(fd, b + n, want);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(b);
            return tio__err(err, TIO_E_IO, NULL, -1, "%s: read failed: %s", path, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
        if (opts && opts->progress && n >= next) {
            opts->progress(opts->progress_ctx, n, expect > n ? expect : 0);
            next = n + (1u << 20);
        }
    }
    *buf = b;
    *len = n;
    return TIO_OK;
}

int tio_container_fetch(tio_container *c, size_t i, tio_error *err) {
    if (!c) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    if (i >= c->count)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "tensor %zu of %zu", i, c->count);
    return c->remote ? tio__remote_fetch(c, c->tensors[i], err) : TIO_OK;
}

int tio__need_fetched(const tio_container *c, const tio_tensor *t, tio_error *err) {
    if (t && !tio__tensor_fetched(t))
        return tio__err(err, TIO_E_ARGUMENT, c ? c->format : NULL, -1,
                        "tensor %zu (%s): its bytes were not fetched (opened with "
                        "TIO_OPEN_LAZY: tio_container_fetch)", t->index,
                        t->name ? t->name : "unnamed");
    if (t || !c) return TIO_OK;
    for (size_t i = 0; i < c->count; i++) {
        int rc = tio__need_fetched(c, c->tensors[i], err);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* An http(s) URL: its first bytes; the format; the header as the format
 * says (or the whole file); unless TIO_OPEN_LAZY every tensor's bytes; then
 * decoding. */
static int open_url(const char *url, const tio_open_options *opts, tio_container **out,
                    tio_error *err) {
    tio_limits lim = tio__limits_resolve(opts ? opts->limits : NULL);
    tio_container *c = tio_container_new();
    if (!c) return tio__nomem(err, NULL);
    const uint8_t *base;
    size_t size, have;
    int rc = tio__remote_open(url, &lim, &c->remote, &base, &size, &have, err);
    /* the extension from the path, without ?query or #fragment */
    char *name = rc == TIO_OK ? strndup(url, strcspn(url, "?#")) : NULL;
    if (rc == TIO_OK && !name) rc = tio__nomem(err, NULL);
    const tio_format_desc *f = NULL;
    if (rc == TIO_OK) rc = choose_format(opts, base, have, name, &f, err);
    free(name);
    while (rc == TIO_OK && f->head && have < size) { /* have grows each time */
        uint64_t want = size;
        f->head(base, have, size, &lim, &want);
        if (want <= have) break;
        if (want > size) want = size;
        rc = tio__remote_need(c->remote, 0, want, err);
        have = (size_t)want;
    }
    if (rc == TIO_OK && !f->head) rc = tio__remote_need(c->remote, 0, size, err);
    int lazy = opts && (opts->flags & TIO_OPEN_LAZY);
    if (rc == TIO_OK && f->head && !lazy) {
        /* A first decode finds the tensors' ranges; once they are fetched
         * the file is decoded again, so that checks of the bytes between
         * tensors (GGUF's padding) see them as a local open does. */
        tio_container *pre = tio_container_new();
        if (!pre) rc = tio__nomem(err, NULL);
        if (pre) {
            pre->remote = c->remote; /* borrowed */
            rc = decode(pre, f, base, size, NULL, NULL, opts, err);
            if (rc == TIO_OK) rc = tio__remote_fetch(pre, NULL, err);
            pre->remote = NULL;
            tio_container_free(pre);
        }
    }
    /* no path: nothing is looked up beside a URL (ONNX external data) */
    if (rc == TIO_OK) rc = decode(c, f, base, size, NULL, NULL, opts, err);
    if (rc == TIO_OK && opts && opts->progress) opts->progress(opts->progress_ctx, size, size);
    if (rc) {
        tio_container_free(c);
        return rc;
    }
    *out = c;
    return TIO_OK;
}

/* pipe:COMMAND: its standard output read into memory, its exit status
 * checked, then decoded (format probed, else the command's extension). */
static int open_pipe(const char *path, const tio_open_options *opts, tio_container **out,
                     tio_error *err) {
    int fd;
    pid_t pid;
    int rc = tio__pipe_start(path + 5, path, &fd, &pid, err);
    if (rc) return rc;
    uint8_t *b = NULL;
    size_t size = 0;
    rc = slurp(fd, path, opts, 0, &b, &size, err);
    int rr = tio__pipe_finish(fd, pid, rc != TIO_OK, path, rc ? NULL : err);
    if (rc == TIO_OK) rc = rr;
    tio_container *c = rc == TIO_OK ? tio_container_new() : NULL;
    if (rc == TIO_OK && !c) rc = tio__nomem(err, NULL);
    if (c) c->owned_buf = b;
    else free(b);
    static const uint8_t empty[1];
    const uint8_t *data = b ? b : empty;
    /* the extension of the command's last word, quotes left out */
    size_t n = strlen(path);
    while (n > 5 && strchr(" \t'\"", path[n - 1])) n--;
    char *name = rc == TIO_OK ? strndup(path, n) : NULL;
    if (rc == TIO_OK && !name) rc = tio__nomem(err, NULL);
    const tio_format_desc *f = NULL;
    if (rc == TIO_OK) rc = choose_format(opts, data, size, name, &f, err);
    free(name);
    if (rc == TIO_OK) rc = decode(c, f, data, size, NULL, NULL, opts, err);
    if (rc) {
        tio_container_free(c);
        return rc;
    }
    *out = c;
    return TIO_OK;
}

int tio_open(const char *path, const tio_open_options *opts, tio_container **out,
             tio_error *err) {
    if (!path || !out) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    *out = NULL;
    if (tio__is_url(path)) return open_url(path, opts, out, err);
    if (strncmp(path, "pipe:", 5) == 0) return open_pipe(path, opts, out, err);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return tio__err(err, TIO_E_IO, NULL, -1, "%s: cannot open: %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return tio__err(err, TIO_E_IO, NULL, -1, "%s: cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        /* a Hugging Face model directory: its weights file or index */
        return tio__open_model_dir(path, opts, out, err);
    }
    tio_container *c = tio_container_new();
    if (!c) {
        close(fd);
        return tio__nomem(err, NULL);
    }
    static const uint8_t empty[1];
    const uint8_t *data = empty;
    size_t size = 0;
    int rc = TIO_OK;
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > SIZE_MAX) {
        rc = tio__err(err, TIO_E_LIMIT, NULL, -1, "%s: file too large to map", path);
    } else if (S_ISREG(st.st_mode) && st.st_size == 0) {
        /* nothing to map: an empty input */
    } else if (S_ISREG(st.st_mode) && !(opts && (opts->flags & TIO_OPEN_NO_MMAP))) {
        size = (size_t)st.st_size;
        void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: cannot map: %s", path, strerror(e));
        } else {
            c->map = m;
            c->map_size = size;
            c->map_path = strdup(path); /* NULL (no memory): saves just do not copy ranges */
            c->map_dev = (uint64_t)st.st_dev;
            c->map_ino = (uint64_t)st.st_ino;
            c->map_mtime_sec = (int64_t)st.st_mtim.tv_sec;
            c->map_mtime_nsec = (int64_t)st.st_mtim.tv_nsec;
            data = m;
            /* Decoding touches one header per tensor, scattered over the
             * file: without fault-around each touch maps one page, not 16,
             * and without readahead a cold file reads only those pages.
             * The default comes back once decoded, for reading the data. */
            posix_madvise(m, size, POSIX_MADV_RANDOM);
        }
    } else {
        uint8_t *b = NULL;
        rc = slurp(fd, path, opts, S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0, &b, &size,
                   err);
        c->owned_buf = b;
        data = b;
    }
    /* Header reads by pread() while decoding (see tio_headsrc); on the heap:
     * two pages are too much for the stack of a caller's small thread. */
    tio_headsrc *head = NULL;
    if (rc == TIO_OK && c->map) {
        head = malloc(sizeof *head);
        if (head) tio__headsrc_init(head, fd, c->map, c->map_size);
        /* as the mapping's POSIX_MADV_RANDOM: a cold file reads the header
         * pages, not readahead around each (the descriptor is ours, closed
         * after decoding) */
        posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    }
    const tio_format_desc *f = NULL;
    if (rc == TIO_OK) rc = choose_format(opts, data, size, path, &f, err);
    if (rc == TIO_OK) rc = decode(c, f, data, size, path, head, opts, err);
    free(head);
    close(fd);
    if (c->map) posix_madvise(c->map, c->map_size, POSIX_MADV_NORMAL);
    if (rc == TIO_OK && opts && (opts->flags & TIO_OPEN_PREFETCH))
        rc = tio_container_prefetch(c, err);
    if (rc == TIO_OK && opts && opts->progress) opts->progress(opts->progress_ctx, size, size);
    if (rc) {
        tio_container_free(c);
        return rc;
    }
    *out = c;
    return TIO_OK;
}

/* Linux >= 5.14; older headers lack the constant (older kernels: EINVAL). */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

/* Prefetches c's own mapping, if it has one. */
static int prefetch_map(const tio_container *c, bool force_willneed, int *how, tio_error *err) {
    if (!c->map || !c->map_size) return TIO_OK; /* the bytes are in memory already */
#ifdef __linux__
    if (!force_willneed) {
        int r;
        do r = madvise(c->map, c->map_size, MADV_POPULATE_READ);
        while (r != 0 && errno == EINTR);
        if (r == 0) {
            *how = TIO_PREFETCH_POPULATED;
            return TIO_OK;
        }
        int e = errno;
        /* EINVAL: a kernel before 5.14. EFAULT/EIO: the file shrank or cannot
         * be read (touching those pages fails later as it would have);
         * EAGAIN/ENOMEM: memory is short. The hint cannot fail that way. */
        if (e != EINVAL && e != EFAULT && e != EIO && e != EAGAIN && e != ENOMEM)
            return tio__err(err, TIO_E_IO, NULL, -1, "prefetch: madvise: %s", strerror(e));
    }
#else
    (void)force_willneed;
#endif
    if (posix_madvise(c->map, c->map_size, POSIX_MADV_WILLNEED) == 0)
        *how = TIO_PREFETCH_HINTED;
    return TIO_OK; /* a failed hint is no error: reading still works */
}

int tio__prefetch(tio_container *c, bool force_willneed, int *how, tio_error *err) {
    *how = TIO_PREFETCH_NONE;
    if (!c) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    if (c->remote) return tio__remote_fetch(c, NULL, err);
    if (!c->nparts) return prefetch_map(c, force_willneed, how, err);
    /* its own mapping and those of the containers it holds (an index's
     * shards): how the last of them was prefetched */
    size_t n;
    const tio_container **r = tio__container_reach(c, &n);
    if (!r) return tio__nomem(err, NULL);
    int rc = TIO_OK;
    for (size_t i = 0; rc == TIO_OK && i < n; i++) {
        int h = TIO_PREFETCH_NONE;
        rc = prefetch_map(r[i], force_willneed, &h, err);
        if (h != TIO_PREFETCH_NONE) *how = h;
    }
    free(r);
    return rc;
}

int tio_container_prefetch(tio_container *c, tio_error *err) {
    int how;
    return tio__prefetch(c, false, &how, err);
}
