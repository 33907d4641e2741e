/*
 * Shared pieces of the `tensio` command-line tool: option parsing, error
 * reporting, text tables, JSON helpers and the command entry points.
 * The tool uses only the public API (tensio.h) and jansson.
 */
#ifndef TENSIO_CLI_H
#define TENSIO_CLI_H

#include "tensio.h"

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

/* Exit codes. */
enum {
    CLI_EXIT_OK = 0,    /* success */
    CLI_EXIT_FAIL = 1,  /* invalid data or a failed operation */
    CLI_EXIT_USAGE = 2  /* unknown command/option, missing argument */
};

/* ------------------------------------------------------------- commands */

/* The whole tool: argv as main() gets it ("tensio", COMMAND, ...). Returns
 * the exit status, after flushing stdout (see cli_finish_output). */
int tensio_run(int argc, char **argv);

/* Each command gets argv[0] = its own name. Returns an exit code. */
int cli_cmd_ls(int argc, char **argv);
int cli_cmd_info(int argc, char **argv);
int cli_cmd_dump(int argc, char **argv);
int cli_cmd_convert(int argc, char **argv);
int cli_cmd_validate(int argc, char **argv);
int cli_cmd_formats(int argc, char **argv);
int cli_cmd_send(int argc, char **argv);
int cli_cmd_recv(int argc, char **argv);
int cli_cmd_cat(int argc, char **argv);
int cli_cmd_diff(int argc, char **argv);
int cli_cmd_stats(int argc, char **argv);
int cli_cmd_graph(int argc, char **argv);

/* `info`'s object tree (tools/info_tree.c): the text outline of a container
 * that has one (tio_container_object), or nothing; and its JSON set as
 * root["object"] (0, or -1 when out of memory). */
int cli_tree_text(const tio_container *c);
int cli_tree_json(const tio_container *c, json_t *root);

/* -------------------------------------------------------- option parsing */

typedef struct cli_option {
    const char *long_name; /* without the leading "--" */
    char short_name;       /* 0 when there is none */
    int has_arg;           /* 1: takes a value (--name=V, --name V, -xV, -x V) */
    int id;                /* > 0, returned by cli_parser_next */
} cli_option;

/* Parses GNU style: options and operands may be mixed, "--" ends options,
 * a lone "-" is an operand. Operands are collected in `pos`. */
typedef struct cli_parser {
    const char *cmd;          /* command name for messages */
    int argc;
    char **argv;
    int next;                 /* next argv index */
    int only_operands;        /* after "--" */
    const char *cluster;      /* rest of a "-abc" cluster, or NULL */
    const cli_option *opts;
    size_t nopts;
    const char *value;        /* the value of the last option that takes one */
    const char **pos;         /* operands */
    size_t npos;
} cli_parser;

enum { CLI_PARSE_END = 0, CLI_PARSE_ERROR = -1 };

/* Returns CLI_EXIT_OK, or CLI_EXIT_FAIL when out of memory (message printed). */
int cli_parser_init(cli_parser *p, const char *cmd, int argc, char **argv,
                    const cli_option *opts, size_t nopts);
void cli_parser_free(cli_parser *p);
/* The id of the next option, CLI_PARSE_END when all arguments are consumed,
 * or CLI_PARSE_ERROR after printing a usage error. */
int cli_parser_next(cli_parser *p);

/* ----------------------------------------------------------- diagnostics */

/* "tensio: <message>" on stderr; returns CLI_EXIT_FAIL. */
int cli_error(const char *fmt, ...) CLI_PRINTF(1, 2);
/* "tensio: <cmd>: <message>" plus a pointer to --help on stderr; returns
 * CLI_EXIT_USAGE. cmd may be NULL. */
int cli_usage_error(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);
/* The message of a library error (never empty). */
const char *cli_errmsg(const tio_error *err);

/* Checks a format name given with an option; prints a usage error listing
 * the registered formats when unknown. Returns CLI_EXIT_OK or CLI_EXIT_USAGE. */
int cli_check_format(const char *cmd, const char *option, const char *name);
/* The registered format names as "btf, tenbin" into buf. */
void cli_format_list(char *buf, size_t size);

/* Opens a file (not strict) with `limits` (NULL = the defaults); on failure
 * prints "tensio: PATH: message" and returns CLI_EXIT_FAIL. format may be NULL
 * (probe). PATH "-" reads standard input to its end into memory
 * (cli_stdin_bytes, kept for the process's life). */
int cli_open(const char *path, const char *format, const tio_limits *limits,
             tio_container **out);
/* The limits of an open: `given` (NULL: the defaults), with each field it
 * leaves at 0 taken from the environment's TENSIO_LIMITS ("NAME=VALUE,..."
 * over tio_limits' fields; VALUE as --max-dense-bytes takes it) when set.
 * 1 when TENSIO_LIMITS set some, 0 when unset, -1 with err set when it is not
 * such a list. cli_open_opts (and so every cli_open) applies it, through
 * cli_limits. */
int cli_env_limits(const tio_limits *given, tio_limits *out, tio_error *err);
/* What a call into the library that takes limits gets: `given` (NULL: the
 * defaults) with TENSIO_LIMITS applied, in *buf, or `given` itself when it is
 * unset. The command's run refused a TENSIO_LIMITS that is not a list before
 * the command ran (cli_env_check), so this cannot fail. */
const tio_limits *cli_limits(const tio_limits *given, tio_limits *buf);
/* Before a command runs: 0, or CLI_EXIT_USAGE with the message printed when
 * TENSIO_LIMITS is set and is not such a list. */
int cli_env_check(const char *cmd);
/* After a failed open: the hint that TENSIO_LIMITS raises the limit hit. */
void cli_limit_hint(const tio_error *err);
/* The same with TIO_OPEN_* flags. */
int cli_open_flags(const char *path, const char *format, const tio_limits *limits,
                   unsigned flags, tio_container **out);

/* --max-dense-bytes N: the option every command that may expand a sparse
 * tensor (hash, convert, send, recv) takes; CLI_OPT_MAX_DENSE goes in its
 * option table, CLI_MAX_DENSE_HELP in its help. */
#define CLI_OPT_MAX_DENSE_ID 2000
#define CLI_OPT_MAX_DENSE {"max-dense-bytes", 0, 1, CLI_OPT_MAX_DENSE_ID}
#define CLI_MAX_DENSE_HELP \
    "      --max-dense-bytes N\n" \
    "                      expand a sparse (COO) tensor to at most N bytes\n" \
    "                      (K, M, G, T suffixes; 'unlimited'; default 256M)\n"
/* --progress / --no-progress / --quiet, taken by the commands that do long
 * work (tools/progress.c). */
#define CLI_OPT_PROGRESS_ID 2001
#define CLI_OPT_NO_PROGRESS_ID 2002
#define CLI_OPT_PROGRESS {"progress", 0, 0, CLI_OPT_PROGRESS_ID}, \
    {"no-progress", 0, 0, CLI_OPT_NO_PROGRESS_ID}, {"quiet", 'q', 0, CLI_OPT_NO_PROGRESS_ID}
#define CLI_PROGRESS_HELP \
    "      --progress      show progress on stderr even when it is not a terminal\n" \
    "                      or the work is short\n" \
    "      --no-progress, --quiet\n" \
    "                      never show progress (by default: on a terminal, once\n" \
    "                      the work takes 0.5 s)\n"
enum { CLI_PROGRESS_AUTO = 0, CLI_PROGRESS_ON, CLI_PROGRESS_OFF };
typedef struct cli_progress {
    int mode, tty, drawn;
    const char *label; /* "convert" */
    const char *unit;  /* NULL: bytes; else items ("messages") */
    double start, last;
    uint64_t done, total;
    uint64_t shown; /* done when last drawn */
} cli_progress;
void cli_progress_init(cli_progress *p, int mode, const char *label, const char *unit);
/* done so far of total (0: unknown); draws when due. */
void cli_progress_update(cli_progress *p, uint64_t done, uint64_t total);
/* The library's progress callback form: ctx is the cli_progress. */
void cli_progress_cb(void *ctx, uint64_t done, uint64_t total);
/* Erases the line on a terminal; a forced log gets its last line. */
void cli_progress_end(cli_progress *p);
/* Erases a drawn line before a message (NULL is fine); the next update redraws. */
void cli_progress_pause(cli_progress *p);

/* --only GLOB, --exclude GLOB (repeatable; on the name, or the index of an
 * unnamed tensor), --rename OLD=NEW (tools/select.c). */
#define CLI_OPT_ONLY_ID 2003
#define CLI_OPT_EXCLUDE_ID 2004
#define CLI_OPT_RENAME_ID 2005
#define CLI_OPT_FILTER {"only", 0, 1, CLI_OPT_ONLY_ID}, \
    {"exclude", 0, 1, CLI_OPT_EXCLUDE_ID}, {"rename", 0, 1, CLI_OPT_RENAME_ID}
#define CLI_FILTER_HELP \
    "      --only GLOB     keep only the tensors whose name matches GLOB (shell\n" \
    "                      pattern; an unnamed tensor's name is its index);\n" \
    "                      repeatable; a GLOB that matches nothing is an error\n" \
    "      --exclude GLOB  leave out the tensors whose name matches GLOB\n" \
    "                      (repeatable)\n" \
    "      --rename OLD=NEW\n" \
    "                      name tensor OLD NEW (repeatable; after --only and\n" \
    "                      --exclude; a shard: member names, LMDB: keys)\n"
#define CLI_FILTER_MAX 64 /* values of each option */
typedef struct cli_filter {
    const char *only[CLI_FILTER_MAX], *exclude[CLI_FILTER_MAX], *rename[CLI_FILTER_MAX];
    size_t nonly, nexclude, nrename;
} cli_filter;
/* Records an --only/--exclude/--rename value (other ids: nothing). */
int cli_filter_option(cli_filter *f, int id, const char *value, const char *cmd);
int cli_filter_active(const cli_filter *f);
/* The same selection applied to names one at a time (a shard's members, an
 * LMDB store's keys), with the checks at the end: */
typedef struct cli_select {
    const cli_filter *f; /* NULL: every name kept, none renamed */
    size_t only_hits[CLI_FILTER_MAX], rename_hits[CLI_FILTER_MAX];
} cli_select;
void cli_select_init(cli_select *s, const cli_filter *f);
/* 1 when match (what the globs see) is kept; *out: name, or its --rename NEW
 * (name NULL: never renamed). */
int cli_select_name(cli_select *s, const char *match, const char *name, const char **out);
/* An --only that matched nothing, or a --rename OLD never seen: an error
 * naming noun ("tensor", "member", "key"). */
int cli_select_end(const cli_select *s, const char *noun);
/* Replaces *c by the selected tensors (views; it holds the original). A
 * model with a graph is refused. No filter: *c unchanged. */
int cli_filter_apply(const cli_filter *f, const char *path, tio_container **c);
/* Joins the selected tensors of n containers (taken: released with *out, or
 * on failure) into *out; names must not clash unless prefix_with_file
 * ("STEM/NAME", "STEM/INDEX"); container metadata merged (a key with two
 * values is an error). */
int cli_join(tio_container **srcs, const char *const *paths, size_t n, const cli_filter *f,
             int prefix_with_file, tio_container **out);

/* Writing a container as convert and cat do (tools/cmd_convert.c). */
typedef struct cli_write_args {
    const char *cmd;     /* "convert", "cat" */
    const char *in, *src; /* for the summary: the input(s), the format read */
    const char *out, *format;
    unsigned flags, version;
    const char *options; /* format options or NULL */
    int progress, verbose, json;
    const char *const *inputs; /* cat: the inputs, for --json's "input" list */
    size_t ninputs;
    uint64_t max_shard;  /* > 0: a Hugging Face sharded checkpoint (tio_save_options) */
    const char *cast;    /* tio_save_options.cast, or NULL */
} cli_write_args;
int cli_write_output(const tio_container *c, const cli_write_args *w);
/* Whether c can be written as `format` with the loss options `flags` (and
 * the cast and the format options, each or NULL): prints the refusal and the options that would allow it
 * (CLI_EXIT_FAIL), else CLI_EXIT_OK. */
int cli_check_loss(const tio_container *c, const char *format, unsigned version,
                   unsigned flags, const char *cast, const char *options);
int cli_check_output(const char *cmd, const char *out, const char *to, int force, int json,
                     const char **format);
int cli_check_not_onto(const char *in, const char *out);

/* ---- tools/source.c: the kinds of source (the commands ask here, never
 * each other) */

/* "-": standard input or output. */
int cli_is_stdio(const char *path);
/* Whether path is an http:// or https:// URL (tio_open reads it by range requests). */
int cli_is_url(const char *path);
/* Standard input to its end, read once and kept for the process's life
 * (every later call gets the same bytes). */
int cli_stdin_bytes(const uint8_t **buf, size_t *n, tio_error *err);
/* Whether standard input holds a tar shard (a ustar header): a regular file
 * is looked at in place, anything else is read (cli_stdin_bytes). */
int cli_stdin_is_tar(void);
/* Whether path is read as a tar shard: no --format, and a .tar name (.tar.gz
 * and friends too, which the library refuses with its reason), or a file
 * without a tensor format's extension holding a ustar header, or "-" holding
 * one; or a shard list in a file ("@FILE", or "@FILE" after a "::"). */
int cli_is_shard(const char *path, const char *format);
/* Opens a shard to read: a URL, pipe:COMMAND or "-" when standard input is
 * a regular file, in one pass (*st); "-" on a pipe from its bytes in memory
 * (cli_stdin_bytes), a file mapped (*s). The library's error in err. */
int cli_shard_source(const char *path, const tio_limits *lim, tio_shard **s,
                     tio_shard_stream **st, tio_error *err);
/* Whether path names a shard to write (ends in .tar, any case). */
int cli_is_shard_name(const char *path);
/* Whether path names an LMDB store: it ends ".lmdb" or ".mdb", or it is a
 * directory holding data.mdb. */
int cli_is_lmdb(const char *path);

/* tio_open, or for "-" tio_open_memory of standard input read to its end
 * (cli_stdin_bytes); the library's error in err. */
int cli_open_opts(const char *path, const tio_open_options *o, tio_container **out,
                  tio_error *err);
/* Writes the container to standard output in `o`'s format (not atomic);
 * refuses a terminal unless force. Returns a CLI_EXIT_* status. */
struct cli_progress;
/* prog (may be NULL) is ended before any message. */
int cli_save_stdout(const tio_container *c, const tio_save_options *o, int force,
                    const char *cmd, size_t *written, struct cli_progress *prog);
/* Whether OUT is an existing character device or FIFO (/dev/null, a named
 * pipe): a save writes into it (cli_save_into), never replaces it. */
int cli_is_stream_file(const char *path);
/* Writes c in o's format into the existing device or FIFO `path` (opened for
 * writing, not created or truncated), as to standard output: the bytes made
 * in memory, then written. *written (may be NULL) gets the count. */
int cli_save_into(const tio_container *c, const tio_save_options *o, const char *path,
                  size_t *written, struct cli_progress *prog);
/* Parses its value into lim->max_dense_bytes: N or N with a K, M, G or T
 * suffix (powers of 1024, "KiB" also taken), or "unlimited". Returns
 * CLI_EXIT_OK or prints a usage error and returns CLI_EXIT_USAGE. */
int cli_parse_max_dense(const char *cmd, const char *value, tio_limits *lim);

/* Work ahead of a listing (tools/ahead.c): worker threads, one per
 * processor this process may run on (at most 8), compute fn(ctx, k, slot)
 * for k = 0..n-1 in order, at most `window` indices ahead of the one the
 * listing took last, each into a slot of slot_size bytes (zeroed once);
 * skip(ctx, k) (may be NULL) leaves k to the listing. fn and skip run on the
 * workers: ctx is only read. NULL when that would not help (one processor,
 * fewer than two indices to compute) or could not start. */
typedef struct cli_ahead cli_ahead;
typedef void (*cli_ahead_fn)(const void *ctx, size_t k, void *slot);
typedef int (*cli_ahead_skip_fn)(const void *ctx, size_t k);
typedef void (*cli_ahead_cleanup_fn)(const void *ctx, void *slot);
cli_ahead *cli_ahead_start(size_t n, size_t slot_size, size_t window, cli_ahead_fn fn,
                           cli_ahead_skip_fn skip, cli_ahead_cleanup_fn cleanup, const void *ctx);
/* Index k's slot, waiting for its worker; NULL when the caller computes k
 * itself (skipped, or no worker took it yet: none will). Take the indices
 * in increasing order; the slot is the caller's until the next take or
 * cli_ahead_free (which cleans up the slots computed and not taken, and
 * those passed over). */
void *cli_ahead_take(cli_ahead *a, size_t k);
/* Index k's slot as cli_ahead_take gives it, or else k computed by fn into
 * mine (the caller's slot) and mine: a loop of takes that computes what no
 * worker did (a may be NULL: every index is the caller's). */
void *cli_ahead_next(cli_ahead *a, size_t k, cli_ahead_fn fn, const void *ctx, void *mine);
/* Stops the workers (each finishes its index) and frees. */
void cli_ahead_free(cli_ahead *a);

/* One input's budget of dense hashing: the library bounds each tensor by the
 * container's max_dense_bytes, and a command that hashes every tensor of a
 * file (or message) also bounds their sum by it, so that many sparse tensors
 * just under the limit cannot add up to hours of work. */
typedef struct cli_dense_budget {
    uint64_t limit; /* the container's max_dense_bytes */
    uint64_t spent; /* dense bytes of the sparse tensors hashed so far */
    cli_progress *prog; /* NULL, or counts the stored bytes hashed of total */
    uint64_t done, total;
    cli_ahead *ahead; /* NULL, or the dense hashes being made ahead */
} cli_dense_budget;
void cli_dense_budget_init(cli_dense_budget *b, const tio_container *c);
/* tio_tensor_sha256(t, TIO_HASH_DENSE) within the budget: TIO_E_LIMIT (err
 * filled, naming the tensor, the sizes and --max-dense-bytes) past it. */
int cli_hash_dense(const tio_tensor *t, size_t index, cli_dense_budget *b, uint8_t out[32],
                   tio_error *err);
/* Dense hashes made ahead of a listing of c (cli_ahead above), COO
 * tensors excepted (their dense hashes share the budget, in order); NULL
 * when that would not help or could not start. cli_hash_dense takes them. */
cli_ahead *cli_hash_ahead_start(const tio_container *c);
/* SHA-256 hex of a tensor (what: TIO_HASH_*; dense within the budget, its
 * progress counted). On failure prints "PATH: tensor I: reason" and returns
 * the library's status; a listing goes on without that hash. */
int cli_hash_hex(const char *path, size_t index, const tio_tensor *t, int what,
                 cli_dense_budget *budget, char out[65], tio_error *err);
/* o[key]: the hex digest, or null plus KEY_error {code, message} when the
 * hash could not be made (*missing is then set). Nonzero: out of memory. */
int cli_json_hash(json_t *o, const char *key, const char *path, size_t index,
                  const tio_tensor *t, int what, cli_dense_budget *budget, int *missing);

/* Flushes stdout; CLI_EXIT_FAIL (with a message) if anything written to it
 * failed, otherwise rc. */
int cli_finish_output(int rc);

/* ------------------------------------------------------------ formatting */

/* "dense" / "coo". */
const char *cli_layout_name(tio_layout layout);
/* The tensor's dtype name, or its quant type's (\"q4_K\") when quantized. */
const char *cli_tensor_dtype_name(const tio_tensor *t);
/* "[2, 3]" (rank 0: "[]"); malloc'ed, NULL when out of memory. */
char *cli_shape_string(const tio_tensor *t);
/* The same into buf (cap bytes): 0, or the bytes it needs when cap is too
 * small (buf untouched): a listing formats most shapes on the stack. */
size_t cli_shape_into(const tio_tensor *t, char *buf, size_t cap);
/* A copy of s with control characters written as \xNN; malloc'ed. */
char *cli_text_escape(const char *s);
/* The same for the len bytes at s, NUL bytes included (written \x00):
 * metadata keys and values, LMDB keys. */
char *cli_bytes_escape(const char *s, size_t len);
/* The inverse for what a user types: each \xNN (two hex digits) is that
 * byte, the rest as it is. Malloc'ed, NUL-terminated; *len its length. */
char *cli_bytes_unescape(const char *s, size_t *len);
/* A tensor name to show: cli_text_escape'd, `""` for the empty name (a name),
 * NULL for NULL (unnamed: the caller shows "-" or nothing). Malloc'ed; NULL
 * also when out of memory (callers check `name && !result`). */
char *cli_name_escape(const char *name);
/* 1 when s has nothing cli_text_escape would escape. */
int cli_text_plain(const char *s);
/* Lowercase hex of a SHA-256 digest. */
void cli_hex32(const uint8_t digest[32], char out[65]);
/* printf into a new malloc'ed string; NULL when out of memory. */
char *cli_strdup_printf(const char *fmt, ...) CLI_PRINTF(1, 2);
char *cli_vstrdup_printf(const char *fmt, va_list ap) CLI_PRINTF(1, 0);

/* After a command's option loop: checks the parse result (last_id), that
 * exactly one FILE was given and that `format` (if any) is known. Frees the
 * parser; on success *path is the FILE (a string of argv). */
int cli_one_file(cli_parser *p, int last_id, const char *cmd, const char *format,
                 const char **path);

/* ------------------------------------------------------------ text tables */

typedef struct cli_table {
    size_t ncols;
    size_t ncells;
    size_t cap;
    size_t *at;         /* row-major: cell i's text at text + at[i] */
    size_t *width;      /* cell i's display width */
    char *text;         /* the cells' texts, each NUL-terminated */
    size_t used, tcap;
    unsigned right;     /* bit i: right-align column i */
    int nomem;          /* an allocation failed */
} cli_table;

/* a + sep + b, a and b escaped for a terminal (cli_text_escape): a label
 * such as "SHARD: MEMBER" for messages; malloc'ed, NULL when out of memory. */
char *cli_escaped_pair(const char *a, const char *sep, const char *b);

/* ls --hash over many containers (a shard's members, a store's records):
 * one dense budget for all of them (from the first container's limits,
 * which they share), and whether a hash is missing (exit 1). */
typedef struct cli_hash_run {
    int on, set, missing;
    cli_dense_budget budget;
} cli_hash_run;
/* The SHA256 cell of tensor index of c ("-" when it cannot be made: the
 * reason on stderr under label). */
void cli_hash_cell(cli_table *tab, cli_hash_run *h, const char *label, const tio_container *c,
                   size_t index);
/* o's sha256 (and a COO tensor's indices_sha256, values_sha256) of tensor
 * index of c. Nonzero: out of memory. */
int cli_hash_keys(json_t *o, cli_hash_run *h, const char *label, const tio_container *c,
                  size_t index);

void cli_table_init(cli_table *t, size_t ncols, unsigned right_align_mask);
/* Makes room for `rows` more rows of about `bytes_per_row` bytes of text (a
 * hint: a listing of known length allocates once instead of doubling). */
void cli_table_reserve(cli_table *t, size_t rows, size_t bytes_per_row);
/* Appends one cell (rows fill left to right). Records out-of-memory. */
void cli_table_add(cli_table *t, const char *fmt, ...) CLI_PRINTF(2, 3);
/* Adds the cells INDEX NAME DTYPE SHAPE NBYTES of tensor x (its index t):
 * CLI_EXIT_OK, or the error printed (out of memory). */
int cli_table_tensor(cli_table *tab, size_t t, const tio_tensor *x);
/* The same for a cell of plain text (NULL: "(null)") and of a number. */
void cli_table_add_str(cli_table *t, const char *s);
void cli_table_add_u64(cli_table *t, uint64_t v);
/* Prints with columns padded to their widest cell of at most
 * CLI_TABLE_MAX_PAD columns (a wider cell sticks out), separated by two
 * spaces. Returns CLI_EXIT_OK or CLI_EXIT_FAIL (out of memory, reported). */
#define CLI_TABLE_MAX_PAD 160
int cli_table_print(const cli_table *t, FILE *f);
void cli_table_free(cli_table *t);

/* ------------------------------------------------------------------ JSON */

/* {"code": "TIO_E_…", "format": "btf"|null, "offset": N|null, "message": "…"} */
json_t *cli_json_error(const tio_error *e);
/* A JSON string for s (NULL → null). Invalid UTF-8 bytes become U+FFFD. */
json_t *cli_json_str(const char *s);
/* The same for the len bytes at s (s[len] readable, as tensio's strings
 * are NUL-terminated), NUL bytes included (JSON's \u0000). */
json_t *cli_json_strn(const char *s, size_t len);
/* Sets key (sanitised like cli_json_str) to a new reference; returns 0 or -1. */
int cli_json_set(json_t *obj, const char *key, json_t *value);
/* The same for a key of key_len bytes (NUL bytes included; key[key_len]
 * readable). */
int cli_json_setn(json_t *obj, const char *key, size_t key_len, json_t *value);
/* Dumps one value on one line ("{"a": 1, "b": 2}") plus a newline to stdout.
 * Takes the reference. Returns CLI_EXIT_OK or CLI_EXIT_FAIL. */
int cli_json_print(json_t *value);
/* [d0, d1, ...] of a tensor's shape; NULL when out of memory. */
json_t *cli_json_shape(const tio_tensor *t);
/* Writes s as a JSON string (or null) to f. Returns 0 or -1. */
int cli_json_write_string(FILE *f, const char *s);

/* ------------------------------------------ WebDataset shards (shard_cmds.c) */

/* tensio ls / info on a shard: a row per tensor of every tensor member, a
 * row per other member (opaque bytes). */
int cli_shard_ls(const char *path, const tio_limits *lim, int json, int hash,
                 const cli_filter *f); /* f: --only/--exclude/--rename on member names */
int cli_shard_info(const char *path, int json);
/* Problems found (shard errors, undecodable members, WebDataset duplicates);
 * with files (--json) appends its object there instead of printing lines. */
size_t cli_shard_validate(const char *path, int verbose, json_t *files);
/* validate --json: a new object {"file": path} appended to files, with a new
 * errors array in *errors (set into the object by the caller); NULL when out
 * of memory (tools/cmd_validate.c). */
json_t *cli_validate_json_file(json_t *files, const char *path, json_t **errors);
/* One finding of a validation: appended to errors (--json), else printed as
 * "PATH: error: MESSAGE". */
void cli_validate_finding(const char *path, json_t *errors, const tio_error *e);
/* The container of member "KEY.EXT" (its path in the tar), for dump. */
int cli_shard_open_member(const char *path, const char *member, tio_container **out);

/* --------------------------- writing shards (shard_convert.c, cmd_extract.c) */

/* How tensor members are written: format NULL = kept byte for byte. */
typedef struct cli_reencode {
    const char *format;
    unsigned flags, version; /* TIO_SAVE_* loss options, format version */
    const char *options;     /* format options (npz compress=1 …) or NULL */
    const tio_limits *limits; /* for reading the inputs */
    const char *cast;         /* tio_save_options.cast, or NULL */
} cli_reencode;
/* --member-to's value: a format name, or an extension ("ten", ".zmsg") of
 * one. NULL after printing a usage error. */
const char *cli_member_format(const char *cmd, const char *value);
/* Member i of shard s (read from path) as it is to be written: its own
 * bytes and name, or (a tensor member, how->format set) re-encoded, named
 * with its last extension replaced by the format's; *owned (tio_free) holds
 * re-encoded bytes, *name (free) the name. Errors printed. */
int cli_shard_member_bytes(const char *path, tio_shard *s, size_t i, const char *as,
                           const cli_reencode *how, const void **data, size_t *size,
                           void **owned, char **name); /* as: its new name, or NULL */
typedef struct cli_shard_convert {
    const char *out;
    const char *const *inputs; /* a shard, or (from_files) the member files */
    size_t ninputs;
    int from_files;
    cli_reencode how;
    unsigned save_flags; /* TIO_SAVE_NO_SYNC */
    int force, verbose, json, progress;
    const cli_filter *filter; /* on the input shard's member names, or NULL */
} cli_shard_convert;
/* convert IN.tar OUT.tar and convert --shard OUT FILE...: OUT written
 * atomically, every member in order. */
int cli_convert_shard(const cli_shard_convert *a);
int cli_cmd_extract(int argc, char **argv);

/* ------------------------------------------- shards over ZeroMQ (shard_stream.c) */

/* The messages tensio send makes of a shard: containers and their labels
 * ("shard.tar:KEY", "shard.tar:KEY+3" for a batch of 4). */
typedef struct cli_shard_msgs {
    tio_container **containers;
    char **labels;
    char **keys;      /* a shard's message: its samples' keys, NUL between them
                         (keys_len bytes); NULL for a file's */
    size_t *keys_len;
    size_t n, cap;
} cli_shard_msgs;
/* Appends shard path's messages to *m: one per sample holding its tensor
 * members' tensors in member order (views into the shard; a sample without
 * tensor members is skipped), or, batch > 0, one per `batch` samples (the
 * last may have fewer) whose tensor k is tensor k of each sample stacked
 * along a new first axis, as tensorcom batches are. */
int cli_shard_messages(const char *path, size_t batch, int members, const tio_limits *lim,
                       cli_shard_msgs *m);
/* members (send --members): also each member no tensor format reads, as a
 * tensor named by its extension: WebDataset's integer extensions (.cls,
 * .cls2, .class, .count, .index, .inx, .id; see cli_shard_int_ext) as an
 * int64 scalar of their decimal text, any other as uint8 [size] of its
 * bytes. */
/* Whether ext (no dot, ASCII case ignored) is one WebDataset's default
 * decoder reads as an integer. */
int cli_shard_int_ext(const char *ext);
/* Dense tensor t appended to c as a view of data (TIO_ADD_BORROW), with
 * its name and dtype and the shape given. */
int cli_add_view(tio_container *c, const tio_tensor *t, size_t rank, const int64_t *shape,
                 const void *data, size_t nbytes);
/* A message made of a streamed shard: c (the sink takes it, also on
 * failure), its label, its samples' keys (NUL between them). */
typedef int (*cli_shard_sink)(void *ctx, tio_container *c, const char *label, const char *keys,
                              size_t keys_len);
/* The messages of the shards `spec` names (a path, URL or pipe:COMMAND, or a
 * list in WebDataset's brace notation), read in one pass each
 * (tio_shard_stream: nothing mapped, one batch in memory), made as
 * cli_shard_messages makes them, handed to sink one at a time. */
int cli_shard_stream_messages(const char *spec, size_t batch, int members,
                              const tio_limits *lim, cli_shard_sink sink, void *ctx);
/* FILE is read as streamed shards: a URL, pipe:COMMAND, or a brace list. */
int cli_shard_streamed(const char *file);
/* Appends one message (takes c, also on failure) with a copy of label. */
int cli_shard_msgs_push(cli_shard_msgs *m, tio_container *c, const char *label);
void cli_shard_msgs_free(cli_shard_msgs *m);
/* tensio recv --samples-per-shard: the shard being written. */
typedef struct cli_shard_out {
    tio_shard_writer *w; /* NULL: none open */
    char *path;
} cli_shard_out;
/* Adds message c as member "SAMPLE.EXT" (SAMPLE as %06llu) in so->format,
 * opening the shard `path` first when none is open (TIO_SAVE_NO_SYNC in
 * so->flags: not synced at close). members (recv --members): the sample is
 * named by the message's __key__ (one key, no '.' or '/'), what send
 * --members made of a member goes back to a member of its own (uint8 [n]
 * named by an extension no tensor format reads: its bytes; int64 [] under
 * an integer extension: its decimal text), __epoch is dropped, and the
 * other tensors, if any, are SAMPLE.EXT. */
int cli_shard_out_add(cli_shard_out *o, const char *path, uint64_t sample,
                      const tio_container *c, const tio_save_options *so, int members);
/* Closes (commits) the open shard, if any. */
int cli_shard_out_close(cli_shard_out *o);

/* ------------------------------------------------ LMDB stores (lmdb_cmds.c) */

/* tensio ls: a row per key (its record's bytes), or with tensors a row per
 * tensor of each record. */
int cli_lmdb_ls(const char *path, int tensors, int json, int hash, const tio_limits *lim,
                const cli_filter *f); /* f: --only/--exclude/--rename on keys, or NULL */
/* tensio info: the records' format, records, tensors and bytes. */
int cli_lmdb_info(const char *path, int json);
/* The record of key (tensio dump); the container keeps the store open. */
int cli_lmdb_open_record(const char *path, const char *key, tio_container **out);
/* Problems found: the store's, and every record that does not decode. */
size_t cli_lmdb_validate(const char *path, int verbose, json_t *files);
/* tensio convert IN OUT.lmdb: a tar shard (one record per sample) or one
 * file (one record, key = its name without extensions); to = the records'
 * format (NULL: the store's, tenbin for a new one). And IN.lmdb OUT.tar. f
 * (or NULL): --only/--exclude/--rename on what is read: a store's keys, a
 * shard's member names (no --rename: they are not kept), a file's tensors. */
int cli_lmdb_convert(const char *in, const char *from, const char *out, const char *to,
                     unsigned save_flags, int force, int verbose, int json,
                     const cli_filter *f);

#endif /* TENSIO_CLI_H */
