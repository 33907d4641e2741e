/* tensio cat — join the tensors of several files into one. */
#include "cli.h"
#include "stream_common.h"

#include <stdlib.h>
#include <string.h>

static const char cat_help[] =
    "Usage: tensio cat [OPTIONS] -o OUT IN...\n"
    "\n"
    "Join the tensors of each IN, in order, into one file OUT (format from OUT's\n"
    "extension, or --to). Names must not clash: a name that two inputs share is\n"
    "an error, unless --prefix-with-file names every tensor FILE/NAME (FILE: the\n"
    "input's base name up to its first dot; FILE/INDEX for an unnamed tensor).\n"
    "Container metadata are merged; a key with two values is an error. Models\n"
    "(files with a graph) cannot be joined. The data are not copied until OUT is\n"
    "written, atomically as by convert. An IN '-' reads standard input.\n"
    "\n"
    "Options:\n"
    "  -o, --output OUT    the file to write ('-': standard output, with --to)\n"
    "  -t, --to FMT        write format FMT (default: from OUT's extension)\n"
    "      --from FMT      read every IN as format FMT instead of detecting it\n"
    "      --prefix-with-file\n"
    "                      name each tensor FILE/NAME\n"
    CLI_FILTER_HELP
    "      --densify       write sparse (COO) tensors as dense tensors\n"
    "      --drop-names    drop tensor names the output format cannot hold\n"
    "      --drop-metadata\n"
    "                      drop metadata the output format cannot hold\n"
    "      --widen         store dtypes the output format lacks in a wider dtype\n"
    "      --cast SPEC     write floating-point tensors as another float dtype\n"
    "                      (bfloat16, or FROM=TO pairs: as convert --cast)\n"
    "      --force         overwrite OUT if it exists\n"
    "      --no-sync       do not fsync OUT and its directory\n"
    CLI_PROGRESS_HELP
    "  -v, --verbose       print a one-line summary\n"
    "      --json          print the summary as one JSON object (see docs/cli.md)\n"
    "  -h, --help          show this help and exit\n";

enum {
    OPT_HELP = 1,
    OPT_OUTPUT,
    OPT_TO,
    OPT_FROM,
    OPT_PREFIX,
    OPT_FORCE,
    OPT_NO_SYNC,
    OPT_VERBOSE,
    OPT_JSON,
    OPT_CAST,
};

static const cli_option cat_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"output", 'o', 1, OPT_OUTPUT},
    {"to", 't', 1, OPT_TO},
    {"from", 0, 1, OPT_FROM},
    {"prefix-with-file", 0, 0, OPT_PREFIX},
    {"densify", 0, 0, CLI_STREAM_OPT_DENSIFY},
    {"drop-names", 0, 0, CLI_STREAM_OPT_DROP_NAMES},
    {"drop-metadata", 0, 0, CLI_STREAM_OPT_DROP_METADATA},
    {"widen", 0, 0, CLI_STREAM_OPT_WIDEN},
    {"cast", 0, 1, OPT_CAST},
    {"force", 0, 0, OPT_FORCE},
    {"no-sync", 0, 0, OPT_NO_SYNC},
    {"verbose", 'v', 0, OPT_VERBOSE},
    {"json", 0, 0, OPT_JSON},
    CLI_OPT_PROGRESS,
    CLI_OPT_FILTER,
};

int cli_cmd_cat(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "cat", argc, argv, cat_opts, sizeof cat_opts / sizeof cat_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    const char *out = NULL, *to = NULL, *from = NULL, *cast = NULL;
    int prefix = 0, force = 0, verbose = 0, json = 0, progress = CLI_PROGRESS_AUTO, id;
    unsigned flags = 0;
    cli_filter filt;
    memset(&filt, 0, sizeof filt);
    while (rc == CLI_EXIT_OK && (id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(cat_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_OUTPUT: out = p.value; break;
        case OPT_TO: to = p.value; break;
        case OPT_FROM: from = p.value; break;
        case OPT_PREFIX: prefix = 1; break;
        case OPT_FORCE: force = 1; break;
        case OPT_VERBOSE: verbose = 1; break;
        case OPT_JSON: json = 1; break;
        case OPT_CAST: cast = p.value; break;
        case CLI_OPT_PROGRESS_ID: progress = CLI_PROGRESS_ON; break;
        case CLI_OPT_NO_PROGRESS_ID: progress = CLI_PROGRESS_OFF; break;
        case OPT_NO_SYNC: flags |= TIO_SAVE_NO_SYNC; break;
        default:
            flags |= cli_conversion_flag(id);
            if (cli_filter_option(&filt, id, p.value, "cat") != CLI_EXIT_OK) rc = CLI_EXIT_USAGE;
            break;
        }
    }
    if (rc == CLI_EXIT_OK && id == CLI_PARSE_ERROR) rc = CLI_EXIT_USAGE;
    else if (rc == CLI_EXIT_OK && !out) rc = cli_usage_error("cat", "missing -o OUT");
    else if (rc == CLI_EXIT_OK && p.npos == 0) rc = cli_usage_error("cat", "missing IN");
    else if (rc == CLI_EXIT_OK && from && cli_check_format("cat", "--from", from) != CLI_EXIT_OK)
        rc = CLI_EXIT_USAGE;
    else if (rc == CLI_EXIT_OK && to && cli_check_format("cat", "--to", to) != CLI_EXIT_OK)
        rc = CLI_EXIT_USAGE;
    const char *format = NULL;
    for (size_t i = 0; rc == CLI_EXIT_OK && i < p.npos; i++) rc = cli_check_not_onto(p.pos[i], out);
    if (rc == CLI_EXIT_OK) rc = cli_check_output("cat", out, to, force, json, &format);
    size_t n = rc == CLI_EXIT_OK ? p.npos : 0;
    tio_container **cs = n ? calloc(n, sizeof *cs) : NULL;
    if (n && !cs) rc = cli_error("out of memory");
    tio_limits lim;
    memset(&lim, 0, sizeof lim);
    for (size_t i = 0; rc == CLI_EXIT_OK && i < n; i++) rc = cli_open(p.pos[i], from, &lim, &cs[i]);
    /* the format read, for the summary: the inputs', or "mixed" */
    const char *src = n && cs[0] ? tio_container_format(cs[0]) : NULL;
    for (size_t i = 1; rc == CLI_EXIT_OK && i < n; i++) {
        const char *f = tio_container_format(cs[i]);
        if (!src || !f || strcmp(src, f) != 0) src = "mixed";
    }
    tio_container *joined = NULL;
    if (rc == CLI_EXIT_OK) {
        rc = cli_join(cs, (const char *const *)p.pos, n, &filt, prefix, &joined);
        n = 0; /* taken */
    }
    if (rc == CLI_EXIT_OK) {
        char *desc = p.npos == 1 ? NULL : cli_strdup_printf("%zu files", p.npos);
        cli_write_args w = {"cat", desc ? desc : p.pos[0], src, out, format, flags, 0, NULL,
                            progress, verbose, json, (const char *const *)p.pos, p.npos, 0,
                            cast};
        rc = cli_write_output(joined, &w);
        free(desc);
    }
    for (size_t i = 0; i < n; i++) tio_container_free(cs[i]);
    free(cs);
    tio_container_free(joined);
    cli_parser_free(&p);
    return rc;
}
