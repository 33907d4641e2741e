/* WebDataset shards: a tar mapped, its members grouped into samples. */
#define _DEFAULT_SOURCE /* MAP_NORESERVE */
#include "tar/tar.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define FMT "tar"

struct tio_shard {
    atomic_size_t refs; /* the caller's hold + one per open member container */
    void *map;          /* NULL for borrowed memory */
    size_t map_size;
    uint8_t *owned;     /* a compressed shard: the tar, decompressed (base) */
    const char *compression; /* "gzip" … or NULL */
    const uint8_t *base;
    size_t size;
    tio_limits limits;
    tio_shard_member *members;
    size_t nmembers;
    tio_shard_sample *samples;
    size_t nsamples;
    size_t *order;  /* member indices of the samples, sample by sample */
    size_t *first;  /* sample i's members: order[first[i] .. + count) */
    tio__names *names; /* the members by path (core/names.c), or NULL: searched in order */
};

static void shard_unref(void *ctx) {
    tio_shard *s = ctx;
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
    for (size_t i = 0; i < s->nmembers; i++) free((char *)s->members[i].name);
    free(s->members);
    free(s->samples);
    free(s->order);
    free(s->first);
    free(s->names);
    if (s->map) munmap(s->map, s->map_size);
    free(s->owned);
    free(s);
}

void tio_shard_free(tio_shard *s) {
    if (s) shard_unref(s);
}

const char *tio_shard_compression(const tio_shard *s) { return s ? s->compression : NULL; }

static int lower(int ch) { return ch >= 'A' && ch <= 'Z' ? ch + ('a' - 'A') : ch; }

int tio__shard_ext_cmp(const char *a, const char *b) {
    for (;; a++, b++) {
        int x = lower((unsigned char)*a), y = lower((unsigned char)*b);
        if (x != y || !x) return x - y;
    }
}

uint64_t tio__shard_ext_hash(uint64_t seed, const char *s) {
    uint64_t h = seed ^ UINT64_C(0xcbf29ce484222325); /* tio__hash_str of the lower-cased bytes */
    for (; *s; s++) h = (h ^ (uint64_t)lower((unsigned char)*s)) * UINT64_C(0x100000001b3);
    return tio__hash_mix(h);
}

typedef struct sort_item {
    const char *s;
    size_t group; /* sample (for extensions) */
    size_t index;
} sort_item;

static int cmp_ext(const void *pa, const void *pb) {
    const sort_item *a = pa, *b = pb;
    if (a->group != b->group) return a->group < b->group ? -1 : 1;
    int c = tio__shard_ext_cmp(a->s, b->s);
    if (c) return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int cmp_key(const void *pa, const void *pb) {
    const sort_item *a = pa, *b = pb;
    int c = strcmp(a->s, b->s);
    if (c) return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Whether a basename that starts with a dot still splits, as WebDataset's
 * pattern (see docs/formats/webdataset.md) splits it: when the path has a
 * directory whose last component holds no dot ("x/.h": key "x/", extension
 * "h"; "a.b/.h" and ".h" do not split). */
static int leading_dot_splits(const char *name, const char *base) {
    if (base == name) return 0;
    const char *p = base - 1; /* the last '/' */
    while (p > name && p[-1] != '/') {
        p--;
        if (*p == '.') return 0;
    }
    return 1;
}

/* Key and extension of member m (its name buffer has room for the key), as
 * WebDataset's base_plus_ext splits the path; top-level "__X__" members
 * (WebDataset's metadata) belong to no sample. */
void tio__shard_split_name(tio_shard_member *m, size_t len) {
    char *name = (char *)m->name;
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    const char *dot = strchr(base, '.');
    char *key = name + len + 1;
    int meta = !slash && len >= 4 && memcmp(name, "__", 2) == 0 &&
               memcmp(name + len - 2, "__", 2) == 0;
    if (!dot || meta || (dot == base && !leading_dot_splits(name, base))) {
        key[0] = 0;
        m->key = key;
        m->ext = name + len;
        m->sample = TIO_SHARD_NONE;
        return;
    }
    size_t kl = (size_t)(dot - name);
    memcpy(key, name, kl);
    key[kl] = 0;
    m->key = key;
    m->ext = dot + 1;
}

static int group(tio_shard *s, tio_error *err) {
    size_t n = s->nmembers, grouped = 0;
    s->order = malloc((n ? n : 1) * sizeof *s->order);
    s->first = malloc((n ? n : 1) * sizeof *s->first);
    s->samples = malloc((n ? n : 1) * sizeof *s->samples);
    sort_item *items = malloc((n ? n : 1) * sizeof *items);
    if (!s->order || !s->first || !s->samples || !items) {
        free(items);
        return tio__nomem(err, FMT);
    }
    for (size_t i = 0; i < n; i++) {
        tio_shard_member *m = &s->members[i];
        if (m->sample == TIO_SHARD_NONE) continue;
        if (s->nsamples == 0 || strcmp(s->samples[s->nsamples - 1].key, m->key) != 0) {
            tio_shard_sample *sm = &s->samples[s->nsamples];
            sm->key = m->key;
            sm->count = 0;
            sm->duplicate_of = TIO_SHARD_NONE;
            s->first[s->nsamples++] = grouped;
        }
        m->sample = s->nsamples - 1;
        s->samples[m->sample].count++;
        s->order[grouped++] = i;
    }
    /* duplicate extensions inside a sample */
    for (size_t k = 0; k < grouped; k++)
        items[k] = (sort_item){s->members[s->order[k]].ext, s->members[s->order[k]].sample,
                               s->order[k]};
    if (grouped) qsort(items, grouped, sizeof *items, cmp_ext);
    for (size_t k = 1; k < grouped; k++)
        if (items[k].group == items[k - 1].group && tio__shard_ext_cmp(items[k].s, items[k - 1].s) == 0)
            s->members[items[k].index].duplicate = 1;
    /* keys that come back after another key */
    for (size_t k = 0; k < s->nsamples; k++) items[k] = (sort_item){s->samples[k].key, 0, k};
    if (s->nsamples) qsort(items, s->nsamples, sizeof *items, cmp_key);
    for (size_t k = 1; k < s->nsamples; k++) {
        if (strcmp(items[k].s, items[k - 1].s) != 0) continue;
        size_t orig = s->samples[items[k - 1].index].duplicate_of;
        s->samples[items[k].index].duplicate_of =
            orig == TIO_SHARD_NONE ? items[k - 1].index : orig;
    }
    free(items);
    return TIO_OK;
}

static int index_shard(tio_shard *s, tio_error *err) {
    const char *z = tio__tar_compression(s->base, s->size);
    if (z) {
        /* read whole into memory, not mapped: members view the copy */
        size_t n = 0;
        int rc = tio__tar_decompress(z, s->base, s->size, s->limits.max_dense_bytes,
                                     &s->owned, &n, err);
        if (rc != TIO_OK) return rc;
        if (s->map) { /* the compressed bytes are no longer needed */
            munmap(s->map, s->map_size);
            s->map = NULL;
        }
        s->compression = z;
        s->base = s->owned;
        s->size = n;
    }
    tio_cursor c;
    tio__cursor_init(&c, s->base, s->size, FMT);
    size_t cap = 0;
    for (;;) {
        tio_tar_entry e;
        int done = 0;
        int rc = tio__tar_next(&c, 0, &s->limits, &e, &done, err);
        if (rc != TIO_OK) return rc;
        if (done) break;
        if (s->nmembers >= s->limits.max_tensors) {
            free(e.name);
            return tio__err(err, TIO_E_LIMIT, FMT, (int64_t)e.header,
                            "more than max_tensors %llu members",
                            (unsigned long long)s->limits.max_tensors);
        }
        char *buf = realloc(e.name, 2 * e.name_len + 2); /* name NUL key NUL */
        if (!buf) {
            free(e.name);
            return tio__nomem(err, FMT);
        }
        if (s->nmembers == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            tio_shard_member *m = realloc(s->members, ncap * sizeof *m);
            if (!m) {
                free(buf);
                return tio__nomem(err, FMT);
            }
            s->members = m;
            cap = ncap;
        }
        tio_shard_member *m = &s->members[s->nmembers++];
        memset(m, 0, sizeof *m);
        m->name = buf;
        m->offset = e.offset;
        m->size = e.size;
        m->data = s->base + e.offset;
        m->sample = 0;
        tio__shard_split_name(m, e.name_len);
    }
    return group(s, err);
}

static int shard_new(const tio_limits *limits, tio_shard **out, tio_error *err) {
    *out = NULL;
    tio_shard *s = calloc(1, sizeof *s);
    if (!s) return tio__nomem(err, FMT);
    atomic_init(&s->refs, 1);
    s->limits = tio__limits_resolve(limits);
    *out = s;
    return TIO_OK;
}

static const char *member_name(const void *ctx, size_t i) {
    return ((const tio_shard *)ctx)->members[i].name;
}

static int finish(tio_shard *s, tio_shard **out, tio_error *err) {
    int rc = index_shard(s, err);
    if (rc != TIO_OK) {
        shard_unref(s);
        return rc;
    }
    /* finding a member by path (tio_shard_find) in O(1): a loop over a
     * shard's 100,000 members by path took 16 s searching in order. Out of
     * memory, finds search in order. */
    if (s->nmembers > 8) s->names = tio__names_build(s->nmembers, member_name, s);
    *out = s;
    return TIO_OK;
}

int tio_shard_open_memory(const void *data, size_t size, const tio_limits *limits,
                          tio_shard **out, tio_error *err) {
    if (!out || (!data && size))
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_shard_open_memory: bad arguments");
    tio_shard *s;
    int rc = shard_new(limits, &s, err);
    if (rc != TIO_OK) return rc;
    *out = NULL;
    s->base = data;
    s->size = size;
    return finish(s, out, err);
}

int tio_shard_open(const char *path, const tio_limits *limits, tio_shard **out,
                   tio_error *err) {
    if (!out || !path)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_shard_open: bad arguments");
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return tio__err(err, TIO_E_IO, NULL, -1, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int e = errno;
        close(fd);
        return tio__err(err, TIO_E_IO, NULL, -1, "%s: %s", path,
                        S_ISREG(st.st_mode) ? strerror(e) : "not a regular file");
    }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX) {
        close(fd);
        return tio__err(err, TIO_E_LIMIT, NULL, -1, "%s: file too large to map", path);
    }
    tio_shard *s;
    int rc = shard_new(limits, &s, err);
    if (rc != TIO_OK) {
        close(fd);
        return rc;
    }
    size_t size = (size_t)st.st_size;
    if (size) {
        /* Private and writable, copy-on-write: DLPack has no read-only flag, so
         * torch believes a member's tensor writable, and an in-place op on a
         * sample (x.div_(255)) would fault on a PROT_READ page. It gets its own
         * copy of the pages it writes; the file is never written. NORESERVE:
         * pages only read commit no memory. Where that is refused (strict
         * overcommit), the mapping is read-only. */
        void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
        if (m == MAP_FAILED) m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int e = errno;
            close(fd);
            shard_unref(s);
            return tio__err(err, TIO_E_IO, NULL, -1, "%s: cannot map: %s", path, strerror(e));
        }
        s->map = m;
        s->map_size = size;
        s->base = m;
        s->size = size;
    }
    close(fd);
    return finish(s, out, err);
}

size_t tio_shard_member_count(const tio_shard *s) { return s ? s->nmembers : 0; }

const tio_shard_member *tio_shard_member_at(const tio_shard *s, size_t i) {
    return s && i < s->nmembers ? &s->members[i] : NULL;
}

size_t tio_shard_sample_count(const tio_shard *s) { return s ? s->nsamples : 0; }

const tio_shard_sample *tio_shard_sample_at(const tio_shard *s, size_t i) {
    return s && i < s->nsamples ? &s->samples[i] : NULL;
}

size_t tio_shard_sample_member(const tio_shard *s, size_t i, size_t j) {
    if (!s || i >= s->nsamples || j >= s->samples[i].count) return TIO_SHARD_NONE;
    return s->order[s->first[i] + j];
}

size_t tio_shard_find(const tio_shard *s, const char *name) {
    if (!s || !name) return TIO_SHARD_NONE;
    if (s->names) {
        size_t i = tio__names_find(s->names, name, member_name, s);
        return i == SIZE_MAX ? TIO_SHARD_NONE : i;
    }
    for (size_t i = 0; i < s->nmembers; i++)
        if (strcmp(s->members[i].name, name) == 0) return i;
    return TIO_SHARD_NONE;
}

const char *tio_shard_format_for_name(const char *name) {
    const char *f = name ? tio_format_for_path(name) : NULL;
    size_t n = f ? strlen(name) : 0;
    /* WebDataset keeps a .bin member as bytes (its torch decoder takes .pth) */
    if (n >= 4 && tio__shard_ext_cmp(name + n - 4, ".bin") == 0) return NULL;
    return f;
}

const char *tio_shard_member_format(const tio_shard *s, size_t i) {
    if (!s || i >= s->nmembers) return NULL;
    return tio_shard_format_for_name(s->members[i].name);
}

int tio_shard_open_member(tio_shard *s, size_t i, const tio_open_options *opts,
                          tio_container **out, tio_error *err) {
    if (!s || !out || i >= s->nmembers)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_shard_open_member: bad arguments");
    *out = NULL;
    const tio_shard_member *m = &s->members[i];
    tio_open_options o;
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    if (!o.limits) o.limits = &s->limits;
    if (!o.format) o.format = tio_format_for_path(m->name);
    if (!o.format)
        return tio__err(err, TIO_E_FORMAT, FMT, (int64_t)m->offset,
                        "member \"%s\": its extension names no tensor format", m->name);
    int borrow = !(o.flags & TIO_OPEN_COPY);
    if (borrow) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    tio_container *c = NULL;
    int rc = tio_open_memory(m->data, (size_t)m->size, &o, &c, err);
    if (rc == TIO_OK && borrow) {
        rc = tio_container_on_release(c, shard_unref, s, err);
        if (rc != TIO_OK) {
            tio_container_free(c);
            c = NULL;
        } else {
            borrow = 0; /* the container holds it now */
        }
    }
    if (borrow) shard_unref(s);
    *out = c;
    return rc;
}
