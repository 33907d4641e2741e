/* tensio ls — list the tensors of a file. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char ls_help[] =
    "Usage: tensio ls [OPTIONS] FILE\n"
    "\n"
    "List the tensors of FILE, one line each: index, name ('-' when unnamed),\n"
    "dtype, shape, layout, stored bytes and, for sparse (COO) tensors, nnz.\n"
    "\n"
    "Options:\n"
    "      --json          print one JSON object instead (see docs/cli.md)\n"
    "      --hash          add the SHA-256 of each tensor: of its dense C-order\n"
    "                      little-endian bytes (COO tensors densified); with\n"
    "                      --json also of the COO indices and values\n"
    "  -f, --format FMT    read FILE as format FMT instead of detecting it\n"
    "  -h, --help          show this help and exit\n";

enum { OPT_HELP = 1, OPT_JSON, OPT_HASH, OPT_FORMAT };

static const cli_option ls_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"json", 0, 0, OPT_JSON},
    {"hash", 0, 0, OPT_HASH},
    {"format", 'f', 1, OPT_FORMAT},
};

/* SHA-256 hex of a tensor; prints an error and returns CLI_EXIT_FAIL on failure. */
static int hash_hex(const char *path, size_t index, const tio_tensor *t, int what,
                    char out[65]) {
    uint8_t digest[32];
    tio_error err;
    tio_error_clear(&err);
    if (tio_tensor_sha256(t, what, digest, &err) != TIO_OK)
        return cli_error("%s: tensor %zu: %s", path, index, cli_errmsg(&err));
    cli_hex32(digest, out);
    return CLI_EXIT_OK;
}

static int ls_json(const char *path, const tio_container *c, int hash) {
    json_t *root = json_object();
    json_t *list = json_array();
    if (!root || !list) {
        json_decref(root);
        json_decref(list);
        return cli_error("out of memory");
    }
    int bad = cli_json_set(root, "format", cli_json_str(tio_container_format(c)));
    bad |= cli_json_set(root, "tensors", list);
    size_t n = tio_container_count(c);
    for (size_t i = 0; i < n && !bad; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        json_t *o = json_object();
        if (!o || json_array_append_new(list, o) != 0) {
            bad = 1;
            break;
        }
        int coo = tio_tensor_layout(t) == TIO_LAYOUT_COO;
        bad |= cli_json_set(o, "index", json_integer((json_int_t)i));
        bad |= cli_json_set(o, "name", cli_json_str(tio_tensor_name(t)));
        bad |= cli_json_set(o, "dtype", cli_json_str(tio_dtype_name(tio_tensor_dtype(t))));
        bad |= cli_json_set(o, "shape", cli_json_shape(t));
        bad |= cli_json_set(o, "layout", json_string(cli_layout_name(tio_tensor_layout(t))));
        bad |= cli_json_set(o, "nbytes", json_integer((json_int_t)tio_tensor_nbytes(t)));
        if (coo) bad |= cli_json_set(o, "nnz", json_integer((json_int_t)tio_tensor_nnz(t)));
        if (bad) break;
        if (hash) {
            char hex[65];
            if (coo) {
                if (hash_hex(path, i, t, TIO_HASH_INDICES, hex) != CLI_EXIT_OK) goto fail;
                bad |= cli_json_set(o, "indices_sha256", json_string(hex));
                if (hash_hex(path, i, t, TIO_HASH_VALUES, hex) != CLI_EXIT_OK) goto fail;
                bad |= cli_json_set(o, "values_sha256", json_string(hex));
            }
            if (hash_hex(path, i, t, TIO_HASH_DENSE, hex) != CLI_EXIT_OK) goto fail;
            bad |= cli_json_set(o, "sha256", json_string(hex));
        }
    }
    if (bad) {
        json_decref(root);
        return cli_error("out of memory");
    }
    return cli_json_print(root);
fail:
    json_decref(root);
    return CLI_EXIT_FAIL;
}

static int ls_text(const char *path, const tio_container *c, int hash) {
    size_t ncols = hash ? 8 : 7;
    cli_table tab;
    /* right-align INDEX, NBYTES, NNZ */
    cli_table_init(&tab, ncols, 1u << 0 | 1u << 5 | 1u << 6);
    cli_table_add(&tab, "INDEX");
    cli_table_add(&tab, "NAME");
    cli_table_add(&tab, "DTYPE");
    cli_table_add(&tab, "SHAPE");
    cli_table_add(&tab, "LAYOUT");
    cli_table_add(&tab, "NBYTES");
    cli_table_add(&tab, "NNZ");
    if (hash) cli_table_add(&tab, "SHA256");
    int rc = CLI_EXIT_OK;
    size_t n = tio_container_count(c);
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        const char *name = tio_tensor_name(t);
        char *ename = name ? cli_text_escape(name) : NULL;
        char *shape = cli_shape_string(t);
        if ((name && !ename) || !shape) {
            free(ename);
            free(shape);
            rc = cli_error("out of memory");
            break;
        }
        const char *dtype = tio_dtype_name(tio_tensor_dtype(t));
        cli_table_add(&tab, "%zu", i);
        cli_table_add(&tab, "%s", ename ? ename : "-");
        cli_table_add(&tab, "%s", dtype ? dtype : "?");
        cli_table_add(&tab, "%s", shape);
        cli_table_add(&tab, "%s", cli_layout_name(tio_tensor_layout(t)));
        cli_table_add(&tab, "%zu", tio_tensor_nbytes(t));
        if (tio_tensor_layout(t) == TIO_LAYOUT_COO)
            cli_table_add(&tab, "%llu", (unsigned long long)tio_tensor_nnz(t));
        else
            cli_table_add(&tab, "-");
        free(ename);
        free(shape);
        if (hash) {
            char hex[65];
            rc = hash_hex(path, i, t, TIO_HASH_DENSE, hex);
            if (rc != CLI_EXIT_OK) break;
            cli_table_add(&tab, "%s", hex);
        }
    }
    if (rc == CLI_EXIT_OK) rc = cli_table_print(&tab, stdout);
    cli_table_free(&tab);
    return rc;
}

int cli_cmd_ls(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "ls", argc, argv, ls_opts,
                             sizeof ls_opts / sizeof ls_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    int json = 0, hash = 0, id;
    const char *format = NULL;
    while ((id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(ls_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_JSON: json = 1; break;
        case OPT_HASH: hash = 1; break;
        case OPT_FORMAT: format = p.value; break;
        default: break;
        }
    }
    const char *path = NULL;
    rc = cli_one_file(&p, id, "ls", format, &path);
    if (rc != CLI_EXIT_OK) return rc;

    tio_container *c = NULL;
    rc = cli_open(path, format, &c);
    if (rc != CLI_EXIT_OK) return rc;
    rc = json ? ls_json(path, c, hash) : ls_text(path, c, hash);
    tio_container_free(c);
    return rc;
}
