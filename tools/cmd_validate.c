/* tensio validate — check files and report every problem. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char validate_help[] =
    "Usage: tensio validate [OPTIONS] FILE...\n"
    "\n"
    "Check each FILE. Every problem prints one line on standard output,\n"
    "'FILE: error: MESSAGE': a file that cannot be read at all, and every\n"
    "violation of its format found in a readable file (unaligned records,\n"
    "nonzero reserved or padding bytes, trailing bytes, ...). Valid files\n"
    "print nothing. Exit status 0 when every file is valid, 1 otherwise.\n"
    "\n"
    "A FILE '-' reads standard input into memory (format probed, or --format);\n"
    "a tar shard on it is read as a shard (a redirected file as a stream).\n"
    "A WebDataset tar shard (FILE.tar): its tar structure, every tensor member\n"
    "decoded, and keys and members WebDataset would see twice; one at an\n"
    "http(s):// URL or from 'pipe:COMMAND' is read as a stream (a key that comes\n"
    "back later is not seen there), and a shard list ('shard-{000..009}.tar',\n"
    "'::' between lists) is validated shard by shard.\n"
    "An LMDB store (DIR with data.mdb, FILE.lmdb, FILE.mdb): its metadata, and\n"
    "every record decoded; a bad record is reported with its key.\n"
    "\n"
    "Options:\n"
    "  -f, --format FMT    read the files as format FMT instead of detecting it\n"
    "  -v, --verbose       also print 'FILE: ok' for each valid file\n"
    "      --json          print one JSON object instead (see docs/cli.md)\n"
    CLI_PROGRESS_HELP
    "  -h, --help          show this help and exit\n";

enum { OPT_HELP = 1, OPT_FORMAT, OPT_VERBOSE, OPT_JSON };

static const cli_option validate_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"format", 'f', 1, OPT_FORMAT},
    {"verbose", 'v', 0, OPT_VERBOSE},
    {"json", 0, 0, OPT_JSON},
    CLI_OPT_PROGRESS,
};

static void report(const char *path, const char *message) {
    char *ep = cli_text_escape(path);
    char *em = cli_text_escape(message);
    printf("%s: error: %s\n", ep ? ep : path, em ? em : message);
    free(ep);
    free(em);
}

/* Returns the number of problems found in one file; with files (--json)
 * appends its object there instead of printing lines. */
static size_t validate_file(const char *path, const char *format, int verbose, json_t *files) {
    tio_open_options o;
    tio_error err;
    memset(&o, 0, sizeof o);
    tio_error_clear(&err);
    o.format = format;
    tio_container *c = NULL;
    json_t *errors = NULL, *fo = files ? cli_validate_json_file(files, path, &errors) : NULL;
    if (files && !fo) return 1;
    size_t n;
    if (cli_open_opts(path, &o, &c, &err) != TIO_OK) {
        if (fo) {
            cli_json_set(fo, "valid", json_false());
            cli_json_set(fo, "format", json_null());
            cli_json_set(fo, "tensors", json_null());
            json_array_append_new(errors, cli_json_error(&err));
            cli_json_set(fo, "errors", errors);
        } else {
            report(path, cli_errmsg(&err));
        }
        return 1;
    }
    n = tio_container_warning_count(c);
    const char *fmt = tio_container_format(c);
    size_t nt = tio_container_count(c);
    for (size_t i = 0; i < n; i++) {
        const tio_error *w = tio_container_warning(c, i);
        if (fo && w) json_array_append_new(errors, cli_json_error(w));
        else if (!fo) report(path, w ? cli_errmsg(w) : "invalid");
    }
    if (fo) {
        cli_json_set(fo, "valid", json_boolean(n == 0));
        cli_json_set(fo, "format", cli_json_str(fmt));
        cli_json_set(fo, "tensors", json_integer((json_int_t)nt));
        cli_json_set(fo, "errors", errors);
    } else if (n == 0 && verbose) {
        char *ep = cli_text_escape(path);
        printf("%s: ok (%s, %zu tensor%s)\n", ep ? ep : path, fmt ? fmt : "?", nt,
               nt == 1 ? "" : "s");
        free(ep);
    }
    tio_container_free(c);
    return n;
}

int cli_cmd_validate(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "validate", argc, argv, validate_opts,
                             sizeof validate_opts / sizeof validate_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    const char *format = NULL;
    int verbose = 0, json = 0, progress = CLI_PROGRESS_AUTO, id;
    while ((id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(validate_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_FORMAT: format = p.value; break;
        case OPT_VERBOSE: verbose = 1; break;
        case OPT_JSON: json = 1; break;
        case CLI_OPT_PROGRESS_ID: progress = CLI_PROGRESS_ON; break;
        case CLI_OPT_NO_PROGRESS_ID: progress = CLI_PROGRESS_OFF; break;
        default: break;
        }
    }
    if (id == CLI_PARSE_ERROR)
        rc = CLI_EXIT_USAGE;
    else if (p.npos == 0)
        rc = cli_usage_error("validate", "missing FILE");
    else if (format)
        rc = cli_check_format("validate", "--format", format);
    if (rc == CLI_EXIT_OK) {
        size_t problems = 0;
        json_t *root = json ? json_object() : NULL, *files = json ? json_array() : NULL;
        if (json && (!root || !files || cli_json_set(root, "valid", json_true()) ||
                     cli_json_set(root, "files", files))) {
            json_decref(root);
            cli_parser_free(&p);
            return cli_error("out of memory");
        }
        /* files checked; automatic only when the lines do not go to the same terminal */
        cli_progress prog;
        cli_progress_init(&prog, progress == CLI_PROGRESS_AUTO && isatty(STDOUT_FILENO)
                                     ? CLI_PROGRESS_OFF : progress,
                          "validate", "files");
        for (size_t i = 0; i < p.npos; i++) {
            cli_progress_pause(&prog);
            if (!format && cli_is_lmdb(p.pos[i]))
                problems += cli_lmdb_validate(p.pos[i], verbose, files);
            else
                problems += cli_is_shard(p.pos[i], format)
                                ? cli_shard_validate(p.pos[i], verbose, files)
                                : validate_file(p.pos[i], format, verbose, files);
            fflush(stdout);
            cli_progress_update(&prog, i + 1, p.npos);
        }
        cli_progress_end(&prog);
        rc = problems ? CLI_EXIT_FAIL : CLI_EXIT_OK;
        if (root) {
            cli_json_set(root, "valid", json_boolean(problems == 0));
            int prc = cli_json_print(root);
            if (prc != CLI_EXIT_OK) rc = prc;
        }
    }
    cli_parser_free(&p);
    return rc;
}
