/* tensio — command-line front end of the tensio library: the command table
 * and tensio_run(). main() is in main.c, so that tests can run the commands
 * in-process (tests/cli/test_work_bounds.c). */
#include "cli.h"

#include <string.h>

typedef struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} cli_command;

static const cli_command commands[] = {
    {"ls", cli_cmd_ls, "list the tensors of a file"},
    {"info", cli_cmd_info, "summarise a file (format, sizes, dtypes, metadata, findings)"},
    {"dump", cli_cmd_dump, "print tensor values"},
    {"convert", cli_cmd_convert, "convert a file to another format"},
    {"cat", cli_cmd_cat, "join the tensors of several files into one"},
    {"extract", cli_cmd_extract, "write the members of a WebDataset shard as files"},
    {"validate", cli_cmd_validate, "check files and report every problem"},
    {"diff", cli_cmd_diff, "compare two files tensor by tensor (and their graphs)"},
    {"stats", cli_cmd_stats, "statistics and a histogram of each tensor's values"},
    {"graph", cli_cmd_graph, "draw a model's graph (Graphviz DOT, SVG, PNG)"},
    {"formats", cli_cmd_formats, "list the supported formats"},
    {"send", cli_cmd_send, "send files as messages over ZeroMQ (ZIO, tensorcom)"},
    {"recv", cli_cmd_recv, "receive messages from ZeroMQ, optionally into files"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void print_help(FILE *f) {
    fputs("Usage: tensio [--help] [--version] COMMAND [OPTIONS] [ARGS]\n"
          "\n"
          "Read, write, validate and convert binary tensor containers.\n"
          "\n"
          "Commands:\n",
          f);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "Options:\n"
          "  -h, --help     show this help and exit\n"
          "  -V, --version  show the version and exit\n"
          "\n"
          "A FILE may be a Hugging Face model directory or its index\n"
          "(model.safetensors.index.json): one container over its shards.\n"
          "A FILE may be an http:// or https:// URL, read by range requests: ls\n"
          "fetches the header only, dump the header and the tensors it prints.\n"
          "A FILE 'pipe:COMMAND' is the command's standard output (exit status\n"
          "checked): a file when its last word has a tensor format's extension,\n"
          "else a WebDataset shard.\n"
          "\n"
          "Environment: TENSIO_LIMITS='NAME=VALUE,...' sets the limits of everything a\n"
          "command opens: files, shards and their members, LMDB records, received messages\n"
          "(tio_limits: max_tensors, max_header_bytes, max_objects ..., docs/cli.md),\n"
          "e.g. TENSIO_LIMITS=max_objects=unlimited for a graph past the default budget.\n"
          "\n"
          "Run 'tensio COMMAND --help' for the options of a command.\n"
          "Exit status: 0 success, 1 invalid data or failed operation, 2 usage error.\n",
          f);
}

static const cli_command *find_command(const char *name) {
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static int run(int argc, char **argv) {
    if (argc < 2) {
        print_help(stderr);
        return CLI_EXIT_USAGE;
    }
    const char *a = argv[1];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        print_help(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
        printf("tensio %s\n", tio_version_string());
        return CLI_EXIT_OK;
    }
    if (strcmp(a, "help") == 0) {
        if (argc == 2) {
            print_help(stdout);
            return CLI_EXIT_OK;
        }
        if (argc > 3) return cli_usage_error("help", "too many arguments");
        const cli_command *c = find_command(argv[2]);
        if (!c) return cli_usage_error(NULL, "unknown command '%s'", argv[2]);
        char help_opt[] = "--help";
        char *sub[3] = {argv[2], help_opt, NULL};
        return c->run(2, sub);
    }
    if (a[0] == '-') return cli_usage_error(NULL, "unknown option '%s'", a);
    const cli_command *c = find_command(a);
    if (!c) return cli_usage_error(NULL, "unknown command '%s'", a);
    int env = cli_env_check(a); /* TENSIO_LIMITS, for every file the command opens */
    if (env) return env;
    return c->run(argc - 1, argv + 1);
}

int tensio_run(int argc, char **argv) {
    return cli_finish_output(run(argc, argv));
}
