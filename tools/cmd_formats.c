/* tensio formats — list the registered formats. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char formats_help[] =
    "Usage: tensio formats [OPTIONS]\n"
    "\n"
    "List the formats this build can read and write: name, file extensions,\n"
    "capabilities (sparse: COO tensors, names: tensor names, metadata,\n"
    "graph: a model graph, quant: block-quantized tensors; read-only: a\n"
    "format tensio reads but does not write, torch) and description.\n"
    "\n"
    "Options:\n"
    "      --json          print one JSON object instead (also lists the dtypes\n"
    "                      each format can store; see docs/cli.md)\n"
    "  -h, --help          show this help and exit\n";

enum { OPT_HELP = 1, OPT_JSON };

static const cli_option formats_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"json", 0, 0, OPT_JSON},
};

typedef struct cap_name {
    unsigned cap;
    const char *name;
} cap_name;

static const cap_name cap_names[] = {
    {TIO_CAP_SPARSE, "sparse"},
    {TIO_CAP_NAMES, "names"},
    {TIO_CAP_METADATA, "metadata"},
    {TIO_CAP_GRAPH, "graph"},
    {TIO_CAP_QUANT, "quant"},
    {TIO_CAP_VALUE_TYPES, "types"},
};
#define NCAPS (sizeof cap_names / sizeof cap_names[0])

static json_t *split_extensions(const char *exts) {
    json_t *a = json_array();
    if (!a) return NULL;
    const char *s = exts ? exts : "";
    while (*s) {
        while (*s == ' ') s++;
        size_t n = strcspn(s, " ");
        if (n == 0) break;
        if (json_array_append_new(a, json_stringn(s, n)) != 0) {
            json_decref(a);
            return NULL;
        }
        s += n;
    }
    return a;
}

static int formats_json(void) {
    json_t *root = json_object();
    json_t *list = json_array();
    if (!root || !list) {
        json_decref(root);
        json_decref(list);
        return cli_error("out of memory");
    }
    int bad = cli_json_set(root, "formats", list);
    for (size_t i = 0; i < tio_format_count() && !bad; i++) {
        const char *name = tio_format_name(i);
        if (!name) break;
        json_t *o = json_object();
        if (!o || json_array_append_new(list, o) != 0) {
            bad = 1;
            break;
        }
        unsigned caps = tio_format_caps(name);
        bad |= cli_json_set(o, "name", cli_json_str(name));
        bad |= cli_json_set(o, "description", cli_json_str(tio_format_description(name)));
        bad |= cli_json_set(o, "extensions", split_extensions(tio_format_extensions(name)));
        bad |= cli_json_set(o, "write", json_boolean(tio_format_can_write(name)));
        json_t *capl = json_array();
        bad |= cli_json_set(o, "capabilities", capl);
        for (size_t k = 0; k < NCAPS && !bad; k++)
            if (caps & cap_names[k].cap)
                bad |= json_array_append_new(capl, json_string(cap_names[k].name)) != 0;
        json_t *dts = json_array();
        bad |= cli_json_set(o, "dtypes", dts);
        for (size_t d = 1; d < TIO_DTYPE_COUNT && !bad; d++)
            if (tio_format_supports_dtype(name, (tio_dtype)d))
                bad |= json_array_append_new(dts, json_string(tio_dtype_name((tio_dtype)d))) != 0;
    }
    if (bad) {
        json_decref(root);
        return cli_error("out of memory");
    }
    return cli_json_print(root);
}

static int formats_text(void) {
    cli_table tab;
    cli_table_init(&tab, 4, 0);
    cli_table_add(&tab, "NAME");
    cli_table_add(&tab, "EXTENSIONS");
    cli_table_add(&tab, "CAPABILITIES");
    cli_table_add(&tab, "DESCRIPTION");
    for (size_t i = 0; i < tio_format_count(); i++) {
        const char *name = tio_format_name(i);
        if (!name) break;
        unsigned caps = tio_format_caps(name);
        char capbuf[64] = "";
        size_t used = 0;
        for (size_t k = 0; k < NCAPS; k++) {
            if (!(caps & cap_names[k].cap)) continue;
            int w = snprintf(capbuf + used, sizeof capbuf - used, "%s%s", used ? "," : "",
                             cap_names[k].name);
            if (w > 0 && (size_t)w < sizeof capbuf - used) used += (size_t)w;
        }
        if (!tio_format_can_write(name)) {
            int w = snprintf(capbuf + used, sizeof capbuf - used, "%sread-only", used ? "," : "");
            if (w > 0 && (size_t)w < sizeof capbuf - used) used += (size_t)w;
        }
        const char *ext = tio_format_extensions(name);
        const char *desc = tio_format_description(name);
        cli_table_add(&tab, "%s", name);
        cli_table_add(&tab, "%s", ext && *ext ? ext : "-");
        cli_table_add(&tab, "%s", used ? capbuf : "-");
        cli_table_add(&tab, "%s", desc && *desc ? desc : "-");
    }
    int rc = cli_table_print(&tab, stdout);
    cli_table_free(&tab);
    return rc;
}

int cli_cmd_formats(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "formats", argc, argv, formats_opts,
                             sizeof formats_opts / sizeof formats_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    int json = 0, id;
    while ((id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(formats_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_JSON: json = 1; break;
        default: break;
        }
    }
    if (id == CLI_PARSE_ERROR)
        rc = CLI_EXIT_USAGE;
    else if (p.npos > 0)
        rc = cli_usage_error("formats", "unexpected argument '%s'", p.pos[0]);
    cli_parser_free(&p);
    if (rc != CLI_EXIT_OK) return rc;
    return json ? formats_json() : formats_text();
}
