/* Saving: the write plan (what each tensor becomes under the save options),
 * loss checks, memory output and atomic file output. */
/* O_TMPFILE and AT_EMPTY_PATH (Linux); everything else is POSIX. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sink.h"
#include "../graph/graph.h"
#include "../quant/quant.h"

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
    uint8_t *shape_use; /* graph_uses: how the graph uses each tensor, or NULL */
    tio_kv options;       /* parsed tio_save_options.options */
    tio_dtype cast[TIO_DTYPE_COUNT]; /* parsed tio_save_options.cast: from -> to */
    const char *path;     /* the target of a file save (tio_save), else NULL */
    void (*progress)(void *ctx, uint64_t done, uint64_t total); /* the options' */
    void *progress_ctx;
    /* the mapped source files, sorted by address: the container's own, or
     * its parts' (a Hugging Face index's shards); each reopened for
     * copy_file_range() and pread() when first needed (fd -1 not yet, -2 no) */
    tio__mapped *src;
    size_t nsrc;
    /* what the format's check built, for its write (tio__plan_keep) */
    void *kept;
    void (*kept_free)(void *kept);
};

/* Tensor data at least this large that lie unchanged in the source file are
 * offered to the sink as a range of the source (tio__sink_copy_range: copied
 * in the kernel where the offsets allow, in one call per run of them);
 * smaller ones are gathered into the next writev(), or join a run as bytes
 * between its ranges. */
#define COPY_MIN (32u << 10)

/* The source files, with none opened yet (none where out of memory: the
 * bytes are then written from the mappings). */
static int by_map(const void *x, const void *y) {
    uintptr_t a = (uintptr_t)((const tio__mapped *)x)->map;
    uintptr_t b = (uintptr_t)((const tio__mapped *)y)->map;
    return a < b ? -1 : a > b;
}

static void sources_find(tio_write_plan *p) {
    /* the container's own, and those of the containers it holds (an index's
     * shards; tio_container_hold) */
    if (!p->c->map && !p->c->nparts) return; /* a save from memory */
    size_t n = 1;
    const tio_container *own = p->c;
    const tio_container **r = p->c->nparts ? tio__container_reach(p->c, &n) : &own;
    p->src = r ? calloc(n, sizeof *p->src) : NULL;
    for (size_t k = 0; p->src && k < n; k++)
        if (r[k]->map) /* not one read into memory */
            p->src[p->nsrc++] = (tio__mapped){r[k]->map, r[k]->map_size, -1, r[k]};
    if (r != &own) free(r);
    if (p->src) qsort(p->src, p->nsrc, sizeof *p->src, by_map);
}

/* A source file, reopened once per save: only if it is still the file that
 * was mapped (device, inode, size, modification time), else -2. */
static int source_fd(tio__mapped *f) {
    if (f->fd != -1) return f->fd;
    const tio_container *c = f->c;
    f->fd = -2;
    if (!c->map_path) return -2;
    int fd = open(c->map_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -2;
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != c->map_dev ||
        (uint64_t)st.st_ino != c->map_ino || (uint64_t)st.st_size != c->map_size ||
        (int64_t)st.st_mtim.tv_sec != c->map_mtime_sec ||
        (int64_t)st.st_mtim.tv_nsec != c->map_mtime_nsec) {
        close(fd);
        return -2;
    }
    f->fd = fd;
    return fd;
}

/* The source file whose mapping holds d[0..n), and the offset there. The
 * plan's files are its own (their fds opened on demand), hence not const. */
static tio__mapped *in_map(const tio_write_plan *p, const void *d, size_t n, size_t *off) {
    return (tio__mapped *)(uintptr_t)tio__mapped_find(p->src, p->nsrc, d, n, off);
}

int tio__plan_pread(const tio_write_plan *p, const void *mapped, size_t n, void *out) {
    size_t off;
    tio__mapped *f = in_map(p, mapped, n, &off);
    int fd = f ? source_fd(f) : -1;
    return fd >= 0 && tio__pread_full(fd, out, n, off) == n;
}

int tio__plan_source_fd(const tio_write_plan *p, const void *mapped, size_t n, uint64_t *off) {
    size_t o;
    tio__mapped *f = in_map(p, mapped, n, &o);
    int fd = f ? source_fd(f) : -1;
    if (fd < 0) return -1;
    *off = o;
    return fd;
}

/* The bytes of the plan's tensors. */
static uint64_t plan_bytes(const tio_write_plan *p) {
    uint64_t total = 0;
    for (size_t i = 0; i < p->n; i++) total += p->t[i].nbytes;
    return total;
}

/* A sink reports the plan's progress: the tensors' bytes as the total. */
static void progress_start(tio_sink *s, const tio_write_plan *p) {
    if (!p->progress) return;
    s->progress = p->progress;
    s->progress_ctx = p->progress_ctx;
    s->progress_total = s->expect;
    s->progress_next = TIO__PROGRESS_STEP;
}

static void progress_end(const tio_sink *s) {
    if (s->progress) s->progress(s->progress_ctx, s->pos, s->pos);
}

const char *tio__plan_path(const tio_write_plan *p) { return p->path; }

size_t tio__plan_count(const tio_write_plan *p) { return p->n; }

int tio__plan_sink_data(const tio_write_plan *p, tio_sink *s, const void *data, size_t n,
                        tio_error *err) {
    /* tio__plan_data hands out converted bytes only as these two buffers,
     * which its next call frees. */
    const uint8_t *d = data;
    if (d == p->scratch || d == p->scratch2) return tio__sink_write(s, data, n, err);
    size_t off;
    tio__mapped *f = tio__sink_is_file(s) ? in_map(p, d, n, &off) : NULL;
    if (f) {
        int fd = n >= COPY_MIN ? source_fd(f) : -1;
        return tio__sink_copy_range(s, fd, f->map, f->size, off, n, err);
    }
    return tio__sink_write_ref(s, data, n, err);
}

/* Pieces a CRC-32 is taken of just before they are written: well inside L2.
 * Bytes of a mapped source take this path too rather than copy_file_range():
 * the CRC reads every mapped byte anyway, and writing each piece from the
 * mapping while it is in the cache measured as fast or faster (1 GiB .npz
 * from a tmpfs .safetensors: docs/performance.md). */
#define CRC_PIECE ((size_t)256 << 10)

int tio__plan_sink_data_crc(const tio_write_plan *p, tio_sink *s, const void *data, size_t n,
                            uint32_t *crc, tio_error *err) {
    const uint8_t *d = data;
    /* the plan's scratch is freed by its next call: copied, not referenced */
    int scratch = d == p->scratch || d == p->scratch2;
    while (n) {
        size_t k = n < 2 * CRC_PIECE ? n : CRC_PIECE; /* no small last piece */
        *crc = tio__crc32(*crc, d, k);
        int rc = scratch ? tio__sink_write(s, d, k, err) : tio__sink_write_ref(s, d, k, err);
        if (rc) return rc;
        d += k;
        n -= k;
    }
    return TIO_OK;
}

struct tio_crc_job *tio__plan_crc_start(tio_write_plan *p, const uint8_t *const *views,
                                        const size_t *sizes, size_t n) {
    for (size_t k = 0; k < p->nsrc; k++) source_fd(&p->src[k]); /* the thread only reads */
    return tio__crc32_start(views, sizes, n, p->src, p->nsrc);
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
    case TIO_BFLOAT16:
    case TIO_FLOAT8_E4M3FN:
    case TIO_FLOAT8_E5M2: return TIO_FLOAT32;
    default: return TIO_DTYPE_INVALID;
    }
}

/* How the graph uses each container tensor (one pass, on first need): bit 1
 * a Reshape's shape input, bit 2 any other input or a graph output, bit 4 a
 * constant of the graph at all (a value's or a TENSOR attribute's). NULL when
 * out of memory (then nothing is narrowed or deferred). */
static const uint8_t *graph_uses(const tio_container *c, uint8_t **use) {
    const tio_graph *g = c->graph;
    if (*use || !g) return *use;
    uint8_t *u = calloc(c->count ? c->count : 1, 1);
    if (!u) return NULL;
    for (size_t k = 0; k < g->node_count; k++) {
        const tio_gnode *n = &g->nodes[k];
        bool reshape = n->op && strcmp(n->op, "Reshape") == 0;
        for (size_t j = 0; j < n->input_count; j++) {
            int64_t v = n->inputs[j];
            if (v < 0 || (uint64_t)v >= g->value_count) continue;
            int64_t t = g->values[v].tensor;
            if (t < 0 || (uint64_t)t >= c->count) continue;
            u[t] |= reshape && j == 1 ? 1 : 2;
        }
        for (size_t a = 0; a < n->attr_count; a++) {
            const tio_gattr *at = &n->attrs[a];
            if (at->type == TIO_ATTR_TENSOR && at->i >= 0 && (uint64_t)at->i < c->count)
                u[at->i] |= 4;
        }
    }
    for (size_t k = 0; k < g->output_count; k++) {
        int64_t v = g->outputs[k];
        if (v < 0 || (uint64_t)v >= g->value_count) continue;
        int64_t t = g->values[v].tensor;
        if (t >= 0 && (uint64_t)t < c->count) u[t] |= 2;
    }
    for (size_t v = 0; v < g->value_count; v++) {
        int64_t t = g->values[v].tensor;
        if (t >= 0 && (uint64_t)t < c->count) u[t] |= 4;
    }
    *use = u;
    return u;
}

/* Whether tensor i is an int64 constant that the graph uses only as the
 * shape input of Reshape nodes (at least once), with every value in int32
 * (the writer puts the values in the Reshape's re_shape param; the constant
 * keeps convert_tool's int32 copy of the data's first 4*n bytes). */
static bool narrow_shape(const tio_container *c, size_t i, uint8_t **use) {
    const tio_tensor *s = c->tensors[i];
    if (s->dtype != TIO_INT64 || s->layout != TIO_LAYOUT_DENSE || !s->data) return false;
    const uint8_t *u = graph_uses(c, use);
    if (!u || (u[i] & 3) != 1) return false;
    for (uint64_t k = 0; k < s->numel; k++) {
        int64_t x = (int64_t)tio__ld64(s->data + 8 * k);
        if (x < INT32_MIN || x > INT32_MAX) return false;
    }
    return true;
}

/* Whether tensor i is a constant of the graph, which a writer that lowers
 * graphs (TIO__CAP_NARROW_SHAPES) checks itself: from another format than
 * f's it folds such constants into params or refuses what it would have to
 * store (tmfile: src/tmfile/prep.c); in f's own ONNX form it makes the
 * constants its reader added params again (tmfile: Pad's int64 pads) and
 * refuses any other it cannot store. */
static bool lowered_graph_const(const tio_container *c, size_t i, uint8_t **use) {
    const tio_graph *g = c->graph;
    if (!g) return false;
    const tio_tensor *s = c->tensors[i];
    if (s->layout != TIO_LAYOUT_DENSE || !s->data) return false;
    const uint8_t *u = graph_uses(c, use);
    return u && (u[i] & 4);
}

static void plan_free(tio_write_plan *p) {
    free(p->t);
    free(p->shape_use);
    free(p->scratch);
    free(p->scratch2);
    tio__kv_free(&p->options);
    for (size_t k = 0; k < p->nsrc; k++)
        if (p->src[k].fd >= 0) close(p->src[k].fd);
    free(p->src);
    p->src = NULL;
    p->nsrc = 0;
    if (p->kept) p->kept_free(p->kept);
    p->kept = NULL;
}

void tio__plan_keep(tio_write_plan *p, void *state, void (*free_fn)(void *)) {
    if (p->kept) p->kept_free(p->kept);
    p->kept = state;
    p->kept_free = free_fn;
}

void *tio__plan_take(tio_write_plan *p) {
    void *k = p->kept;
    p->kept = NULL;
    return k;
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

/* Metadata the format cannot store byte for byte: a key holding a NUL byte
 * (no format's keys hold one), or a value holding one where the format's
 * strings are C strings or text (all but TIO__CAP_META_NUL). `whose` says
 * whose metadata ("the container", "tensor 3 ('w')"). */
static int meta_nul_check(const tio_kv *kv, const tio_format_desc *f, const char *whose,
                          tio_error *err) {
    for (size_t i = 0; i < kv->count; i++) {
        int in_key = tio__kv_has_nul(kv, i, 0);
        if (!in_key && (!tio__kv_has_nul(kv, i, 1) || (f->caps & TIO__CAP_META_NUL))) continue;
        char ek[72];
        tio__escape((const uint8_t *)kv->keys[i], kv->klens[i], ek, sizeof ek);
        return tio__err(err, TIO_E_LOSSY, f->name, -1,
                        "%s has metadata \"%s\" whose %s holds a NUL byte, which %s cannot "
                        "store (TIO_SAVE_DROP_METADATA / --drop-metadata drops it)",
                        whose, ek, in_key ? "key" : "value", f->name);
    }
    return TIO_OK;
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

/* The plan of each tensor: its written dtype, layout and size, or the
 * refusal. held: per tensor, tio__graph_mark_tensors's marks where the
 * format casts a graph's weights, else NULL. */
static int plan_tensors(tio_write_plan *p, const tio_container *c, const tio_format_desc *f,
                        unsigned flags, const uint8_t *held, tio_error *err) {
    const char *fn = f->name;
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
            if (!(flags & TIO_SAVE_DROP_NAMES) && !((f->caps & TIO__CAP_ONE_ARRAY) && c->count == 1))
                return tio__err(err, TIO_E_LOSSY, fn, -1,
                                "tensor %zu is named '%s' and %s cannot store tensor names "
                                "(TIO_SAVE_DROP_NAMES / --drop-names drops them)",
                                i, s->name, fn);
            w->name = NULL;
        }
        if (s->meta && s->meta->count && (f->caps & TIO_CAP_METADATA) &&
            !(flags & TIO_SAVE_DROP_METADATA)) {
            char whose[96];
            snprintf(whose, sizeof whose, "tensor %zu%s", i, tlabel(s, lb, sizeof lb));
            int rc = meta_nul_check(s->meta, f, whose, err);
            if (rc) return rc;
        }
        if (s->meta && s->meta->count && !(f->caps & TIO_CAP_METADATA) &&
            !(flags & TIO_SAVE_DROP_METADATA))
            return tio__err(err, TIO_E_LOSSY, fn, -1,
                            "tensor %zu%s has metadata and %s cannot store metadata "
                            "(TIO_SAVE_DROP_METADATA / --drop-metadata drops it)",
                            i, tlabel(s, lb, sizeof lb), fn);
        /* dequantized: where the format stores no blocks, or where asked
         * (into GGUF, which would keep them) */
        if (s->layout == TIO_LAYOUT_QUANT &&
            (!(f->caps & TIO_CAP_QUANT) || (flags & TIO_SAVE_DEQUANTIZE))) {
            const tio_quant_info *qi = tio__quant_info((int)s->quant);
            const char *qn = qi ? qi->name : "?";
            if (!(flags & TIO_SAVE_DEQUANTIZE))
                return tio__err(err, TIO_E_LOSSY, fn, -1,
                                "tensor %zu%s is quantized (%s blocks) and %s cannot store "
                                "quantized tensors (TIO_SAVE_DEQUANTIZE / --dequantize writes "
                                "it as float32)",
                                i, tlabel(s, lb, sizeof lb), qn, fn);
            if (!qi || !qi->dequantize) {
                char can[200];
                return tio__err(err, TIO_E_UNSUPPORTED, fn, -1,
                                "tensor %zu%s is quantized (%s blocks), which tensio cannot "
                                "dequantize (it dequantizes %s)",
                                i, tlabel(s, lb, sizeof lb), qn,
                                tio__quant_dequantizable(can, sizeof can));
            }
            w->layout = TIO_LAYOUT_DENSE; /* its dtype is float32 already */
        }
        /* cast: a dense float tensor, or a quantized one dequantized */
        tio_dtype cd = s->layout != TIO_LAYOUT_QUANT || w->layout == TIO_LAYOUT_DENSE
                           ? p->cast[s->dtype]
                           : TIO_DTYPE_INVALID;
        /* a Constant's value keeps its dtype where the format casts weights */
        if (held && held[i] != 1) cd = TIO_DTYPE_INVALID;
        if (cd != TIO_DTYPE_INVALID) {
            if (c->graph && (f->caps & TIO_CAP_GRAPH) && !(f->caps & TIO__CAP_CAST_WEIGHTS))
                return tio__err(err, TIO_E_UNSUPPORTED, fn, -1,
                                "tensor %zu%s is a constant of the model's graph: casting it "
                                "to %s would change the types the graph declares (%s casts "
                                "no model's weights; onnx and tflite do, and a tensor format "
                                "takes the weights alone)",
                                i, tlabel(s, lb, sizeof lb), tio_dtype_name(cd), fn);
            w->cast = true;
            if (!(f->dtypes & TIO_DTYPE_BIT(cd)))
                return tio__err(err, TIO_E_UNSUPPORTED, fn, -1,
                                "tensor %zu%s: the cast makes it %s, which %s cannot store",
                                i, tlabel(s, lb, sizeof lb), tio_dtype_name(cd), fn);
            w->dtype = cd;
        } else if (!(f->dtypes & TIO_DTYPE_BIT(s->dtype)) && (f->caps & TIO__CAP_NARROW_SHAPES) &&
            (f->dtypes & TIO_DTYPE_BIT(TIO_INT32)) && narrow_shape(c, i, &p->shape_use)) {
            w->dtype = TIO_INT32;
        } else if (!(f->dtypes & TIO_DTYPE_BIT(s->dtype)) && (f->caps & TIO__CAP_NARROW_SHAPES) &&
                   lowered_graph_const(c, i, &p->shape_use)) {
            /* left to the writer, which folds it into params or refuses it */
        } else if (!(f->dtypes & TIO_DTYPE_BIT(s->dtype))) {
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
        w->nbytes = w->layout == TIO_LAYOUT_QUANT || w->dtype == TIO_STRING ? s->nbytes
                                                                             : (size_t)nb;
    }
    return TIO_OK;
}

static int plan_build(tio_write_plan *p, const tio_container *c, const tio_format_desc *f,
                      const tio_save_options *opts, int reserve, tio_error *err) {
    unsigned flags = opts ? opts->flags : 0;
    memset(p, 0, sizeof *p);
    p->c = c;
    p->fmt = f;
    p->flags = flags;
    p->version = opts ? opts->version : 0;
    sources_find(p);
    p->progress = opts ? opts->progress : NULL;
    p->progress_ctx = opts ? opts->progress_ctx : NULL;
    if (c->remote) { /* TIO_OPEN_LAZY: every tensor's bytes must be here */
        int frc = tio__need_fetched(c, NULL, err);
        if (frc) return frc;
    }
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
    if (opts && opts->cast && opts->cast[0]) {
        int rc = tio__cast_parse(opts->cast, p->cast, err);
        if (rc) return rc;
    }
    if ((f->caps & TIO_CAP_GRAPH) && !c->graph)
        return tio__err(err, TIO_E_UNSUPPORTED, fn, -1,
                        "a model needs a graph; this container holds tensors only");
    if ((f->caps & TIO_CAP_GRAPH) && !(f->caps & TIO_CAP_VALUE_TYPES)) {
        int rc = tio__graph_check_tensors(c->graph, fn, err);
        if (rc) return rc;
    }
    if (!(f->caps & TIO_CAP_METADATA) && !(flags & TIO_SAVE_DROP_METADATA) &&
        c->meta.count)
        return tio__err(err, TIO_E_LOSSY, fn, -1,
                        "the container has %zu metadata entries and %s cannot store "
                        "metadata (TIO_SAVE_DROP_METADATA / --drop-metadata drops them)",
                        c->meta.count, fn);
    if ((f->caps & TIO_CAP_METADATA) && !(flags & TIO_SAVE_DROP_METADATA)) {
        int rc = meta_nul_check(&c->meta, f, "the container", err);
        if (rc) return rc;
    }
    if (c->count) {
        p->t = calloc(c->count, sizeof *p->t);
        if (!p->t) return tio__nomem(err, fn);
    }
    p->n = c->count;
    /* a cast into a model format that casts a graph's weights (onnx): the
     * initializers only; a Constant's value (an attribute's tensor) keeps
     * the type its node declares */
    uint8_t *held = NULL;
    bool any_cast = false;
    for (size_t d = 0; d < TIO_DTYPE_COUNT; d++) any_cast |= p->cast[d] != TIO_DTYPE_INVALID;
    if (any_cast && c->graph && (f->caps & TIO_CAP_GRAPH) && (f->caps & TIO__CAP_CAST_WEIGHTS) &&
        c->count) {
        held = calloc(c->count, 1);
        if (!held) return tio__nomem(err, fn);
        tio__graph_mark_tensors(c->graph, held, c->count);
    }
    int prc = plan_tensors(p, c, f, flags, held, err);
    free(held);
    if (prc) return prc;
    if (f->caps & TIO__CAP_ONE_COPY) {
        /* tied weights: the tensor aliased is written, its aliases are not */
        size_t k = 0;
        for (size_t i = 0; i < p->n; i++)
            if (!p->t[i].src->alias || p->t[i].src->alias->owner != c) p->t[k++] = p->t[i];
        p->n = k;
    }
    int rc = f->check ? f->check(p, err) : TIO_OK;
    if (rc == TIO_OK) rc = plan_dense(p, reserve, err);
    return rc;
}

const uint8_t *tio__plan_view(const tio_write_plan *p, size_t i) {
    if (i >= p->n) return NULL;
    const tio_wtensor *w = &p->t[i];
    const tio_tensor *s = w->src;
    /* the cases in which tio__plan_data converts */
    if (s->layout == TIO_LAYOUT_QUANT && w->layout == TIO_LAYOUT_DENSE) return NULL;
    if ((s->layout == TIO_LAYOUT_COO && w->layout == TIO_LAYOUT_DENSE) || s->dtype != w->dtype ||
        s->strided)
        return NULL;
    return s->data;
}

int tio__plan_data(tio_write_plan *p, size_t i, const uint8_t **data,
                   const uint8_t **indices, tio_error *err) {
    if (i >= p->n) return tio__err(err, TIO_E_ARGUMENT, p->fmt->name, -1, "no tensor %zu", i);
    const tio_wtensor *w = &p->t[i];
    const tio_tensor *s = w->src;
    if (indices) *indices = w->layout == TIO_LAYOUT_COO ? s->indices : NULL;
    int densify = s->layout == TIO_LAYOUT_COO && w->layout == TIO_LAYOUT_DENSE;
    int widen = s->dtype != w->dtype;
    if (s->layout == TIO_LAYOUT_QUANT && w->layout == TIO_LAYOUT_DENSE) {
        /* dequantized: numel floats (the plan checked the type has a
         * dequantizer), then cast where the save casts float32 */
        size_t fn = (size_t)s->numel * sizeof(float);
        uint8_t **fb = w->dtype == TIO_FLOAT32 ? &p->scratch : &p->scratch2;
        size_t *fc = w->dtype == TIO_FLOAT32 ? &p->scratch_cap : &p->scratch2_cap;
        if (scratch_reserve(fb, fc, fn) != TIO_OK ||
            scratch_reserve(&p->scratch, &p->scratch_cap, w->nbytes) != TIO_OK)
            return tio__nomem(err, p->fmt->name);
        int rc = tio_tensor_densify(s, *fb, fn, err);
        if (rc == TIO_OK && w->dtype != TIO_FLOAT32)
            tio__convert_elems(TIO_FLOAT32, w->dtype, p->scratch2, p->scratch, s->numel);
        if (rc == TIO_OK) *data = p->scratch;
        return rc;
    }
    const uint8_t *src = s->data;
    if (s->strided) { /* made C-contiguous, into scratch memory the plan keeps */
        if (scratch_reserve(&p->scratch2, &p->scratch2_cap, s->nbytes) != TIO_OK)
            return tio__nomem(err, p->fmt->name);
        tio__strided_gather(s, p->scratch2);
        src = p->scratch2;
    }
    if (!densify && !widen) {
        *data = src;
        return TIO_OK;
    }
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
    tio__convert_elems(s->dtype, w->dtype, src, p->scratch, count);
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
    /* a widened or cast zero is zero bytes too (uint8 0, +0.0 of any float) */
    return tio__sink_zeros(w->s, (size_t)n * w->out_es, w->err);
}

static int sink_walk_value(void *ctx, const uint8_t *elem) {
    sink_walk *w = ctx;
    uint8_t buf[8];
    if (w->from == w->to) return tio__sink_write(w->s, elem, w->out_es, w->err);
    tio__convert_elems(w->from, w->to, elem, buf, 1);
    return tio__sink_write(w->s, buf, w->out_es, w->err);
}

/* Bytes of widened elements written at a time (TIO_SAVE_WIDEN of a dense
 * tensor): what the plan's scratch buffer holds for it, in L2 between the
 * conversion and the sink's copy. */
#define WIDEN_PIECE ((size_t)64 << 10)

typedef struct {
    tio_write_plan *p;
    tio_sink *s;
    tio_dtype from, to;
    size_t in_es, out_es;
    uint32_t *crc; /* continued over the widened bytes, or NULL */
    tio_error *err;
} widen_run;

/* A piece of a source file's mapping this big or more is read by pread()
 * into the plan's second scratch before it is converted: a page fault per
 * 4 KiB of the mapping cost more than the kernel's copy on hosts with slow
 * faults (1 GiB of float32 cast to float16 onto tmpfs: 0.74-1.58 s through
 * the mapping, docs/performance.md). */
#define WIDEN_PREAD_MIN ((size_t)4 << 10)

/* n elements at data, widened into the scratch buffer (WIDEN_PIECE bytes)
 * and written, a piece at a time. */
static int widen_write(widen_run *w, const uint8_t *data, uint64_t n) {
    size_t per = WIDEN_PIECE / w->out_es;
    size_t inb = per * w->in_es; /* a whole piece's source bytes */
    bool rd = n * w->in_es >= WIDEN_PREAD_MIN &&
              scratch_reserve(&w->p->scratch2, &w->p->scratch2_cap, inb) == TIO_OK;
    int rc = TIO_OK;
    for (uint64_t i = 0; i < n && rc == TIO_OK; i += per) {
        size_t k = n - i < per ? (size_t)(n - i) : per;
        const uint8_t *from = data + i * w->in_es;
        if (rd && tio__plan_pread(w->p, from, k * w->in_es, w->p->scratch2))
            from = w->p->scratch2;
        else
            rd = false; /* not a file's bytes: the mapping (or memory) from here */
        tio__convert_elems(w->from, w->to, from, w->p->scratch, k);
        if (w->crc) *w->crc = tio__crc32(*w->crc, w->p->scratch, k * w->out_es);
        rc = tio__sink_write(w->s, w->p->scratch, k * w->out_es, w->err);
    }
    return rc;
}

/* Whether tensor i is a dense one the plan writes as another dtype, element
 * by element (TIO_SAVE_WIDEN, tio_save_options.cast; not a Reshape shape
 * narrowed, which is converted whole). */
static bool plan_widens(const tio_write_plan *p, size_t i) {
    const tio_wtensor *w = &p->t[i];
    const tio_tensor *src = w->src;
    return src->layout == TIO_LAYOUT_DENSE && w->layout == TIO_LAYOUT_DENSE &&
           src->dtype != w->dtype && src->dtype != TIO_INT64;
}

static int widen_tensor(tio_write_plan *p, tio_sink *s, size_t i, uint32_t *crc,
                        tio_error *err);

typedef struct {
    tio_write_plan *p;
    tio_sink *s;
    tio_error *err;
    widen_run *widen; /* the run's elements widened first, or NULL */
    uint8_t buf[16384];
} plan_sink_run;

/* A strided view's run (whole elements: the walk gathers into a buffer of a
 * multiple of their size): widened when the dtype changes; else the walk's
 * buffer is copied (it is reused), a long run of the storage is written as
 * a view's bytes are. */
static int plan_sink_runfn(void *ctx, const uint8_t *data, size_t n) {
    plan_sink_run *r = ctx;
    if (r->widen) return widen_write(r->widen, data, n / r->widen->in_es);
    uintptr_t d = (uintptr_t)data, b = (uintptr_t)r->buf;
    if (d >= b && d - b < sizeof r->buf) return tio__sink_write(r->s, data, n, r->err);
    return tio__plan_sink_data(r->p, r->s, data, n, r->err);
}

int tio__plan_sink_tensor(tio_write_plan *p, tio_sink *s, size_t i, tio_error *err) {
    if (i >= p->n) return tio__err(err, TIO_E_ARGUMENT, p->fmt->name, -1, "no tensor %zu", i);
    const tio_wtensor *w = &p->t[i];
    const tio_tensor *src = w->src;
    if (src->layout == TIO_LAYOUT_COO && w->layout == TIO_LAYOUT_DENSE) {
        sink_walk sw = {s, src->dtype, w->dtype, tio_dtype_size(w->dtype), err};
        return tio__coo_walk(src, sink_walk_zeros, sink_walk_value, &sw, err);
    }
    if (src->layout == TIO_LAYOUT_QUANT && w->layout == TIO_LAYOUT_DENSE) {
        /* dequantized a few blocks at a time, without a buffer of its size */
        const tio_quant_info *qi = tio__quant_info((int)src->quant);
        float buf[4096];
        uint8_t cast[sizeof buf * 2]; /* the floats cast (float64 at most) */
        size_t per = sizeof buf / sizeof buf[0] / qi->elems, nb = (size_t)src->numel / qi->elems;
        size_t es = tio_dtype_size(w->dtype);
        int rc = TIO_OK;
        for (size_t b = 0; b < nb && rc == TIO_OK; b += per) {
            size_t k = nb - b < per ? nb - b : per;
            tio__dequantize(qi, src->data + b * qi->bytes, k, buf);
            if (w->dtype == TIO_FLOAT32) {
                rc = tio__sink_write(s, buf, k * qi->elems * sizeof(float), err);
            } else {
                tio__convert_elems(TIO_FLOAT32, w->dtype, (const uint8_t *)buf, cast,
                                   k * qi->elems);
                rc = tio__sink_write(s, cast, k * qi->elems * es, err);
            }
        }
        return rc;
    }
    if (src->strided && src->dtype == w->dtype) { /* streamed run by run, no copy of it */
        plan_sink_run r;
        r.p = p;
        r.s = s;
        r.err = err;
        r.widen = NULL;
        int rc = tio__strided_runs(src, r.buf, sizeof r.buf, plan_sink_runfn, &r);
        return rc == TIO_E_NOMEM ? tio__nomem(err, p->fmt->name) : rc;
    }
    if (plan_widens(p, i)) return widen_tensor(p, s, i, NULL, err);
    const uint8_t *data = NULL;
    int rc = tio__plan_data(p, i, &data, NULL, err);
    if (rc == TIO_OK && w->nbytes) rc = tio__plan_sink_data(p, s, data, w->nbytes, err);
    return rc;
}

/* Tensor i widened a piece at a time (run by run for a strided view),
 * without a buffer of its size; *crc continued over it when not NULL. */
static int widen_tensor(tio_write_plan *p, tio_sink *s, size_t i, uint32_t *crc,
                        tio_error *err) {
    const tio_wtensor *w = &p->t[i];
    const tio_tensor *src = w->src;
    if (scratch_reserve(&p->scratch, &p->scratch_cap, WIDEN_PIECE) != TIO_OK)
        return tio__nomem(err, p->fmt->name);
    widen_run wr = {p,   s, src->dtype, w->dtype, tio_dtype_size(src->dtype),
                    tio_dtype_size(w->dtype), crc, err};
    if (!src->strided) return widen_write(&wr, src->data, src->numel);
    plan_sink_run r;
    r.p = p;
    r.s = s;
    r.err = err;
    r.widen = &wr;
    int rc = tio__strided_runs(src, r.buf, sizeof r.buf, plan_sink_runfn, &r);
    return rc == TIO_E_NOMEM ? tio__nomem(err, p->fmt->name) : rc;
}

int tio__plan_sink_tensor_crc(tio_write_plan *p, tio_sink *s, size_t i, uint32_t *crc,
                              tio_error *err) {
    if (i >= p->n) return tio__err(err, TIO_E_ARGUMENT, p->fmt->name, -1, "no tensor %zu", i);
    if (plan_widens(p, i)) return widen_tensor(p, s, i, crc, err);
    const uint8_t *data = NULL;
    int rc = tio__plan_data(p, i, &data, NULL, err);
    size_t n = p->t[i].nbytes;
    if (rc == TIO_OK && n) rc = tio__plan_sink_data_crc(p, s, data, n, crc, err);
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
    progress_start(&s, &p);
    if (rc == TIO_OK) rc = f->write(&p, &s, err);
    if (rc == TIO_OK) progress_end(&s);
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

int tio_save_buffer(const tio_container *c, const tio_save_options *opts, void *buf,
                    size_t cap, size_t *out_size, tio_error *err) {
    if (!c || !out_size || (!buf && cap))
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    *out_size = 0;
    const tio_format_desc *f = NULL;
    int rc = pick_format(opts, NULL, &f, err);
    if (rc) return rc;
    tio_write_plan p;
    rc = plan_build(&p, c, f, opts, 0, err);
    tio_sink s;
    tio__sink_init_fixed(&s, buf, cap);
    progress_start(&s, &p);
    if (rc == TIO_OK) rc = f->write(&p, &s, err);
    if (rc == TIO_OK) progress_end(&s);
    plan_free(&p);
    if (rc == TIO_OK) *out_size = s.len;
    return rc;
}

void tio_free(void *ptr) { free(ptr); }

/* ------------------------------------------------------------ atomic file saves
 *
 * Where it can (Linux, O_TMPFILE), the data are written to a file that has no
 * name, so a process killed while writing leaves nothing behind (the kernel
 * frees the file). Once complete and fsynced, the file is linked as the
 * target itself when there is none (it appears complete, as after a rename),
 * else as "<dir>/.<base>.tio-<pid>-<16 hex>.tmp" and renamed over the target;
 * then the directory is synced. Where O_TMPFILE or the link is not
 * available, the file is created under such a temporary name from the start
 * (O_EXCL). Per new file that is open, writev, linkat, close (+ stat, fsync
 * and the directory's fsync when synced): a loop saving small files costs
 * about what open/write/close/rename costs.
 *
 * A save never lists its directory: its cost does not depend on how many
 * files the directory holds (a stream saved as one file per message fills
 * directories with 100,000 files). A process killed between link and rename,
 * or while writing a named temporary file, leaves one temporary file behind;
 * TIO_SAVE_CLEANUP removes the target's ones whose process is gone before a
 * save, and tio_save_cleanup() those of every target in a directory: callers
 * that save many files clean once, not per save. */

#define TEMP_STEM_MAX 200 /* bytes of the base name kept in temporary names */

typedef struct save_names {
    const char *path;  /* the target */
    size_t dirlen;     /* bytes of path up to and including its last '/' */
    const char *stem;  /* the target's base name, cut to TEMP_STEM_MAX bytes */
    int stemlen;
    char dir[4096];    /* the target's directory */
    char tmp[4096];    /* the temporary name in use, "" when none exists */
    int sync;          /* fsync the file and the directory (not TIO_SAVE_NO_SYNC) */
    int probed;        /* the target was looked at (stat): keep and fresh are set */
    const struct stat *keep; /* the target's stat when it is a regular file: its
                                permissions are kept; else NULL */
    int fresh;         /* the target does not exist (stat: ENOENT); before the probe,
                          presumed */
    mode_t special;    /* the target's type when it exists and is a device, FIFO or
                          socket (S_IFCHR…), which a save never replaces; else 0 */
    int placed;        /* the file was linked as the target itself: no rename */
    struct stat st;    /* what keep points to */
} save_names;

/* Looks at the target (stat, following a symlink as the rename will not). */
static void probe_target(save_names *n) {
    n->probed = 1;
    n->keep = NULL;
    n->fresh = 0;
    n->special = 0;
    if (stat(n->path, &n->st) == 0) {
        n->keep = S_ISREG(n->st.st_mode) ? &n->st : NULL;
        /* the name itself (a symlink is replaced, what it points to kept) */
        struct stat ls;
        mode_t t = lstat(n->path, &ls) == 0 ? ls.st_mode & S_IFMT : 0;
        if (t == S_IFCHR || t == S_IFBLK || t == S_IFIFO || t == S_IFSOCK) n->special = t;
    } else {
        n->fresh = errno == ENOENT;
    }
}

/* A save replaces its target by a rename: a device, FIFO or socket of that
 * name (/dev/null, as root) would be replaced by a regular file. Refused,
 * once the probe has seen one, before any rename: TIO_E_ARGUMENT naming it.
 * (A symlink to one is replaced like any symlink; what it points to stays.) */
static int refuse_special(const save_names *n, tio_error *err) {
    if (!n->probed || !n->special) return TIO_OK;
    const char *what = n->special == S_IFCHR   ? "a character device"
                       : n->special == S_IFBLK ? "a block device"
                       : n->special == S_IFIFO ? "a FIFO"
                                               : "a socket";
    return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                    "%s: is %s, not a regular file: a save replaces its target with a new file "
                    "(write into it with tio_save_memory, or the CLI's OUT)",
                    n->path, what);
}

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

/* The pid in `name` when it is a temporary file name of this module,
 * ".<stem>.tio-<pid>-<16 hex>.tmp" with a stem of 1..TEMP_STEM_MAX bytes, a
 * decimal pid without leading zeros below 2^31 and lowercase hex; else 0.
 * *stemlen gets the stem's length (it starts at name + 1). Read from the end,
 * as the stem may hold anything, ".tio-" included. */
static long long temp_owner(const char *name, size_t *stemlen) {
    size_t len = strlen(name);
    if (name[0] != '.' || len < 29 || memcmp(name + len - 4, ".tmp", 4) != 0) return 0;
    const char *hex = name + len - 20;
    for (int k = 0; k < 16; k++)
        if (!((hex[k] >= '0' && hex[k] <= '9') || (hex[k] >= 'a' && hex[k] <= 'f'))) return 0;
    const char *end = hex - 1, *q = end; /* end: the '-' after the pid */
    if (*end != '-') return 0;
    while (q > name && q[-1] >= '0' && q[-1] <= '9') q--;
    size_t digits = (size_t)(end - q);
    if (digits == 0 || digits > 10 || *q == '0' || (size_t)(q - name) < 2 + 5 ||
        memcmp(q - 5, ".tio-", 5) != 0)
        return 0;
    size_t sl = (size_t)(q - 5 - (name + 1));
    if (sl == 0 || sl > TEMP_STEM_MAX) return 0;
    long long pid = 0;
    for (; q < end; q++) pid = pid * 10 + (*q - '0');
    if (pid > 0x7fffffffLL) return 0;
    *stemlen = sl;
    return pid;
}

/* Removes from `dir` the temporary files left by processes that no longer
 * exist: of the target whose (cut) base name is `stem`, or of any target when
 * stem is NULL. Only names that match the pattern exactly and are regular
 * files (fstatat without following a symlink, unlinkat of the listed name on
 * the directory's own descriptor, so never through a symlink), never a live
 * process's or this process's own (another thread may be between its link
 * and its rename). Counts removals in *removed. Returns 0, or the errno of
 * the first failure: listing the directory (*what = NULL) or removing the
 * entry copied to what (a file that vanished meanwhile is not a failure). */
static int remove_stale_temps(const char *dir, const char *stem, size_t stemlen,
                              size_t *removed, char *what, size_t cap) {
    what[0] = 0;
    DIR *d = opendir(dir);
    if (!d) return errno ? errno : EIO;
    int dfd = dirfd(d), first = 0;
    pid_t self = getpid();
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno && !first) {
                first = errno;
                what[0] = 0;
            }
            break;
        }
        size_t sl = 0;
        long long owner = temp_owner(de->d_name, &sl);
        if (owner <= 0 || owner == (long long)self) continue;
        if (stem && (sl != stemlen || memcmp(de->d_name + 1, stem, sl) != 0)) continue;
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (kill((pid_t)owner, 0) == 0 || errno != ESRCH) continue; /* alive (or not ours) */
        if (unlinkat(dfd, de->d_name, 0) == 0)
            ++*removed;
        else if (errno != ENOENT && !first) {
            first = errno;
            snprintf(what, cap, "%s", de->d_name);
        }
    }
    closedir(d);
    return first;
}

int tio_save_cleanup(const char *dir, size_t *removed, tio_error *err) {
    size_t n = 0;
    if (removed) *removed = 0;
    if (!dir || !*dir) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "no directory given");
    char what[256];
    int e = remove_stale_temps(dir, NULL, 0, &n, what, sizeof what);
    if (removed) *removed = n;
    if (e == 0) return TIO_OK;
    if (!what[0])
        return tio__err(err, TIO_E_IO, NULL, -1, "%s: cannot list the directory: %s", dir,
                        strerror(e));
    return tio__err(err, TIO_E_IO, NULL, -1,
                    "%s: cannot remove the stale temporary file %s: %s", dir, what,
                    strerror(e));
}

/* Writes the plan to fd, keeps the old target's permissions (when known),
 * fsyncs. A write error (ENOSPC, EFBIG, EIO…) is TIO_E_IO naming the target. */
static int write_to(tio_write_plan *p, const tio_format_desc *f, int fd, const save_names *n,
                    tio_error *err) {
    tio_sink s;
    int rc = tio__sink_init_fd(&s, fd, err);
    if (rc == TIO_OK) tio__sink_expect(&s, plan_bytes(p));
    progress_start(&s, p);
    if (rc == TIO_OK) rc = f->write(p, &s, err);
    if (rc == TIO_OK) rc = tio__sink_flush(&s, err);
    if (rc == TIO_OK) rc = tio__sink_trim(&s, err);
    if (rc == TIO_OK) progress_end(&s);
    int failed = s.failed;
    tio__sink_dispose(&s);
    if (rc && failed && err) {
        char msg[TIO_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", err->message);
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: %s", n->path, msg);
    }
    if (rc == TIO_OK && n->keep) fchmod(fd, n->keep->st_mode & 07777);
    if (rc == TIO_OK && n->sync && fsync(fd) != 0) {
        int e = errno;
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: fsync failed: %s", n->path, strerror(e));
    }
    return rc;
}

/* The fallback: a named temporary file, created exclusively with mode 0666
 * (the kernel applies the umask). */
static int save_named(tio_write_plan *p, const tio_format_desc *f, save_names *n,
                      tio_error *err) {
    if (!n->probed) probe_target(n);
    if (refuse_special(n, err)) return TIO_E_ARGUMENT;
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
    int rc = write_to(p, f, fd, n, err);
    if (close(fd) != 0 && rc == TIO_OK) {
        int e = errno;
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: close failed: %s", n->path, strerror(e));
    }
    return rc;
}

#ifdef O_TMPFILE
/* Gives the unnamed file fd the name `to`. Returns 0 or the errno (EEXIST:
 * the name exists). AT_EMPTY_PATH first: no path walk through /proc (allowed
 * since Linux 6.10 for a file this process opened, before that with
 * CAP_DAC_READ_SEARCH); else the /proc/self/fd link. */
static int link_unnamed(int fd, const char *to) {
#ifdef AT_EMPTY_PATH
    if (linkat(fd, "", AT_FDCWD, to, AT_EMPTY_PATH) == 0) return 0;
    if (errno == EEXIST) return EEXIST;
#endif
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, proc, AT_FDCWD, to, AT_SYMLINK_FOLLOW) == 0 ? 0 : errno;
}

/* The unnamed file, given its name once complete: a target that does not
 * exist is linked as the target itself (it appears complete, as a rename
 * would make it; no temporary name); otherwise, or when the target appeared
 * meanwhile, the file is linked under a temporary name, which the caller
 * renames over the target. An unsynced save looks at the target only when
 * that first link finds it there (then it takes the target's permissions
 * here; a synced save did before its fsync). *fallback is set when this is
 * not possible here (nothing was left behind); then the caller writes the
 * plan again by the named path. */
static int save_unnamed(tio_write_plan *p, const tio_format_desc *f, save_names *n,
                        int *fallback, tio_error *err) {
    *fallback = 1;
    /* Unsupported kernels or filesystems fail with EOPNOTSUPP, EISDIR,
     * EINVAL…; any other failure is reported by the named path. */
    int fd = open(n->dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0) return TIO_OK;
    *fallback = 0;
    int rc = write_to(p, f, fd, n, err);
    int linked = 0;
    if (rc == TIO_OK && n->fresh && link_unnamed(fd, n->path) == 0) linked = n->placed = 1;
    if (rc == TIO_OK && !linked && !n->probed) {
        probe_target(n);
        if (n->keep) fchmod(fd, n->keep->st_mode & 07777);
    }
    if (rc == TIO_OK && !linked) rc = refuse_special(n, err);
    if (rc == TIO_OK && !linked) {
        for (unsigned attempt = 0; attempt < 100 && !linked; attempt++) {
            rc = temp_name(n, attempt, err);
            if (rc) break;
            int e = link_unnamed(fd, n->tmp);
            if (e == 0)
                linked = 1;
            else if (e != EEXIST)
                break;
        }
        if (!linked) n->tmp[0] = 0;
        if (rc == TIO_OK && !linked) *fallback = 1; /* no /proc, not permitted… */
    }
    if (close(fd) != 0 && rc == TIO_OK && linked) {
        int e = errno;
        if (n->placed) unlink(n->path); /* it did not exist: as it was */
        n->placed = 0;
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
    p.path = path;
    save_names n;
    if (rc == TIO_OK) rc = split_path(path, &n, err);
    if (rc) {
        plan_free(&p);
        return rc;
    }
    n.sync = !(opts && (opts->flags & TIO_SAVE_NO_SYNC));
    n.placed = n.probed = 0;
    n.keep = NULL;
    /* An existing target keeps its permissions: a synced save looks before
     * writing (the mode must be set before the fsync); an unsynced one
     * presumes a new target and looks only if the name is taken (one stat
     * less per file when a stream fills a directory). */
    n.fresh = 1;
    n.special = 0;
    if (n.sync) probe_target(&n);
    if (refuse_special(&n, err)) {
        plan_free(&p);
        return TIO_E_ARGUMENT;
    }
    if (opts && (opts->flags & TIO_SAVE_CLEANUP)) {
        size_t gone = 0; /* best effort: an unreadable directory skips it */
        char what[256];
        (void)remove_stale_temps(n.dir, n.stem, (size_t)n.stemlen, &gone, what, sizeof what);
    }
    int fallback = 1;
#ifdef O_TMPFILE
    if (!(how & TIO__SAVE_NO_TMPFILE)) rc = save_unnamed(&p, f, &n, &fallback, err);
#else
    (void)how;
#endif
    if (rc == TIO_OK && fallback) rc = save_named(&p, f, &n, err);
    plan_free(&p);
    if (rc == TIO_OK && !n.placed && rename(n.tmp, path) != 0) {
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
    if (c && path && opts && opts->max_shard_bytes)
        return tio__save_sharded(c, path, opts, err);
    return tio__save_file(c, path, opts, 0, err);
}

/* ------------------------------------------- atomic files written in pieces */

/* The file of a writer that is given its bytes over many calls (the shard
 * writer): the same temporary name, permissions and rename as tio_save, with
 * the file open between the calls. Always a named temporary file: an
 * unnamed one (O_TMPFILE) may turn out not to be linkable at the end (no
 * /proc, an older kernel), when tio_save writes again by a name but these
 * bytes are gone. A process killed meanwhile leaves the temporary file
 * (TIO_SAVE_CLEANUP, tio_save_cleanup). */
struct tio__afile {
    save_names n;
    int fd;
    char *path; /* the target's name, owned: the caller's may be gone by the commit */
};

int tio__afile_open(const char *path, unsigned flags, tio__afile **out, tio_error *err) {
    *out = NULL;
    if (!path) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    tio__afile *a = calloc(1, sizeof *a);
    char *own = strdup(path);
    if (!a || !own) {
        free(a);
        free(own);
        return tio__err(err, TIO_E_NOMEM, NULL, -1, "out of memory");
    }
    a->path = own;
    int rc = split_path(own, &a->n, err);
    if (rc) {
        free(own);
        free(a);
        return rc;
    }
    a->n.sync = !(flags & TIO_SAVE_NO_SYNC);
    a->n.fresh = 1;
    if (flags & TIO_SAVE_CLEANUP) {
        size_t gone = 0;
        char what[256];
        (void)remove_stale_temps(a->n.dir, a->n.stem, (size_t)a->n.stemlen, &gone, what,
                                 sizeof what);
    }
    a->fd = -1;
    for (unsigned attempt = 0; attempt < 100 && a->fd < 0; attempt++) {
        rc = temp_name(&a->n, attempt, err);
        if (rc) break;
        a->fd = open(a->n.tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (a->fd < 0 && errno != EEXIST) {
            int e = errno;
            a->n.tmp[0] = 0;
            rc = tio__err(err, TIO_E_IO, NULL, -1,
                          "%s: cannot create a temporary file in %s: %s", path, a->n.dir,
                          strerror(e));
            break;
        }
    }
    if (rc == TIO_OK && a->fd < 0)
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: cannot create a unique temporary file",
                      path);
    if (rc) {
        free(a->path);
        free(a);
        return rc;
    }
    *out = a;
    return TIO_OK;
}

int tio__afile_fd(const tio__afile *a) { return a->fd; }

void tio__afile_abort(tio__afile *a) {
    if (!a) return;
    if (a->fd >= 0) close(a->fd);
    if (a->n.tmp[0]) unlink(a->n.tmp);
    free(a->path);
    free(a);
}

int tio__afile_commit(tio__afile *a, tio_error *err) {
    save_names *n = &a->n;
    int rc = TIO_OK;
    probe_target(n);
    rc = refuse_special(n, err);
    if (rc == TIO_OK && n->keep) fchmod(a->fd, n->keep->st_mode & 07777);
    if (rc == TIO_OK && n->sync && fsync(a->fd) != 0) {
        int e = errno;
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: fsync failed: %s", n->path, strerror(e));
    }
    if (close(a->fd) != 0 && rc == TIO_OK) {
        int e = errno;
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: close failed: %s", n->path, strerror(e));
    }
    a->fd = -1;
    if (rc == TIO_OK && rename(n->tmp, n->path) != 0) {
        int e = errno;
        rc = tio__err(err, TIO_E_IO, NULL, -1,
                      "%s: cannot rename the temporary file into place: %s", n->path,
                      strerror(e));
    }
    if (rc == TIO_OK) {
        n->tmp[0] = 0;
        if (n->sync) sync_dir(n->dir);
    }
    tio__afile_abort(a); /* frees; removes the temporary file on failure */
    return rc;
}
