/* Shards over ZeroMQ: tensio send SHARD.tar (a message per sample, or per
 * --batch samples stacked as tensorcom batches) and tensio recv
 * --samples-per-shard (messages written back into shards). */
#include "cli.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* What a message container holds on to: the member containers its tensors
 * are views of, or the stacked copies of a batch. */
typedef struct hold {
    tio_container **members;
    size_t nmembers;
    void **bufs;
    size_t nbufs, bufcap;
} hold;

static void hold_free(void *ctx) {
    hold *h = ctx;
    for (size_t i = 0; i < h->nmembers; i++) tio_container_free(h->members[i]);
    for (size_t i = 0; i < h->nbufs; i++) free(h->bufs[i]);
    free(h->members);
    free(h->bufs);
    free(h);
}

/* A new container that frees *h (room for nmembers member containers and
 * nbufs buffers) when it is released. */
static int held_container(size_t nmembers, size_t nbufs, tio_container **c, hold **h) {
    *c = tio_container_new();
    *h = calloc(1, sizeof **h);
    if (*h) {
        (*h)->members = calloc(nmembers ? nmembers : 1, sizeof *(*h)->members);
        (*h)->bufs = calloc(nbufs ? nbufs : 1, sizeof *(*h)->bufs);
        (*h)->bufcap = nbufs ? nbufs : 1;
    }
    tio_error err;
    tio_error_clear(&err);
    if (*c && *h && (*h)->members && (*h)->bufs &&
        tio_container_on_release(*c, hold_free, *h, &err) == TIO_OK)
        return CLI_EXIT_OK;
    if (*h) hold_free(*h);
    tio_container_free(*c);
    *c = NULL;
    *h = NULL;
    return cli_error("out of memory");
}

static int shard_error(const char *path, const char *member, const char *msg) {
    char *ep = cli_text_escape(path), *em = member ? cli_text_escape(member) : NULL;
    if (em)
        cli_error("%s: member %s: %s", ep ? ep : path, em, msg);
    else
        cli_error("%s: %s", ep ? ep : path, msg);
    free(ep);
    free(em);
    return CLI_EXIT_FAIL;
}

int cli_add_view(tio_container *c, const tio_tensor *t, size_t rank, const int64_t *shape,
                    const void *data, size_t nbytes) {
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = tio_tensor_name(t);
    d.dtype = tio_tensor_dtype(t);
    d.rank = rank;
    d.shape = shape;
    d.layout = TIO_LAYOUT_DENSE;
    d.data = data;
    d.nbytes = nbytes;
    tio_error err;
    tio_error_clear(&err);
    if (tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &err) != TIO_OK)
        return cli_error("%s", cli_errmsg(&err));
    return CLI_EXIT_OK;
}

/* h keeps p (freed with the message; freed now on failure). */
static int hold_keep(hold *h, void *p) {
    if (h->nbufs == h->bufcap) {
        void **b = realloc(h->bufs, 2 * h->bufcap * sizeof *b);
        if (!b) {
            free(p);
            return cli_error("out of memory");
        }
        h->bufs = b;
        h->bufcap *= 2;
    }
    h->bufs[h->nbufs++] = p;
    return CLI_EXIT_OK;
}

/* Decimal text with optional ASCII white space around it and a sign, as
 * Python's int() reads a WebDataset .cls (no underscores). */
static int int_text(const void *data, size_t n, int64_t *out) {
    const unsigned char *p = data, *e = p + n;
    while (p < e && (*p == ' ' || (*p >= '\t' && *p <= '\r'))) p++;
    while (e > p && (e[-1] == ' ' || (e[-1] >= '\t' && e[-1] <= '\r'))) e--;
    int neg = p < e && *p == '-';
    if (p < e && (*p == '-' || *p == '+')) p++;
    if (p == e) return -1;
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9') return -1;
        unsigned dg = (unsigned)(*p - '0');
        if (v > (lim - dg) / 10) return -1;
        v = v * 10 + dg;
    }
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return 0;
}

int cli_shard_int_ext(const char *ext) {
    static const char *const exts[] = {"cls", "cls2", "class", "count", "index", "inx", "id"};
    for (size_t i = 0; i < sizeof exts / sizeof *exts; i++)
        if (strcasecmp(ext, exts[i]) == 0) return 1;
    return 0;
}

/* A member no tensor format reads (--members): a tensor named by its
 * extension, as WebDataset's default decoder names a sample's fields; an
 * integer extension (.cls ...) its decimal text as an int64 scalar, any
 * other its bytes as uint8 [size] (copied: a streamed member's bytes live
 * until the next member). */
static int add_member(tio_container *c, hold *h, const char *path, const tio_shard_member *mb) {
    if (!mb->ext[0])
        return shard_error(path, mb->name, "--members: the member has no extension to name "
                                           "its tensor by");
    if (mb->duplicate)
        return shard_error(path, mb->name, "--members: an earlier member of the sample has "
                                           "the same extension");
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = mb->ext;
    d.layout = TIO_LAYOUT_DENSE;
    int64_t n = (int64_t)mb->size;
    if (cli_shard_int_ext(mb->ext)) {
        int64_t *v = malloc(sizeof *v);
        if (!v) return cli_error("out of memory");
        if (int_text(mb->data, (size_t)mb->size, v) != 0) {
            free(v);
            return shard_error(path, mb->name,
                               "--members: not an integer in decimal text (WebDataset's "
                               "default decoder reads this extension as an int)");
        }
        d.dtype = TIO_INT64;
        d.data = v;
        d.nbytes = sizeof *v;
    } else {
        void *b = malloc(mb->size ? (size_t)mb->size : 1);
        if (!b) return cli_error("out of memory");
        if (mb->size) memcpy(b, mb->data, (size_t)mb->size);
        d.dtype = TIO_UINT8;
        d.rank = 1;
        d.shape = &n;
        d.data = b;
        d.nbytes = (size_t)mb->size;
    }
    int rc = hold_keep(h, (void *)d.data);
    if (rc != CLI_EXIT_OK) return rc;
    tio_error err;
    tio_error_clear(&err);
    if (tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &err) != TIO_OK)
        return shard_error(path, mb->name, cli_errmsg(&err));
    return CLI_EXIT_OK;
}

/* Sample i's tensors (every tensor member's, in member order) as views. */
static int sample_container(const char *path, tio_shard *s, size_t i, int members,
                            tio_container **out) {
    *out = NULL;
    const tio_shard_sample *sm = tio_shard_sample_at(s, i);
    tio_container *c = NULL;
    hold *h = NULL;
    int rc = held_container(sm->count, 0, &c, &h);
    if (rc != CLI_EXIT_OK) return rc;
    tio_error err;
    tio_error_clear(&err);
    for (size_t j = 0; j < sm->count && rc == CLI_EXIT_OK; j++) {
        size_t mi = tio_shard_sample_member(s, i, j);
        if (!tio_shard_member_format(s, mi)) {
            if (members) rc = add_member(c, h, path, tio_shard_member_at(s, mi));
            continue;
        }
        const char *name = tio_shard_member_at(s, mi)->name;
        tio_container *m = NULL;
        if (tio_shard_open_member(s, mi, NULL, &m, &err) != TIO_OK) {
            rc = shard_error(path, name, cli_errmsg(&err));
            break;
        }
        h->members[h->nmembers++] = m;
        for (size_t k = 0; k < tio_container_count(m) && rc == CLI_EXIT_OK; k++) {
            const tio_tensor *t = tio_container_tensor(m, k);
            if (tio_tensor_layout(t) != TIO_LAYOUT_DENSE)
                rc = shard_error(path, name, "a sparse or quantized tensor: samples are sent "
                                             "with dense tensors only");
            else
                rc = cli_add_view(c, t, tio_tensor_rank(t), tio_tensor_shape(t), tio_tensor_data(t),
                              tio_tensor_nbytes(t));
        }
    }
    if (rc != CLI_EXIT_OK) {
        tio_container_free(c);
        return rc;
    }
    *out = c;
    return CLI_EXIT_OK;
}

/* Samples [from, from + n) stacked: tensor k of the result is tensor k of
 * every sample along a new first axis (what tensorcom sends for a batch:
 * one array per field). The samples must agree in tensor count, dtype and
 * shape. */
static int stack(const char *path, tio_container **samples, size_t n, const char *first_key,
                 tio_container **out) {
    *out = NULL;
    size_t nt = tio_container_count(samples[0]);
    tio_container *c = NULL;
    hold *h = NULL;
    int rc = held_container(0, nt, &c, &h);
    if (rc != CLI_EXIT_OK) return rc;
    for (size_t k = 0; k < nt && rc == CLI_EXIT_OK; k++) {
        const tio_tensor *t0 = tio_container_tensor(samples[0], k);
        size_t rank = tio_tensor_rank(t0), nb = tio_tensor_nbytes(t0);
        for (size_t b = 1; b < n && rc == CLI_EXIT_OK; b++) {
            const tio_tensor *t =
                tio_container_count(samples[b]) == nt ? tio_container_tensor(samples[b], k) : NULL;
            if (!t || tio_tensor_dtype(t) != tio_tensor_dtype(t0) || tio_tensor_rank(t) != rank ||
                (rank && memcmp(tio_tensor_shape(t), tio_tensor_shape(t0),
                                rank * sizeof(int64_t)) != 0)) {
                char msg[320];
                snprintf(msg, sizeof msg,
                         "--batch: the samples of the batch from key \"%.80s\" differ in tensor "
                         "%zu (count, dtype or shape): they cannot be stacked",
                         first_key, k);
                rc = shard_error(path, NULL, msg);
            }
        }
        if (rc != CLI_EXIT_OK) break;
        int64_t *shape = malloc((rank + 1) * sizeof *shape);
        uint8_t *buf = nb && n > SIZE_MAX / nb ? NULL : malloc(nb && n ? nb * n : 1);
        if (!buf || !shape) {
            free(buf);
            free(shape);
            rc = cli_error("out of memory");
            break;
        }
        h->bufs[h->nbufs++] = buf;
        for (size_t b = 0; b < n; b++)
            if (nb) memcpy(buf + b * nb, tio_tensor_data(tio_container_tensor(samples[b], k)), nb);
        shape[0] = (int64_t)n;
        if (rank) memcpy(shape + 1, tio_tensor_shape(t0), rank * sizeof(int64_t));
        rc = cli_add_view(c, t0, rank + 1, shape, buf, nb * n);
        free(shape);
    }
    if (rc != CLI_EXIT_OK) {
        tio_container_free(c);
        return rc;
    }
    *out = c;
    return CLI_EXIT_OK;
}

static int push(cli_shard_msgs *m, tio_container *c, const char *label, const char *keys,
                size_t keys_len) {
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        tio_container **cs = realloc(m->containers, cap * sizeof *cs);
        if (cs) m->containers = cs;
        char **ls = cs ? realloc(m->labels, cap * sizeof *ls) : NULL;
        if (ls) m->labels = ls;
        char **ks = ls ? realloc(m->keys, cap * sizeof *ks) : NULL;
        if (ks) m->keys = ks;
        size_t *kl = ks ? realloc(m->keys_len, cap * sizeof *kl) : NULL;
        if (kl) m->keys_len = kl;
        if (!kl) {
            tio_container_free(c);
            return cli_error("out of memory");
        }
        m->cap = cap;
    }
    char *copy = strdup(label);
    char *kcopy = keys ? malloc(keys_len ? keys_len : 1) : NULL;
    if (!copy || (keys && !kcopy)) {
        free(copy);
        free(kcopy);
        tio_container_free(c);
        return cli_error("out of memory");
    }
    if (keys_len) memcpy(kcopy, keys, keys_len);
    m->containers[m->n] = c;
    m->keys[m->n] = kcopy;
    m->keys_len[m->n] = keys_len;
    m->labels[m->n++] = copy;
    return CLI_EXIT_OK;
}

int cli_shard_msgs_push(cli_shard_msgs *m, tio_container *c, const char *label) {
    return push(m, c, label, NULL, 0);
}

static int push_sink(void *ctx, tio_container *c, const char *label, const char *keys,
                     size_t keys_len) {
    return push(ctx, c, label, keys, keys_len);
}

/* Samples grouped into messages: one per sample, or per `batch` samples
 * stacked, handed to a sink with their label ("path:KEY", "path:KEY+3")
 * and keys (NUL between them). */
typedef struct batcher {
    const char *path;
    size_t batch; /* 0: a message per sample */
    tio_container **group;
    char **keys;
    size_t have;
    cli_shard_sink sink;
    void *ctx;
} batcher;

static int batcher_init(batcher *b, const char *path, size_t batch, cli_shard_sink sink,
                        void *ctx) {
    memset(b, 0, sizeof *b);
    b->path = path;
    b->batch = batch;
    b->sink = sink;
    b->ctx = ctx;
    size_t n = batch ? batch : 1;
    b->group = calloc(n, sizeof *b->group);
    b->keys = calloc(n, sizeof *b->keys);
    if (!b->group || !b->keys) return cli_error("out of memory");
    return CLI_EXIT_OK;
}

static void batcher_drop(batcher *b) {
    for (size_t k = 0; k < b->have; k++) {
        tio_container_free(b->group[k]);
        free(b->keys[k]);
    }
    b->have = 0;
}

static void batcher_free(batcher *b) {
    batcher_drop(b);
    free(b->group);
    free(b->keys);
}

/* The samples held so far as one message, to the sink. */
static int batcher_emit(batcher *b) {
    if (b->have == 0) return CLI_EXIT_OK;
    size_t klen = 0;
    for (size_t k = 0; k < b->have; k++) klen += strlen(b->keys[k]) + (k ? 1 : 0);
    char *keys = malloc(klen + 1);
    char *label = b->have > 1
                      ? cli_strdup_printf("%s:%s+%zu", b->path, b->keys[0], b->have - 1)
                      : cli_strdup_printf("%s:%s", b->path, b->keys[0]);
    int rc = keys && label ? CLI_EXIT_OK : cli_error("out of memory");
    size_t at = 0;
    for (size_t k = 0; rc == CLI_EXIT_OK && k < b->have; k++) {
        if (k) keys[at++] = 0;
        size_t n = strlen(b->keys[k]);
        memcpy(keys + at, b->keys[k], n);
        at += n;
    }
    tio_container *c = NULL;
    if (rc == CLI_EXIT_OK && b->batch == 0) {
        c = b->group[0];
        b->group[0] = NULL;
    } else if (rc == CLI_EXIT_OK) {
        rc = stack(b->path, b->group, b->have, b->keys[0], &c);
    }
    if (rc == CLI_EXIT_OK) rc = b->sink(b->ctx, c, label, keys, klen);
    batcher_drop(b);
    free(keys);
    free(label);
    return rc;
}

/* Adds sample c (taken, also on failure) with key; a full group is emitted. */
static int batcher_add(batcher *b, tio_container *c, const char *key) {
    if (tio_container_count(c) == 0) { /* no tensor member: nothing to send */
        tio_container_free(c);
        return CLI_EXIT_OK;
    }
    char *k = strdup(key);
    if (!k) {
        tio_container_free(c);
        return cli_error("out of memory");
    }
    b->group[b->have] = c;
    b->keys[b->have++] = k;
    return b->have < (b->batch ? b->batch : 1) ? CLI_EXIT_OK : batcher_emit(b);
}

int cli_shard_messages(const char *path, size_t batch, int members, const tio_limits *lim,
                       cli_shard_msgs *m) {
    tio_shard *s = NULL;
    tio_error err;
    tio_error_clear(&err);
    tio_limits buf; /* the shard keeps a copy, for its members */
    if (tio_shard_open(path, cli_limits(lim, &buf), &s, &err) != TIO_OK) {
        int rc = err.code == TIO_E_IO ? cli_error("%s", cli_errmsg(&err))
                                      : shard_error(path, NULL, cli_errmsg(&err));
        cli_limit_hint(&err);
        return rc;
    }
    batcher b;
    int rc = batcher_init(&b, path, batch, push_sink, m);
    size_t ns = tio_shard_sample_count(s);
    for (size_t i = 0; i < ns && rc == CLI_EXIT_OK; i++) {
        tio_container *c = NULL;
        rc = sample_container(path, s, i, members, &c);
        if (rc == CLI_EXIT_OK) rc = batcher_add(&b, c, tio_shard_sample_at(s, i)->key);
    }
    if (rc == CLI_EXIT_OK) rc = batcher_emit(&b); /* a last, partial batch */
    batcher_free(&b);
    tio_shard_free(s); /* the member containers keep the mapping */
    return rc;
}

/* A sample of a streamed shard being gathered: its members' containers (own
 * copies: a streamed member's bytes live until the next one). */
typedef struct gather {
    tio_container *c; /* NULL: no sample begun */
    hold *h;
    size_t cap;       /* room in h->members */
    char *key;
} gather;

static int gather_member(gather *g, const char *path, const tio_shard_member *mb, int members,
                         const tio_limits *lim) {
    const char *fmt = tio_format_for_path(mb->name);
    if (!fmt) /* .cls, .json …: sent with --members */
        return members ? add_member(g->c, g->h, path, mb) : CLI_EXIT_OK;
    tio_open_options o;
    memset(&o, 0, sizeof o);
    o.format = fmt;
    o.limits = lim;
    o.flags = TIO_OPEN_COPY;
    tio_container *m = NULL;
    tio_error err;
    tio_error_clear(&err);
    if (tio_open_memory(mb->data, (size_t)mb->size, &o, &m, &err) != TIO_OK)
        return shard_error(path, mb->name, cli_errmsg(&err));
    if (g->h->nmembers == g->cap) {
        size_t cap = g->cap * 2;
        tio_container **ms = realloc(g->h->members, cap * sizeof *ms);
        if (!ms) {
            tio_container_free(m);
            return cli_error("out of memory");
        }
        g->h->members = ms;
        g->cap = cap;
    }
    g->h->members[g->h->nmembers++] = m;
    int rc = CLI_EXIT_OK;
    for (size_t k = 0; k < tio_container_count(m) && rc == CLI_EXIT_OK; k++) {
        const tio_tensor *t = tio_container_tensor(m, k);
        if (tio_tensor_layout(t) != TIO_LAYOUT_DENSE)
            rc = shard_error(path, mb->name, "a sparse or quantized tensor: samples are sent "
                                             "with dense tensors only");
        else
            rc = cli_add_view(g->c, t, tio_tensor_rank(t), tio_tensor_shape(t), tio_tensor_data(t),
                          tio_tensor_nbytes(t));
    }
    return rc;
}

/* The sample gathered so far to the batcher. */
static int gather_end(gather *g, batcher *b) {
    if (!g->c) return CLI_EXIT_OK;
    tio_container *c = g->c;
    g->c = NULL;
    int rc = batcher_add(b, c, g->key);
    free(g->key);
    g->key = NULL;
    return rc;
}

/* One shard read in one pass. */
static int stream_one(const char *path, int members, const tio_limits *lim, batcher *b) {
    tio_shard_stream *st = NULL;
    tio_error err;
    tio_error_clear(&err);
    if (tio_shard_stream_open(path, lim, &st, &err) != TIO_OK)
        return cli_error("%s", cli_errmsg(&err));
    gather g;
    memset(&g, 0, sizeof g);
    size_t cur = TIO_SHARD_NONE;
    int rc = CLI_EXIT_OK;
    b->path = path;
    for (;;) {
        const tio_shard_member *mb = NULL;
        tio_error_clear(&err);
        if (tio_shard_stream_next(st, &mb, &err) != TIO_OK) {
            rc = cli_error("%s", cli_errmsg(&err));
            break;
        }
        if (!mb || mb->sample != cur) {
            rc = gather_end(&g, b);
            if (rc != CLI_EXIT_OK || !mb) break;
            cur = mb->sample;
        }
        if (mb->sample == TIO_SHARD_NONE) continue;
        if (!g.c) {
            g.cap = 4;
            rc = held_container(g.cap, 0, &g.c, &g.h);
            g.key = rc == CLI_EXIT_OK ? strdup(mb->key) : NULL;
            if (rc == CLI_EXIT_OK && !g.key) rc = cli_error("out of memory");
            if (rc != CLI_EXIT_OK) break;
        }
        rc = gather_member(&g, path, mb, members, lim);
        if (rc != CLI_EXIT_OK) break;
    }
    tio_container_free(g.c);
    free(g.key);
    if (rc == CLI_EXIT_OK) rc = batcher_emit(b); /* the shard's last, partial batch */
    tio_shard_stream_free(st);
    return rc;
}

int cli_shard_stream_messages(const char *spec, size_t batch, int members,
                              const tio_limits *lim, cli_shard_sink sink, void *ctx) {
    char **list = NULL;
    size_t n = 0;
    tio_error err;
    tio_error_clear(&err);
    tio_limits buf; /* for the list, the shards and their members */
    lim = cli_limits(lim, &buf);
    if (tio_shard_list_expand(spec, lim, &list, &n, &err) != TIO_OK)
        return shard_error(spec, NULL, cli_errmsg(&err));
    batcher b;
    int rc = batcher_init(&b, spec, batch, sink, ctx);
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) rc = stream_one(list[i], members, lim, &b);
    batcher_free(&b);
    tio_shard_list_free(list, n);
    return rc;
}

int cli_shard_streamed(const char *file) {
    return cli_is_url(file) || strncmp(file, "pipe:", 5) == 0 || strchr(file, '{') ||
           strstr(file, "::");
}

void cli_shard_msgs_free(cli_shard_msgs *m) {
    for (size_t i = 0; i < m->n; i++) {
        tio_container_free(m->containers[i]);
        free(m->labels[i]);
        free(m->keys[i]);
    }
    free(m->containers);
    free(m->labels);
    free(m->keys);
    free(m->keys_len);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------- receiving */

/* A tensor --members writes back as a member of its own: named by an
 * extension no tensor format reads ([A-Za-z0-9_-] and inner dots, at most
 * 64 bytes), uint8 [n] (its bytes), or int64 [] under an integer extension
 * (its decimal text). */
static int member_tensor(const tio_tensor *t) {
    const char *n = tio_tensor_name(t);
    size_t len = n ? strlen(n) : 0;
    if (!len || len > 64 || n[0] == '.' || n[len - 1] == '.') return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = n[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '.'))
            return 0;
    }
    char probe[80];
    snprintf(probe, sizeof probe, "x.%s", n);
    if (tio_format_for_path(probe)) return 0;
    if (tio_tensor_layout(t) != TIO_LAYOUT_DENSE) return 0;
    if (tio_tensor_dtype(t) == TIO_UINT8 && tio_tensor_rank(t) == 1) return 1;
    return cli_shard_int_ext(n) && tio_tensor_dtype(t) == TIO_INT64 && tio_tensor_rank(t) == 0;
}

/* The sample key a --members message carries in __key__ (one sample's:
 * printable, no NUL, no '.' or '/'), else NULL. */
static char *message_key(const tio_container *c) {
    for (size_t i = 0; i < tio_container_count(c); i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        const char *n = tio_tensor_name(t);
        if (!n || strcmp(n, "__key__") != 0 || tio_tensor_dtype(t) != TIO_UINT8 ||
            tio_tensor_rank(t) != 1 || tio_tensor_layout(t) != TIO_LAYOUT_DENSE)
            continue;
        size_t len = tio_tensor_nbytes(t);
        const unsigned char *k = tio_tensor_data(t);
        if (!len || len > 255) return NULL;
        for (size_t j = 0; j < len; j++)
            if (k[j] < 0x20 || k[j] == 0x7f || k[j] == '.' || k[j] == '/') return NULL;
        char *s = malloc(len + 1);
        if (s) {
            memcpy(s, k, len);
            s[len] = 0;
        }
        return s;
    }
    return NULL;
}

int cli_shard_out_add(cli_shard_out *o, const char *pattern_path, uint64_t sample,
                      const tio_container *c, const tio_save_options *so, int members) {
    tio_error err;
    tio_error_clear(&err);
    if (!o->w) {
        tio_shard_writer_options wo;
        memset(&wo, 0, sizeof wo);
        wo.flags = so->flags & TIO_SAVE_NO_SYNC;
        free(o->path);
        o->path = strdup(pattern_path);
        if (!o->path) return cli_error("out of memory");
        if (tio_shard_writer_open(o->path, &wo, &o->w, &err) != TIO_OK)
            return cli_error("%s: %s", o->path, cli_errmsg(&err));
    }
    char key[256];
    char *mk = members ? message_key(c) : NULL;
    if (mk)
        snprintf(key, sizeof key, "%s", mk);
    else
        snprintf(key, sizeof key, "%06llu", (unsigned long long)sample);
    free(mk);
    tio_save_options eo = *so;
    eo.flags &= ~TIO_SAVE_NO_SYNC;
    if (!members) {
        if (tio_shard_writer_add_container(o->w, key, c, &eo, NULL, &err) != TIO_OK)
            return cli_error("%s: sample %s: %s", o->path, key, cli_errmsg(&err));
        return CLI_EXIT_OK;
    }
    /* --members: member tensors as members of their own, the rest (without
     * __key__ and __epoch) as KEY.EXT in so->format */
    tio_container *rest = tio_container_new();
    if (!rest) return cli_error("out of memory");
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < tio_container_count(c) && rc == CLI_EXIT_OK; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        const char *n = tio_tensor_name(t);
        if (n && (strcmp(n, "__key__") == 0 || strcmp(n, "__epoch") == 0)) continue;
        if (!member_tensor(t)) {
            if (tio_tensor_layout(t) != TIO_LAYOUT_DENSE)
                rc = cli_error("%s: sample %s: --members: tensor %zu is not dense", o->path, key,
                               i);
            else
                rc = cli_add_view(rest, t, tio_tensor_rank(t), tio_tensor_shape(t),
                                  tio_tensor_data(t), tio_tensor_nbytes(t));
            continue;
        }
        char name[340], text[24];
        snprintf(name, sizeof name, "%s.%s", key, n);
        const void *data = tio_tensor_data(t);
        size_t len = tio_tensor_nbytes(t);
        if (tio_tensor_dtype(t) == TIO_INT64) {
            int64_t v;
            memcpy(&v, data, sizeof v);
            len = (size_t)snprintf(text, sizeof text, "%lld", (long long)v);
            data = text;
        }
        tio_error_clear(&err);
        if (tio_shard_writer_add_bytes(o->w, name, data, len, &err) != TIO_OK)
            rc = cli_error("%s: sample %s: %s", o->path, key, cli_errmsg(&err));
    }
    if (rc == CLI_EXIT_OK && tio_container_count(rest)) {
        tio_error_clear(&err);
        if (tio_shard_writer_add_container(o->w, key, rest, &eo, NULL, &err) != TIO_OK)
            rc = cli_error("%s: sample %s: %s", o->path, key, cli_errmsg(&err));
    }
    tio_container_free(rest);
    return rc;
}

int cli_shard_out_close(cli_shard_out *o) {
    if (!o->w) return CLI_EXIT_OK;
    tio_error err;
    tio_error_clear(&err);
    int rc = tio_shard_writer_close(o->w, &err) == TIO_OK
                 ? CLI_EXIT_OK
                 : cli_error("%s: %s", o->path, cli_errmsg(&err));
    o->w = NULL;
    return rc;
}
