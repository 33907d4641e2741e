/* tensio info — summarise a file. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char info_help[] =
    "Usage: tensio info [OPTIONS] FILE\n"
    "\n"
    "Summarise FILE: format, file size, tensor count, total data bytes, tensors\n"
    "per dtype and per layout, container metadata and the validation findings\n"
    "(readable-but-invalid details; 'tensio validate' reports them as errors).\n"
    "\n"
    "Options:\n"
    "      --json          print one JSON object instead (see docs/cli.md)\n"
    "  -f, --format FMT    read FILE as format FMT instead of detecting it\n"
    "  -h, --help          show this help and exit\n";

enum { OPT_HELP = 1, OPT_JSON, OPT_FORMAT };

static const cli_option info_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"json", 0, 0, OPT_JSON},
    {"format", 'f', 1, OPT_FORMAT},
};

typedef struct info_stats {
    uint64_t data_bytes;
    size_t per_dtype[TIO_DTYPE_COUNT];
    size_t dense, coo;
} info_stats;

static void collect(const tio_container *c, info_stats *s) {
    memset(s, 0, sizeof *s);
    size_t n = tio_container_count(c);
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        s->data_bytes += tio_tensor_nbytes(t);
        size_t d = (size_t)tio_tensor_dtype(t);
        if (d < TIO_DTYPE_COUNT) s->per_dtype[d]++;
        if (tio_tensor_layout(t) == TIO_LAYOUT_COO)
            s->coo++;
        else
            s->dense++;
    }
}

static int info_json(const char *path, const tio_container *c, const info_stats *s) {
    json_t *root = json_object();
    if (!root) return cli_error("out of memory");
    int bad = cli_json_set(root, "file", cli_json_str(path));
    bad |= cli_json_set(root, "format", cli_json_str(tio_container_format(c)));
    bad |= cli_json_set(root, "file_size",
                        json_integer((json_int_t)tio_container_source_size(c)));
    bad |= cli_json_set(root, "tensor_count",
                        json_integer((json_int_t)tio_container_count(c)));
    bad |= cli_json_set(root, "data_bytes", json_integer((json_int_t)s->data_bytes));

    json_t *dtypes = json_object();
    bad |= cli_json_set(root, "dtypes", dtypes);
    for (size_t d = 0; d < TIO_DTYPE_COUNT && !bad; d++) {
        const char *name = tio_dtype_name((tio_dtype)d);
        if (s->per_dtype[d] && name)
            bad |= cli_json_set(dtypes, name, json_integer((json_int_t)s->per_dtype[d]));
    }
    json_t *layouts = json_object();
    bad |= cli_json_set(root, "layouts", layouts);
    if (!bad) {
        bad |= cli_json_set(layouts, "dense", json_integer((json_int_t)s->dense));
        bad |= cli_json_set(layouts, "coo", json_integer((json_int_t)s->coo));
    }

    json_t *meta = json_object();
    bad |= cli_json_set(root, "metadata", meta);
    size_t nm = tio_container_meta_count(c);
    for (size_t i = 0; i < nm && !bad; i++) {
        const char *k = NULL, *v = NULL;
        if (tio_container_meta_at(c, i, &k, &v) != TIO_OK || !k) continue;
        bad |= cli_json_set(meta, k, cli_json_str(v ? v : ""));
    }

    size_t nw = tio_container_warning_count(c);
    bad |= cli_json_set(root, "finding_count", json_integer((json_int_t)nw));
    json_t *findings = json_array();
    bad |= cli_json_set(root, "findings", findings);
    for (size_t i = 0; i < nw && !bad; i++) {
        const tio_error *w = tio_container_warning(c, i);
        if (!w) continue;
        json_t *o = json_object();
        if (!o || json_array_append_new(findings, o) != 0) {
            bad = 1;
            break;
        }
        bad |= cli_json_set(o, "code", json_string(tio_status_name(w->code)));
        bad |= cli_json_set(o, "offset", w->offset >= 0 ? json_integer((json_int_t)w->offset)
                                                         : json_null());
        bad |= cli_json_set(o, "message", cli_json_str(cli_errmsg(w)));
    }
    if (bad) {
        json_decref(root);
        return cli_error("out of memory");
    }
    return cli_json_print(root);
}

static int print_escaped(const char *label, const char *s) {
    char *e = cli_text_escape(s);
    if (!e) return cli_error("out of memory");
    printf("%s%s\n", label, e);
    free(e);
    return CLI_EXIT_OK;
}

static int info_text(const char *path, const tio_container *c, const info_stats *s) {
    const char *fmt = tio_container_format(c);
    if (print_escaped("file:        ", path) != CLI_EXIT_OK) return CLI_EXIT_FAIL;
    printf("format:      %s\n", fmt ? fmt : "-");
    printf("file size:   %llu bytes\n",
           (unsigned long long)tio_container_source_size(c));
    printf("tensors:     %zu (%zu dense, %zu coo)\n", tio_container_count(c), s->dense,
           s->coo);
    printf("data bytes:  %llu\n", (unsigned long long)s->data_bytes);
    fputs("dtypes:      ", stdout);
    int any = 0;
    for (size_t d = 0; d < TIO_DTYPE_COUNT; d++) {
        const char *name = tio_dtype_name((tio_dtype)d);
        if (!s->per_dtype[d] || !name) continue;
        printf("%s%s: %zu", any ? ", " : "", name, s->per_dtype[d]);
        any = 1;
    }
    fputs(any ? "\n" : "-\n", stdout);

    size_t nm = tio_container_meta_count(c);
    printf("metadata:    %zu\n", nm);
    for (size_t i = 0; i < nm; i++) {
        const char *k = NULL, *v = NULL;
        if (tio_container_meta_at(c, i, &k, &v) != TIO_OK || !k) continue;
        char *ek = cli_text_escape(k);
        char *ev = cli_text_escape(v ? v : "");
        if (!ek || !ev) {
            free(ek);
            free(ev);
            return cli_error("out of memory");
        }
        printf("  %s = %s\n", ek, ev);
        free(ek);
        free(ev);
    }

    size_t nw = tio_container_warning_count(c);
    printf("findings:    %zu\n", nw);
    for (size_t i = 0; i < nw; i++) {
        const tio_error *w = tio_container_warning(c, i);
        if (w && print_escaped("  ", cli_errmsg(w)) != CLI_EXIT_OK) return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

int cli_cmd_info(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "info", argc, argv, info_opts,
                             sizeof info_opts / sizeof info_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    int json = 0, id;
    const char *format = NULL;
    while ((id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(info_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_JSON: json = 1; break;
        case OPT_FORMAT: format = p.value; break;
        default: break;
        }
    }
    const char *path = NULL;
    rc = cli_one_file(&p, id, "info", format, &path);
    if (rc != CLI_EXIT_OK) return rc;

    tio_container *c = NULL;
    rc = cli_open(path, format, &c);
    if (rc != CLI_EXIT_OK) return rc;
    info_stats s;
    collect(c, &s);
    rc = json ? info_json(path, c, &s) : info_text(path, c, &s);
    tio_container_free(c);
    return rc;
}
