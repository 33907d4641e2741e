/* tensio convert — rewrite a file in another format. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char convert_help[] =
    "Usage: tensio convert [OPTIONS] IN OUT | --shard OUT FILE...\n"
    "\n"
    "Read IN and write its tensors to OUT. The output format comes from OUT's\n"
    "extension, or from --to. Nothing that the output format cannot hold is\n"
    "dropped or changed silently: the conversion fails (exit 1) and names the\n"
    "option that allows the loss. OUT is replaced atomically; it is never left\n"
    "half-written. IN '-' reads standard input (the format probed, or --from);\n"
    "OUT '-' writes standard output (not atomic; --to required; refused on a\n"
    "terminal unless --force); an OUT that is a FIFO or a character device\n"
    "(/dev/null) is written into the same way, never replaced.\n"
    "OUT an LMDB store (DIR with data.mdb, FILE.lmdb, FILE.mdb; created when\n"
    "missing): IN a tar shard gives one record per sample (its tensor members'\n"
    "tensors; other members are not stored), any other IN one record keyed by\n"
    "its file name without extensions; --to names the records' format\n"
    "(default tenbin); a key already in the store needs --force. IN an LMDB\n"
    "store and OUT.tar: a member KEY.EXT per record in key order, the record's\n"
    "bytes as stored (EXT from the store's format), or re-encoded with --to.\n"
    "\n"
    "WebDataset shards: IN.tar OUT.tar writes every member of IN, in order, with\n"
    "its name (its tensor members re-encoded with --member-to); a tensor file\n"
    "IN and OUT.tar, or --shard OUT FILE..., writes a shard of the files, each\n"
    "a member named as the file (KEY.EXT, directories left out). Shards written\n"
    "are plain ustar, as Python's tarfile and GNU tar read them; the loss\n"
    "options apply to every re-encoded member.\n"
    "\n"
    "Hugging Face checkpoints: IN may be a model directory or its index\n"
    "(model.safetensors.index.json, pytorch_model.bin.index.json), read as one\n"
    "container over its shards. OUT a directory (existing, or ending in '/'), or\n"
    "any OUT with --max-shard-size, writes what transformers' save_pretrained\n"
    "writes: DIR/model.safetensors when the tensors fit in one shard, else\n"
    "model-00001-of-0000N.safetensors ... and model.safetensors.index.json (named\n"
    "after OUT's file name when OUT is one); shards of an earlier save that\n"
    "this one does not replace are removed (docs/formats/hf.md). Tied weights\n"
    "(tensors of a PyTorch checkpoint that are one storage, the same view) go\n"
    "to safetensors once, as the first name; each alias is named on stderr.\n"
    "\n";
/* in two pieces: C99 compilers need take only 4095 bytes in one literal */
static const char convert_help_options[] =
    "Options:\n"
    "  -t, --to FMT        write format FMT (default: from OUT's extension)\n"
    "      --from FMT      read IN as format FMT instead of detecting it\n"
    "      --densify       write sparse (COO) tensors as dense tensors\n"
    CLI_MAX_DENSE_HELP
    "      --drop-names    drop tensor names the output format cannot hold\n"
    "      --drop-metadata\n"
    "                      drop metadata the output format cannot hold\n"
    "      --widen         store dtypes the output format lacks in a wider dtype\n"
    "                      that holds every value exactly (bool -> uint8,\n"
    "                      float16/bfloat16 -> float32)\n"
    "      --dequantize    write block-quantized tensors (GGUF q4_0, q4_K ...) as\n"
    "                      float32, their dequantized values (needed for a format\n"
    "                      without them; into GGUF, which keeps the blocks\n"
    "                      otherwise, too; q4_0 q4_1 q5_0 q5_1 q8_0 q1_0 q2_0,\n"
    "                      q2_K..q8_K, iq4_nl iq4_xs tq1_0 tq2_0 mxfp4 nvfp4)\n"
    "      --cast SPEC     write floating-point tensors as another float dtype:\n"
    "                      SPEC one dtype for every float tensor (bfloat16), or\n"
    "                      FROM=TO pairs (float32=float16,float64=float32); TO is\n"
    "                      float64, float32, float16 or bfloat16. Rounded as\n"
    "                      PyTorch's Tensor.to() rounds (nearest, ties to even).\n"
    "                      onnx output: the weights are stored cast, each with a\n"
    "                      Cast back to its declared type (the model computes as\n"
    "                      before, from rounded weights); tflite: float16 only,\n"
    "                      each weight DEQUANTIZEd (TensorFlow Lite's float16\n"
    "                      quantization); rten and tmfile refuse it\n"
    "      --format-version N, --rten-version N\n"
    "                      write version N of the output format (default: the\n"
    "                      format's default; rten: 2, or 1 for the V1 layout)\n"
    "      --external-data NAME\n"
    "                      onnx: write the initializers' data to file NAME beside\n"
    "                      OUT (ONNX external data) instead of inline (those of\n"
    "                      1 KiB and more, as onnx.save)\n"
    "      --opset N       onnx: write the graph at default-domain opset N (7-26):\n"
    "                      attributes that became inputs (Squeeze axes, Clip\n"
    "                      min/max, Slice, Pad, Split, TopK, Reduce* axes ...)\n"
    "                      move to the form of opset N; refused, with the reason,\n"
    "                      where opset N cannot express the graph\n"
    "      --no-fuse       tmfile, tflite: keep the graph's nodes as they are; by\n"
    "                      default BatchNormalization after a Conv or Gemm is\n"
    "                      folded into its weights and a Relu/Clip(0,6) becomes\n"
    "                      the activation of the operator before it (tmfile: a\n"
    "                      Conv, as Tengine's convert_tool does; tflite: as\n"
    "                      TensorFlow Lite's converter fuses them)\n"
    "      --layout L      tflite: the layout of 4-D inputs and outputs: nhwc\n"
    "                      (the default, as TFLite keeps images) or nchw (as the\n"
    "                      ONNX model has them)\n"
    "      --dim NAME=N    tmfile, tflite: fix the model's dim named NAME (a\n"
    "                      dynamic axis) to N, repeatable; a graph input's\n"
    "                      leading dim, named and not given or unknown, is 1\n"
    "                      (a batch)\n"
    "      --strings K     npy/npz: string tensors as NumPy's S (bytes) or U\n"
    "                      (text: every string must be UTF-8); the default is\n"
    "                      U when every string is UTF-8, else S\n"
    ;
/* (split: ISO C's 4095-character string limit) */
static const char convert_help_options2[] =
    "      --max-shard-size SIZE\n"
    "                      write a Hugging Face sharded checkpoint of shards of at\n"
    "                      most SIZE tensor bytes (a larger tensor gets a shard of\n"
    "                      its own): 5GB, 500MB, 10KB (powers of 1000), 2GiB (of\n"
    "                      1024), or bytes; as transformers' max_shard_size.\n"
    "                      Default 5GB when OUT is a directory\n"
    "      --compress      npz: deflate the members, as np.savez_compressed does\n"
    "                      (default: stored, as np.savez)\n"
    "      --force         overwrite OUT if it exists\n"
    "      --no-sync       do not fsync OUT and its directory (still atomic, not\n"
    "                      durable across a power loss)\n"
    CLI_FILTER_HELP
    CLI_PROGRESS_HELP
    "  -v, --verbose       print a one-line summary\n"
    "      --json          print the summary as one JSON object (see docs/cli.md);\n"
    "                      not with OUT '-'\n"
    "      --shard         write the shard OUT (the first operand) holding the\n"
    "                      FILEs that follow it\n"
    "      --member-to FMT\n"
    "                      shards: re-encode every tensor member (by its\n"
    "                      extension) in format FMT (a name, or an extension:\n"
    "                      ten, zmsg), its last extension replaced by FMT's;\n"
    "                      other members are copied byte for byte\n"
    "  -h, --help          show this help and exit\n";

enum {
    OPT_HELP = 1,
    OPT_TO,
    OPT_FROM,
    OPT_DENSIFY,
    OPT_DROP_NAMES,
    OPT_DROP_METADATA,
    OPT_WIDEN,
    OPT_DEQUANTIZE,
    OPT_CAST,
    OPT_FORCE,
    OPT_NO_SYNC,
    OPT_VERBOSE,
    OPT_JSON,
    OPT_VERSION,
    OPT_EXTERNAL,
    OPT_OPSET,
    OPT_LAYOUT,
    OPT_DIM,
    OPT_STRINGS,
    OPT_NO_FUSE,
    OPT_COMPRESS,
    OPT_SHARD,
    OPT_MEMBER_TO,
    OPT_MAX_SHARD
};

static const cli_option convert_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"to", 't', 1, OPT_TO},
    {"from", 0, 1, OPT_FROM},
    {"densify", 0, 0, OPT_DENSIFY},
    {"drop-names", 0, 0, OPT_DROP_NAMES},
    {"drop-metadata", 0, 0, OPT_DROP_METADATA},
    {"widen", 0, 0, OPT_WIDEN},
    {"dequantize", 0, 0, OPT_DEQUANTIZE},
    {"cast", 0, 1, OPT_CAST},
    {"force", 0, 0, OPT_FORCE},
    {"no-sync", 0, 0, OPT_NO_SYNC},
    {"verbose", 'v', 0, OPT_VERBOSE},
    {"json", 0, 0, OPT_JSON},
    {"format-version", 0, 1, OPT_VERSION},
    {"rten-version", 0, 1, OPT_VERSION},
    {"external-data", 0, 1, OPT_EXTERNAL},
    {"opset", 0, 1, OPT_OPSET},
    {"layout", 0, 1, OPT_LAYOUT},
    {"dim", 0, 1, OPT_DIM},
    {"strings", 0, 1, OPT_STRINGS},
    {"no-fuse", 0, 0, OPT_NO_FUSE},
    {"compress", 0, 0, OPT_COMPRESS},
    {"shard", 0, 0, OPT_SHARD},
    {"member-to", 0, 1, OPT_MEMBER_TO},
    {"max-shard-size", 0, 1, OPT_MAX_SHARD},
    CLI_OPT_MAX_DENSE,
    CLI_OPT_PROGRESS,
    CLI_OPT_FILTER,
};

/* Parses a format version: a decimal number that fits in unsigned. */
static int parse_version(const char *s, unsigned *out) {
    if (!s || *s < '0' || *s > '9') return -1;
    errno = 0;
    char *end = NULL;
    unsigned long v = strtoul(s, &end, 10);
    if (errno != 0 || !end || *end != '\0' || v > UINT_MAX) return -1;
    *out = (unsigned)v;
    return 0;
}

/* A Hugging Face sharded checkpoint as OUT: --max-shard-size, or OUT a
 * directory (then 5GB, transformers' default). Sets *max_shard (0: not one)
 * and *format; refuses '-' and, without force, a weights file or index that
 * exists. */
static int check_repo_output(const char *out, const char *to, const char *size, int force,
                             int json, const char **format, uint64_t *max_shard) {
    struct stat st;
    size_t ol = strlen(out);
    int dir = !cli_is_stdio(out) &&
              ((ol && out[ol - 1] == '/') || (stat(out, &st) == 0 && S_ISDIR(st.st_mode)));
    *max_shard = 0;
    const char *named = dir || cli_is_stdio(out) ? NULL : tio_format_for_path(out);
    if (!to && named && strcmp(named, "hfindex") == 0)
        return cli_usage_error("convert", "OUT '%s' names an index, which is written with its "
                               "shards: give the weights file's name (DIR/model.safetensors) "
                               "or a directory, and --max-shard-size", out);
    if (!size && !dir) return CLI_EXIT_OK;
    (void)json;
    if (cli_is_stdio(out))
        return cli_usage_error("convert", "--max-shard-size: OUT is a directory or a file "
                               "name, not standard output");
    tio_error err;
    tio_error_clear(&err);
    if (size && tio_parse_size(size, max_shard, &err) != TIO_OK)
        return cli_usage_error("convert", "--max-shard-size: %s", cli_errmsg(&err));
    if (!size) *max_shard = UINT64_C(5000000000);
    *format = to ? to : dir ? "safetensors" : tio_format_for_path(out);
    if (!*format)
        return cli_usage_error("convert", "cannot tell the shards' format from '%s'; use --to "
                               "safetensors (or torch)", out);
    if (force) return CLI_EXIT_OK;
    const char *weights = strcmp(*format, "torch") == 0 ? "pytorch_model.bin" : "model.safetensors";
    char *w = dir ? cli_strdup_printf("%s%s%s", out, out[ol - 1] == '/' ? "" : "/", weights)
                  : cli_strdup_printf("%s", out);
    char *idx = w ? cli_strdup_printf("%s.index.json", w) : NULL;
    int rc = CLI_EXIT_OK;
    if (!idx) rc = cli_error("out of memory");
    else if (stat(w, &st) == 0 || stat(idx, &st) == 0)
        rc = cli_error("%s: already exists (use --force to overwrite)",
                       stat(w, &st) == 0 ? w : idx);
    free(w);
    free(idx);
    return rc;
}

int cli_cmd_convert(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "convert", argc, argv, convert_opts,
                             sizeof convert_opts / sizeof convert_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    const char *to = NULL, *from = NULL, *external = NULL, *opset = NULL, *member_to = NULL,
               *layout = NULL, *strings = NULL, *cast = NULL;
    unsigned flags = 0, version = 0;
    int force = 0, verbose = 0, json = 0, no_fuse = 0, compress = 0, progress = CLI_PROGRESS_AUTO, id;
    int shard = 0;
    const char *max_shard_text = NULL;
    char dims[1024] = "";
    cli_filter filt;
    memset(&filt, 0, sizeof filt);
    tio_limits lim;
    memset(&lim, 0, sizeof lim);
    while ((id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(convert_help, stdout);
            fputs(convert_help_options, stdout);
            fputs(convert_help_options2, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_TO: to = p.value; break;
        case OPT_FROM: from = p.value; break;
        case OPT_DENSIFY: flags |= TIO_SAVE_DENSIFY; break;
        case OPT_DROP_NAMES: flags |= TIO_SAVE_DROP_NAMES; break;
        case OPT_DROP_METADATA: flags |= TIO_SAVE_DROP_METADATA; break;
        case OPT_WIDEN: flags |= TIO_SAVE_WIDEN; break;
        case OPT_DEQUANTIZE: flags |= TIO_SAVE_DEQUANTIZE; break;
        case OPT_CAST: cast = p.value; break;
        case OPT_FORCE: force = 1; break;
        case OPT_NO_SYNC: flags |= TIO_SAVE_NO_SYNC; break;
        case OPT_VERBOSE: verbose = 1; break;
        case OPT_JSON: json = 1; break;
        case CLI_OPT_PROGRESS_ID: progress = CLI_PROGRESS_ON; break;
        case CLI_OPT_ONLY_ID:
        case CLI_OPT_EXCLUDE_ID:
        case CLI_OPT_RENAME_ID:
            if (cli_filter_option(&filt, id, p.value, "convert") != CLI_EXIT_OK) {
                cli_parser_free(&p);
                return CLI_EXIT_USAGE;
            }
            break;
        case CLI_OPT_NO_PROGRESS_ID: progress = CLI_PROGRESS_OFF; break;
        case OPT_NO_FUSE: no_fuse = 1; break;
        case OPT_COMPRESS: compress = 1; break;
        case OPT_SHARD: shard = 1; break;
        case OPT_MEMBER_TO: member_to = p.value; break;
        case OPT_MAX_SHARD: max_shard_text = p.value; break;
        case OPT_EXTERNAL:
            if (strpbrk(p.value, ",=")) {
                rc = cli_usage_error("convert", "--external-data: '%s' holds ',' or '='",
                                     p.value);
                cli_parser_free(&p);
                return rc;
            }
            external = p.value;
            break;
        case OPT_OPSET:
            if (!p.value[0] || strspn(p.value, "0123456789") != strlen(p.value) ||
                strlen(p.value) > 9) {
                rc = cli_usage_error("convert", "--opset: expected a number, not '%s'",
                                     p.value);
                cli_parser_free(&p);
                return rc;
            }
            opset = p.value;
            break;
        case OPT_LAYOUT:
            if (strcmp(p.value, "nhwc") != 0 && strcmp(p.value, "nchw") != 0) {
                rc = cli_usage_error("convert", "--layout: expected nhwc or nchw, not '%s'",
                                     p.value);
                cli_parser_free(&p);
                return rc;
            }
            layout = p.value;
            break;
        case OPT_DIM: {
            /* NAME=N -> "NAME:N", joined by ';' (the write option dims=) */
            const char *eq = strrchr(p.value, '=');
            size_t dl = strlen(dims), nl = eq ? (size_t)(eq - p.value) : 0;
            if (!eq || !nl || strcspn(p.value, ",;:") < nl || !eq[1] ||
                strspn(eq + 1, "0123456789") != strlen(eq + 1) || strlen(eq + 1) > 10) {
                rc = cli_usage_error("convert", "--dim: expected NAME=N (N a number; NAME "
                                     "without ',', ';' or ':'), not '%s'", p.value);
            } else if (dl + strlen(p.value) + 2 > sizeof dims) {
                rc = cli_usage_error("convert", "--dim: more than %zu bytes of dims",
                                     sizeof dims - 1);
            } else {
                snprintf(dims + dl, sizeof dims - dl, "%s%.*s:%s", dl ? ";" : "", (int)nl,
                         p.value, eq + 1);
                break;
            }
            cli_parser_free(&p);
            return rc;
        }
        case OPT_STRINGS:
            if (strcmp(p.value, "S") != 0 && strcmp(p.value, "U") != 0) {
                rc = cli_usage_error("convert", "--strings: expected S or U, not '%s'", p.value);
                cli_parser_free(&p);
                return rc;
            }
            strings = p.value;
            break;
        case CLI_OPT_MAX_DENSE_ID:
            if (cli_parse_max_dense("convert", p.value, &lim) != CLI_EXIT_OK) {
                cli_parser_free(&p);
                return CLI_EXIT_USAGE;
            }
            break;
        case OPT_VERSION:
            if (parse_version(p.value, &version) != 0) {
                rc = cli_usage_error("convert",
                                     "--format-version: '%s' is not a version number "
                                     "(a non-negative integer)",
                                     p.value);
                cli_parser_free(&p);
                return rc;
            }
            break;
        default: break;
        }
    }
    if (id == CLI_PARSE_ERROR) {
        rc = CLI_EXIT_USAGE;
    } else if (p.npos < 2) {
        const char *what = shard ? (p.npos ? "missing FILE" : "missing OUT and FILE")
                                 : (p.npos ? "missing OUT" : "missing IN and OUT");
        rc = cli_usage_error("convert", "%s", what);
    } else if (p.npos > 2 && !shard) {
        rc = cli_usage_error("convert", "too many arguments (expected IN OUT)");
    } else if (from && cli_check_format("convert", "--from", from) != CLI_EXIT_OK) {
        rc = CLI_EXIT_USAGE;
    } else if (to && cli_check_format("convert", "--to", to) != CLI_EXIT_OK) {
        rc = CLI_EXIT_USAGE;
    } else if (member_to && !(member_to = cli_member_format("convert", member_to))) {
        rc = CLI_EXIT_USAGE;
    }
    const char *in = p.npos > 0 ? p.pos[0] : NULL;
    const char *out = p.npos > 1 ? p.pos[1] : NULL;
    int lmdb = !shard && out && (cli_is_lmdb(out) || cli_is_lmdb(in));
    if (rc == CLI_EXIT_OK && !lmdb &&
        (shard || cli_is_shard(in, from) || (!from && !to && cli_is_shard_name(out)))) {
        int files = shard || !cli_is_shard(in, from); /* files into a shard */
        const char *bad = to         ? "--to (use --member-to)"
                          : from     ? "--from"
                          : external ? "--external-data"
                          : opset    ? "--opset"
                          : layout   ? "--layout"
                          : dims[0]  ? "--dim"
                                     : NULL;
        cli_shard_convert a = {shard ? in : out, (const char *const *)p.pos + (shard ? 1 : 0),
                               shard ? p.npos - 1 : 1, files,
                               {member_to, flags & ~TIO_SAVE_NO_SYNC, version, NULL, &lim, cast},
                               flags & TIO_SAVE_NO_SYNC, force, verbose, json, progress,
                               cli_filter_active(&filt) ? &filt : NULL};
        if (bad)
            rc = cli_usage_error("convert", "%s does not apply to shards", bad);
        else if (cast && !member_to)
            rc = cli_usage_error("convert", "--cast re-encodes a shard's tensor members: "
                                 "give their format with --member-to");
        else if (files && a.filter)
            rc = cli_usage_error("convert", "--only/--exclude/--rename select the members of "
                                 "a shard read, not files written into one (name the files)");
        else if (!a.from_files && !cli_is_shard_name(out))
            rc = cli_usage_error("convert", "IN is a WebDataset shard: OUT must be a .tar "
                                 "(tensio extract writes its members as files)");
        else if (cli_is_stdio(a.out) || (a.from_files && cli_is_stdio(a.inputs[0])))
            rc = cli_usage_error("convert", "'-' is not taken for shards");
        if (rc == CLI_EXIT_OK) {
            a.how.options = compress ? "compress=1" : no_fuse ? "fuse=0" : NULL;
            rc = cli_convert_shard(&a);
        }
        cli_parser_free(&p);
        return rc;
    }
    if (rc == CLI_EXIT_OK && member_to)
        rc = cli_usage_error("convert", "--member-to applies to shards (.tar)");
    cli_parser_free(&p);
    if (rc != CLI_EXIT_OK) return rc;

    if (lmdb && max_shard_text)
        return cli_usage_error("convert", "--max-shard-size does not apply to LMDB stores");
    if (lmdb && cast) return cli_usage_error("convert", "--cast does not apply to LMDB stores");
    if (lmdb) /* --to: the records' (or the members') format */
        return cli_lmdb_convert(in, from, out, to, flags, force, verbose, json,
                                cli_filter_active(&filt) ? &filt : NULL);
    const char *format;
    uint64_t max_shard = 0;
    rc = cli_check_not_onto(in, out);
    if (rc == CLI_EXIT_OK)
        rc = check_repo_output(out, to, max_shard_text, force, json, &format, &max_shard);
    if (rc == CLI_EXIT_OK && !max_shard)
        rc = cli_check_output("convert", out, to, force, json, &format);
    if (rc != CLI_EXIT_OK) return rc;

    tio_container *c = NULL;
    rc = cli_open(in, from, &lim, &c);
    const char *src = c ? tio_container_format(c) : NULL; /* a static name */
    if (rc == CLI_EXIT_OK) rc = cli_filter_apply(&filt, in, &c);
    if (rc != CLI_EXIT_OK) {
        tio_container_free(c);
        return rc;
    }

    char opts[4200];
    snprintf(opts, sizeof opts, "%s%s%s%s%s%s%s", external ? "external_data=" : "",
             external ? external : "", external && opset ? "," : "", opset ? "opset=" : "",
             opset ? opset : "", no_fuse && (external || opset) ? "," : "",
             no_fuse ? "fuse=0" : "");
    if (compress) {
        size_t ol = strlen(opts);
        snprintf(opts + ol, sizeof opts - ol, "%scompress=1", ol ? "," : "");
    }
    if (layout) {
        size_t ol = strlen(opts);
        snprintf(opts + ol, sizeof opts - ol, "%slayout=%s", ol ? "," : "", layout);
    }
    if (dims[0]) {
        size_t ol = strlen(opts);
        snprintf(opts + ol, sizeof opts - ol, "%sdims=%s", ol ? "," : "", dims);
    }
    if (strings) {
        size_t ol = strlen(opts);
        snprintf(opts + ol, sizeof opts - ol, "%sstrings=%s", ol ? "," : "", strings);
    }
    cli_write_args w = {"convert", in, src, out, format, flags, version,
                        opts[0] ? opts : NULL, progress, verbose, json, NULL, 0, max_shard,
                        cast};
    rc = cli_write_output(c, &w);
    tio_container_free(c);
    return rc;
}
