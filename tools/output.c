/*
 * Where a command's output goes, in one place: the loss checks before a
 * conversion, the output path checked (not onto an input, not over a file
 * unless --force, the format from --to or the name), and the container
 * written (a file, atomically, or standard output). convert, cat and the
 * shard conversions use it; the commands never call each other.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The options that allow a loss, with what they do. */
typedef struct loss_option {
    unsigned flag;
    const char *option;
    const char *effect;
} loss_option;

static const loss_option loss_options[] = {
    {TIO_SAVE_DENSIFY, "--densify", "write sparse (COO) tensors as dense tensors"},
    {TIO_SAVE_DROP_NAMES, "--drop-names", "drop the tensor names"},
    {TIO_SAVE_DROP_METADATA, "--drop-metadata", "drop the metadata"},
    {TIO_SAVE_WIDEN, "--widen",
     "store dtypes the format lacks in a wider dtype that holds every value"},
    {TIO_SAVE_DEQUANTIZE, "--dequantize", "write quantized tensors as float32"},
};
#define NLOSS (sizeof loss_options / sizeof loss_options[0])

/* The output format and the version to write (0 = the format's default). */
typedef struct target {
    const char *format;
    unsigned version;
    const char *cast;    /* tio_save_options.cast */
    const char *options; /* tio_save_options.options (what the format's check
                            reads: ONNX's opset=N decides what a cast needs) */
} target;

static int check_save(const tio_container *c, const target *to, unsigned flags,
                      tio_error *err) {
    tio_save_options o;
    memset(&o, 0, sizeof o);
    o.format = to->format;
    o.flags = flags;
    o.version = to->version;
    o.cast = to->cast;
    o.options = to->options;
    tio_error_clear(err);
    return tio_check_save(c, &o, err);
}

/* The loss option that resolves the refusal `err` (seen with `flags`): the
 * first one whose addition makes the check pass or fail differently.
 * Returns its index, or -1 when no option helps. */
static int responsible_option(const tio_container *c, const target *to, unsigned flags,
                              const tio_error *err, tio_error *next_err, int *next_rc) {
    for (size_t i = 0; i < NLOSS; i++) {
        if (flags & loss_options[i].flag) continue;
        int rc = check_save(c, to, flags | loss_options[i].flag, next_err);
        if (rc == TIO_OK || rc != err->code ||
            strcmp(next_err->message, err->message) != 0) {
            *next_rc = rc;
            return (int)i;
        }
    }
    return -1;
}

/* Reports a TIO_E_LOSSY refusal with a hint naming the option(s) that allow it. */
static int report_lossy(const tio_container *c, const target *to, unsigned flags,
                        const tio_error *first) {
    cli_error("%s", cli_errmsg(first));
    tio_error err = *first, next;
    unsigned needed = 0;
    int rc = first->code, n = 0, unresolved = 0;
    while (rc == TIO_E_LOSSY) {
        int k = responsible_option(c, to, flags | needed, &err, &next, &rc);
        if (k < 0) {
            unresolved = 1;
            break;
        }
        if (n == 0)
            cli_error("hint: use %s to allow this (%s)", loss_options[k].option,
                      loss_options[k].effect);
        needed |= loss_options[k].flag;
        n++;
        err = next;
    }
    if (n > 1) {
        char list[128] = "";
        size_t used = 0;
        for (size_t i = 0; i < NLOSS; i++) {
            if (!(needed & loss_options[i].flag)) continue;
            int w = snprintf(list + used, sizeof list - used, "%s%s", used ? " " : "",
                             loss_options[i].option);
            if (w > 0 && (size_t)w < sizeof list - used) used += (size_t)w;
        }
        cli_error("hint: this conversion needs all of: %s", list);
    }
    if (unresolved && n > 0)
        cli_error("note: then it would still fail: %s", cli_errmsg(&err));
    else if (rc != TIO_OK && rc != TIO_E_LOSSY && n > 0)
        cli_error("note: then it would still fail: %s", cli_errmsg(&next));
    return CLI_EXIT_FAIL;
}

/* What writing rten converts, said as rten-convert says it (once per kind):
 * float16/bfloat16/float64 constants become float32, and int64 values
 * outside the int32 range are clamped (silently for INT64_MAX and
 * <= -INT64_MAX, the "to the end" slice bounds of ONNX exporters). */
static void rten_conversion_notes(const tio_container *c) {
    int said_f = 0, said_i = 0;
    for (size_t i = 0; i < tio_container_count(c); i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        tio_dtype d = tio_tensor_dtype(t);
        if (!said_f && (d == TIO_FLOAT16 || d == TIO_BFLOAT16 || d == TIO_FLOAT64)) {
            fprintf(stderr, "tensio: warning: %s constants stored as float32 (rten has no %s)\n",
                    tio_dtype_name(d), tio_dtype_name(d));
            said_f = 1;
        }
        const uint8_t *p = tio_tensor_data(t);
        if (said_i || d != TIO_INT64 || !p || tio_tensor_layout(t) != TIO_LAYOUT_DENSE) continue;
        for (uint64_t k = 0; k < tio_tensor_numel(t) && !said_i; k++) {
            int64_t v;
            memcpy(&v, p + 8 * k, sizeof v); /* tensio's tensor data are little-endian */
            if ((v > INT32_MAX && v != INT64_MAX) || (v < INT32_MIN && v > -INT64_MAX)) {
                fprintf(stderr,
                        "tensio: warning: clamping out-of-range int64 value %lld ('%s') to "
                        "[%ld, %ld]\n",
                        (long long)v, tio_tensor_name(t) ? tio_tensor_name(t) : "",
                        (long)INT32_MIN, (long)INT32_MAX);
                said_i = 1;
            }
        }
    }
}

/* Tied weights written to safetensors: each alias (tio_tensor_alias) was not
 * written, one copy was, under the name of the tensor it aliases (as
 * transformers' save_pretrained does; safetensors refuses shared tensors).
 * Returns how many were left out; `warn`: names each on stderr. */
static size_t alias_notes(const tio_container *c, const char *format, int warn) {
    size_t n = 0;
    if (strcmp(format, "safetensors") != 0) return 0;
    for (size_t i = 0; i < tio_container_count(c); i++) {
        const tio_tensor *t = tio_container_tensor(c, i), *a = tio_tensor_alias(t);
        if (!a) continue;
        n++;
        if (!warn) continue;
        char *et = cli_text_escape(tio_tensor_name(t) ? tio_tensor_name(t) : "");
        char *ea = cli_text_escape(tio_tensor_name(a) ? tio_tensor_name(a) : "");
        fprintf(stderr,
                "tensio: warning: '%s' not written: it is tied to '%s' (one storage); "
                "safetensors keeps one copy, under '%s'\n",
                et ? et : "?", ea ? ea : "?", ea ? ea : "?");
        free(et);
        free(ea);
    }
    return n;
}

/* A .pt's top directory as torch.save names it after the file: OUT's name up
 * to its last '.' ("model.pt" -> "model"): the options with archive=STEM
 * added, in buf; `options` as they were (the library's "archive") when the
 * stem is empty, too long, or holds a byte outside printable ASCII or one an
 * option value cannot (',' '=' '\\'). */
#define CLI_ARCHIVE_OPTS 512
static const char *torch_archive(const char *out, const char *options, char buf[CLI_ARCHIVE_OPTS]) {
    const char *b = strrchr(out, '/');
    b = b ? b + 1 : out;
    const char *dot = strrchr(b, '.');
    size_t n = dot ? (size_t)(dot - b) : strlen(b);
    if (n == 0 || n > 255) return options;
    for (size_t k = 0; k < n; k++)
        if (b[k] < 0x20 || b[k] > 0x7E || b[k] == ',' || b[k] == '=' || b[k] == '\\')
            return options;
    int k = snprintf(buf, CLI_ARCHIVE_OPTS, "%s%sarchive=%.*s", options ? options : "",
                     options ? "," : "", (int)n, b);
    return k > 0 && k < CLI_ARCHIVE_OPTS ? buf : options;
}

int cli_check_loss(const tio_container *c, const char *format, unsigned version,
                   unsigned flags, const char *cast, const char *options) {
    tio_error err;
    target tgt = {format, version, cast, options};
    int st = check_save(c, &tgt, flags, &err);
    if (st == TIO_E_LOSSY) return report_lossy(c, &tgt, flags, &err);
    if (st != TIO_OK) return cli_error("%s", cli_errmsg(&err));
    return CLI_EXIT_OK;
}

/* Checks, then writes c to w->out (a file, atomically, or "-") with the loss
 * options' diagnosis, the progress line and the -v / --json summary. */
int cli_write_output(const tio_container *c, const cli_write_args *w) {
    int rc = CLI_EXIT_OK;
    const char *format = w->format, *out = w->out;
    int to_stdout = cli_is_stdio(out), stream = !to_stdout && cli_is_stream_file(out);
    size_t out_size = 0;
    struct stat sout;
    tio_error err;
    if (cli_check_loss(c, format, w->version, w->flags, w->cast, w->options) != CLI_EXIT_OK)
        return CLI_EXIT_FAIL;
    tio_save_options o;
    memset(&o, 0, sizeof o);
    o.format = format;
    o.flags = w->flags | TIO_SAVE_CLEANUP; /* one save per process: it may list OUT's dir */
    o.version = w->version;
    o.options = w->options;
    o.max_shard_bytes = w->max_shard;
    o.cast = w->cast;
    char opts[CLI_ARCHIVE_OPTS];
    if (!to_stdout && strcmp(format, "torch") == 0) o.options = torch_archive(out, w->options, opts);
    cli_progress prog;
    cli_progress_init(&prog, w->progress, w->cmd, NULL);
    o.progress = cli_progress_cb;
    o.progress_ctx = &prog;
    tio_error_clear(&err);
    if (to_stdout) {
        o.flags &= ~TIO_SAVE_CLEANUP;
        rc = cli_save_stdout(c, &o, 1, w->cmd, &out_size, &prog);
    } else if (stream) { /* /dev/null, a named pipe: written into, not replaced */
        o.flags &= ~TIO_SAVE_CLEANUP;
        rc = cli_save_into(c, &o, out, &out_size, &prog);
    } else {
        int st2 = tio_save(c, out, &o, &err);
        cli_progress_end(&prog); /* before any message */
        if (st2 != TIO_OK) {
            const char *msg = cli_errmsg(&err);
            rc = strstr(msg, out) ? cli_error("%s", msg) : cli_error("%s: %s", out, msg);
        }
    }
    if (rc == CLI_EXIT_OK && strcmp(format, "rten") == 0) rten_conversion_notes(c);
    if (rc == CLI_EXIT_OK) alias_notes(c, format, 1);
    if (rc != CLI_EXIT_OK || !(w->verbose || w->json)) return rc;
    unsigned long long size = out_size, shards = 0;
    if (!to_stdout && !stream && stat(out, &sout) == 0) size = (unsigned long long)sout.st_size;
    size_t n = tio_container_count(c) - alias_notes(c, format, 0);
    if (w->max_shard) {
        /* what was written, read back: its files' bytes and shard count */
        tio_container *back = NULL;
        char *ipath = cli_strdup_printf("%s.index.json", out);
        const char *bpath = stat(out, &sout) == 0 ? out : ipath; /* a directory, WEIGHTS */
        tio_error_clear(&err);
        tio_limits lim;
        tio_open_options bo = {.limits = cli_limits(NULL, &lim)};
        if (bpath && tio_open(bpath, &bo, &back, &err) == TIO_OK) {
            size = tio_container_source_size(back);
            const char *s = tio_container_prop_get(back, "shards");
            shards = s ? strtoull(s, NULL, 10) : 1;
        }
        tio_container_free(back);
        free(ipath);
    }
    if (w->json) {
        json_t *root = json_object();
        int bad = !root;
        json_t *in = w->inputs ? json_array() : cli_json_str(w->in);
        for (size_t i = 0; in && w->inputs && i < w->ninputs; i++)
            bad |= json_array_append_new(in, cli_json_str(w->inputs[i])) != 0;
        bad |= cli_json_set(root, "input", in);
        bad |= cli_json_set(root, "input_format", cli_json_str(w->src));
        bad |= cli_json_set(root, "output", cli_json_str(out));
        bad |= cli_json_set(root, "format", cli_json_str(format));
        bad |= cli_json_set(root, "tensors", json_integer((json_int_t)n));
        bad |= cli_json_set(root, "bytes", json_integer((json_int_t)size));
        if (w->max_shard) bad |= cli_json_set(root, "shards", json_integer((json_int_t)shards));
        if (bad) {
            json_decref(root);
            root = NULL;
        }
        return cli_json_print(root);
    }
    /* the summary goes to stderr when the data go to stdout */
    fprintf(to_stdout ? stderr : stdout, "%s (%s) -> %s (%s): %zu tensor%s, %llu bytes",
            w->in, w->src ? w->src : "?", out, format, n, n == 1 ? "" : "s", size);
    if (w->max_shard)
        fprintf(to_stdout ? stderr : stdout, " in %llu shard%s", shards, shards == 1 ? "" : "s");
    fputc('\n', to_stdout ? stderr : stdout);
    return CLI_EXIT_OK;
}

/* OUT's checks before anything is read: a format (from --to or the name), not
 * a terminal unless force, not an existing file unless force. */
int cli_check_output(const char *cmd, const char *out, const char *to, int force, int json,
                     const char **format) {
    *format = to ? to : cli_is_stdio(out) ? NULL : tio_format_for_path(out);
    if (json && cli_is_stdio(out))
        return cli_usage_error(cmd, "--json: OUT is standard output, which holds the data");
    if (!*format && cli_is_stdio(out))
        return cli_usage_error(cmd, "OUT is standard output: give its format with --to");
    if (!*format) {
        char list[512];
        cli_format_list(list, sizeof list);
        return cli_usage_error(cmd,
                               "cannot tell the output format from '%s'; use --to FORMAT "
                               "(formats: %s)",
                               out, list);
    }
    struct stat sout;
    if (!cli_is_stdio(out) && !force && stat(out, &sout) == 0 && !cli_is_stream_file(out))
        return cli_error("%s: already exists (use --force to overwrite)", out);
    if (cli_is_stdio(out) && !force && isatty(STDOUT_FILENO))
        return cli_usage_error(cmd, "refusing to write %s data to a terminal (redirect "
                               "standard output, or --force)", *format);
    return CLI_EXIT_OK;
}

/* Refuses IN and OUT being the same file. */
int cli_check_not_onto(const char *in, const char *out) {
    struct stat sin, sout;
    if (cli_is_stdio(in) || cli_is_url(in) || strncmp(in, "pipe:", 5) == 0) return CLI_EXIT_OK;
    if (stat(in, &sin) != 0) return cli_error("%s: %s", in, strerror(errno));
    if (!cli_is_stdio(out) &&
        (strcmp(in, out) == 0 ||
         (stat(out, &sout) == 0 && sin.st_dev == sout.st_dev && sin.st_ino == sout.st_ino)))
        return cli_error("refusing to convert '%s' onto itself", in);
    return CLI_EXIT_OK;
}
