/* ls, info, validate and dump on WebDataset tar shards (tio_shard_*). */
#include "cli.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int open_shard(const char *path, const tio_limits *lim, tio_shard **out) {
    tio_error err;
    tio_error_clear(&err);
    if (tio_shard_open(path, lim, out, &err) != TIO_OK) {
        const char *msg = cli_errmsg(&err);
        if (err.code == TIO_E_IO) return cli_error("%s", msg); /* it names the file */
        char *ep = cli_text_escape(path);
        cli_error("%s: %s", ep ? ep : path, msg);
        free(ep);
        cli_limit_hint(&err);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

/* A member that did not decode, reported on stderr. */
static void report_member(const char *path, const char *name, const tio_error *err) {
    char *ep = cli_text_escape(path), *en = cli_text_escape(name);
    cli_error("%s: member %s: %s", ep ? ep : path, en ? en : "?", cli_errmsg(err));
    free(ep);
    free(en);
}

/* ------------------------------------------------------------------- ls */

/* The rows of member m (its container c, or NULL: a row of bytes). */
static int ls_rows(cli_table *tab, const char *path, const tio_shard_member *m, tio_container *c,
                   cli_hash_run *h) {
    int rc = CLI_EXIT_OK;
    char *ek = cli_text_escape(m->key), *em = cli_text_escape(m->name);
    char *label = h->on && c ? cli_escaped_pair(path, ": ", m->name) : NULL;
    size_t nt = c ? tio_container_count(c) : 0;
    if (!ek || !em || (h->on && c && !label)) rc = cli_error("out of memory");
    for (size_t t = 0; t < nt && rc == CLI_EXIT_OK; t++) {
        cli_table_add(tab, "%s", m->key[0] ? ek : "-");
        cli_table_add(tab, "%s", em);
        rc = cli_table_tensor(tab, t, tio_container_tensor(c, t));
        if (rc == CLI_EXIT_OK && h->on) cli_hash_cell(tab, h, label, c, t);
    }
    if (!c && rc == CLI_EXIT_OK) { /* opaque bytes (or a member that failed) */
        cli_table_add(tab, "%s", m->key[0] ? ek : "-");
        cli_table_add(tab, "%s", em);
        cli_table_add(tab, "-");
        cli_table_add(tab, "-");
        cli_table_add(tab, "bytes");
        cli_table_add(tab, "-");
        cli_table_add(tab, "%llu", (unsigned long long)m->size);
        if (h->on) cli_table_add(tab, "-");
    }
    free(ek);
    free(em);
    free(label);
    return rc;
}

static void ls_heads(cli_table *tab, int hash) {
    cli_table_init(tab, hash ? 8 : 7, 1u << 2 | 1u << 6);
    const char *heads[] = {"KEY", "MEMBER", "INDEX", "NAME", "DTYPE", "SHAPE", "NBYTES", "SHA256"};
    for (size_t k = 0; k < (hash ? 8u : 7u); k++) cli_table_add(tab, "%s", heads[k]);
}

/* The members of a mapped shard, or of one read as a stream (a URL,
 * pipe:COMMAND), one at a time with their containers. */
typedef struct msrc {
    const char *path;
    const tio_limits *lim; /* the command's, with TENSIO_LIMITS (lim_buf) */
    tio_limits lim_buf;
    tio_shard *s; /* mapped */
    size_t i;
    tio_shard_stream *st; /* or streamed */
    int failed;           /* a member did not decode (reported) */
    int quiet;            /* not reported: the last one's error in merr (validate) */
    tio_error merr;
    cli_hash_run hash;    /* ls --hash */
    cli_select *sel;      /* ls --only/--exclude/--rename on member names, or NULL */
    int sel_end;          /* check sel before printing (one shard, not a list) */
    tio_shard_member cur; /* a renamed member: its name, key and extension */
    char *cur_key;
} msrc;

static int msrc_open(msrc *q, const char *path, const tio_limits *lim) {
    memset(q, 0, sizeof *q);
    q->path = path;
    q->lim = cli_limits(lim, &q->lim_buf);
    if (!cli_is_url(path) && !cli_is_stdio(path) && strncmp(path, "pipe:", 5) != 0)
        return open_shard(path, q->lim, &q->s);
    tio_error err;
    tio_error_clear(&err);
    if (cli_shard_source(path, q->lim, &q->s, &q->st, &err) != TIO_OK) {
        cli_error("%s", cli_errmsg(&err));
        cli_limit_hint(&err);
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

static void msrc_close(msrc *q) {
    free(q->cur_key);
    tio_shard_free(q->s);
    tio_shard_stream_free(q->st);
}

/* The next member (*m NULL at the end), its tensor format (NULL: none) and
 * its container (NULL for no format, or a member that failed: reported). */
/* Whether member m is selected (q->sel); a renamed one is shown through
 * q->cur under its new name, key and extension (WebDataset's split: the key
 * is the name up to the first '.' after the last '/'). */
static int msrc_pick(msrc *q, const tio_shard_member **m) {
    const char *name;
    if (!q->sel) return 1;
    if (!cli_select_name(q->sel, (*m)->name, (*m)->name, &name)) return 0;
    if (name == (*m)->name) return 1;
    free(q->cur_key);
    q->cur = **m;
    q->cur.name = name;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strchr(base, '.');
    size_t kl = dot ? (size_t)(dot - name) : 0;
    q->cur_key = malloc(kl + 1);
    if (!q->cur_key) return -1;
    memcpy(q->cur_key, name, kl);
    q->cur_key[kl] = 0;
    q->cur.key = q->cur_key;
    q->cur.ext = dot ? dot + 1 : "";
    *m = &q->cur;
    return 1;
}

/* The next member (*m NULL at the end), its tensor format (NULL: none) and
 * its container (NULL for no format, or a member that failed: reported).
 * Members not selected are passed over without being decoded. */
static int msrc_next(msrc *q, const tio_shard_member **m, const char **fmt, tio_container **c) {
    *c = NULL;
    *fmt = NULL;
    tio_error err;
    tio_error_clear(&err);
    int orc = TIO_OK, pick;
    if (q->s) {
        do {
            *m = tio_shard_member_at(q->s, q->i++);
            if (!*m) return CLI_EXIT_OK;
        } while (!(pick = msrc_pick(q, m)));
        if (pick < 0) return cli_error("out of memory");
        *fmt = tio_shard_member_format(q->s, q->i - 1);
        if (*fmt) orc = tio_shard_open_member(q->s, q->i - 1, NULL, c, &err); /* keeps the map */
    } else {
        do {
            if (tio_shard_stream_next(q->st, m, &err) != TIO_OK) {
                if (!q->quiet) return cli_error("%s", cli_errmsg(&err));
                q->merr = err; /* the stream's error */
                return CLI_EXIT_FAIL;
            }
            if (!*m) return CLI_EXIT_OK;
        } while (!(pick = msrc_pick(q, m)));
        if (pick < 0) return cli_error("out of memory");
        *fmt = tio_shard_format_for_name((*m)->name);
        tio_open_options o = {.format = *fmt, .limits = q->lim};
        /* views of the stream's buffer: freed before the next member */
        if (*fmt) orc = tio_open_memory((*m)->data, (size_t)(*m)->size, &o, c, &err);
    }
    if (orc != TIO_OK) {
        q->failed = 1;
        *c = NULL;
        if (q->quiet)
            q->merr = err;
        else
            report_member(q->path, (*m)->name, &err);
    }
    return CLI_EXIT_OK;
}

static size_t msrc_samples(const msrc *q) {
    return q->s ? tio_shard_sample_count(q->s) : tio_shard_stream_samples(q->st);
}

static int ls_shard_text(msrc *q) {
    cli_table tab;
    ls_heads(&tab, q->hash.on);
    int rc = CLI_EXIT_OK;
    for (;;) {
        const tio_shard_member *m;
        const char *fmt;
        tio_container *c;
        rc = msrc_next(q, &m, &fmt, &c);
        if (rc != CLI_EXIT_OK || !m) break;
        rc = ls_rows(&tab, q->path, m, c, &q->hash);
        tio_container_free(c);
        if (rc != CLI_EXIT_OK) break;
    }
    if (rc == CLI_EXIT_OK && q->sel_end) rc = cli_select_end(q->sel, "member");
    if (rc == CLI_EXIT_OK) rc = cli_table_print(&tab, stdout);
    cli_table_free(&tab);
    return rc == CLI_EXIT_OK && (q->failed || q->hash.missing) ? CLI_EXIT_FAIL : rc;
}

static json_t *member_json(const tio_shard_member *m, const char *fmt) {
    json_t *o = json_object();
    if (!o) return NULL;
    int bad = cli_json_set(o, "key", m->key[0] ? cli_json_str(m->key) : json_null());
    bad |= cli_json_set(o, "member", cli_json_str(m->name));
    bad |= cli_json_set(o, "ext", cli_json_str(m->ext));
    bad |= cli_json_set(o, "offset", json_integer((json_int_t)m->offset));
    bad |= cli_json_set(o, "size", json_integer((json_int_t)m->size));
    bad |= cli_json_set(o, "format", cli_json_str(fmt));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The shard's listing as JSON into *out (NULL on failure: reported). */
static int ls_shard_obj(msrc *q, json_t **out_obj) {
    *out_obj = NULL;
    json_t *root = json_object(), *members = json_array(), *tensors = json_array();
    int bad = !root || !members || !tensors;
    bad |= cli_json_set(root, "file", cli_json_str(q->path));
    bad |= cli_json_set(root, "format", json_string("tar"));
    int rc = CLI_EXIT_OK;
    while (!bad) {
        const tio_shard_member *m;
        const char *fmt;
        tio_container *c;
        rc = msrc_next(q, &m, &fmt, &c);
        if (rc != CLI_EXIT_OK || !m) break;
        bad |= json_array_append_new(members, member_json(m, fmt)) != 0;
        size_t nt = c ? tio_container_count(c) : 0;
        char *label = q->hash.on && c ? cli_escaped_pair(q->path, ": ", m->name) : NULL;
        bad |= q->hash.on && c && !label;
        for (size_t t = 0; t < nt && !bad; t++) {
            const tio_tensor *x = tio_container_tensor(c, t);
            json_t *o = json_object();
            bad |= !o || json_array_append_new(tensors, o) != 0;
            if (bad) break;
            bad |= cli_json_set(o, "key", m->key[0] ? cli_json_str(m->key) : json_null());
            bad |= cli_json_set(o, "member", cli_json_str(m->name));
            bad |= cli_json_set(o, "index", json_integer((json_int_t)t));
            bad |= cli_json_set(o, "name", cli_json_str(tio_tensor_name(x)));
            bad |= cli_json_set(o, "dtype", cli_json_str(cli_tensor_dtype_name(x)));
            bad |= cli_json_set(o, "shape", cli_json_shape(x));
            bad |= cli_json_set(o, "nbytes", json_integer((json_int_t)tio_tensor_nbytes(x)));
            if (!bad && q->hash.on) bad |= cli_hash_keys(o, &q->hash, label, c, t);
        }
        free(label);
        tio_container_free(c);
    }
    /* (keys in the order of a mapped shard's output: samples before the lists) */
    json_t *out = json_object();
    bad |= !out || cli_json_set(out, "file", json_incref(json_object_get(root, "file"))) ||
           cli_json_set(out, "format", json_string("tar")) ||
           cli_json_set(out, "samples", json_integer((json_int_t)msrc_samples(q))) ||
           cli_json_set(out, "members", json_incref(members)) ||
           cli_json_set(out, "tensors", json_incref(tensors));
    json_decref(root);
    json_decref(members);
    json_decref(tensors);
    if (rc == CLI_EXIT_OK && !bad && q->sel_end) rc = cli_select_end(q->sel, "member");
    if (rc != CLI_EXIT_OK) {
        json_decref(out);
        return rc;
    }
    if (bad) {
        json_decref(out);
        return cli_error("out of memory");
    }
    *out_obj = out;
    return q->failed || q->hash.missing ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* Whether path is a list of shards rather than one. */
static int is_list(const char *path) {
    return strchr(path, '{') || strstr(path, "::") || path[0] == '@';
}

/* One shard: its listing printed, or (into != NULL) appended to into;
 * sel_end: the selection checked before printing (one shard, not a list). */
static int ls_shard_run(const char *path, const tio_limits *lim, int json, int hash,
                        cli_select *sel, int sel_end, json_t *into) {
    msrc q;
    int rc = msrc_open(&q, path, lim);
    q.hash.on = hash;
    q.sel = sel;
    q.sel_end = sel_end;
    if (rc == CLI_EXIT_OK && !json) rc = ls_shard_text(&q);
    if (rc == CLI_EXIT_OK && json) {
        json_t *o = NULL;
        rc = ls_shard_obj(&q, &o);
        if (o && into && json_array_append_new(into, o) != 0) rc = cli_error("out of memory");
        if (o && !into) {
            int prc = cli_json_print(o);
            if (rc == CLI_EXIT_OK) rc = prc;
        }
    }
    msrc_close(&q);
    return rc;
}

static int ls_one_shard(const char *path, const tio_limits *lim, int json, int hash,
                        cli_select *sel, json_t *into) {
    return ls_shard_run(path, lim, json, hash, sel, 0, into);
}

/* What one shard of a list gets: printed, or (into != NULL) appended to into. */
typedef int (*shard_fn)(const char *path, const tio_limits *lim, int json, int hash,
                        cli_select *sel, json_t *into);

/* A shard, or a list in WebDataset's notation ("shard-{000..099}.tar",
 * "{train,val}-{0..9}.tar", "::" between lists, "@FILE" a list file): fn
 * for each shard in turn, under its name (with --json, an array of the
 * shards' objects); a shard that fails is reported and the others still
 * done (exit 1). */
static int each_shard(const char *path, const tio_limits *lim, int json, int hash,
                      cli_select *sel, shard_fn fn) {
    if (!is_list(path)) return fn(path, lim, json, hash, sel, NULL);
    char **list = NULL;
    size_t n = 0;
    tio_error err;
    tio_error_clear(&err);
    tio_limits buf;
    if (tio_shard_list_expand(path, cli_limits(lim, &buf), &list, &n, &err) != TIO_OK) {
        char *ep = cli_text_escape(path);
        cli_error("%s: %s", ep ? ep : path, cli_errmsg(&err));
        free(ep);
        return CLI_EXIT_FAIL;
    }
    json_t *all = json ? json_array() : NULL;
    int rc = json && !all ? cli_error("out of memory") : CLI_EXIT_OK;
    for (size_t i = 0; i < n && !(json && !all); i++) {
        if (!json) {
            char *en = cli_text_escape(list[i]);
            printf("%s%s:\n", i ? "\n" : "", en ? en : list[i]);
            free(en);
            fflush(stdout); /* before a failure's message on stderr */
        }
        if (fn(list[i], lim, json, hash, sel, all) != CLI_EXIT_OK) rc = CLI_EXIT_FAIL;
    }
    if (all) {
        int prc = cli_json_print(all);
        if (rc == CLI_EXIT_OK) rc = prc;
    }
    tio_shard_list_free(list, n);
    return rc;
}

int cli_shard_ls(const char *path, const tio_limits *lim, int json, int hash,
                 const cli_filter *f) {
    cli_select sel;
    cli_select_init(&sel, f);
    if (!is_list(path)) return ls_shard_run(path, lim, json, hash, f ? &sel : NULL, f != NULL, NULL);
    int rc = each_shard(path, lim, json, hash, f ? &sel : NULL, ls_one_shard);
    return rc == CLI_EXIT_OK && f ? cli_select_end(&sel, "member") : rc; /* over the list */
}

/* ----------------------------------------------------------------- info */

typedef struct count_item {
    const char *name;
    uint64_t count, bytes;
} count_item;

static int by_name(const void *a, const void *b) {
    return strcmp(((const count_item *)a)->name, ((const count_item *)b)->name);
}

/* Sorts items and folds equal names: returns the distinct count (owned:
 * the names folded away are freed). */
static size_t fold(count_item *it, size_t n, int owned) {
    if (!n) return 0;
    qsort(it, n, sizeof *it, by_name);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (strcmp(it[i].name, it[k].name) == 0) {
            it[k].count += it[i].count;
            it[k].bytes += it[i].bytes;
            if (owned) free((char *)(uintptr_t)it[i].name);
        } else {
            it[++k] = it[i];
        }
    }
    return k + 1;
}

static json_t *counts_json(const count_item *it, size_t n) {
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++) {
        json_t *e = json_object();
        if (!e || cli_json_set(o, it[i].name, e) ||
            cli_json_set(e, "count", json_integer((json_int_t)it[i].count)) ||
            cli_json_set(e, "bytes", json_integer((json_int_t)it[i].bytes))) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* Adds (name, bytes) to *it (grown; folded now and then so that it stays
 * small). owned: name is copied (a streamed member's strings die with it). */
static int count_add(count_item **it, size_t *n, size_t *cap, const char *name, uint64_t bytes,
                     int owned) {
    if (*n == *cap) {
        if (*n > 4096) *n = fold(*it, *n, owned);
        if (*n == *cap) {
            count_item *d = realloc(*it, 2 * *cap * sizeof *d);
            if (!d) return cli_error("out of memory");
            *it = d;
            *cap *= 2;
        }
    }
    const char *nm = owned ? strdup(name) : name;
    if (!nm) return cli_error("out of memory");
    (*it)[(*n)++] = (count_item){nm, 1, bytes};
    return CLI_EXIT_OK;
}

static void counts_free(count_item *it, size_t n, int owned) {
    for (size_t i = 0; owned && i < n; i++) free((char *)(uintptr_t)it[i].name);
    free(it);
}

static int info_one(const char *path, const tio_limits *lim, int json, int hash,
                    cli_select *sel, json_t *into) {
    (void)hash;
    (void)sel;
    msrc q;
    int rc = msrc_open(&q, path, lim);
    if (rc != CLI_EXIT_OK) return rc;
    int owned = q.st != NULL;
    size_t n = 0, ne = 0, ecap = 64, nd = 0, dcap = 16, loose = 0, failed_n = 0;
    uint64_t member_bytes = 0, tensor_bytes = 0, ntensors = 0;
    count_item *exts = malloc(ecap * sizeof *exts), *dts = malloc(dcap * sizeof *dts);
    if (!exts || !dts) rc = cli_error("out of memory");
    while (rc == CLI_EXIT_OK) {
        const tio_shard_member *m;
        const char *fmt;
        tio_container *c;
        rc = msrc_next(&q, &m, &fmt, &c);
        if (rc != CLI_EXIT_OK || !m) break;
        n++;
        member_bytes += m->size;
        if (m->sample == TIO_SHARD_NONE) loose++;
        rc = count_add(&exts, &ne, &ecap, m->ext[0] ? m->ext : "(none)", m->size, owned);
        if (fmt && !c) failed_n++;
        size_t nt = c ? tio_container_count(c) : 0;
        for (size_t t = 0; t < nt && rc == CLI_EXIT_OK; t++) {
            const tio_tensor *x = tio_container_tensor(c, t); /* dtype names: static */
            rc = count_add(&dts, &nd, &dcap, cli_tensor_dtype_name(x), tio_tensor_nbytes(x), 0);
            tensor_bytes += tio_tensor_nbytes(x);
            ntensors++;
        }
        tio_container_free(c);
    }
    ne = rc == CLI_EXIT_OK ? fold(exts, ne, owned) : ne;
    nd = rc == CLI_EXIT_OK ? fold(dts, nd, 0) : 0;
    size_t ns = msrc_samples(&q);
    const char *z = q.s ? tio_shard_compression(q.s) : NULL;
    if (rc == CLI_EXIT_OK && json) {
        json_t *root = json_object();
        int bad = !root;
        bad |= cli_json_set(root, "file", cli_json_str(path));
        bad |= cli_json_set(root, "format", json_string("tar"));
        bad |= cli_json_set(root, "compression", cli_json_str(z));
        bad |= cli_json_set(root, "samples", json_integer((json_int_t)ns));
        bad |= cli_json_set(root, "members", json_integer((json_int_t)n));
        bad |= cli_json_set(root, "members_without_sample", json_integer((json_int_t)loose));
        bad |= cli_json_set(root, "member_bytes", json_integer((json_int_t)member_bytes));
        bad |= cli_json_set(root, "extensions", counts_json(exts, ne));
        bad |= cli_json_set(root, "tensors", json_integer((json_int_t)ntensors));
        bad |= cli_json_set(root, "tensor_bytes", json_integer((json_int_t)tensor_bytes));
        bad |= cli_json_set(root, "dtypes", counts_json(dts, nd));
        bad |= cli_json_set(root, "undecodable_members", json_integer((json_int_t)failed_n));
        if (bad) {
            json_decref(root);
            rc = cli_error("out of memory");
        } else if (into) {
            if (json_array_append_new(into, root) != 0) rc = cli_error("out of memory");
        } else {
            rc = cli_json_print(root);
        }
    } else if (rc == CLI_EXIT_OK) {
        char *ep = cli_text_escape(path);
        printf("file: %s\nformat: tar (WebDataset shard%s%s%s)\n", ep ? ep : path,
               z ? ", " : "", z ? z : "", q.st ? ", read as a stream" : "");
        free(ep);
        printf("samples: %zu\nmembers: %zu (%zu in no sample), %llu bytes\n", ns, n, loose,
               (unsigned long long)member_bytes);
        printf("extensions:\n");
        for (size_t i = 0; i < ne; i++) {
            char *e = cli_text_escape(exts[i].name);
            printf("  %-12s %llu member%s, %llu bytes\n", e ? e : "?",
                   (unsigned long long)exts[i].count, exts[i].count == 1 ? "" : "s",
                   (unsigned long long)exts[i].bytes);
            free(e);
        }
        printf("tensors: %llu, %llu bytes\n", (unsigned long long)ntensors,
               (unsigned long long)tensor_bytes);
        printf("dtypes:\n");
        for (size_t i = 0; i < nd; i++)
            printf("  %-12s %llu tensor%s, %llu bytes\n", dts[i].name,
                   (unsigned long long)dts[i].count, dts[i].count == 1 ? "" : "s",
                   (unsigned long long)dts[i].bytes);
        if (failed_n) printf("undecodable members: %zu\n", failed_n);
    }
    counts_free(exts, ne, owned);
    counts_free(dts, nd, 0);
    int failed = q.failed;
    msrc_close(&q);
    return rc == CLI_EXIT_OK && failed ? CLI_EXIT_FAIL : rc;
}

int cli_shard_info(const char *path, int json) {
    return each_shard(path, NULL, json, 0, NULL, info_one);
}

/* ------------------------------------------------------------- validate */


static void webdataset_finding(const char *path, json_t *errors, uint64_t offset,
                               const char *fmt, const char *a, const char *b) {
    tio_error e;
    tio_error_clear(&e);
    e.code = TIO_E_INVALID;
    e.offset = (int64_t)offset;
    snprintf(e.format, sizeof e.format, "tar");
    snprintf(e.message, sizeof e.message, fmt, a, b);
    cli_validate_finding(path, errors, &e);
}

/* A finding about member m (its container's warning, or why it did not
 * decode): the message prefixed with the member. */
static void member_finding(const char *path, json_t *errors, const tio_shard_member *m,
                           const tio_error *err) {
    tio_error e = *err;
    snprintf(e.message, sizeof e.message, "member \"%s\": %s", m->name, cli_errmsg(err));
    cli_validate_finding(path, errors, &e);
}

static size_t validate_one(const char *path, int verbose, json_t *files) {
    json_t *errors = NULL, *fo = files ? cli_validate_json_file(files, path, &errors) : NULL;
    if (files) {
        if (!fo) return 1;
        cli_json_set(fo, "format", json_string("tar"));
        cli_json_set(fo, "errors", errors);
    }
    msrc q;
    memset(&q, 0, sizeof q);
    tio_error err;
    tio_error_clear(&err);
    int orc = TIO_OK;
    q.path = path;
    q.quiet = 1;
    orc = cli_shard_source(path, NULL, &q.s, &q.st, &err);
    size_t problems = 0, ntensors = 0, n = 0;
    for (size_t i = 0; orc == TIO_OK && q.s && i < tio_shard_sample_count(q.s); i++) {
        const tio_shard_sample *sm = tio_shard_sample_at(q.s, i);
        if (sm->duplicate_of == TIO_SHARD_NONE) continue;
        const tio_shard_member *m = tio_shard_member_at(q.s, tio_shard_sample_member(q.s, i, 0));
        webdataset_finding(path, errors, m->offset,
                           "tar: member \"%s\": sample key \"%s\" came before, then another "
                           "key: WebDataset yields a second sample with it",
                           m->name, sm->key);
        problems++;
    }
    while (orc == TIO_OK) {
        const tio_shard_member *m;
        const char *fmt;
        tio_container *c;
        if (msrc_next(&q, &m, &fmt, &c) != CLI_EXIT_OK) { /* the stream's (a cut, a URL) */
            err = q.merr;
            orc = err.code;
            break;
        }
        if (!m) break;
        n++;
        if (m->duplicate) {
            webdataset_finding(path, errors, m->offset,
                               "tar: member \"%s\": sample \"%s\" has a member with this "
                               "extension already: WebDataset fails on it",
                               m->name, m->key);
            problems++;
        }
        if (!fmt) continue;
        if (!c) {
            member_finding(path, errors, m, &q.merr);
            problems++;
            continue;
        }
        ntensors += tio_container_count(c);
        for (size_t w = 0; w < tio_container_warning_count(c); w++) {
            const tio_error *we = tio_container_warning(c, w);
            if (!we) continue;
            member_finding(path, errors, m, we);
            problems++;
        }
        tio_container_free(c);
    }
    if (orc != TIO_OK) {
        cli_validate_finding(path, errors, &err);
        problems++;
    }
    size_t ns = msrc_samples(&q);
    if (fo && orc != TIO_OK && !n) {
        cli_json_set(fo, "valid", json_false());
        cli_json_set(fo, "tensors", json_null());
    } else if (fo) {
        cli_json_set(fo, "valid", json_boolean(problems == 0));
        cli_json_set(fo, "samples", json_integer((json_int_t)ns));
        cli_json_set(fo, "members", json_integer((json_int_t)n));
        cli_json_set(fo, "tensors", json_integer((json_int_t)ntensors));
    } else if (!problems && verbose) {
        char *ep = cli_text_escape(path);
        printf("%s: ok (tar shard%s, %zu sample%s, %zu member%s, %zu tensor%s)\n",
               ep ? ep : path, q.st ? " read as a stream" : "", ns, ns == 1 ? "" : "s", n,
               n == 1 ? "" : "s", ntensors, ntensors == 1 ? "" : "s");
        free(ep);
    }
    msrc_close(&q);
    return problems;
}

/* A shard or a list of them (each its own file in the report): problems. */
size_t cli_shard_validate(const char *path, int verbose, json_t *files) {
    if (!strchr(path, '{') && !strstr(path, "::") && path[0] != '@')
        return validate_one(path, verbose, files);
    char **list = NULL;
    size_t n = 0, problems = 0;
    tio_error err;
    tio_error_clear(&err);
    tio_limits buf;
    if (tio_shard_list_expand(path, cli_limits(NULL, &buf), &list, &n, &err) != TIO_OK) {
        json_t *errors = NULL;
        if (files && cli_validate_json_file(files, path, &errors)) cli_validate_finding(path, errors, &err);
        else if (!files) cli_validate_finding(path, NULL, &err);
        return 1;
    }
    for (size_t i = 0; i < n; i++) problems += validate_one(list[i], verbose, files);
    tio_shard_list_free(list, n);
    return problems;
}

/* ----------------------------------------------------------------- dump */

/* Member `member` of a shard: mapped, found by name (its container keeps
 * the mapping alive); streamed, read up to it and its bytes copied. */
int cli_shard_open_member(const char *path, const char *member, tio_container **out) {
    msrc q;
    int rc = msrc_open(&q, path, NULL);
    if (rc != CLI_EXIT_OK) return rc;
    tio_error err;
    tio_error_clear(&err);
    const tio_shard_member *m = NULL;
    if (q.s) {
        size_t i = tio_shard_find(q.s, member);
        m = tio_shard_member_at(q.s, i);
        if (m && tio_shard_open_member(q.s, i, NULL, out, &err) != TIO_OK)
            rc = CLI_EXIT_FAIL;
    } else {
        while ((rc = tio_shard_stream_next(q.st, &m, &err) == TIO_OK ? CLI_EXIT_OK : CLI_EXIT_FAIL)
                   == CLI_EXIT_OK && m && strcmp(m->name, member) != 0) {
        }
        if (rc != CLI_EXIT_OK) {
            cli_error("%s", cli_errmsg(&err));
            m = NULL;
        }
        /* the stream's buffer is reused: the container owns a copy */
        tio_open_options o = {.format = m ? tio_shard_format_for_name(m->name) : NULL,
                              .flags = TIO_OPEN_COPY, .limits = q.lim};
        if (m && tio_open_memory(m->data, (size_t)m->size, &o, out, &err) != TIO_OK)
            rc = CLI_EXIT_FAIL;
        if (rc != CLI_EXIT_OK && !m) {
            msrc_close(&q);
            return rc;
        }
    }
    if (!m) {
        char *ep = cli_text_escape(path), *em = cli_text_escape(member);
        rc = cli_error("%s: no member %s (see tensio ls)", ep ? ep : path, em ? em : "?");
        free(ep);
        free(em);
    } else if (rc != CLI_EXIT_OK) {
        report_member(path, member, &err);
    }
    msrc_close(&q);
    return rc;
}
