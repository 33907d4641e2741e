/* Saving: the write plan (what each tensor becomes under the save options),
 * loss checks, memory output and atomic file output. */
/* O_TMPFILE and AT_EMPTY_PATH (Linux); everything else is POSIX. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sink.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct tio_write_plan {
    const tio_container *c;
    const tio_format_desc *fmt;
    unsigned flags;
    unsigned version;     /* tio_save_options.version (0 = the format's default) */
    tio_wtensor *t;
    size_t n;
    uint8_t *scratch;     /* converted data of the current tensor */
    uint8_t *scratch2;    /* densified source before widening */
    size_t scratch_cap, scratch2_cap;
    tio_kv options;       /* parsed tio_save_options.options */
};

size_t tio__plan_count(const tio_write_plan *p) { return p->n; }

int tio__plan_sink_data(const tio_write_plan *p, tio_sink *s, const void *data, size_t n,
                        tio_error *err) {
    /* tio__plan_data hands out converted bytes only as these two buffers,
     * which its next call frees. */
    const uint8_t *d = data;
    if (d == p->scratch || d == p->scratch2) return tio__sink_write(s, data, n, err);
    return tio__sink_write_ref(s, data, n, err);
}
const tio_wtensor *tio__plan_tensor(const tio_write_plan *p, size_t i) {
    return i < p->n ? &p->t[i] : NULL;
}
const tio_container *tio__plan_container(const tio_write_plan *p) { return p->c; }
unsigned tio__plan_flags(const tio_write_plan *p) { return p->flags; }
unsigned tio__plan_version(const tio_write_plan *p) { return p->version; }
const char *tio__plan_option(const tio_write_plan *p, const char *key) {
    return tio__kv_get(&p->options, key);
}

/* Whether `key` (n bytes) is one of the space-separated words of `list`. */
static int word_in(const char *list, const char *key, size_t n) {
    while (list && *list) {
        while (*list == ' ') list++;
        size_t w = strcspn(list, " ");
        if (w == n && memcmp(list, key, n) == 0) return 1;
        list += w;
    }
    return 0;
}

/* Parses "key=value,key=value" into p->options, checking each key against
 * the keys the format takes. */
static int parse_options(tio_write_plan *p, const char *text, tio_error *err) {
    const char *fn = p->fmt->name;
    const char *q = text;
    while (*q) {
        size_t len = strcspn(q, ",");
        const char *eq = memchr(q, '=', len);
        if (!eq || eq == q)
            return tio__err(err, TIO_E_ARGUMENT, fn, -1,
                            "format option \"%.*s\" is not key=value", (int)(len > 64 ? 64 : len),
                            q);
        size_t klen = (size_t)(eq - q);
        if (!word_in(p->fmt->options, q, klen))
            return tio__err(err, TIO_E_ARGUMENT, fn, -1,
                            "%s takes no format option \"%.*s\"%s%s", fn,
                            (int)(klen > 64 ? 64 : klen), q,
                            p->fmt->options ? " (it takes: " : " (it takes none)",
                            p->fmt->options ? p->fmt->options : "");
        char key[64], val[256];
        size_t vlen = len - klen - 1;
        if (klen >= sizeof key || vlen >= sizeof val)
            return tio__err(err, TIO_E_ARGUMENT, fn, -1, "format option too long");
        memcpy(key, q, klen);
        key[klen] = 0;
        memcpy(val, eq + 1, vlen);
        val[vlen] = 0;
        if (tio__kv_get(&p->options, key))
            return tio__err(err, TIO_E_ARGUMENT, fn, -1, "format option \"%s\" given twice",
                            key);
        int rc = tio__kv_set(&p->options, key, val, err);
        if (rc) return rc;
        q += len;
        if (*q == ',') q++;
    }
    return TIO_OK;
}

/* The dtype that holds every value of d exactly, for formats that lack d. */
static tio_dtype widened(tio_dtype d) {
    switch (d) {
    case TIO_BOOL: return TIO_UINT8;
    case TIO_FLOAT16:
    case TIO_BFLOAT16: return TIO_FLOAT32;
    default: return TIO_DTYPE_INVALID;
    }
}

static void plan_free(tio_write_plan *p) {
    free(p->t);
    free(p->scratch);
    free(p->scratch2);
    tio__kv_free(&p->options);
}

/* Makes *buf hold at least n bytes (its contents are not kept). */
static int scratch_reserve(uint8_t **buf, size_t *cap, size_t n) {
    if (*buf && *cap >= n) return TIO_OK;
    free(*buf);
    *cap = 0;
    *buf = malloc(n ? n : 1);
    if (!*buf) return TIO_E_NOMEM;
    *cap = n;
    return TIO_OK;
}

/* " ('name')" for a named tensor, "" otherwise, for messages. */
static const char *tlabel(const tio_tensor *t, char *buf, size_t cap) {
    buf[0] = 0;
    if (t->name) snprintf(buf, cap, " ('%.64s%s')", t->name, strlen(t->name) > 64 ? "..." : "");
    return buf;
}

/* Densified tensors: their dense bytes in all are bounded by the container's
 * max_dense_bytes, checked here, before anything is allocated or written.
 * File and memory writers stream them (tio__plan_sink_tensor: zero runs and
 * values, no buffer of the dense size); a message needs them whole, so its
 * plan (`reserve`) takes the memory for the largest one now, and running out
 * of it fails before the first part, with the size. */
static int plan_dense(tio_write_plan *p, int reserve, tio_error *err) {
    const char *fn = p->fmt->name;
    uint64_t limit = p->c->limits.max_dense_bytes, total = 0;
    size_t before = 0, src_max = 0, out_max = 0, i_src = 0, i_out = 0;
    for (size_t i = 0; i < p->n; i++) {
        const tio_wtensor *w = &p->t[i];
        const tio_tensor *s = w->src;
        if (!(s->layout == TIO_LAYOUT_COO && w->layout == TIO_LAYOUT_DENSE)) continue;
        if (tio__add64_ovf(total, w->nbytes, &total) || total > limit) {
            if (total < w->nbytes) total = UINT64_MAX; /* wrapped */
            char what[96];
            if (before)
                snprintf(what, sizeof what, "densifying it and the %zu sparse tensor%s before it",
                         before, before == 1 ? "" : "s");
            else
                snprintf(what, sizeof what, "densifying it");
            return tio__dense_limit_err(err, fn, -1, s, i, total, limit, what);
        }
        before++;
        size_t sb = (size_t)s->numel * tio_dtype_size(s->dtype);
        if (sb > src_max) {
            src_max = sb;
            i_src = i;
        }
        if (s->dtype != w->dtype && w->nbytes > out_max) {
            out_max = w->nbytes;
            i_out = i;
        }
    }
    if (!reserve || !before) return TIO_OK;
    size_t need = src_max, at = i_src;
    if (scratch_reserve(&p->scratch2, &p->scratch2_cap, src_max) == TIO_OK) {
        if (!out_max || scratch_reserve(&p->scratch, &p->scratch_cap, out_max) == TIO_OK)
            return TIO_OK;
        need = out_max;
        at = i_out;
    }
    char lb[80], shape[96];
    const tio_tensor *s = p->t[at].src;
    tio__shape_str(s->shape, s->rank, shape, sizeof shape);
    return tio__err(err, TIO_E_NOMEM, fn, -1,
                    "tensor %zu%s: densifying it needs %zu bytes (%s %s): out of memory", at,
                    tlabel(s, lb, sizeof lb), need, tio_dtype_name(s->dtype), shape);
}

static int plan_build(tio_write_plan *p, const tio_container *c, const tio_format_desc *f,
                      const tio_save_options *opts, int reserve, tio_error *err) {
    unsigned flags = opts ? opts->flags : 0;
    memset(p, 0, sizeof *p);
    p->c = c;
    p->fmt = f;
    p->flags = flags;
    p->version = opts ? opts->version : 0;
    const char *fn = f->name;
    if (p->version && !(p->version < 32 && (f->versions & (1u << p->version))))
        return tio__err(err, TIO_E_UNSUPPORTED, fn, -1,
                        "%s has no version %u to write%s", fn, p->version,
                        f->versions ? "" : " (it is not versioned; leave the version at 0)");
    /* A model format needs a graph. (A format without TIO_CAP_GRAPH simply
     * does not write the graph and its metadata: the constants are tensors.) */
    if (opts && opts->options && opts->options[0]) {
        int rc = parse_options(p, opts->options, err);
        if (rc) return rc;
    }
    if ((f->caps & TIO_CAP_GRAPH) && !c->graph)
        return tio__err(err, TIO_E_UNSUPPORTED, fn, -1,
                        "a model needs a graph; this container holds tensors only");
    if (!(f->caps & TIO_CAP_METADATA) && !(flags & TIO_SAVE_DROP_METADATA) &&
        c->meta.count)
        return tio__err(err, TIO_E_LOSSY, fn, -1,
                        "the container has %zu metadata entries and %s cannot store "
                        "metadata (TIO_SAVE_DROP_METADATA / --drop-metadata drops them)",
                        c->meta.count, fn);
    if (c->count) {
        p->t = calloc(c->count, sizeof *p->t);
        if (!p->t) return tio__nomem(err, fn);
    }
    p->n = c->count;
    for (size_t i = 0; i < c->count; i++) {
        const tio_tensor *s = c->tensors[i];
        tio_wtensor *w = &p->t[i];
        char lb[80];
        w->src = s;
        w->name = s->name;
        w->dtype = s->dtype;
        w->layout = s->layout;
        w->rank = s->rank;
        w->shape = s->shape;
        w->numel = s->numel;
        w->nnz = s->nnz;
        if (s->name && !(f->caps & TIO_CAP_NAMES)) {
            if (!(flags & TIO_SAVE_DROP_NAMES))
                return tio__err(err, TIO_E_LOSSY, fn, -1,
                                "tensor %zu is named '%s' and %s cannot store tensor names "
                                "(TIO_SAVE_DROP_NAMES / --drop-names drops them)",
                                i, s->name, fn);
            w->name = NULL;
        }
        if (s->meta.count && !(f->caps & TIO_CAP_METADATA) &&
            !(flags & TIO_SAVE_DROP_METADATA))
            return tio__err(err, TIO_E_LOSSY, fn, -1,
                            "tensor %zu%s has metadata and %s cannot store metadata "
                            "(TIO_SAVE_DROP_METADATA / --drop-metadata drops it)",
                            i, tlabel(s, lb, sizeof lb), fn);
        if (!(f->dtypes & TIO_DTYPE_BIT(s->dtype))) {
            tio_dtype wd = widened(s->dtype);
            int ok = wd != TIO_DTYPE_INVALID && (f->dtypes & TIO_DTYPE_BIT(wd));
            if (!ok || !(flags & TIO_SAVE_WIDEN)) {
                if (ok)
                    return tio__err(err, TIO_E_LOSSY, fn, -1,
                                    "tensor %zu%s is %s, which %s cannot store "
                                    "(TIO_SAVE_WIDEN / --widen stores it as %s)",
                                    i, tlabel(s, lb, sizeof lb), tio_dtype_name(s->dtype), fn,
                                    tio_dtype_name(wd));
                return tio__err(err, TIO_E_LOSSY, fn, -1,
                                "tensor %zu%s is %s, which %s cannot store", i,
                                tlabel(s, lb, sizeof lb), tio_dtype_name(s->dtype), fn);
            }
            w->dtype = wd;
        }
        if (s->layout == TIO_LAYOUT_COO && !(f->caps & TIO_CAP_SPARSE)) {
            if (!(flags & TIO_SAVE_DENSIFY))
                return tio__err(err, TIO_E_LOSSY, fn, -1,
                                "tensor %zu%s is sparse (COO) and %s stores only dense "
                                "tensors (TIO_SAVE_DENSIFY / --densify writes it dense)",
                                i, tlabel(s, lb, sizeof lb), fn);
            w->layout = TIO_LAYOUT_DENSE;
            w->nnz = 0;
        }
        uint64_t count = w->layout == TIO_LAYOUT_COO ? w->nnz : w->numel;
        uint64_t nb;
        if (tio__mul64_ovf(count, tio_dtype_size(w->dtype), &nb) || nb > SIZE_MAX)
            return tio__err(err, TIO_E_OVERFLOW, fn, -1, "tensor %zu: size overflows", i);
        w->nbytes = (size_t)nb;
    }
    int rc = f->check ? f->check(p, err) : TIO_OK;
    if (rc == TIO_OK) rc = plan_dense(p, reserve, err);
    return rc;
}

static void widen_elems(tio_dtype from, const uint8_t *src, uint8_t *dst, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        switch (from) {
        case TIO_BOOL: dst[i] = src[i]; break;
        case TIO_FLOAT16:
        case TIO_BFLOAT16: {
            uint16_t h = tio__ld16(src + i * 2);
            float f = from == TIO_FLOAT16 ? tio__half_to_float(h) : tio__bf16_to_float(h);
            uint32_t u;
            memcpy(&u, &f, sizeof u);
            tio__st32(dst + i * 4, u);
            break;
        }
        default: break;
        }
    }
}

int tio__plan_data(tio_write_plan *p, size_t i, const uint8_t **data,
                   const uint8_t **indices, tio_error *err) {
    if (i >= p->n) return tio__err(err, TIO_E_ARGUMENT, p->fmt->name, -1, "no tensor %zu", i);
    const tio_wtensor *w = &p->t[i];
    const tio_tensor *s = w->src;
    if (indices) *indices = w->layout == TIO_LAYOUT_COO ? s->indices : NULL;
    int densify = s->layout == TIO_LAYOUT_COO && w->layout == TIO_LAYOUT_DENSE;
    int widen = s->dtype != w->dtype;
    if (!densify && !widen) {
        *data = s->data;
        return TIO_OK;
    }
    const uint8_t *src = s->data;
    uint64_t count = s->layout == TIO_LAYOUT_COO && !densify ? s->nnz : s->numel;
    if (densify) {
        /* plan_dense reserved room for the largest densified tensor */
        size_t dn = (size_t)s->numel * tio_dtype_size(s->dtype);
        if (scratch_reserve(&p->scratch2, &p->scratch2_cap, dn) != TIO_OK)
            return tio__nomem(err, p->fmt->name);
        int rc = tio_tensor_densify(s, p->scratch2, dn, err);
        if (rc) return rc;
        src = p->scratch2;
        if (!widen) {
            *data = p->scratch2;
            return TIO_OK;
        }
    }
    if (scratch_reserve(&p->scratch, &p->scratch_cap, w->nbytes) != TIO_OK)
        return tio__nomem(err, p->fmt->name);
    widen_elems(s->dtype, src, p->scratch, count);
    *data = p->scratch;
    return TIO_OK;
}

typedef struct {
    tio_sink *s;
    tio_dtype from, to;
    size_t out_es;
    tio_error *err;
} sink_walk;

static int sink_walk_zeros(void *ctx, uint64_t n) {
    sink_walk *w = ctx;
    /* a widened zero is zero bytes too (uint8 0, float32 +0.0) */
    return tio__sink_zeros(w->s, (size_t)n * w->out_es, w->err);
}

static int sink_walk_value(void *ctx, const uint8_t *elem) {
    sink_walk *w = ctx;
    uint8_t buf[8];
    if (w->from == w->to) return tio__sink_write(w->s, elem, w->out_es, w->err);
    widen_elems(w->from, elem, buf, 1);
    return tio__sink_write(w->s, buf, w->out_es, w->err);
}

int tio__plan_sink_tensor(tio_write_plan *p, tio_sink *s, size_t i, tio_error *err) {
    if (i >= p->n) return tio__err(err, TIO_E_ARGUMENT, p->fmt->name, -1, "no tensor %zu", i);
    const tio_wtensor *w = &p->t[i];
    const tio_tensor *src = w->src;
    if (src->layout == TIO_LAYOUT_COO && w->layout == TIO_LAYOUT_DENSE) {
        sink_walk sw = {s, src->dtype, w->dtype, tio_dtype_size(w->dtype), err};
        return tio__coo_walk(src, sink_walk_zeros, sink_walk_value, &sw, err);
    }
    const uint8_t *data = NULL;
    int rc = tio__plan_data(p, i, &data, NULL, err);
    if (rc == TIO_OK && w->nbytes) rc = tio__plan_sink_data(p, s, data, w->nbytes, err);
    return rc;
}

int tio__plan_create(const tio_container *c, const tio_save_options *opts,
                     const tio_format_desc *f, tio_write_plan **out, tio_error *err) {
    *out = NULL;
    tio_write_plan *p = malloc(sizeof *p);
    if (!p) return tio__nomem(err, f->name);
    int rc = plan_build(p, c, f, opts, 1, err);
    if (rc) {
        plan_free(p);
        free(p);
        return rc;
    }
    *out = p;
    return TIO_OK;
}

void tio__plan_destroy(tio_write_plan *p) {
    if (!p) return;
    plan_free(p);
    free(p);
}

static int pick_format(const tio_save_options *o, const char *path,
                       const tio_format_desc **out, tio_error *err) {
    const char *name = o && o->format ? o->format : (path ? tio_format_for_path(path) : NULL);
    if (!name)
        return tio__err(err, TIO_E_FORMAT, NULL, -1,
                        path ? "%s: the extension names no known format; choose one"
                             : "no output format given%s",
                        path ? path : "");
    *out = tio__format_find(name);
    if (!*out) return tio__err(err, TIO_E_FORMAT, NULL, -1, "unknown format '%s'", name);
    if (!(*out)->write)
        return tio__err(err, TIO_E_UNSUPPORTED, name, -1, "%s cannot be written", name);
    return TIO_OK;
}

int tio_check_save(const tio_container *c, const tio_save_options *opts, tio_error *err) {
    if (!c) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "container is NULL");
    const tio_format_desc *f = NULL;
    int rc = pick_format(opts, NULL, &f, err);
    if (rc) return rc;
    tio_write_plan p;
    rc = plan_build(&p, c, f, opts, 0, err);
    plan_free(&p);
    return rc;
}

int tio_save_memory(const tio_container *c, const tio_save_options *opts, void **out,
                    size_t *out_size, tio_error *err) {
    if (!c || !out || !out_size) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    *out = NULL;
    *out_size = 0;
    const tio_format_desc *f = NULL;
    int rc = pick_format(opts, NULL, &f, err);
    if (rc) return rc;
    tio_write_plan p;
    rc = plan_build(&p, c, f, opts, 0, err); /* writers stream densified data */
    tio_sink s;
    tio__sink_init_mem(&s);
    if (rc == TIO_OK) rc = f->write(&p, &s, err);
    if (rc == TIO_OK && !s.buf) {
        s.buf = malloc(1);
        if (!s.buf) rc = tio__nomem(err, f->name);
    }
    plan_free(&p);
    if (rc) {
        tio__sink_dispose(&s);
        return rc;
    }
    *out = s.buf;
    *out_size = s.len;
    return TIO_OK;
}

void tio_free(void *ptr) { free(ptr); }

/* ------------------------------------------------------------ atomic file saves
 *
 * Where it can (Linux, O_TMPFILE), the data are written to a file that has no
 * name, so a process killed while writing leaves nothing behind (the kernel
 * frees the file). Once complete and fsynced, the file is linked as
 * "<dir>/.<base>.tio-<pid>-<16 hex>.tmp", renamed over the target, and the
 * directory is synced. Where O_TMPFILE or the link is not available, the file
 * is created under such a temporary name from the start (O_EXCL). Before a
 * save, temporary files of the same target whose process is gone are removed,
 * so what a killed process can leave behind is bounded. */

#define TEMP_STEM_MAX 200 /* bytes of the base name kept in temporary names */

typedef struct save_names {
    const char *path;  /* the target */
    size_t dirlen;     /* bytes of path up to and including its last '/' */
    const char *stem;  /* the target's base name, cut to TEMP_STEM_MAX bytes */
    int stemlen;
    char dir[4096];    /* the target's directory */
    char tmp[4096];    /* the temporary name in use, "" when none exists */
    int sync;          /* fsync the file and the directory (not TIO_SAVE_NO_SYNC) */
} save_names;

static int split_path(const char *path, save_names *n, tio_error *err) {
    const char *slash = strrchr(path, '/');
    n->path = path;
    n->dirlen = slash ? (size_t)(slash - path) + 1 : 0;
    n->tmp[0] = 0;
    const char *base = path + n->dirlen;
    size_t blen = strlen(base);
    if (blen == 0 || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return tio__err(err, TIO_E_IO, NULL, -1, "%s: names a directory, not a file", path);
    if (n->dirlen >= sizeof n->dir)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "%s: path too long", path);
    n->stem = base;
    n->stemlen = (int)(blen > TEMP_STEM_MAX ? TEMP_STEM_MAX : blen);
    if (n->dirlen == 0) {
        memcpy(n->dir, ".", 2);
    } else {
        size_t dl = n->dirlen > 1 ? n->dirlen - 1 : 1; /* "/x" -> "/" */
        memcpy(n->dir, path, dl);
        n->dir[dl] = 0;
    }
    return TIO_OK;
}

static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Sets n->tmp to a fresh "<dir>/.<stem>.tio-<pid>-<16 hex>.tmp". */
static int temp_name(save_names *n, unsigned attempt, tio_error *err) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t u = mix64((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
                 mix64((uint64_t)(uintptr_t)&ts + attempt);
    int len = snprintf(n->tmp, sizeof n->tmp, "%.*s.%.*s.tio-%ld-%016llx.tmp", (int)n->dirlen,
                       n->path, n->stemlen, n->stem, (long)getpid(), (unsigned long long)u);
    if (len < 0 || (size_t)len >= sizeof n->tmp) {
        n->tmp[0] = 0;
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "%s: path too long", n->path);
    }
    return TIO_OK;
}

/* The pid in `name` when it is exactly ".<stem>.tio-<pid>-<16 hex>.tmp", with
 * a decimal pid without leading zeros and lowercase hex; else 0. */
static long long temp_owner(const char *name, const char *stem, size_t stemlen) {
    if (name[0] != '.' || strncmp(name + 1, stem, stemlen) != 0) return 0;
    const char *q = name + 1 + stemlen;
    if (strncmp(q, ".tio-", 5) != 0) return 0;
    q += 5;
    if (*q < '1' || *q > '9') return 0;
    long long pid = 0;
    for (int k = 0; *q >= '0' && *q <= '9'; q++, k++) {
        if (k == 10) return 0;
        pid = pid * 10 + (*q - '0');
    }
    if (pid > 0x7fffffffLL || *q++ != '-') return 0;
    for (int k = 0; k < 16; k++, q++)
        if (!((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f'))) return 0;
    return strcmp(q, ".tmp") == 0 ? pid : 0;
}

/* Removes the temporary files of this target left by processes that no longer
 * exist: names from the directory listing that match the pattern exactly,
 * regular files only (never through a symlink: fstatat and unlinkat on the
 * directory's own descriptor), never another live process's or our own.
 * Best effort: an unreadable directory is not an error. */
static void remove_stale_temps(const save_names *n) {
    DIR *d = opendir(n->dir);
    if (!d) return;
    int dfd = dirfd(d);
    pid_t self = getpid();
    struct dirent *de;
    while (dfd >= 0 && (de = readdir(d)) != NULL) {
        long long owner = temp_owner(de->d_name, n->stem, (size_t)n->stemlen);
        if (owner <= 0 || owner == (long long)self) continue;
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (kill((pid_t)owner, 0) == 0 || errno != ESRCH) continue; /* alive (or not ours) */
        unlinkat(dfd, de->d_name, 0);
    }
    closedir(d);
}

/* Writes the plan to fd, keeps the old target's permissions, fsyncs. A write
 * error (ENOSPC, EFBIG, EIO…) is TIO_E_IO naming the target. */
static int write_to(tio_write_plan *p, const tio_format_desc *f, int fd, const save_names *n,
                    const struct stat *keep, tio_error *err) {
    tio_sink s;
    int rc = tio__sink_init_fd(&s, fd, err);
    if (rc == TIO_OK) rc = f->write(p, &s, err);
    if (rc == TIO_OK) rc = tio__sink_flush(&s, err);
    int failed = s.failed;
    tio__sink_dispose(&s);
    if (rc && failed && err) {
        char msg[TIO_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", err->message);
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: %s", n->path, msg);
    }
    if (rc == TIO_OK && keep) fchmod(fd, keep->st_mode & 07777);
    if (rc == TIO_OK && n->sync && fsync(fd) != 0) {
        int e = errno;
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: fsync failed: %s", n->path, strerror(e));
    }
    return rc;
}

/* The fallback: a named temporary file, created exclusively with mode 0666
 * (the kernel applies the umask). */
static int save_named(tio_write_plan *p, const tio_format_desc *f, save_names *n,
                      const struct stat *keep, tio_error *err) {
    int fd = -1;
    for (unsigned attempt = 0; attempt < 100 && fd < 0; attempt++) {
        int rc = temp_name(n, attempt, err);
        if (rc) return rc;
        fd = open(n->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) {
            int e = errno;
            n->tmp[0] = 0;
            return tio__err(err, TIO_E_IO, NULL, -1,
                            "%s: cannot create a temporary file in %s: %s", n->path, n->dir,
                            strerror(e));
        }
    }
    if (fd < 0) {
        n->tmp[0] = 0;
        return tio__err(err, TIO_E_IO, NULL, -1, "%s: cannot create a unique temporary file",
                        n->path);
    }
    int rc = write_to(p, f, fd, n, keep, err);
    if (close(fd) != 0 && rc == TIO_OK) {
        int e = errno;
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: close failed: %s", n->path, strerror(e));
    }
    return rc;
}

#ifdef O_TMPFILE
/* The unnamed file, linked under a temporary name once complete. *fallback
 * is set when this is not possible here (nothing was left behind); then the
 * caller writes the plan again by the named path. */
static int save_unnamed(tio_write_plan *p, const tio_format_desc *f, save_names *n,
                        const struct stat *keep, int *fallback, tio_error *err) {
    *fallback = 1;
    /* Unsupported kernels or filesystems fail with EOPNOTSUPP, EISDIR,
     * EINVAL…; any other failure is reported by the named path. */
    int fd = open(n->dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) return TIO_OK;
    *fallback = 0;
    int rc = write_to(p, f, fd, n, keep, err);
    int linked = 0;
    if (rc == TIO_OK) {
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        for (unsigned attempt = 0; attempt < 100 && !linked; attempt++) {
            rc = temp_name(n, attempt, err);
            if (rc) break;
            if (linkat(AT_FDCWD, proc, AT_FDCWD, n->tmp, AT_SYMLINK_FOLLOW) == 0)
                linked = 1;
            else if (errno == EEXIST)
                continue;
#ifdef AT_EMPTY_PATH
            else if (linkat(fd, "", AT_FDCWD, n->tmp, AT_EMPTY_PATH) == 0)
                linked = 1;
            else if (errno == EEXIST)
                continue;
#endif
            else
                break;
        }
        if (!linked) n->tmp[0] = 0;
        if (rc == TIO_OK && !linked) *fallback = 1; /* no /proc, not permitted… */
    }
    if (close(fd) != 0 && rc == TIO_OK && linked) {
        int e = errno;
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: close failed: %s", n->path, strerror(e));
    }
    return rc;
}
#endif

static void sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int tio__save_file(const tio_container *c, const char *path, const tio_save_options *opts,
                   unsigned how, tio_error *err) {
    if (!c || !path) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    const tio_format_desc *f = NULL;
    int rc = pick_format(opts, path, &f, err);
    if (rc) return rc;
    tio_write_plan p;
    rc = plan_build(&p, c, f, opts, 0, err); /* writers stream densified data */
    save_names n;
    if (rc == TIO_OK) rc = split_path(path, &n, err);
    if (rc) {
        plan_free(&p);
        return rc;
    }
    n.sync = !(opts && (opts->flags & TIO_SAVE_NO_SYNC));
    /* If the target exists, keep its permissions. */
    struct stat st;
    const struct stat *keep = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? &st : NULL;
    remove_stale_temps(&n);
    int fallback = 1;
#ifdef O_TMPFILE
    if (!(how & TIO__SAVE_NO_TMPFILE)) rc = save_unnamed(&p, f, &n, keep, &fallback, err);
#else
    (void)how;
#endif
    if (rc == TIO_OK && fallback) rc = save_named(&p, f, &n, keep, err);
    plan_free(&p);
    if (rc == TIO_OK && rename(n.tmp, path) != 0) {
        int e = errno;
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: cannot rename the temporary file into "
                      "place: %s", path, strerror(e));
    }
    if (rc) {
        if (n.tmp[0]) unlink(n.tmp);
        return rc;
    }
    if (n.sync) sync_dir(n.dir);
    return TIO_OK;
}

int tio_save(const tio_container *c, const char *path, const tio_save_options *opts,
             tio_error *err) {
    return tio__save_file(c, path, opts, 0, err);
}
