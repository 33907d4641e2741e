/* Writing WebDataset shards from the CLI: convert shard -> shard (tensor
 * members re-encoded with --member-to), convert --shard OUT FILE..., and the
 * member re-encoding that extract shares. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *cli_member_format(const char *cmd, const char *value) {
    for (size_t i = 0; tio_format_name(i); i++)
        if (strcmp(tio_format_name(i), value) == 0) return tio_format_name(i);
    char probe[80];
    if (value[0] && strlen(value) < 64 && !strchr(value, '/')) {
        snprintf(probe, sizeof probe, "x.%s", value[0] == '.' ? value + 1 : value);
        const char *f = tio_format_for_path(probe);
        if (f) return f;
    }
    cli_check_format(cmd, "--member-to", value); /* prints the usage error */
    return NULL;
}

/* name with its last extension (after the last dot of its basename)
 * replaced by format's first one: "a/0001.seg.ten" -> "a/0001.seg.npy".
 * malloc'ed; NULL when out of memory or the format has no extension. */
static char *renamed(const char *name, const char *format) {
    const char *exts = tio_format_extensions(format);
    if (!exts || *exts != '.') return NULL;
    size_t el = strcspn(exts, " ");
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    const char *dot = strrchr(base, '.');
    size_t keep = dot ? (size_t)(dot - name) : strlen(name);
    char *out = malloc(keep + el + 1);
    if (!out) return NULL;
    memcpy(out, name, keep);
    memcpy(out + keep, exts, el);
    out[keep + el] = 0;
    return out;
}

/* Prints "tensio: WHERE: MSG" with WHERE's control characters escaped. */
static int where_error(const char *where, const char *member, const char *msg) {
    char *ew = cli_text_escape(where), *em = member ? cli_text_escape(member) : NULL;
    if (member)
        cli_error("%s: member %s: %s", ew ? ew : where, em ? em : "?", msg);
    else
        cli_error("%s: %s", ew ? ew : where, msg);
    free(ew);
    free(em);
    return CLI_EXIT_FAIL;
}

/* c re-encoded in how->format, with the loss rules of convert. */
static int encode(const tio_container *c, const cli_reencode *how, const char *where,
                  const char *member, void **out, size_t *size) {
    if (cli_check_loss(c, how->format, how->version, how->flags, how->cast, how->options) !=
        CLI_EXIT_OK) {
        char *em = cli_text_escape(member);
        cli_error("(while converting %s in %s to %s)", em ? em : member, where, how->format);
        free(em);
        return CLI_EXIT_FAIL;
    }
    tio_save_options o;
    memset(&o, 0, sizeof o);
    o.format = how->format;
    o.flags = how->flags;
    o.version = how->version;
    o.options = how->options;
    o.cast = how->cast;
    tio_error err;
    tio_error_clear(&err);
    if (tio_save_memory(c, &o, out, size, &err) != TIO_OK)
        return where_error(where, member, cli_errmsg(&err));
    return CLI_EXIT_OK;
}

/* Member m in the output: its bytes as they are (c NULL: not re-encoded),
 * or container c (its decoded form) re-encoded, under its new name. */
static int member_out(const char *path, const tio_shard_member *m, const char *as,
                      const tio_container *c, const cli_reencode *how, const void **data,
                      size_t *size, void **owned, char **name) {
    *owned = NULL;
    *name = NULL;
    if (!as) as = m->name;
    if (!c) { /* kept byte for byte */
        *data = m->data;
        *size = (size_t)m->size;
        *name = strdup(as);
        return *name ? CLI_EXIT_OK : cli_error("out of memory");
    }
    int rc = encode(c, how, path, m->name, owned, size);
    if (rc != CLI_EXIT_OK) return rc;
    *data = *owned;
    *name = renamed(as, how->format);
    if (!*name) {
        tio_free(*owned);
        *owned = NULL;
        return cli_error("out of memory");
    }
    return CLI_EXIT_OK;
}

int cli_shard_member_bytes(const char *path, tio_shard *s, size_t i, const char *as,
                           const cli_reencode *how, const void **data, size_t *size,
                           void **owned, char **name) {
    const tio_shard_member *m = tio_shard_member_at(s, i);
    tio_container *c = NULL;
    tio_error err;
    tio_error_clear(&err);
    if (how->format && tio_shard_member_format(s, i) &&
        tio_shard_open_member(s, i, NULL, &c, &err) != TIO_OK) {
        *owned = NULL;
        *name = NULL;
        return where_error(path, m->name, cli_errmsg(&err));
    }
    int rc = member_out(path, m, as, c, how, data, size, owned, name);
    tio_container_free(c);
    return rc;
}

/* The next selected member of a shard read as a stream, and its output
 * bytes (*m NULL at the end). */
static int stream_member_bytes(const char *path, tio_shard_stream *st, cli_select *sel,
                               const cli_reencode *how, const tio_shard_member **m,
                               const void **data, size_t *size, void **owned, char **name) {
    tio_error err;
    tio_error_clear(&err);
    *owned = NULL;
    *name = NULL;
    const char *as;
    do {
        if (tio_shard_stream_next(st, m, &err) != TIO_OK)
            return cli_error("%s", cli_errmsg(&err));
        if (!*m) return CLI_EXIT_OK;
    } while (!cli_select_name(sel, (*m)->name, (*m)->name, &as));
    const char *fmt = how->format ? tio_shard_format_for_name((*m)->name) : NULL;
    tio_limits buf;
    tio_open_options o = {.format = fmt, .limits = cli_limits(how->limits, &buf)};
    tio_container *c = NULL;
    if (fmt && tio_open_memory((*m)->data, (size_t)(*m)->size, &o, &c, &err) != TIO_OK)
        return where_error(path, (*m)->name, cli_errmsg(&err));
    int rc = member_out(path, *m, as, c, how, data, size, owned, name);
    tio_container_free(c);
    return rc;
}

/* ------------------------------------------------------ one input file */

/* A file's bytes, mapped (an empty file: no mapping). */
typedef struct mapped {
    void *p;
    size_t n;
} mapped;

static int map_file(const char *path, mapped *m) {
    m->p = NULL;
    m->n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        return where_error(path, NULL, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return where_error(path, NULL, "not a regular file");
    }
    if (st.st_size > 0) {
        m->n = (size_t)st.st_size;
        m->p = mmap(NULL, m->n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m->p == MAP_FAILED) {
            int e = errno;
            close(fd);
            m->p = NULL;
            return where_error(path, NULL, strerror(e));
        }
    }
    close(fd);
    return CLI_EXIT_OK;
}

static void unmap_file(mapped *m) {
    if (m->p) munmap(m->p, m->n);
    m->p = NULL;
}

/* File `path` as member "BASENAME" (or, a tensor file with --member-to,
 * "KEY.EXT" in that format). */
static int add_file(tio_shard_writer *w, const char *path, const cli_reencode *how,
                    int *reencoded) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base || !dot[1])
        return where_error(path, NULL,
                           "no key and extension in the file name (a member is KEY.EXT)");
    tio_error err;
    tio_error_clear(&err);
    int rc = CLI_EXIT_OK;
    if (how->format && tio_format_for_path(path)) {
        tio_container *c = NULL;
        rc = cli_open(path, NULL, how->limits, &c);
        void *data = NULL;
        size_t size = 0;
        if (rc == CLI_EXIT_OK) rc = encode(c, how, path, base, &data, &size);
        tio_container_free(c);
        char *name = rc == CLI_EXIT_OK ? renamed(base, how->format) : NULL;
        if (rc == CLI_EXIT_OK && !name) rc = cli_error("out of memory");
        if (rc == CLI_EXIT_OK && tio_shard_writer_add_bytes(w, name, data, size, &err) != TIO_OK)
            rc = where_error(path, NULL, cli_errmsg(&err));
        free(name);
        tio_free(data);
        *reencoded += rc == CLI_EXIT_OK;
        return rc;
    }
    mapped m;
    rc = map_file(path, &m);
    if (rc == CLI_EXIT_OK && tio_shard_writer_add_bytes(w, base, m.p, m.n, &err) != TIO_OK)
        rc = where_error(path, NULL, cli_errmsg(&err));
    unmap_file(&m);
    return rc;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Two inputs that would be the same member: refused before anything is
 * written (a shard with one name twice is what WebDataset fails on). */
static int check_unique(const char *const *inputs, size_t n, const cli_reencode *how) {
    char **names = calloc(n ? n : 1, sizeof *names);
    int rc = names ? CLI_EXIT_OK : cli_error("out of memory");
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) {
        const char *slash = strrchr(inputs[i], '/');
        const char *base = slash ? slash + 1 : inputs[i];
        names[i] = how->format && tio_format_for_path(base) ? renamed(base, how->format)
                                                            : strdup(base);
        if (!names[i]) rc = cli_error("out of memory");
    }
    if (rc == CLI_EXIT_OK) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 1; i < n && rc == CLI_EXIT_OK; i++)
        if (strcmp(names[i - 1], names[i]) == 0) {
            char *e = cli_text_escape(names[i]);
            rc = cli_error("two inputs would both be member %s", e ? e : "?");
            free(e);
        }
    for (size_t i = 0; names && i < n; i++) free(names[i]);
    free(names);
    return rc;
}

/* ------------------------------------------------------------- convert */

/* The members written so far into the current sample (consecutive members
 * of one key): with --rename, a new name must not make a sample hold one
 * extension twice, which WebDataset fails on (its extensions compared
 * ignoring ASCII case, as it lower-cases them). */
typedef struct sample_exts {
    char *key;
    char **ext;
    size_t n, cap;
} sample_exts;

static void sample_exts_clear(sample_exts *x) {
    for (size_t i = 0; i < x->n; i++) free(x->ext[i]);
    free(x->key);
    x->key = NULL;
    x->n = 0;
}

static int sample_exts_add(sample_exts *x, const char *name) {
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strchr(base, '.');
    if (!dot) return CLI_EXIT_OK; /* no sample */
    size_t kl = (size_t)(dot - name);
    if (!x->key || strlen(x->key) != kl || strncmp(x->key, name, kl) != 0) {
        sample_exts_clear(x);
        x->key = strndup(name, kl);
        if (!x->key) return cli_error("out of memory");
    }
    for (size_t i = 0; i < x->n; i++)
        if (strcasecmp(x->ext[i], dot + 1) == 0) {
            char *en = cli_text_escape(name);
            int rc = cli_error("--rename: sample '%.*s' would hold extension '%s' twice (member "
                               "%s; WebDataset fails on it)", (int)kl, name, x->ext[i],
                               en ? en : "?");
            free(en);
            return rc;
        }
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 8;
        char **e = realloc(x->ext, cap * sizeof *e);
        if (!e) return cli_error("out of memory");
        x->ext = e;
        x->cap = cap;
    }
    x->ext[x->n] = strdup(dot + 1);
    return x->ext[x->n++] ? CLI_EXIT_OK : cli_error("out of memory");
}

static int summary(const cli_shard_convert *a, uint64_t members, int reencoded) {
    struct stat st;
    unsigned long long size = stat(a->out, &st) == 0 ? (unsigned long long)st.st_size : 0;
    if (a->json) {
        json_t *root = json_object(), *in = a->from_files ? json_array() : NULL;
        int bad = !root;
        for (size_t i = 0; in && i < a->ninputs; i++)
            bad |= json_array_append_new(in, cli_json_str(a->inputs[i])) != 0;
        bad |= cli_json_set(root, "input", in ? in : cli_json_str(a->inputs[0]));
        bad |= cli_json_set(root, "input_format",
                            a->from_files ? json_null() : cli_json_str("tar"));
        bad |= cli_json_set(root, "output", cli_json_str(a->out));
        bad |= cli_json_set(root, "format", cli_json_str("tar"));
        bad |= cli_json_set(root, "member_format", cli_json_str(a->how.format));
        bad |= cli_json_set(root, "members", json_integer((json_int_t)members));
        bad |= cli_json_set(root, "reencoded", json_integer(reencoded));
        bad |= cli_json_set(root, "bytes", json_integer((json_int_t)size));
        if (bad) {
            json_decref(root);
            root = NULL;
        }
        return cli_json_print(root);
    }
    if (a->verbose) {
        printf("%s%s -> %s (tar): %llu member%s", a->inputs[0], a->ninputs > 1 ? " ..." : "",
               a->out, (unsigned long long)members, members == 1 ? "" : "s");
        if (a->how.format) printf(", %d re-encoded as %s", reencoded, a->how.format);
        printf(", %llu bytes\n", size);
    }
    return CLI_EXIT_OK;
}

int cli_convert_shard(const cli_shard_convert *a) {
    struct stat sb;
    if (!a->force && stat(a->out, &sb) == 0)
        return cli_error("%s: already exists (use --force to overwrite)", a->out);
    for (size_t i = 0; i < a->ninputs; i++)
        if (cli_check_not_onto(a->inputs[i], a->out) != CLI_EXIT_OK) return CLI_EXIT_FAIL;
    if (a->from_files && check_unique(a->inputs, a->ninputs, &a->how) != CLI_EXIT_OK)
        return CLI_EXIT_FAIL;
    tio_shard *s = NULL;
    tio_shard_stream *st = NULL; /* a URL or pipe:COMMAND, read in one pass */
    tio_error err;
    tio_error_clear(&err);
    const char *in = a->inputs[0];
    if (!a->from_files && cli_shard_source(in, a->how.limits, &s, &st, &err) != TIO_OK)
        return err.code == TIO_E_IO || cli_is_url(in) || cli_is_stdio(in) ||
                       strncmp(in, "pipe:", 5) == 0
                   ? cli_error("%s", cli_errmsg(&err))
                   : where_error(in, NULL, cli_errmsg(&err));
    tio_shard_writer_options wo;
    memset(&wo, 0, sizeof wo);
    wo.flags = a->save_flags | TIO_SAVE_CLEANUP;
    tio_shard_writer *w = NULL;
    if (tio_shard_writer_open(a->out, &wo, &w, &err) != TIO_OK) {
        tio_shard_free(s);
        tio_shard_stream_free(st);
        return where_error(a->out, NULL, cli_errmsg(&err));
    }
    /* members: unknown ahead for a stream (SIZE_MAX: until its end) */
    size_t n = a->from_files ? a->ninputs : st ? SIZE_MAX : tio_shard_member_count(s);
    cli_progress prog;
    cli_progress_init(&prog, a->progress, "convert", "members");
    int rc = CLI_EXIT_OK, reencoded = 0;
    cli_select sel; /* --only/--exclude/--rename on the input's member names */
    cli_select_init(&sel, a->filter);
    sample_exts sx;
    memset(&sx, 0, sizeof sx);
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) {
        if (a->from_files) {
            rc = add_file(w, a->inputs[i], &a->how, &reencoded);
        } else {
            const void *data = NULL;
            void *owned = NULL;
            size_t size = 0;
            char *name = NULL;
            const tio_shard_member *m = NULL;
            if (st) {
                rc = stream_member_bytes(in, st, &sel, &a->how, &m, &data, &size, &owned,
                                         &name);
                if (rc == CLI_EXIT_OK && !m) break; /* the stream's end */
            } else {
                const char *as;
                m = tio_shard_member_at(s, i);
                if (!cli_select_name(&sel, m->name, m->name, &as)) continue;
                rc = cli_shard_member_bytes(in, s, i, as, &a->how, &data, &size, &owned,
                                            &name);
            }
            if (rc == CLI_EXIT_OK && a->filter && a->filter->nrename)
                rc = sample_exts_add(&sx, name);
            if (rc == CLI_EXIT_OK &&
                tio_shard_writer_add_bytes(w, name, data, size, &err) != TIO_OK)
                rc = where_error(a->out, name, cli_errmsg(&err));
            reencoded += rc == CLI_EXIT_OK && owned;
            tio_free(owned);
            free(name);
        }
        cli_progress_update(&prog, (uint64_t)i + 1, st ? 0 : (uint64_t)n);
    }
    cli_progress_end(&prog);
    sample_exts_clear(&sx);
    free(sx.ext);
    if (rc == CLI_EXIT_OK && !a->from_files) rc = cli_select_end(&sel, "member");
    uint64_t members = tio_shard_writer_count(w);
    if (rc == CLI_EXIT_OK) {
        if (tio_shard_writer_close(w, &err) != TIO_OK)
            rc = where_error(a->out, NULL, cli_errmsg(&err));
    } else {
        tio_shard_writer_abort(w);
    }
    tio_shard_free(s);
    tio_shard_stream_free(st); /* a command stopped if not read to its end */
    return rc == CLI_EXIT_OK ? summary(a, members, reencoded) : rc;
}
