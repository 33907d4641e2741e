/* Tensor selection for convert, ls and cat: --only/--exclude (globs, on the
 * name, or on the index for an unnamed tensor), --rename OLD=NEW, and joining
 * several files' tensors (cat). The result is a new container whose tensors
 * are views of the sources' (no copy); it holds the sources until it is
 * released (tio_container_on_release). */
#include "cli.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

int cli_filter_option(cli_filter *f, int id, const char *value, const char *cmd) {
    const char **list;
    size_t *n;
    const char *opt;
    if (id == CLI_OPT_ONLY_ID) {
        list = f->only;
        n = &f->nonly;
        opt = "--only";
    } else if (id == CLI_OPT_EXCLUDE_ID) {
        list = f->exclude;
        n = &f->nexclude;
        opt = "--exclude";
    } else if (id == CLI_OPT_RENAME_ID) {
        const char *eq = strchr(value, '=');
        if (!eq) /* OLD or NEW may be "", the empty name */
            return cli_usage_error(cmd, "--rename: expected OLD=NEW, not '%s'", value);
        list = f->rename;
        n = &f->nrename;
        opt = "--rename";
    } else {
        return CLI_EXIT_OK;
    }
    if (*n == CLI_FILTER_MAX)
        return cli_usage_error(cmd, "%s: at most %d of them", opt, CLI_FILTER_MAX);
    list[(*n)++] = value;
    return CLI_EXIT_OK;
}

int cli_filter_active(const cli_filter *f) { return f->nonly || f->nexclude || f->nrename; }

/* What a pattern is matched against: the name, or "INDEX" when unnamed. */
static const char *match_name(const tio_tensor *t, size_t i, char buf[24]) {
    const char *name = tio_tensor_name(t);
    if (name) return name;
    snprintf(buf, 24, "%zu", i);
    return buf;
}

void cli_select_init(cli_select *s, const cli_filter *f) {
    memset(s, 0, sizeof *s);
    s->f = f;
}

int cli_select_name(cli_select *s, const char *match, const char *name, const char **out) {
    const cli_filter *f = s->f;
    *out = name;
    if (!f) return 1;
    int keep = 1;
    if (f->nonly) {
        keep = 0;
        for (size_t k = 0; k < f->nonly; k++)
            if (fnmatch(f->only[k], match, 0) == 0) {
                keep = 1;
                s->only_hits[k]++;
            }
    }
    for (size_t k = 0; keep && k < f->nexclude; k++)
        if (fnmatch(f->exclude[k], match, 0) == 0) keep = 0;
    if (!keep) return 0;
    for (size_t k = 0; name && k < f->nrename; k++) {
        size_t ol = (size_t)(strchr(f->rename[k], '=') - f->rename[k]);
        if (strlen(name) == ol && strncmp(name, f->rename[k], ol) == 0) {
            *out = f->rename[k] + ol + 1;
            s->rename_hits[k]++;
            break;
        }
    }
    return 1;
}

int cli_select_end(const cli_select *s, const char *noun) {
    const cli_filter *f = s->f;
    for (size_t k = 0; f && k < f->nonly; k++)
        if (!s->only_hits[k]) return cli_error("--only '%s': no %s matches", f->only[k], noun);
    for (size_t k = 0; f && k < f->nrename; k++)
        if (!s->rename_hits[k]) {
            size_t ol = (size_t)(strchr(f->rename[k], '=') - f->rename[k]);
            return cli_error("--rename: no %s is named '%.*s'", noun, (int)ol, f->rename[k]);
        }
    return CLI_EXIT_OK;
}

/* Adds tensor t of a source as a view named `name` (NULL: unnamed), with its
 * metadata. */
static int add_view(tio_container *dst, const tio_tensor *t, const char *name, tio_error *err) {
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.dtype = tio_tensor_dtype(t);
    d.layout = tio_tensor_layout(t);
    d.rank = tio_tensor_rank(t);
    d.shape = tio_tensor_shape(t);
    d.data = tio_tensor_data(t);
    d.nbytes = tio_tensor_nbytes(t);
    if (d.layout == TIO_LAYOUT_COO) {
        d.nnz = tio_tensor_nnz(t);
        d.indices = tio_tensor_indices(t);
    }
    tio_tensor *nt = NULL;
    int rc = d.layout == TIO_LAYOUT_QUANT
                 ? tio_container_add_quantized(dst, &d, tio_tensor_quant(t), TIO_ADD_BORROW, &nt,
                                               err)
                 : tio_container_add(dst, &d, TIO_ADD_BORROW, &nt, err);
    for (size_t k = 0; rc == TIO_OK && k < tio_tensor_meta_count(t); k++) {
        const char *key, *value;
        size_t kl, vl;
        if (tio_tensor_meta_at_n(t, k, &key, &kl, &value, &vl) == TIO_OK)
            rc = tio_tensor_meta_set_n(nt, key, kl, value, vl, err);
    }
    return rc;
}

static int copy_meta(tio_container *dst, const tio_container *src, const char *path,
                     const char *first_path) {
    tio_error err;
    for (size_t k = 0; k < tio_container_meta_count(src); k++) {
        const char *key, *value;
        size_t kl, vl, hl = 0;
        if (tio_container_meta_at_n(src, k, &key, &kl, &value, &vl) != TIO_OK) continue;
        const char *have = tio_container_meta_get_n(dst, key, kl, &hl);
        if (have && (hl != vl || memcmp(have, value, vl) != 0)) {
            char *ek = cli_bytes_escape(key, kl), *eh = cli_bytes_escape(have, hl),
                 *ev = cli_bytes_escape(value, vl);
            int rc = cli_error("metadata '%s' differs between %s and %s ('%s', '%s'); "
                               "join files that agree, or drop it first (convert "
                               "--drop-metadata)", ek ? ek : "?", first_path, path,
                               eh ? eh : "?", ev ? ev : "?");
            free(ek);
            free(eh);
            free(ev);
            return rc;
        }
        const char *type = tio_container_meta_type_n(src, key, kl); /* GGUF's types kept */
        if (!have && (type ? tio_container_meta_set_typed_n(dst, key, kl, value, vl, type, &err)
                           : tio_container_meta_set_n(dst, key, kl, value, vl, &err)) != TIO_OK)
            return cli_error("%s", cli_errmsg(&err));
    }
    return CLI_EXIT_OK;
}

static char *stem_of(const char *path) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strcspn(b, ".");
    if (n == 0) n = strlen(b);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, b, n);
        s[n] = 0;
    }
    return s;
}

int cli_join(tio_container **srcs, const char *const *paths, size_t n, const cli_filter *f,
             int prefix_with_file, tio_container **out) {
    *out = NULL;
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; rc == CLI_EXIT_OK && i < n; i++)
        if (tio_container_graph(srcs[i]))
            rc = cli_error("%s: a model (it has a graph): selecting or joining its tensors "
                           "would break the graph's references", paths[i]);
    tio_container *dst = rc == CLI_EXIT_OK ? tio_container_new() : NULL;
    if (rc == CLI_EXIT_OK && !dst) rc = cli_error("out of memory");
    tio_error err;
    cli_select sel;
    cli_select_init(&sel, f);
    for (size_t s = 0; rc == CLI_EXIT_OK && s < n; s++) {
        /* held from here on, released with dst: a save copies its tensors
         * from its file as from dst's own */
        const tio_container *c = srcs[s];
        if (tio_container_hold(dst, c, &err) != TIO_OK) {
            rc = cli_error("%s", cli_errmsg(&err));
            break;
        }
        tio_container_free(srcs[s]);
        srcs[s] = NULL;
        rc = copy_meta(dst, c, paths[s], paths[0]);
        char *stem = prefix_with_file ? stem_of(paths[s]) : NULL;
        if (prefix_with_file && !stem) rc = cli_error("out of memory");
        for (size_t i = 0; rc == CLI_EXIT_OK && i < tio_container_count(c); i++) {
            const tio_tensor *t = tio_container_tensor(c, i);
            char ibuf[24];
            const char *m = match_name(t, i, ibuf), *name;
            if (!cli_select_name(&sel, m, tio_tensor_name(t), &name)) continue;
            char *pname = NULL;
            if (stem) {
                pname = name ? cli_strdup_printf("%s/%s", stem, name)
                             : cli_strdup_printf("%s/%zu", stem, i);
                if (!pname) {
                    rc = cli_error("out of memory");
                    break;
                }
                name = pname;
            }
            if (name && tio_container_find(dst, name)) {
                rc = cli_error("%s: tensor '%s' is already in the result%s%s", paths[s], name,
                               n > 1 ? " (from an earlier file)" : "",
                               n > 1 ? "; --prefix-with-file names each by its file"
                                     : "; rename one with --rename OLD=NEW");
            } else if (add_view(dst, t, name, &err) != TIO_OK) {
                rc = cli_error("%s: tensor %zu: %s", paths[s], i, cli_errmsg(&err));
            }
            free(pname);
        }
        free(stem);
    }
    if (rc == CLI_EXIT_OK) rc = cli_select_end(&sel, "tensor");
    for (size_t s = 0; s < n; s++) tio_container_free(srcs[s]); /* those not held yet */
    if (rc != CLI_EXIT_OK) {
        tio_container_free(dst);
        return rc;
    }
    *out = dst;
    return CLI_EXIT_OK;
}

int cli_filter_apply(const cli_filter *f, const char *path, tio_container **c) {
    if (!cli_filter_active(f)) return CLI_EXIT_OK;
    tio_container *src = *c, *out = NULL;
    *c = NULL;
    int rc = cli_join(&src, &path, 1, f, 0, &out);
    *c = out;
    return rc;
}
