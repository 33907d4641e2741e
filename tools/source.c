/*
 * The kinds of source a command may be given, in one place: standard input
 * ("-"), a URL, a tar shard (a file, a stream, a list), an LMDB store; and
 * how a shard is opened. The commands ask here and never each other.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The same, ASCII letters of s in either case (suffix in lower case). */
static int ends_with_ci(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    if (n < k) return 0;
    for (size_t i = 0; i < k; i++) {
        char a = s[n - k + i], b = suffix[i];
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (a != b) return 0;
    }
    return 1;
}

/* Standard input to its end, in a buffer grown by doubling: 0, or -1 with
 * errno set (ENOMEM included). */
static int read_stdin(uint8_t **out, size_t *n) {
    size_t cap = 1u << 16, len = 0;
    uint8_t *b = malloc(cap);
    if (!b) return -1;
    for (;;) {
        if (len == cap) {
            uint8_t *nb = cap > SIZE_MAX / 2 ? NULL : realloc(b, cap * 2);
            if (!nb) {
                free(b);
                errno = ENOMEM;
                return -1;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(STDIN_FILENO, b + len, cap - len);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(b);
            errno = e;
            return -1;
        }
        if (r == 0) break;
        len += (size_t)r;
    }
    *out = b;
    *n = len;
    return 0;
}

/* Standard input can be read once per process: the bytes, once read (to
 * look for a tar header, then to open them), are kept for the process's
 * life. The CLI is one thread; this is its only such state. */
static struct {
    int done, err;
    uint8_t *buf;
    size_t n;
} stdin_bytes;

int cli_is_stdio(const char *path) { return path && strcmp(path, "-") == 0; }

int cli_is_url(const char *path) {
    return path && (strncasecmp(path, "http://", 7) == 0 || strncasecmp(path, "https://", 8) == 0);
}

int cli_stdin_bytes(const uint8_t **buf, size_t *n, tio_error *err) {
    if (!stdin_bytes.done) {
        stdin_bytes.done = 1;
        if (read_stdin(&stdin_bytes.buf, &stdin_bytes.n) != 0) stdin_bytes.err = errno;
    }
    if (stdin_bytes.err) {
        tio_error_clear(err);
        err->code = TIO_E_IO;
        snprintf(err->message, sizeof err->message, "standard input: cannot read: %s",
                 strerror(stdin_bytes.err));
        return TIO_E_IO;
    }
    *buf = stdin_bytes.buf;
    *n = stdin_bytes.n;
    return TIO_OK;
}

int cli_stdin_is_tar(void) {
    static const char magic[5] = {'u', 's', 't', 'a', 'r'};
    struct stat sb;
    char got[5];
    if (!stdin_bytes.done && fstat(STDIN_FILENO, &sb) == 0 && S_ISREG(sb.st_mode)) {
        /* a file: looked at where it stands, without moving its offset */
        off_t at = lseek(STDIN_FILENO, 0, SEEK_CUR);
        return at >= 0 && pread(STDIN_FILENO, got, sizeof got, at + 257) == (ssize_t)sizeof got &&
               memcmp(got, magic, sizeof magic) == 0;
    }
    const uint8_t *b;
    size_t n;
    tio_error err;
    if (cli_stdin_bytes(&b, &n, &err) != TIO_OK) return 0; /* the open reports it */
    return n >= 262 && memcmp(b + 257, magic, sizeof magic) == 0;
}

int cli_is_shard(const char *path, const char *format) {
    if (format || !path) return 0;
    if (strcmp(path, "-") == 0) return cli_stdin_is_tar();
    if (path[0] == '@' || strstr(path, "::@")) return 1; /* a shard list in a file */
    const char *sep = strstr(path, "::"); /* a list: as its first shard */
    if (sep) {
        char *first = strndup(path, (size_t)(sep - path));
        int shard = first && cli_is_shard(first, NULL);
        free(first);
        return shard;
    }
    /* a command's output: a file when the command ends with a tensor
     * format's extension ("pipe:curl -s URL/m.safetensors"), else a shard
     * ("pipe:aws s3 cp s3://b/shard-000.tar -") */
    if (strncmp(path, "pipe:", 5) == 0) {
        size_t n = strlen(path);
        while (n > 5 && strchr(" \t'\"", path[n - 1])) n--; /* quotes around the last word */
        char *cmd = strndup(path, n);
        int shard = cmd && !tio_format_for_path(cmd);
        free(cmd);
        return shard;
    }
    if (ends_with_ci(path, ".tar") || ends_with_ci(path, ".tar.gz") ||
        ends_with_ci(path, ".tgz") || ends_with_ci(path, ".tar.xz") ||
        ends_with_ci(path, ".tar.bz2") || ends_with_ci(path, ".tar.zst"))
        return 1;
    /* no tensor format's extension: a ustar header at the start? */
    if (tio_format_for_path(path)) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char magic[5];
    ssize_t got = pread(fd, magic, sizeof magic, 257);
    close(fd);
    return got == (ssize_t)sizeof magic && memcmp(magic, "ustar", 5) == 0;
}

int cli_shard_source(const char *path, const tio_limits *lim, tio_shard **s,
                     tio_shard_stream **st, tio_error *err) {
    *s = NULL;
    *st = NULL;
    tio_limits buf; /* the shard keeps a copy */
    lim = cli_limits(lim, &buf);
    if (cli_is_stdio(path)) {
        const uint8_t *b;
        size_t n;
        struct stat sb;
        if (fstat(STDIN_FILENO, &sb) == 0 && S_ISREG(sb.st_mode))
            return tio_shard_stream_open(path, lim, st, err);
        int rc = cli_stdin_bytes(&b, &n, err);
        return rc ? rc : tio_shard_open_memory(b, n, lim, s, err);
    }
    if (cli_is_url(path) || strncmp(path, "pipe:", 5) == 0)
        return tio_shard_stream_open(path, lim, st, err);
    return tio_shard_open(path, lim, s, err);
}

int cli_is_lmdb(const char *path) {
    if (!path || strcmp(path, "-") == 0) return 0;
    if (ends_with(path, ".lmdb") || ends_with(path, ".mdb")) return 1;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
    char *data = cli_strdup_printf("%s/data.mdb", path);
    int yes = data && stat(data, &st) == 0 && S_ISREG(st.st_mode);
    free(data);
    return yes;
}

int cli_is_shard_name(const char *path) {
    size_t n = path ? strlen(path) : 0;
    if (n < 4) return 0;
    const char *e = path + n - 4;
    return e[0] == '.' && (e[1] | 0x20) == 't' && (e[2] | 0x20) == 'a' && (e[3] | 0x20) == 'r';
}
