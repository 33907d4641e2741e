/* tensio extract — write the members of a WebDataset shard as files. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char extract_help[] =
    "Usage: tensio extract [OPTIONS] SHARD DIR\n"
    "\n"
    "Write every member of the WebDataset shard SHARD (an uncompressed .tar) as a\n"
    "file under DIR (created if missing), at the member's path. Each file is\n"
    "written atomically (a temporary file renamed into place). A member whose\n"
    "path would leave DIR (absolute, a '..' component) is refused, and so is a\n"
    "path through a symbolic link: no file is written outside DIR. An existing\n"
    "file is not replaced unless --force. Exit status 1 if any member was not\n"
    "written (the others are).\n"
    "\n"
    "Options:\n"
    "      --member-to FMT\n"
    "                      write every tensor member (by its extension) in format\n"
    "                      FMT (a name, or an extension: ten, zmsg), its last\n"
    "                      extension replaced by FMT's; other members are written\n"
    "                      as they are\n"
    "      --densify       write sparse (COO) tensors as dense tensors\n"
    "      --drop-names    drop tensor names FMT cannot hold\n"
    "      --drop-metadata\n"
    "                      drop metadata FMT cannot hold\n"
    "      --widen         store dtypes FMT lacks in a wider dtype that holds every\n"
    "                      value exactly\n"
    "      --dequantize    write block-quantized tensors as float32\n"
    "      --force         replace existing files\n"
    "      --no-sync       do not fsync the files and their directories\n"
    "  -v, --verbose       print a line per file written\n"
    "  -h, --help          show this help and exit\n";

enum {
    OPT_HELP = 1,
    OPT_MEMBER_TO,
    OPT_DENSIFY,
    OPT_DROP_NAMES,
    OPT_DROP_METADATA,
    OPT_WIDEN,
    OPT_DEQUANTIZE,
    OPT_FORCE,
    OPT_NO_SYNC,
    OPT_VERBOSE
};

static const cli_option extract_opts[] = {
    {"help", 'h', 0, OPT_HELP},
    {"member-to", 0, 1, OPT_MEMBER_TO},
    {"densify", 0, 0, OPT_DENSIFY},
    {"drop-names", 0, 0, OPT_DROP_NAMES},
    {"drop-metadata", 0, 0, OPT_DROP_METADATA},
    {"widen", 0, 0, OPT_WIDEN},
    {"dequantize", 0, 0, OPT_DEQUANTIZE},
    {"force", 0, 0, OPT_FORCE},
    {"no-sync", 0, 0, OPT_NO_SYNC},
    {"verbose", 'v', 0, OPT_VERBOSE},
};

typedef struct extract_ctx {
    int dir_fd;
    int force, sync, verbose;
    const char *dir;
    unsigned long seq; /* temporary names */
} extract_ctx;

/* The directory that will hold `rel` (its components but the last, created
 * as needed under x->dir_fd, never through a symbolic link): a new fd, or
 * -1 with errno set. *base gets rel's last component. */
static int open_parent(const extract_ctx *x, char *rel, const char **base) {
    int fd = dup(x->dir_fd);
    char *c = rel;
    for (char *slash; fd >= 0 && (slash = strchr(c, '/'));) {
        *slash = 0;
        if (*c && strcmp(c, ".") != 0) { /* "" and "." stay where they are */
            if (mkdirat(fd, c, 0777) != 0 && errno != EEXIST) {
                int e = errno;
                close(fd);
                errno = e;
                return -1;
            }
            int next = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            int e = errno;
            close(fd);
            errno = e;
            fd = next;
        }
        *slash = '/';
        c = slash + 1;
    }
    *base = c;
    return fd;
}

static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Writes data as `name` under x->dir: a temporary file in its directory,
 * then linked (no --force: fails if the name exists) or renamed into place.
 * Returns 0 or an errno; *what names the step. */
static int put_file(extract_ctx *x, const char *name, const void *data, size_t size,
                    const char **what) {
    char *rel = strdup(name);
    if (!rel) return ENOMEM;
    const char *base = NULL;
    *what = "cannot create its directory";
    int pfd = open_parent(x, rel, &base);
    if (pfd < 0) {
        int e = errno == ELOOP || errno == ENOTDIR ? ENOTDIR : errno;
        *what = e == ENOTDIR ? "a component of its path is a symbolic link or a file"
                             : "cannot create its directory";
        free(rel);
        return e;
    }
    char tmp[300];
    int fd = -1, e = 0;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        unsigned long long u = ((unsigned long long)ts.tv_nsec << 20) ^
                               (x->seq++ * 0x9e3779b97f4a7c15ull) ^ (unsigned long long)ts.tv_sec;
        snprintf(tmp, sizeof tmp, ".%.200s.tio-%ld-%016llx.tmp", base, (long)getpid(), u);
        fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        e = errno;
        *what = "cannot create a temporary file";
    } else {
        if (write_all(fd, data, size) != 0) {
            e = errno ? errno : EIO;
            *what = "write failed";
        } else if (x->sync && fsync(fd) != 0) {
            e = errno;
            *what = "fsync failed";
        }
        if (close(fd) != 0 && !e) {
            e = errno;
            *what = "close failed";
        }
        if (!e && x->force && renameat(pfd, tmp, pfd, base) != 0) {
            e = errno;
            *what = "cannot rename the temporary file into place";
        } else if (!e && !x->force && linkat(pfd, tmp, pfd, base, 0) != 0) {
            e = errno;
            *what = e == EEXIST ? "already exists (use --force to replace it)"
                                : "cannot link the temporary file into place";
        }
        if (e || !x->force) unlinkat(pfd, tmp, 0);
        if (!e && x->sync) fsync(pfd);
    }
    close(pfd);
    free(rel);
    return e;
}

static int extract(extract_ctx *x, const char *path, tio_shard *s, const cli_reencode *how) {
    size_t n = tio_shard_member_count(s), failed = 0;
    for (size_t i = 0; i < n; i++) {
        const void *data = NULL;
        void *owned = NULL;
        size_t size = 0;
        char *name = NULL;
        tio_error err;
        tio_error_clear(&err);
        if (cli_shard_member_bytes(path, s, i, NULL, how, &data, &size, &owned, &name) !=
            CLI_EXIT_OK) {
            failed++;
            continue;
        }
        char *en = cli_text_escape(name);
        if (tio_shard_check_name(name, &err) != TIO_OK) {
            cli_error("%s: refusing member %s: %s", x->dir, en ? en : "?", cli_errmsg(&err));
            failed++;
        } else {
            const char *what = "";
            int e = put_file(x, name, data, size, &what);
            if (e == EEXIST && !x->force)
                cli_error("%s/%s: %s", x->dir, en ? en : "?", what);
            else if (e)
                cli_error("%s/%s: %s: %s", x->dir, en ? en : "?", what, strerror(e));
            else if (x->verbose)
                printf("%s/%s\n", x->dir, en ? en : "?");
            failed += e != 0;
        }
        free(en);
        free(name);
        tio_free(owned);
    }
    if (failed) cli_error("%s: %zu of %zu members not written", path, failed, n);
    return failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cli_cmd_extract(int argc, char **argv) {
    cli_parser p;
    int rc = cli_parser_init(&p, "extract", argc, argv, extract_opts,
                             sizeof extract_opts / sizeof extract_opts[0]);
    if (rc != CLI_EXIT_OK) return rc;
    cli_reencode how;
    memset(&how, 0, sizeof how);
    extract_ctx x;
    memset(&x, 0, sizeof x);
    x.sync = 1;
    int id;
    while ((id = cli_parser_next(&p)) > 0) {
        switch (id) {
        case OPT_HELP:
            fputs(extract_help, stdout);
            cli_parser_free(&p);
            return CLI_EXIT_OK;
        case OPT_MEMBER_TO: how.format = p.value; break;
        case OPT_DENSIFY: how.flags |= TIO_SAVE_DENSIFY; break;
        case OPT_DROP_NAMES: how.flags |= TIO_SAVE_DROP_NAMES; break;
        case OPT_DROP_METADATA: how.flags |= TIO_SAVE_DROP_METADATA; break;
        case OPT_WIDEN: how.flags |= TIO_SAVE_WIDEN; break;
        case OPT_DEQUANTIZE: how.flags |= TIO_SAVE_DEQUANTIZE; break;
        case OPT_FORCE: x.force = 1; break;
        case OPT_NO_SYNC: x.sync = 0; break;
        case OPT_VERBOSE: x.verbose = 1; break;
        default: break;
        }
    }
    if (id == CLI_PARSE_ERROR)
        rc = CLI_EXIT_USAGE;
    else if (p.npos != 2)
        rc = cli_usage_error("extract", p.npos < 2 ? "expected SHARD and DIR"
                                                   : "too many arguments (expected SHARD DIR)");
    else if (how.format && !(how.format = cli_member_format("extract", how.format)))
        rc = CLI_EXIT_USAGE;
    const char *path = rc == CLI_EXIT_OK ? p.pos[0] : NULL;
    x.dir = rc == CLI_EXIT_OK ? p.pos[1] : NULL;
    cli_parser_free(&p);
    if (rc != CLI_EXIT_OK) return rc;

    tio_shard *s = NULL;
    tio_error err;
    tio_error_clear(&err);
    tio_limits lim;
    if (tio_shard_open(path, cli_limits(NULL, &lim), &s, &err) != TIO_OK) {
        char *ep = cli_text_escape(path);
        rc = err.code == TIO_E_IO ? cli_error("%s", cli_errmsg(&err))
                                  : cli_error("%s: %s", ep ? ep : path, cli_errmsg(&err));
        free(ep);
        cli_limit_hint(&err);
        return rc;
    }
    if (mkdir(x.dir, 0777) != 0 && errno != EEXIST) {
        rc = cli_error("%s: cannot create the directory: %s", x.dir, strerror(errno));
    } else {
        x.dir_fd = open(x.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (x.dir_fd < 0) rc = cli_error("%s: %s", x.dir, strerror(errno));
    }
    if (rc == CLI_EXIT_OK) {
        rc = extract(&x, path, s, &how);
        close(x.dir_fd);
    }
    tio_shard_free(s);
    return rc;
}
