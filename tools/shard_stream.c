/* Shards over ZeroMQ: tensio send SHARD.tar (a message per sample, or per
 * --batch samples stacked as tensorcom batches) and tensio recv
 * --samples-per-shard (messages written back into shards). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* What a message container holds on to: the member containers its tensors
 * are views of, or the stacked copies of a batch. */
typedef struct hold {
    tio_container **members;
    size_t nmembers;
    void **bufs;
    size_t nbufs;
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

/* One dense tensor t appended to c as a view (or with its shape given). */
static int add_view(tio_container *c, const tio_tensor *t, size_t rank, const int64_t *shape,
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

/* Sample i's tensors (every tensor member's, in member order) as views. */
static int sample_container(const char *path, tio_shard *s, size_t i, tio_container **out) {
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
        if (!tio_shard_member_format(s, mi)) continue;
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
                rc = add_view(c, t, tio_tensor_rank(t), tio_tensor_shape(t), tio_tensor_data(t),
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
        rc = add_view(c, t0, rank + 1, shape, buf, nb * n);
        free(shape);
    }
    if (rc != CLI_EXIT_OK) {
        tio_container_free(c);
        return rc;
    }
    *out = c;
    return CLI_EXIT_OK;
}

static int push(cli_shard_msgs *m, tio_container *c, const char *label) {
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        tio_container **cs = realloc(m->containers, cap * sizeof *cs);
        if (cs) m->containers = cs;
        char **ls = cs ? realloc(m->labels, cap * sizeof *ls) : NULL;
        if (ls) m->labels = ls;
        if (!cs || !ls) {
            tio_container_free(c);
            return cli_error("out of memory");
        }
        m->cap = cap;
    }
    char *copy = strdup(label);
    if (!copy) {
        tio_container_free(c);
        return cli_error("out of memory");
    }
    m->containers[m->n] = c;
    m->labels[m->n++] = copy;
    return CLI_EXIT_OK;
}

int cli_shard_msgs_push(cli_shard_msgs *m, tio_container *c, const char *label) {
    return push(m, c, label);
}

/* The message of samples [key, key + n) of shard path. */
static int push_samples(cli_shard_msgs *m, tio_container *c, const char *path, const char *key,
                        size_t n) {
    char *label = n > 1 ? cli_strdup_printf("%s:%s+%zu", path, key, n - 1)
                        : cli_strdup_printf("%s:%s", path, key);
    if (!label) {
        tio_container_free(c);
        return cli_error("out of memory");
    }
    int rc = push(m, c, label);
    free(label);
    return rc;
}

int cli_shard_messages(const char *path, size_t batch, const tio_limits *lim,
                       cli_shard_msgs *m) {
    tio_shard *s = NULL;
    tio_error err;
    tio_error_clear(&err);
    if (tio_shard_open(path, lim, &s, &err) != TIO_OK)
        return err.code == TIO_E_IO ? cli_error("%s", cli_errmsg(&err))
                                    : shard_error(path, NULL, cli_errmsg(&err));
    size_t ns = tio_shard_sample_count(s), b = batch ? batch : 1;
    tio_container **group = calloc(b, sizeof *group);
    int rc = group ? CLI_EXIT_OK : cli_error("out of memory");
    size_t have = 0, first = 0;
    for (size_t i = 0; i < ns && rc == CLI_EXIT_OK; i++) {
        tio_container *c = NULL;
        rc = sample_container(path, s, i, &c);
        if (rc != CLI_EXIT_OK) break;
        if (tio_container_count(c) == 0) { /* no tensor member: nothing to send */
            tio_container_free(c);
            continue;
        }
        if (have == 0) first = i;
        group[have++] = c;
        if (have < b && i + 1 < ns) continue;
        const char *key = tio_shard_sample_at(s, first)->key;
        if (batch == 0) {
            rc = push_samples(m, group[0], path, key, 1);
        } else {
            tio_container *st = NULL;
            rc = stack(path, group, have, key, &st);
            if (rc == CLI_EXIT_OK) rc = push_samples(m, st, path, key, have);
            for (size_t k = 0; k < have; k++) tio_container_free(group[k]);
        }
        have = 0;
    }
    for (size_t k = 0; rc != CLI_EXIT_OK && k < have; k++) tio_container_free(group[k]);
    if (rc == CLI_EXIT_OK && have) { /* a last, partial batch (no more samples) */
        const char *key = tio_shard_sample_at(s, first)->key;
        tio_container *st = NULL;
        rc = stack(path, group, have, key, &st);
        if (rc == CLI_EXIT_OK) rc = push_samples(m, st, path, key, have);
        for (size_t k = 0; k < have; k++) tio_container_free(group[k]);
    }
    free(group);
    tio_shard_free(s); /* the member containers keep the mapping */
    return rc;
}

void cli_shard_msgs_free(cli_shard_msgs *m) {
    for (size_t i = 0; i < m->n; i++) {
        tio_container_free(m->containers[i]);
        free(m->labels[i]);
    }
    free(m->containers);
    free(m->labels);
    memset(m, 0, sizeof *m);
}

/* ------------------------------------------------------------- receiving */

int cli_shard_out_add(cli_shard_out *o, const char *pattern_path, uint64_t sample,
                      const tio_container *c, const tio_save_options *so) {
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
    char key[32];
    snprintf(key, sizeof key, "%06llu", (unsigned long long)sample);
    tio_save_options eo = *so;
    eo.flags &= ~TIO_SAVE_NO_SYNC;
    if (tio_shard_writer_add_container(o->w, key, c, &eo, NULL, &err) != TIO_OK)
        return cli_error("%s: sample %s: %s", o->path, key, cli_errmsg(&err));
    return CLI_EXIT_OK;
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
