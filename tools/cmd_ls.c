/* tensio ls — list the tensors of a file. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ls_help[] =
    "Usage: tensio ls [OPTIONS] FILE\n"
    "\n"
    "List the tensors of FILE, one line each: index, name ('-' when unnamed),\n"
    "dtype, shape, layout, stored bytes and, for sparse (COO) tensors, nnz.\n"
    "\n"
    "FILE '-' reads standard input into memory (format probed, or --format);\n"
    "a tar shard on it is read as a shard (a redirected file as a stream).\n"
    "FILE may be an http:// or https:// URL: only its header is fetched (range\n"
    "requests), unless --hash or a filter reads the tensors.\n"
    "A WebDataset tar shard (FILE.tar): a row per tensor of each tensor member\n"
    "(KEY, MEMBER, INDEX, NAME, DTYPE, SHAPE, NBYTES), a row per other member.\n"
    "A shard at a URL, or 'pipe:COMMAND' (its standard output; exit status\n"
    "checked), is read as a stream, member by member.\n"
    "A shard list in WebDataset's notation ('shard-{000..099}.tar', {a,b},\n"
    "several braces, '::' between lists) or in a file ('@list.txt': a name or\n"
    "brace list a line; blank lines and '#' comments skipped): each shard in\n"
    "turn under its name\n"
    "(--json: an array of their objects); one that fails is reported, the\n"
    "others still listed, and the exit status is 1.\n"
    "An LMDB store (DIR with data.mdb, FILE.lmdb, FILE.mdb): a row per key and\n"
    "its record's bytes; with --tensors (or --hash) a row per tensor of each\n"
    "record. --hash also applies to shards and stores, one --max-dense-bytes\n"
    "budget for all their sparse tensors.\n"
    "\n"
    "Options:\n"
    "      --json          print one JSON object instead (see docs/cli.md)\n"
    "      --tensors       LMDB store: list each record's tensors\n"
    "      --hash          add the SHA-256 of each tensor: of its dense C-order\n"
    "                      little-endian bytes (COO tensors densified); with\n"
    "                      --json also of the COO indices and values. A tensor\n"
    "                      that cannot be hashed (a sparse tensor whose dense\n"
    "                      form exceeds --max-dense-bytes) is listed without a\n"
    "                      hash, the reason goes to stderr (--json: in the\n"
    "                      object) and the exit status is 1. Dense tensors\n"
    "                      are hashed on up to 8 threads (one per processor)\n"
    CLI_MAX_DENSE_HELP
    CLI_FILTER_HELP
    CLI_PROGRESS_HELP
    "  -f, --format FMT    read FILE as format FMT instead of detecting it\n"
    "  -h, --help          show this help and exit\n";

enum { OPT_HELP = 1, OPT_JSON, OPT_HASH, OPT_FORMAT, OPT_TENSORS };

static const cli_option ls_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"json", 0, 0, OPT_JSON},
    {"hash", 0, 0, OPT_HASH},
    {"tensors", 0, 0, OPT_TENSORS},
    {"format", 'f', 1, OPT_FORMAT},
    CLI_OPT_MAX_DENSE,
    CLI_OPT_PROGRESS,
    CLI_OPT_FILTER,
};

static int ls_json(const char *path, const tio_container *c, int hash, cli_progress *prog) {
    json_t *root = json_object();
    json_t *list = json_array();
    if (!root || !list) {
        json_decref(root);
        json_decref(list);
        return cli_error("out of memory");
    }
    int bad = cli_json_set(root, "format", cli_json_str(tio_container_format(c)));
    bad |= cli_json_set(root, "tensors", list);
    int missing = 0;
    cli_dense_budget budget;
    cli_dense_budget_init(&budget, c);
    budget.prog = prog;
    if (hash) budget.ahead = cli_hash_ahead_start(c);
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
        bad |= cli_json_set(o, "dtype", cli_json_str(cli_tensor_dtype_name(t)));
        bad |= cli_json_set(o, "shape", cli_json_shape(t));
        bad |= cli_json_set(o, "layout", json_string(cli_layout_name(tio_tensor_layout(t))));
        bad |= cli_json_set(o, "nbytes", json_integer((json_int_t)tio_tensor_nbytes(t)));
        if (coo) bad |= cli_json_set(o, "nnz", json_integer((json_int_t)tio_tensor_nnz(t)));
        const tio_tensor *alias = tio_tensor_alias(t); /* tied weights */
        if (alias) bad |= cli_json_set(o, "alias_of", cli_json_str(tio_tensor_name(alias)));
        if (bad || !hash) continue;
        if (coo) {
            bad |= cli_json_hash(o, "indices_sha256", path, i, t, TIO_HASH_INDICES, &budget,
                             &missing);
            bad |= cli_json_hash(o, "values_sha256", path, i, t, TIO_HASH_VALUES, &budget,
                             &missing);
        }
        bad |= cli_json_hash(o, "sha256", path, i, t, TIO_HASH_DENSE, &budget, &missing);
    }
    cli_ahead_free(budget.ahead);
    cli_progress_end(prog);
    if (bad) {
        json_decref(root);
        return cli_error("out of memory");
    }
    int rc = cli_json_print(root);
    return missing && rc == CLI_EXIT_OK ? CLI_EXIT_FAIL : rc;
}

static int ls_text(const char *path, const tio_container *c, int hash, cli_progress *prog) {
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
    int rc = CLI_EXIT_OK, missing = 0;
    cli_dense_budget budget;
    cli_dense_budget_init(&budget, c);
    budget.prog = prog;
    if (hash) budget.ahead = cli_hash_ahead_start(c);
    size_t n = tio_container_count(c);
    cli_table_reserve(&tab, n, hash ? 128 : 64);
    for (size_t i = 0; i < n; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        const char *name = tio_tensor_name(t);
        /* a copy only for a name to escape, or a shape of many dims */
        int plain = !name || (name[0] && cli_text_plain(name));
        char *ename = plain ? NULL : cli_name_escape(name);
        char few[3 + 8 * 22], *shape = few;
        if (cli_shape_into(t, few, sizeof few)) shape = cli_shape_string(t);
        if ((!plain && !ename) || !shape) {
            free(ename);
            rc = cli_error("out of memory");
            break;
        }
        cli_table_add_u64(&tab, i);
        cli_table_add_str(&tab, ename ? ename : name ? name : "-");
        cli_table_add_str(&tab, cli_tensor_dtype_name(t));
        cli_table_add_str(&tab, shape);
        cli_table_add_str(&tab, cli_layout_name(tio_tensor_layout(t)));
        cli_table_add_u64(&tab, tio_tensor_nbytes(t));
        if (tio_tensor_layout(t) == TIO_LAYOUT_COO)
            cli_table_add_u64(&tab, tio_tensor_nnz(t));
        else
            cli_table_add_str(&tab, "-");
        free(ename);
        if (shape != few) free(shape);
        if (hash) {
            char hex[65];
            tio_error err;
            if (cli_hash_hex(path, i, t, TIO_HASH_DENSE, &budget, hex, &err) == TIO_OK) {
                cli_table_add(&tab, "%s", hex);
            } else {
                cli_table_add(&tab, "-");
                missing = 1;
            }
        }
    }
    cli_ahead_free(budget.ahead);
    cli_progress_end(prog);
    if (rc == CLI_EXIT_OK) rc = cli_table_print(&tab, stdout);
    if (rc == CLI_EXIT_OK && missing) rc = CLI_EXIT_FAIL;
    cli_table_free(&tab);
    return rc;
}

int cli_cmd_ls(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "ls", argc, argv, ls_opts,
                             sizeof ls_opts / sizeof ls_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    int json = 0, hash = 0, tensors = 0, progress = CLI_PROGRESS_AUTO, id;
    cli_filter filt;
    memset(&filt, 0, sizeof filt);
    const char *format = NULL;
    tio_limits lim;
    memset(&lim, 0, sizeof lim);
    while ((id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(ls_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_JSON: json = 1; break;
        case OPT_HASH: hash = 1; break;
        case OPT_TENSORS: tensors = 1; break;
        case CLI_OPT_PROGRESS_ID: progress = CLI_PROGRESS_ON; break;
        case CLI_OPT_ONLY_ID:
        case CLI_OPT_EXCLUDE_ID:
        case CLI_OPT_RENAME_ID:
            if (cli_filter_option(&filt, id, p.value, "ls") != CLI_EXIT_OK) {
                cli_parser_free(&p);
                return CLI_EXIT_USAGE;
            }
            break;
        case CLI_OPT_NO_PROGRESS_ID: progress = CLI_PROGRESS_OFF; break;
        case OPT_FORMAT: format = p.value; break;
        case CLI_OPT_MAX_DENSE_ID:
            if (cli_parse_max_dense("ls", p.value, &lim) != CLI_EXIT_OK) {
                cli_parser_free(&p);
                return CLI_EXIT_USAGE;
            }
            break;
        default: break;
        }
    }
    const char *path = NULL;
    rc = cli_one_file(&p, id, "ls", format, &path);
    if (rc != CLI_EXIT_OK) return rc;

    if (!format && cli_is_lmdb(path))
        return cli_lmdb_ls(path, tensors, json, hash, &lim,
                           cli_filter_active(&filt) ? &filt : NULL);
    if (tensors) return cli_usage_error("ls", "--tensors applies to an LMDB store only");
    if (cli_is_shard(path, format))
        return cli_shard_ls(path, &lim, json, hash, cli_filter_active(&filt) ? &filt : NULL);
    tio_container *c = NULL;
    /* a URL: the header only, unless the tensors are read (--hash) or
     * filtered into another container */
    int lazy = !hash && !cli_filter_active(&filt);
    rc = cli_open_flags(path, format, &lim, lazy ? TIO_OPEN_LAZY : 0u, &c);
    if (rc == CLI_EXIT_OK) rc = cli_filter_apply(&filt, path, &c);
    if (rc != CLI_EXIT_OK) return rc;
    /* --hash reads every tensor: map the file in one call (a hint; its
     * failure changes nothing) */
    if (hash) (void)tio_container_prefetch(c, NULL);
    cli_progress prog;
    cli_progress_init(&prog, hash ? progress : CLI_PROGRESS_OFF, "ls --hash", NULL);
    rc = json ? ls_json(path, c, hash, &prog) : ls_text(path, c, hash, &prog);
    tio_container_free(c);
    return rc;
}
