/*
 * Writing a Hugging Face sharded checkpoint (tio_save with
 * tio_save_options.max_shard_bytes): shards and an index named and shaped
 * as transformers' save_pretrained writes them.
 *
 * - Packing is huggingface_hub's split_state_dict_into_shards (what
 *   save_pretrained calls): tensors in container order; one bigger than the
 *   maximum gets a shard of its own at once; a tensor that would take the
 *   current shard past the maximum closes it and opens the next. A tensor's
 *   size is numel x dtype size (its bytes in the shard, in the dtype a
 *   tio_save_options.cast gives it).
 * - One shard: just WEIGHTS (model.safetensors), no index. More: STEM-00001-
 *   of-0000N.EXT and WEIGHTS.index.json, json.dumps(index, indent=2,
 *   sort_keys=True) + "\n" with Python's escapes (ensure_ascii): metadata
 *   total_parameters (the elements of every tensor written; transformers
 *   counts the model's parameters) and total_size (their bytes), weight_map.
 * - A safetensors shard's __metadata__ is the container's, with "format":
 *   "pt" added when it has no "format" (transformers writes it, and its loader
 *   refuses a safetensors file whose metadata lacks it).
 * - A directory named with a final '/' is created when missing (one level).
 * - Each file is written as tio_save writes one (atomic, deterministic); the
 *   index last, once every shard is in place. Then the files of an earlier
 *   save that the new one does not replace are removed, as save_pretrained
 *   does: STEM-NNNNN-of-MMMMM.EXT shards of another count, and WEIGHTS.index.json
 *   after a single-file save or WEIGHTS after a sharded one (either would
 *   be loaded instead of, or beside, what was written).
 */
#define _XOPEN_SOURCE 700 /* strndup, fdopendir, fstatat, unlinkat */
#include "core/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HF "hfindex"

/* ------------------------------------------------------------ sizes */

int tio_parse_size(const char *text, uint64_t *out, tio_error *err) {
    if (!text || !out) return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "NULL argument");
    /* transformers' convert_file_size_to_int: digits, then GiB/MiB/KiB
     * (powers of 2), GB/MB/KB (powers of 10; a lowercase final "b" means
     * bits: divided by 8), any case; also plain digits (bytes) and TB/TiB */
    static const struct {
        const char *unit;
        uint64_t mul;
    } units[] = {
        {"TIB", UINT64_C(1) << 40}, {"GIB", UINT64_C(1) << 30}, {"MIB", UINT64_C(1) << 20},
        {"KIB", UINT64_C(1) << 10}, {"TB", UINT64_C(1000000000000)}, {"GB", 1000000000u},
        {"MB", 1000000u},           {"KB", 1000u},                   {"B", 1u},
    };
    const char *p = text;
    uint64_t v = 0;
    int digits = 0, bad = 0;
    for (; *p >= '0' && *p <= '9'; p++, digits++)
        bad |= tio__mul64_ovf(v, 10, &v) || tio__add64_ovf(v, (uint64_t)(*p - '0'), &v);
    uint64_t mul = 1;
    int bits = 0;
    if (*p) {
        size_t k, n = sizeof units / sizeof units[0];
        for (k = 0; k < n; k++) {
            const char *u = units[k].unit;
            size_t ul = strlen(u), i;
            if (strlen(p) != ul) continue;
            for (i = 0; i < ul && (p[i] & ~0x20) == u[i]; i++) {}
            if (i == ul) break;
        }
        if (k == n) bad = 1;
        else {
            mul = units[k].mul;
            size_t pl = strlen(p);
            bits = pl == 2 && p[1] == 'b'; /* "5Gb": gigabits */
        }
    }
    if (!bad) bad = tio__mul64_ovf(v, mul, &v);
    if (bits) v /= 8;
    if (!digits || bad || v == 0)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1,
                        "'%.100s' is not a size: expected a positive integer, alone (bytes) or "
                        "followed by KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB "
                        "(powers of 1024), as transformers' max_shard_size",
                        text);
    *out = v;
    return TIO_OK;
}

/* ------------------------------------------------------- the index JSON */

/* s as Python's json.dumps writes a str (ensure_ascii): false when s is not
 * UTF-8. */
static bool hf_json_str(tio_buf *b, const char *s) {
    static const char hx[] = "0123456789abcdef";
    const uint8_t *p = (const uint8_t *)s;
    tio__buf_put(b, "\"", 1);
    while (*p) {
        uint32_t cp;
        size_t n;
        if (*p < 0x80) {
            cp = *p;
            n = 1;
        } else if ((*p & 0xe0) == 0xc0) {
            cp = *p & 0x1fu;
            n = 2;
        } else if ((*p & 0xf0) == 0xe0) {
            cp = *p & 0x0fu;
            n = 3;
        } else if ((*p & 0xf8) == 0xf0) {
            cp = *p & 0x07u;
            n = 4;
        } else {
            return false;
        }
        for (size_t i = 1; i < n; i++) {
            if ((p[i] & 0xc0) != 0x80) return false;
            cp = cp << 6 | (p[i] & 0x3fu);
        }
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        p += n;
        const char *esc = NULL;
        switch (cp) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default: break;
        }
        if (esc) {
            tio__buf_put(b, esc, 2);
            continue;
        }
        if (cp >= 0x20 && cp < 0x7f) {
            char ch = (char)cp;
            tio__buf_put(b, &ch, 1);
            continue;
        }
        uint32_t units[2] = {cp, 0};
        size_t nu = 1;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            units[0] = 0xd800 + (cp >> 10);
            units[1] = 0xdc00 + (cp & 0x3ff);
            nu = 2;
        }
        for (size_t u = 0; u < nu; u++) {
            char e[6] = {'\\', 'u', hx[units[u] >> 12 & 15], hx[units[u] >> 8 & 15],
                         hx[units[u] >> 4 & 15], hx[units[u] & 15]};
            tio__buf_put(b, e, 6);
        }
    }
    tio__buf_put(b, "\"", 1);
    return true;
}

static void hf_put_str(tio_buf *b, const char *s) { tio__buf_put(b, s, strlen(s)); }

static void hf_put_u64(tio_buf *b, uint64_t v) {
    char dec[TIO__DEC_CAP];
    hf_put_str(b, tio__u64_dec(dec, v));
}

/* ------------------------------------------------------------ the save */

typedef struct hf_entry {
    const char *name;
    size_t shard;
} hf_entry;

static int hf_entry_cmp(const void *a, const void *b) {
    return strcmp(((const hf_entry *)a)->name, ((const hf_entry *)b)->name);
}

typedef struct hf_plan {
    const tio_container *c;
    const tio_save_options *opts;
    const char *format;
    char *dir;      /* the directory written */
    char *weights;  /* "model.safetensors" */
    size_t stemlen; /* bytes of weights before its extension */
    size_t *shard_of;
    size_t nshards;
    uint64_t total_size, total_params;
    uint64_t *shard_bytes;
    /* progress over all the files */
    uint64_t done_before, grand_total;
    bool make_dir; /* "DIR/": created when missing, once the checks passed */
    bool one_copy; /* the format keeps one copy of tied weights (safetensors) */
} hf_plan;

/* A tied weight the format keeps one copy of (TIO__CAP_ONE_COPY): an alias
 * of another tensor of the container, in no shard and not in the index, as
 * tio_save leaves it out of a single file. */
static bool hf_dropped(const hf_plan *p, const tio_tensor *t) {
    return p->one_copy && t->alias && t->alias->owner == p->c;
}

static void hf_plan_free(hf_plan *p) {
    free(p->dir);
    free(p->weights);
    free(p->shard_of);
    free(p->shard_bytes);
}

/* The name of shard k (0-based) of n: STEM-0000k-of-0000n.EXT (malloc'ed). */
static char *hf_shard_name(const hf_plan *p, size_t k, size_t n) {
    const char *ext = p->weights + p->stemlen;
    size_t cap = strlen(p->weights) + 48;
    char *s = malloc(cap);
    if (s)
        snprintf(s, cap, "%.*s-%05zu-of-%05zu%s", (int)p->stemlen, p->weights, k + 1, n, ext);
    return s;
}

/* Where and as what: DIR and WEIGHTS from the path, the format. */
static int hf_target(hf_plan *p, const char *path, tio_error *err) {
    size_t pl = strlen(path);
    struct stat st;
    bool is_dir = (pl && path[pl - 1] == '/') || (stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    const char *fmt = p->opts->format;
    if (is_dir) {
        while (pl > 1 && path[pl - 1] == '/') pl--;
        if (!fmt) fmt = "safetensors";
        p->dir = strndup(path, pl);
        p->weights = strdup(strcmp(fmt, "torch") == 0 ? "pytorch_model.bin" : "model.safetensors");
    } else {
        const char *slash = strrchr(path, '/');
        p->dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
        p->weights = strdup(slash ? slash + 1 : path);
        if (!fmt) fmt = tio_format_for_path(path);
    }
    if (!p->dir || !p->weights) return tio__nomem(err, HF);
    p->make_dir = is_dir;
    if (!fmt || (strcmp(fmt, "safetensors") != 0 && strcmp(fmt, "torch") != 0))
        return tio__err(err, TIO_E_UNSUPPORTED, HF, -1,
                        "%s: a sharded save writes safetensors or PyTorch shards, not %s", path,
                        fmt ? fmt : "a format the name does not say");
    if (!tio_format_can_write(fmt))
        return tio__err(err, TIO_E_UNSUPPORTED, HF, -1,
                        "%s: this build cannot write %s files, so not %s shards either", path,
                        fmt, fmt);
    p->format = tio__format_find(fmt)->name; /* a static string */
    const char *dot = strrchr(p->weights, '.');
    if (!dot || dot == p->weights)
        return tio__err(err, TIO_E_ARGUMENT, HF, -1,
                        "%s: the weights file name needs an extension (model.safetensors, "
                        "pytorch_model.bin) to name its shards after",
                        path);
    p->stemlen = (size_t)(dot - p->weights);
    return TIO_OK;
}

/* huggingface_hub's packing (see the top of the file). */
static int hf_pack(hf_plan *p, tio_error *err) {
    const tio_container *c = p->c;
    size_t n = tio_container_count(c);
    uint64_t max = p->opts->max_shard_bytes;
    tio_dtype cast[TIO_DTYPE_COUNT]; /* a tensor's bytes are those of its dtype as written */
    int rc = tio__cast_parse(p->opts->cast, cast, err);
    if (rc) return rc;
    p->shard_of = calloc(n ? n : 1, sizeof *p->shard_of);
    size_t *pending = calloc(n ? n : 1, sizeof *pending);
    p->shard_bytes = calloc(n ? n : 1, sizeof *p->shard_bytes);
    if (!p->shard_of || !pending || !p->shard_bytes) {
        free(pending);
        return tio__nomem(err, HF);
    }
    size_t npending = 0, ns = 0;
    uint64_t cur = 0;
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        if (hf_dropped(p, t)) {
            p->shard_of[i] = SIZE_MAX;
            continue;
        }
        tio_dtype d = tio_tensor_dtype(t);
        if (cast[d] != TIO_DTYPE_INVALID) d = cast[d];
        uint64_t s;
        if (tio__mul64_ovf(tio_tensor_numel(t), tio_dtype_size(d), &s)) { /* a cast widened it */
            free(pending);
            return tio__err(err, TIO_E_OVERFLOW, HF, -1, "tensor %zu: size overflows", i);
        }
        p->total_size += s;
        p->total_params += tio_tensor_numel(t);
        if (s > max) {
            p->shard_bytes[ns] = s;
            p->shard_of[i] = ns++;
            continue;
        }
        if (cur + s > max) { /* the current shard is not empty: s <= max */
            for (size_t k = 0; k < npending; k++) p->shard_of[pending[k]] = ns;
            p->shard_bytes[ns++] = cur;
            npending = 0;
            cur = 0;
        }
        pending[npending++] = i;
        cur += s;
    }
    if (npending) {
        for (size_t k = 0; k < npending; k++) p->shard_of[pending[k]] = ns;
        p->shard_bytes[ns++] = cur;
    }
    free(pending);
    p->nshards = ns;
    if (ns > TIO_DEFAULT_MAX_SHARDS)
        return tio__err(err, TIO_E_LIMIT, HF, -1,
                        "%zu shards of at most %" PRIu64 " bytes: more than the %u a reader "
                        "takes by default (max_shards); choose a larger maximum",
                        ns, max, TIO_DEFAULT_MAX_SHARDS);
    return TIO_OK;
}

static void hf_progress(void *ctx, uint64_t done, uint64_t total) {
    (void)total;
    hf_plan *p = ctx;
    p->opts->progress(p->opts->progress_ctx, p->done_before + done, p->grand_total);
}

/* Writes the tensors of shard k (all when k is SIZE_MAX) to file `name`. */
static int hf_write_file(hf_plan *p, size_t k, const char *name, tio_error *err) {
    const tio_container *c = p->c;
    tio_container *sub = tio_container_new();
    if (!sub) return tio__nomem(err, HF);
    int rc = TIO_OK;
    for (size_t i = 0; rc == TIO_OK && i < tio_container_meta_count(c); i++) {
        const char *key = NULL, *val = NULL;
        size_t kl = 0, vl = 0;
        tio_container_meta_at_n(c, i, &key, &kl, &val, &vl);
        const char *type = tio_container_meta_type_n(c, key, kl);
        rc = type ? tio_container_meta_set_typed_n(sub, key, kl, val, vl, type, err)
                  : tio_container_meta_set_n(sub, key, kl, val, vl, err);
    }
    if (rc == TIO_OK && strcmp(p->format, "safetensors") == 0 &&
        !tio_container_meta_get(sub, "format"))
        rc = tio_container_meta_set(sub, "format", "pt", err);
    for (size_t i = 0; rc == TIO_OK && i < tio_container_count(c); i++) {
        if (p->shard_of[i] == SIZE_MAX || (k != SIZE_MAX && p->shard_of[i] != k)) continue;
        const tio_tensor *t = tio_container_tensor(c, i);
        tio_tensor_desc d;
        memset(&d, 0, sizeof d);
        d.name = tio_tensor_name(t);
        d.dtype = tio_tensor_dtype(t);
        d.rank = tio_tensor_rank(t);
        d.shape = tio_tensor_shape(t);
        d.layout = tio_tensor_layout(t);
        d.data = t->strided ? t->strided->base : tio_tensor_bytes(t); /* stays a view */
        d.nbytes = tio_tensor_nbytes(t);
        d.nnz = tio_tensor_nnz(t);
        d.indices = tio_tensor_indices(t);
        tio_tensor *nt = NULL;
        rc = d.layout == TIO_LAYOUT_QUANT
                 ? tio_container_add_quantized(sub, &d, tio_tensor_quant(t), TIO_ADD_BORROW,
                                               &nt, err)
                 : tio_container_add(sub, &d, TIO_ADD_BORROW, &nt, err);
        if (rc == TIO_OK && t->strided) { /* made contiguous as it is written */
            nt->strided = t->strided;
            nt->data = NULL;
        }
        for (size_t j = 0; rc == TIO_OK && j < tio_tensor_meta_count(t); j++) {
            const char *key = NULL, *val = NULL;
            size_t kl = 0, vl = 0;
            tio_tensor_meta_at_n(t, j, &key, &kl, &val, &vl);
            rc = tio_tensor_meta_set_n(nt, key, kl, val, vl, err);
        }
    }
    char *path = rc == TIO_OK ? tio__path_join(p->dir, name) : NULL;
    if (rc == TIO_OK && !path) rc = tio__nomem(err, HF);
    if (rc == TIO_OK) {
        tio_save_options o = *p->opts;
        o.format = p->format;
        o.max_shard_bytes = 0;
        if (o.progress) {
            o.progress = hf_progress;
            o.progress_ctx = p;
        }
        rc = tio_save(sub, path, &o, err);
        if (rc == TIO_OK) {
            struct stat st;
            if (stat(path, &st) == 0) p->done_before += (uint64_t)st.st_size;
        }
    }
    free(path);
    tio_container_free(sub);
    return rc;
}

/* The index, json.dumps(index, indent=2, sort_keys=True) + "\n", into b;
 * the names checked (unique, UTF-8) before any file is written. */
static int hf_build_index(hf_plan *p, tio_buf *b, tio_error *err) {
    const tio_container *c = p->c;
    size_t n = tio_container_count(c);
    hf_entry *e = calloc(n ? n : 1, sizeof *e);
    char **names = calloc(p->nshards, sizeof *names);
    int rc = TIO_OK;
    if (!e || !names) rc = tio__nomem(err, HF);
    for (size_t k = 0; rc == TIO_OK && k < p->nshards; k++)
        if (!(names[k] = hf_shard_name(p, k, p->nshards))) rc = tio__nomem(err, HF);
    size_t m = 0; /* the tensors written (tied weights' aliases are not) */
    for (size_t i = 0; rc == TIO_OK && i < n; i++) {
        if (p->shard_of[i] == SIZE_MAX) continue;
        e[m].name = tio_tensor_name(tio_container_tensor(c, i));
        e[m++].shard = p->shard_of[i];
    }
    n = m;
    if (rc == TIO_OK) qsort(e, n, sizeof *e, hf_entry_cmp);
    for (size_t i = 1; rc == TIO_OK && i < n; i++)
        if (strcmp(e[i - 1].name, e[i].name) == 0)
            rc = tio__err(err, TIO_E_ARGUMENT, HF, -1,
                          "two tensors are named '%.200s': weight_map maps each name to one "
                          "shard",
                          e[i].name);
    if (rc == TIO_OK) {
        hf_put_str(b, "{\n  \"metadata\": {\n    \"total_parameters\": ");
        hf_put_u64(b, p->total_params);
        hf_put_str(b, ",\n    \"total_size\": ");
        hf_put_u64(b, p->total_size);
        hf_put_str(b, "\n  },\n  \"weight_map\": {");
        for (size_t i = 0; rc == TIO_OK && i < n; i++) {
            hf_put_str(b, i ? ",\n    " : "\n    ");
            if (!hf_json_str(b, e[i].name))
                rc = tio__err(err, TIO_E_ARGUMENT, HF, -1,
                              "tensor name '%.200s' is not UTF-8: an index is JSON", e[i].name);
            hf_put_str(b, ": ");
            if (rc == TIO_OK && !hf_json_str(b, names[e[i].shard]))
                rc = tio__err(err, TIO_E_ARGUMENT, HF, -1,
                              "the shard name '%.200s' is not UTF-8: an index is JSON",
                              names[e[i].shard]);
        }
        hf_put_str(b, n ? "\n  }\n}\n" : "}\n}\n");
        if (b->oom && rc == TIO_OK) rc = tio__nomem(err, HF);
    }
    for (size_t k = 0; names && k < p->nshards; k++) free(names[k]);
    free(names);
    free(e);
    return rc;
}

/* WEIGHTS.index.json (malloc'ed) or NULL. */
static char *hf_index_name(const hf_plan *p) {
    size_t wl = strlen(p->weights);
    char *s = malloc(wl + 12);
    if (s) {
        memcpy(s, p->weights, wl);
        memcpy(s + wl, ".index.json", 12);
    }
    return s;
}

/* Writes the index as tio_save writes a file (atomic). */
static int hf_write_index(hf_plan *p, const tio_buf *b, tio_error *err) {
    char *iname = hf_index_name(p);
    char *path = iname ? tio__path_join(p->dir, iname) : NULL;
    free(iname);
    if (!path) return tio__nomem(err, HF);
    tio__afile *a = NULL;
    int rc = tio__afile_open(path, p->opts->flags, &a, err);
    if (rc == TIO_OK) {
        int fd = tio__afile_fd(a);
        size_t off = 0;
        while (off < b->len) {
            ssize_t w = write(fd, b->p + off, b->len - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                int e = errno;
                rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: write failed: %s", path,
                              strerror(e));
                break;
            }
            off += (size_t)w;
        }
        if (rc == TIO_OK) rc = tio__afile_commit(a, err);
        else tio__afile_abort(a);
    }
    if (rc == TIO_OK) p->done_before += b->len;
    free(path);
    return rc;
}

/* Whether `name` is STEM-NNNNN-of-MMMMM.EXT. */
static bool hf_is_shard_name(const hf_plan *p, const char *name, unsigned *idx,
                             unsigned *count) {
    size_t sl = p->stemlen, el = strlen(p->weights + p->stemlen), nl = strlen(name);
    if (nl != sl + 15 + el || strncmp(name, p->weights, sl) != 0 ||
        strcmp(name + nl - el, p->weights + sl) != 0)
        return false;
    const char *q = name + sl;
    if (q[0] != '-' || memcmp(q + 6, "-of-", 4) != 0) return false;
    unsigned a = 0, b = 0;
    for (int i = 0; i < 5; i++) {
        if (q[1 + i] < '0' || q[1 + i] > '9' || q[10 + i] < '0' || q[10 + i] > '9')
            return false;
        a = a * 10 + (unsigned)(q[1 + i] - '0');
        b = b * 10 + (unsigned)(q[10 + i] - '0');
    }
    *idx = a;
    *count = b;
    return true;
}

/* Removes a regular file or symbolic link `name` of the directory (never
 * what a link points to); a name that is gone already is fine. */
static int hf_remove(int dfd, const hf_plan *p, const char *name, tio_error *err) {
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return TIO_OK;
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) return TIO_OK;
    if (unlinkat(dfd, name, 0) != 0 && errno != ENOENT) {
        int e = errno;
        return tio__err(err, TIO_E_IO, NULL, -1, "%s/%s: cannot remove the file of an earlier "
                        "save: %s", p->dir, name, strerror(e));
    }
    return TIO_OK;
}

/* Removes what an earlier save left that this one does not replace. */
static int hf_remove_stale(const hf_plan *p, tio_error *err) {
    int dfd = open(p->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        int e = errno;
        return tio__err(err, TIO_E_IO, NULL, -1, "%s: cannot list: %s", p->dir, strerror(e));
    }
    int rc = TIO_OK;
    char *iname = hf_index_name(p);
    if (!iname) rc = tio__nomem(err, HF);
    if (rc == TIO_OK) rc = hf_remove(dfd, p, p->nshards > 1 ? p->weights : iname, err);
    free(iname);
    int lfd = rc == TIO_OK ? dup(dfd) : -1;
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (rc == TIO_OK && !d) {
        int e = errno;
        if (lfd >= 0) close(lfd);
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: cannot list: %s", p->dir, strerror(e));
    }
    struct dirent *de;
    while (rc == TIO_OK && (de = readdir(d)) != NULL) {
        unsigned idx = 0, count = 0;
        if (!hf_is_shard_name(p, de->d_name, &idx, &count)) continue;
        if (p->nshards > 1 && count == p->nshards && idx >= 1 && idx <= count) continue;
        rc = hf_remove(dfd, p, de->d_name, err);
    }
    if (d) closedir(d);
    close(dfd);
    return rc;
}

int tio__save_sharded(const tio_container *c, const char *path, const tio_save_options *opts,
                      tio_error *err) {
    hf_plan p;
    memset(&p, 0, sizeof p);
    p.c = c;
    p.opts = opts;
    int rc = hf_target(&p, path, err);
    if (rc == TIO_OK) {
        tio_save_options o = *opts;
        o.format = p.format;
        o.max_shard_bytes = 0;
        rc = tio_check_save(c, &o, err); /* nothing written when a shard would fail */
    }
    for (size_t i = 0; rc == TIO_OK && i < tio_container_count(c); i++)
        if (!tio_tensor_name(tio_container_tensor(c, i)))
            rc = tio__err(err, TIO_E_ARGUMENT, HF, -1,
                          "tensor %zu has no name: a sharded checkpoint's index maps names "
                          "to shards",
                          i);
    if (rc == TIO_OK) {
        const tio_format_desc *f = tio__format_find(p.format);
        p.one_copy = f && (f->caps & TIO__CAP_ONE_COPY);
        rc = hf_pack(&p, err);
    }
    p.grand_total = p.total_size;
    tio_buf index = {0};
    if (rc == TIO_OK && p.nshards > 1) rc = hf_build_index(&p, &index, err);
    /* "DIR/" that is not there yet: created, as save_pretrained does */
    if (rc == TIO_OK && p.make_dir && mkdir(p.dir, 0777) != 0 && errno != EEXIST) {
        int e = errno;
        rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: cannot create the directory: %s", p.dir,
                      strerror(e));
    }
    if (rc == TIO_OK && p.nshards <= 1) {
        rc = hf_write_file(&p, SIZE_MAX, p.weights, err);
    } else if (rc == TIO_OK) {
        for (size_t k = 0; rc == TIO_OK && k < p.nshards; k++) {
            char *name = hf_shard_name(&p, k, p.nshards);
            rc = name ? hf_write_file(&p, k, name, err) : tio__nomem(err, HF);
            free(name);
        }
        if (rc == TIO_OK) rc = hf_write_index(&p, &index, err);
    }
    free(index.p);
    if (rc == TIO_OK) rc = hf_remove_stale(&p, err);
    if (rc == TIO_OK && opts->progress)
        opts->progress(opts->progress_ctx, p.done_before, p.done_before);
    hf_plan_free(&p);
    return rc;
}
