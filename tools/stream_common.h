/*
 * Pieces shared by `tensio send` and `tensio recv`: option values (socket
 * types, protocols, seconds, counts, --format-option, the conversion flags),
 * what a tensorcom URL scheme implies, and opening a stream with the
 * "bound ENDPOINT" line. Public API (tensio.h) only.
 */
#ifndef TENSIO_STREAM_COMMON_H
#define TENSIO_STREAM_COMMON_H

#include "cli.h"

/* What an endpoint's scheme says (the library parses the URL itself; the tool
 * only needs this to choose defaults and to say when it binds). */
typedef struct cli_scheme {
    int tensorcom;          /* zpush:// zpull:// zpub:// zsub:// or a zr* scheme */
    tio_socket_type socket; /* the scheme's socket, TIO_SOCKET_DEFAULT otherwise */
    int bind;               /* 1 the scheme binds, 0 it connects, -1 no choice */
    char name[16];          /* the scheme as written, lowercased ("zpush") */
} cli_scheme;

void cli_stream_scheme(const char *endpoint, cli_scheme *out);

/* Settles the socket a command uses: --socket (*socket, DEFAULT when not
 * given), else the tensorcom scheme's, else `dflt`. A scheme socket outside
 * `allowed` is a usage error naming `hint` (the schemes that fit). *socket
 * is set to the choice unless the scheme names it (the library reads it
 * then); *effective is the choice either way; *binds whether it binds. */
int cli_stream_settle(const char *cmd, const char *endpoint, int bind, int connect,
                      unsigned allowed, tio_socket_type dflt, const char *verb,
                      const char *hint, tio_socket_type *socket,
                      tio_socket_type *effective, int *binds, cli_scheme *sc);

/* "push", "pull", … for a socket type; "default" for TIO_SOCKET_DEFAULT. */
const char *cli_socket_name(tio_socket_type t);
/* Parses a socket name among the `allowed` ones (a mask of 1u << type).
 * Prints a usage error naming them and returns CLI_EXIT_USAGE otherwise. */
int cli_parse_socket(const char *cmd, const char *value, unsigned allowed,
                     tio_socket_type *out);
/* Parses --proto: zio, tensorcom, and auto when allow_auto. Prints a usage
 * error and returns CLI_EXIT_USAGE otherwise. */
int cli_parse_proto(const char *cmd, const char *value, int allow_auto, tio_proto *out);
/* "zio" / "tensorcom" / "auto". */
const char *cli_proto_name(tio_proto p);
/* The format name a protocol encodes with: "zio" or "tenbin". */
const char *cli_proto_format(tio_proto p);

/* Seconds (fractional, > 0) to milliseconds, rounded up, at most INT_MAX.
 * Returns CLI_EXIT_OK or a usage error. */
int cli_parse_seconds(const char *cmd, const char *option, const char *value, int *ms);
/* A decimal integer in [min, max]. Returns CLI_EXIT_OK or a usage error. */
int cli_parse_u64(const char *cmd, const char *option, const char *value, uint64_t min,
                  uint64_t max, uint64_t *out);

/* Collected --format-option K=V values, joined with commas. */
typedef struct cli_optlist {
    char *text; /* "k=v,k=v", or NULL when empty */
    size_t len;
} cli_optlist;

/* Checks K=V (K non-empty, no comma anywhere) and appends it. Returns
 * CLI_EXIT_OK, CLI_EXIT_USAGE (printed) or CLI_EXIT_FAIL (out of memory). */
int cli_optlist_add(cli_optlist *l, const char *cmd, const char *kv);
/* Whether key K is set. */
int cli_optlist_has(const cli_optlist *l, const char *key);
void cli_optlist_free(cli_optlist *l);

/* The conversion flags shared with `convert`: returns the TIO_SAVE_* flag an
 * option id stands for, or 0. */
enum {
    CLI_STREAM_OPT_DENSIFY = 1000,
    CLI_STREAM_OPT_DROP_NAMES,
    CLI_STREAM_OPT_DROP_METADATA,
    CLI_STREAM_OPT_WIDEN
};
unsigned cli_conversion_flag(int id);

/* Opens the stream; when it binds, prints "tensio CMD: bound ENDPOINT" on
 * stderr. A TIO_E_ARGUMENT refusal (a bad URL, a --socket that contradicts
 * the scheme) is a usage error (2), any other failure 1. */
int cli_stream_open(const char *cmd, const char *endpoint, const tio_stream_options *o,
                    int binds, tio_stream **out);

/* "tensio CMD: message" on stderr. Returns CLI_EXIT_FAIL. */
int cli_cmd_error(const char *cmd, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Stops on SIGINT / SIGTERM: installs handlers (without SA_RESTART, so a
 * blocking receive returns) that set the flag cli_stream_stopped() reads. */
void cli_stream_catch_signals(void);
int cli_stream_stopped(void);

#endif /* TENSIO_STREAM_COMMON_H */
