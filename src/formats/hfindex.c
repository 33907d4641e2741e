/*
 * hfindex — a Hugging Face sharded checkpoint: the index transformers'
 * save_pretrained writes beside the shards (model.safetensors.index.json,
 * pytorch_model.bin.index.json),
 *
 *   {"metadata": {"total_size": BYTES, ...},
 *    "weight_map": {"tensor name": "model-00001-of-00003.safetensors", ...}}
 *
 * opened as one container over its shards. Each shard is opened as its own
 * container (safetensors or torch, by the shard's extension: an index never
 * names another index), kept alive by the outer one (one of its parts), and the
 * outer tensors are views of the shards' tensors: opening costs what opening
 * every shard costs, O(tensors), and reads no tensor data.
 *
 * The index is untrusted input like any file: a shard name must be a plain
 * file name in the index's directory (no '/', not "." or ".."); a symbolic
 * link there may lead into the directory itself or, for a Hugging Face cache
 * snapshot (".../snapshots/REV/"), into that cache's blobs (".../blobs/"),
 * nowhere else unless the caller passes TIO_OPEN_EXTERNAL_ANYWHERE. Every
 * tensor the map names must be in the shard it names, once; a tensor in two
 * shards, or in a shard the map does not name for it, is an error. A
 * tensor a shard holds that the map does not name at all is left out, a
 * finding. metadata.total_size is checked against the tensors' bytes (a
 * finding: tools other than transformers write other sums). Shards are
 * bounded by tio_limits.max_shards. docs/formats/hf.md.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "core/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HF "hfindex"

/* ------------------------------------------------------------------ probe */

/* A JSON object that has a "weight_map" key near its start (transformers
 * writes "metadata", a few lines, first). Only inputs starting with '{' are
 * scanned, at most HF_PROBE_SCAN bytes. */
#define HF_PROBE_SCAN 65536u

static int hf_probe(const uint8_t *d, size_t n) {
    size_t i = 0;
    if (n >= 3 && d[0] == 0xef && d[1] == 0xbb && d[2] == 0xbf) i = 3; /* a BOM */
    while (i < n && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r')) i++;
    if (i >= n || d[i] != '{') return 0;
    static const char key[] = "\"weight_map\"";
    size_t kl = sizeof key - 1, end = n < HF_PROBE_SCAN ? n : HF_PROBE_SCAN;
    for (; i + kl <= end; i++)
        if (d[i] == '"' && memcmp(d + i, key, kl) == 0) return 60;
    return 0;
}

/* ------------------------------------------------------------ the shards */

char *tio__path_join(const char *dir, const char *name) {
    size_t dl = strlen(dir), nl = strlen(name);
    char *p = malloc(dl + nl + 2);
    if (!p) return NULL;
    memcpy(p, dir, dl);
    p[dl] = '/';
    memcpy(p + dl + 1, name, nl + 1);
    return p;
}

/* A shard name an index may use: a plain file name. */
static const char *hf_bad_name(const char *name, size_t len) {
    if (!len) return "is empty";
    if (strlen(name) != len) return "holds a NUL byte";
    if (strchr(name, '/')) return "is a path, not a file name in the index's directory";
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) return "is a directory";
    return NULL;
}

static const char *hf_json_type(const json_t *j) {
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Whether the real path `real` lies under the real directory `dir`. */
static bool hf_under(const char *real, const char *dir) {
    size_t l = strlen(dir);
    return strncmp(real, dir, l) == 0 && (real[l] == '/' || (l == 1 && dir[0] == '/'));
}

typedef struct hf_reader {
    tio_read_ctx *ctx;
    tio_error *err;
    json_t *root, *wm;
    json_t *shards;     /* shard name -> its mark (owns the names and the marks) */
    const char **names; /* shard names, sorted (keys of `shards`) */
    json_t **marks;     /* per shard: the integer that marks its tensors found */
    size_t nshards;
    char *dir;          /* the index's directory as given */
    char *rdir;         /* its real path */
    char *rblobs;       /* the cache's blobs directory for a snapshot, or NULL */
    char **paths;       /* per shard: its real path, resolved before any is opened */
} hf_reader;

static int hf_cmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The shard's path to open (malloc'ed) after the checks on where it leads. */
static int hf_shard_path(hf_reader *r, const char *name, char **out) {
    tio_error *err = r->err;
    char *full = tio__path_join(r->dir, name);
    if (!full) return tio__nomem(err, HF);
    char *real = realpath(full, NULL);
    if (!real) {
        int e = errno;
        free(full);
        return tio__err(err, e == ENOMEM ? TIO_E_NOMEM : TIO_E_NOT_FOUND, HF, -1,
                        "weight_map names shard '%.200s', which cannot be opened in %.100s: %s",
                        name, r->dir, strerror(e));
    }
    free(full);
    bool anywhere = (r->ctx->flags & TIO_OPEN_EXTERNAL_ANYWHERE) != 0;
    if (!anywhere && !hf_under(real, r->rdir) && !(r->rblobs && hf_under(real, r->rblobs))) {
        int rc = tio__err(err, TIO_E_UNSUPPORTED, HF, -1,
                          "shard '%.200s' resolves to '%.200s', outside the index's directory "
                          "(a symbolic link); refused unless the caller passes "
                          "TIO_OPEN_EXTERNAL_ANYWHERE",
                          name, real);
        free(real);
        return rc;
    }
    struct stat st;
    if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
        int rc = tio__err(err, TIO_E_UNSUPPORTED, HF, -1,
                          "shard '%.200s' is not a regular file (a directory, a pipe, a "
                          "device); refused",
                          name);
        free(real);
        return rc;
    }
    *out = real;
    return TIO_OK;
}

/* Re-labels a shard's error: the shard's format and offset, its name said. */
static int hf_shard_err(tio_error *err, const char *name, const tio_error *sub) {
    if (!err) return sub->code;
    tio_error e = *sub;
    tio__err(err, e.code, NULL, -1, HF ": shard '%.100s': %.250s", name, e.message);
    memcpy(err->format, e.format, sizeof err->format);
    err->offset = e.offset;
    return e.code;
}

/* The container metadata of a shard, merged: the first value of a key is
 * kept; a shard that disagrees is a finding. */
static int hf_merge_meta(hf_reader *r, const tio_container *sub, const char *name) {
    tio_container *c = r->ctx->c;
    for (size_t i = 0; i < tio_container_meta_count(sub); i++) {
        const char *k = NULL, *v = NULL;
        size_t kl = 0, vl = 0, hl = 0;
        tio_container_meta_at_n(sub, i, &k, &kl, &v, &vl);
        const char *have = tio__kv_get_n(&c->meta, k, kl, &hl);
        int rc = TIO_OK;
        if (!have) {
            const char *type = tio_container_meta_type_n(sub, k, kl);
            rc = type ? tio_container_meta_set_typed_n(c, k, kl, v, vl, type, r->err)
                      : tio__kv_append_n(&c->meta, k, kl, v, vl, r->err);
        } else if (hl != vl || memcmp(have, v, vl) != 0) {
            rc = tio__warn(r->ctx, HF, -1, r->err,
                           "shard '%.100s' has metadata '%.100s' = '%.100s', an earlier "
                           "shard '%.100s'; the first is kept",
                           name, k, v, have);
        }
        if (rc) return rc;
    }
    return TIO_OK;
}

/* Adds shard k's tensors that the map puts in it, marking them found. */
static int hf_take_tensors(hf_reader *r, size_t k, tio_container *sub) {
    tio_container *c = r->ctx->c;
    const char *name = r->names[k];
    for (size_t i = 0; i < sub->count; i++) {
        const tio_tensor *t = sub->tensors[i];
        json_t *v = t->name ? json_object_get(r->wm, t->name) : NULL;
        char tn[128] = "";
        /* the name for a message, escaped only on the way to one */
        if (t->name && (!v || !json_is_string(v) || strcmp(json_string_value(v), name) != 0))
            tio__escape((const uint8_t *)t->name, strlen(t->name), tn, sizeof tn);
        if (!v) {
            int rc = tio__warn(r->ctx, HF, -1, r->err,
                               "shard '%.100s' holds tensor %s%s%s, which weight_map does not "
                               "name: left out",
                               name, t->name ? "'" : "", t->name ? tn : "(unnamed)",
                               t->name ? "'" : "");
            if (rc) return rc;
            continue;
        }
        if (json_is_integer(v)) {
            json_int_t other = json_integer_value(v);
            return tio__err(r->err, TIO_E_CORRUPT, HF, -1,
                            "tensor '%s' is in two shards, '%.100s' and '%.100s' (expected "
                            "each tensor in the one shard weight_map names)",
                            tn, r->names[other], name);
        }
        const char *want = json_string_value(v);
        if (strcmp(want, name) != 0)
            return tio__err(r->err, TIO_E_CORRUPT, HF, -1,
                            "shard '%.100s' holds tensor '%s', which weight_map puts in shard "
                            "'%.100s' (expected each tensor in the one shard the map names)",
                            name, tn, want);
        if (json_object_set(r->wm, t->name, r->marks[k]) != 0) return tio__nomem(r->err, HF);
        tio_tensor_desc d;
        memset(&d, 0, sizeof d);
        d.name = t->name;
        d.dtype = t->dtype;
        d.rank = t->rank;
        d.shape = t->shape;
        d.layout = t->layout;
        d.data = t->strided ? t->strided->base : t->data; /* a strided view stays one */
        d.nbytes = t->nbytes;
        d.nnz = t->nnz;
        d.indices = (const int64_t *)(const void *)t->indices;
        int rc = tio__container_add_quant_view(c, &d, t->quant, t->source_offset,
                                               sub->format, r->err);
        if (rc) return rc;
        tio_tensor *nt = c->tensors[c->count - 1];
        nt->unaligned = t->unaligned;
        if (t->strided) {
            nt->strided = t->strided; /* in the shard's memory, which the index keeps */
            nt->data = NULL;
        }
        const tio_kv *m = tio__tensor_meta_view(t);
        for (size_t j = 0; j < m->count; j++) {
            tio_kv *nm = tio__tensor_meta(nt);
            if (!nm) return tio__nomem(r->err, HF);
            if ((rc = tio__kv_append(nm, m->keys[j], m->values[j], r->err))) return rc;
        }
    }
    /* tied weights, as the torch reader says them */
    for (size_t i = 0; i < sub->props.count; i++) {
        if (strncmp(sub->props.keys[i], "shares_storage.", 15) != 0) continue;
        if (tio__kv_get(&c->props, sub->props.keys[i])) continue;
        int rc = tio__kv_append(&c->props, sub->props.keys[i], sub->props.values[i], r->err);
        if (rc) return rc;
    }
    return TIO_OK;
}

/* The format of shard k by its name: safetensors or torch, never another
 * index. */
static int hf_shard_format(hf_reader *r, size_t k, const char **out) {
    const char *fmt = tio_format_for_path(r->names[k]);
    if (!fmt || (strcmp(fmt, "safetensors") != 0 && strcmp(fmt, "torch") != 0))
        return tio__err(r->err, TIO_E_UNSUPPORTED, HF, -1,
                        "shard '%.200s': expected a .safetensors or PyTorch (.bin .pt .pth "
                        ".ckpt) file name",
                        r->names[k]);
    *out = fmt;
    return TIO_OK;
}

static int hf_open_shard(hf_reader *r, size_t k) {
    const char *name = r->names[k];
    const char *fmt = NULL, *path = r->paths[k];
    int rc = hf_shard_format(r, k, &fmt);
    if (rc) return rc;
    tio_open_options so;
    memset(&so, 0, sizeof so);
    so.format = fmt;
    so.flags = r->ctx->flags & (TIO_OPEN_STRICT | TIO_OPEN_NO_MMAP | TIO_OPEN_PREFETCH);
    so.limits = &r->ctx->limits;
    tio_container *sub = NULL;
    tio_error se;
    tio_error_clear(&se);
    rc = tio_open(path, &so, &sub, &se);
    if (rc) return hf_shard_err(r->err, name, &se);
    tio_container *c = r->ctx->c;
    /* held by the index's container, which a save copies from */
    rc = tio__container_add_part(c, sub, r->err);
    if (rc) {
        tio_container_free(sub);
        return rc;
    }
    uint64_t size = sub->source_size > sub->view_bytes ? sub->source_size : sub->view_bytes;
    if (tio__add64_ovf(c->source_size, size, &c->source_size))
        return tio__err(r->err, TIO_E_OVERFLOW, HF, -1, "the shards' sizes overflow");
    if ((uint64_t)c->count + sub->count > r->ctx->limits.max_tensors)
        return tio__err(r->err, TIO_E_LIMIT, HF, -1,
                        "shard '%.200s': more than %" PRIu64 " tensors in all (max_tensors)",
                        name, r->ctx->limits.max_tensors);
    for (size_t i = 0; i < sub->warning_count; i++)
        if ((rc = tio__warn(r->ctx, HF, -1, r->err, "shard '%.100s': %s", name,
                            sub->warnings[i].message)))
            return rc;
    if ((rc = hf_merge_meta(r, sub, name))) return rc;
    return hf_take_tensors(r, k, sub);
}

/* The directories shards may be in: the index's, and a cache's blobs. */
static int hf_dirs(hf_reader *r) {
    const char *path = r->ctx->path;
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path) : 0;
    r->dir = malloc(dl + 2);
    if (!r->dir) return tio__nomem(r->err, HF);
    if (slash) {
        memcpy(r->dir, path, dl ? dl : 1); /* "/x.json" -> "/" */
        r->dir[dl ? dl : 1] = 0;
    } else {
        strcpy(r->dir, ".");
    }
    r->rdir = realpath(r->dir, NULL);
    if (!r->rdir) {
        int e = errno;
        return tio__err(r->err, TIO_E_IO, HF, -1, "%.200s: cannot resolve the index's "
                        "directory: %s", r->dir, strerror(e));
    }
    /* a Hugging Face cache: hub/models--X/snapshots/REV/NAME -> ../../blobs/SHA */
    const char *rs = strrchr(r->rdir, '/');
    if (rs && rs > r->rdir) {
        const char *ps = rs - 1;
        while (ps > r->rdir && *ps != '/') ps--;
        if (*ps == '/' && (size_t)(rs - ps - 1) == 9 && memcmp(ps + 1, "snapshots", 9) == 0) {
            size_t bl = (size_t)(ps - r->rdir);
            char *blobs = malloc(bl + 7);
            if (!blobs) return tio__nomem(r->err, HF);
            memcpy(blobs, r->rdir, bl);
            memcpy(blobs + bl, "/blobs", 7);
            r->rblobs = realpath(blobs, NULL);
            free(blobs);
        }
    }
    return TIO_OK;
}

/* Parses the index, gathers and sorts the shard names. */
static int hf_index(hf_reader *r) {
    tio_read_ctx *ctx = r->ctx;
    tio_error *err = r->err;
    if (ctx->size > ctx->limits.max_header_bytes)
        return tio__err(err, TIO_E_LIMIT, HF, 0,
                        "the index is %zu bytes, above max_header_bytes %" PRIu64, ctx->size,
                        ctx->limits.max_header_bytes);
    json_error_t je;
    r->root = json_loadb((const char *)ctx->data, ctx->size, JSON_REJECT_DUPLICATES, &je);
    if (!r->root) {
        enum json_error_code jc = json_error_code(&je);
        if (jc == json_error_out_of_memory) return tio__nomem(err, HF);
        const char *why = jc == json_error_duplicate_key ? "a duplicate key"
                          : jc == json_error_null_character ? "a \\u0000 in a string"
                          : jc == json_error_numeric_overflow ? "a number past int64"
                          : "not valid JSON";
        return tio__err(err, TIO_E_CORRUPT, HF, je.position >= 0 ? je.position : -1,
                        "the index is %s (%s)", why, je.text);
    }
    if (!json_is_object(r->root))
        return tio__err(err, TIO_E_CORRUPT, HF, 0, "the index is %s, expected a JSON object",
                        hf_json_type(r->root));
    r->wm = json_object_get(r->root, "weight_map");
    if (!r->wm || !json_is_object(r->wm))
        return tio__err(err, TIO_E_CORRUPT, HF, -1, "the index has %s \"weight_map\", expected "
                        "an object mapping tensor names to shard files",
                        r->wm ? hf_json_type(r->wm) : "no");
    size_t n = json_object_size(r->wm);
    if (n > ctx->limits.max_tensors)
        return tio__err(err, TIO_E_LIMIT, HF, -1,
                        "weight_map names %zu tensors, above max_tensors %" PRIu64, n,
                        ctx->limits.max_tensors);
    json_t *shards = r->shards = json_object();
    if (!shards) return tio__nomem(err, HF);
    const char *key;
    json_t *v;
    int rc = TIO_OK;
    json_object_foreach(r->wm, key, v) {
        char tn[128];
        if (!json_is_string(v)) {
            tio__escape((const uint8_t *)key, strlen(key), tn, sizeof tn);
            rc = tio__err(err, TIO_E_CORRUPT, HF, -1,
                          "weight_map['%s'] is %s, expected a shard file name", tn,
                          hf_json_type(v));
            break;
        }
        const char *s = json_string_value(v);
        const char *bad = hf_bad_name(s, json_string_length(v));
        if (bad) {
            char sn[128];
            tio__escape((const uint8_t *)s, json_string_length(v), sn, sizeof sn);
            tio__escape((const uint8_t *)key, strlen(key), tn, sizeof tn);
            rc = tio__err(err, TIO_E_UNSUPPORTED, HF, -1,
                          "weight_map['%s'] = '%s' %s; refused (a shard is a file beside the "
                          "index)",
                          tn, sn, bad);
            break;
        }
        if (json_object_get(shards, s)) continue;
        if (json_object_size(shards) >= ctx->limits.max_shards) {
            rc = tio__err(err, TIO_E_LIMIT, HF, -1,
                          "weight_map names more than %" PRIu32 " shard files (max_shards)",
                          ctx->limits.max_shards);
            break;
        }
        if (json_object_set_new(shards, s, json_null()) != 0) {
            rc = tio__nomem(err, HF);
            break;
        }
    }
    size_t ns = json_object_size(shards);
    if (rc == TIO_OK) {
        r->names = calloc(ns ? ns : 1, sizeof *r->names);
        r->marks = calloc(ns ? ns : 1, sizeof *r->marks);
        if (!r->names || !r->marks) rc = tio__nomem(err, HF);
    }
    if (rc == TIO_OK) {
        size_t k = 0;
        json_object_foreach(shards, key, v) r->names[k++] = key;
        qsort(r->names, ns, sizeof *r->names, hf_cmp);
        r->nshards = ns;
        for (k = 0; k < ns && rc == TIO_OK; k++) {
            r->marks[k] = json_integer((json_int_t)k);
            /* the object keeps the names alive (its keys) and the marks */
            if (!r->marks[k] || json_object_set_new(shards, r->names[k], r->marks[k]) != 0)
                rc = tio__nomem(err, HF);
        }
    }
    return rc;
}

/* metadata.total_size against the tensors' bytes; the props info shows. */
static int hf_summary(hf_reader *r) {
    tio_container *c = r->ctx->c;
    uint64_t sum = 0;
    for (size_t i = 0; i < c->count; i++) sum += c->tensors[i]->nbytes; /* <= the sources */
    char dec[TIO__DEC_CAP];
    int rc = tio__kv_append(&c->props, "shards", tio__u64_dec(dec, r->nshards), r->err);
    if (rc) return rc;
    json_t *meta = json_object_get(r->root, "metadata");
    if (meta && !json_is_object(meta))
        return tio__warn(r->ctx, HF, -1, r->err, "\"metadata\" is %s, expected an object",
                         hf_json_type(meta));
    json_t *ts = meta ? json_object_get(meta, "total_size") : NULL;
    if (!ts) return TIO_OK;
    /* transformers writes an integer; an integral float is taken as it */
    double d = json_number_value(ts);
    if (!json_is_number(ts) || d < 0 || d > 18446744073709549568.0 || d != (double)(uint64_t)d)
        return tio__warn(r->ctx, HF, -1, r->err,
                         "metadata.total_size is %s, expected a byte count", hf_json_type(ts));
    uint64_t total = json_is_integer(ts) ? (uint64_t)json_integer_value(ts) : (uint64_t)d;
    if ((rc = tio__kv_append(&c->props, "total_size", tio__u64_dec(dec, total), r->err)))
        return rc;
    if (total != sum)
        return tio__warn(r->ctx, HF, -1, r->err,
                         "metadata.total_size is %" PRIu64 ", but the tensors hold %" PRIu64
                         " bytes (transformers writes their sum)",
                         total, sum);
    return TIO_OK;
}

static int hf_read(tio_read_ctx *ctx, tio_error *err) {
    if (!ctx->path)
        return tio__err(err, TIO_E_UNSUPPORTED, HF, -1,
                        "an index names its shards by file name: open it by its path "
                        "(tio_open), not from memory");
    hf_reader r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.err = err;
    int rc = hf_index(&r);
    if (rc == TIO_OK) rc = hf_dirs(&r);
    /* every shard named checked and found before any is opened */
    if (rc == TIO_OK && !(r.paths = calloc(r.nshards ? r.nshards : 1, sizeof *r.paths)))
        rc = tio__nomem(err, HF);
    for (size_t k = 0; rc == TIO_OK && k < r.nshards; k++) {
        const char *fmt = NULL;
        rc = hf_shard_format(&r, k, &fmt);
        if (rc == TIO_OK) rc = hf_shard_path(&r, r.names[k], &r.paths[k]);
    }
    for (size_t k = 0; rc == TIO_OK && k < r.nshards; k++) rc = hf_open_shard(&r, k);
    if (rc == TIO_OK) {
        /* every tensor the map names was found where it says */
        const char *key;
        json_t *v;
        json_object_foreach(r.wm, key, v) {
            if (!json_is_string(v)) continue;
            char tn[128];
            tio__escape((const uint8_t *)key, strlen(key), tn, sizeof tn);
            rc = tio__err(err, TIO_E_CORRUPT, HF, -1,
                          "weight_map puts tensor '%s' in shard '%.200s', which does not hold "
                          "it",
                          tn, json_string_value(v));
            break;
        }
    }
    if (rc == TIO_OK) rc = hf_summary(&r);
    json_decref(r.root);
    json_decref(r.shards);
    for (size_t k = 0; r.paths && k < r.nshards; k++) free(r.paths[k]);
    free(r.paths);
    free(r.names);
    free(r.marks);
    free(r.dir);
    free(r.rdir);
    free(r.rblobs);
    return rc;
}

/* ------------------------------------------------------ opening a directory */

/* The weights file of a model directory, in the order transformers looks,
 * and the format its name says (not probed: an index that is not JSON is
 * refused as one, not read as whatever its bytes look like). */
static const char *const hf_dir_files[][2] = {
    {"model.safetensors", "safetensors"},
    {"model.safetensors.index.json", HF},
    {"pytorch_model.bin", "torch"},
    {"pytorch_model.bin.index.json", HF},
};

int tio__open_model_dir(const char *dir, const tio_open_options *opts, tio_container **out,
                        tio_error *err) {
    for (size_t i = 0; i < sizeof hf_dir_files / sizeof hf_dir_files[0]; i++) {
        char *p = tio__path_join(dir, hf_dir_files[i][0]);
        if (!p) return tio__nomem(err, NULL);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            tio_open_options o;
            memset(&o, 0, sizeof o);
            if (opts) o = *opts;
            if (!o.format) o.format = hf_dir_files[i][1];
            int rc = tio_open(p, &o, out, err);
            free(p);
            return rc;
        }
        free(p);
    }
    return tio__err(err, TIO_E_IO, NULL, -1,
                    "%s: is a directory without model.safetensors, "
                    "model.safetensors.index.json, pytorch_model.bin or "
                    "pytorch_model.bin.index.json (a Hugging Face model directory)",
                    dir);
}

const tio_format_desc tio__format_hfindex = {
    .name = HF,
    .description = "Hugging Face sharded checkpoint (model.safetensors.index.json, "
                   "pytorch_model.bin.index.json) or model directory, over its shards "
                   "(written by tio_save's max_shard_bytes, convert --max-shard-size)",
    .extensions = ".index.json",
    .caps = TIO_CAP_NAMES | TIO_CAP_METADATA,
    .dtypes = 0,
    .probe = hf_probe,
    .read = hf_read,
};
