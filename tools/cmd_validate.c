/* tensio validate — check files and report every problem. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char validate_help[] =
    "Usage: tensio validate [OPTIONS] FILE...\n"
    "\n"
    "Check each FILE. Every problem prints one line on standard output,\n"
    "'FILE: error: MESSAGE': a file that cannot be read at all, and every\n"
    "violation of its format found in a readable file (unaligned records,\n"
    "nonzero reserved or padding bytes, trailing bytes, ...). Valid files\n"
    "print nothing. Exit status 0 when every file is valid, 1 otherwise.\n"
    "\n"
    "A FILE '-' reads standard input into memory (format probed, or --format).\n"
    "\n"
    "Options:\n"
    "  -f, --format FMT    read the files as format FMT instead of detecting it\n"
    "  -v, --verbose       also print 'FILE: ok' for each valid file\n"
    "  -h, --help          show this help and exit\n";

enum { OPT_HELP = 1, OPT_FORMAT, OPT_VERBOSE };

static const cli_option validate_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"format", 'f', 1, OPT_FORMAT},
    {"verbose", 'v', 0, OPT_VERBOSE},
};

static void report(const char *path, const char *message) {
    char *ep = cli_text_escape(path);
    char *em = cli_text_escape(message);
    printf("%s: error: %s\n", ep ? ep : path, em ? em : message);
    free(ep);
    free(em);
}

/* Returns the number of problems found in one file. */
static size_t validate_file(const char *path, const char *format, int verbose) {
    tio_open_options o;
    tio_error err;
    memset(&o, 0, sizeof o);
    tio_error_clear(&err);
    o.format = format;
    tio_container *c = NULL;
    if (cli_open_opts(path, &o, &c, &err) != TIO_OK) {
        report(path, cli_errmsg(&err));
        return 1;
    }
    size_t n = tio_container_warning_count(c);
    for (size_t i = 0; i < n; i++) {
        const tio_error *w = tio_container_warning(c, i);
        report(path, w ? cli_errmsg(w) : "invalid");
    }
    if (n == 0 && verbose) {
        char *ep = cli_text_escape(path);
        size_t nt = tio_container_count(c);
        printf("%s: ok (%s, %zu tensor%s)\n", ep ? ep : path,
               tio_container_format(c) ? tio_container_format(c) : "?", nt,
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
    int verbose = 0, id;
    while ((id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(validate_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_FORMAT: format = p.value; break;
        case OPT_VERBOSE: verbose = 1; break;
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
        for (size_t i = 0; i < p.npos; i++) problems += validate_file(p.pos[i], format, verbose);
        rc = problems ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    }
    cli_parser_free(&p);
    return rc;
}
