/* WebDataset shards read in one pass, member by member, from a file, a
 * command's standard output (pipe:COMMAND) or an http(s) URL (one streamed
 * GET through src/source/http.c, resumed with Range after a drop). One
 * buffer holds the member being handed out and its headers: memory is
 * bounded by the largest member and max_member_bytes. A compressed shard
 * (found by its magic) is decompressed as it is read (decompress.c).
 * docs/sources.md. */
#include "source/source.h"
#include "tar/tar.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FMT "tar"
#define FIRST_CAP ((size_t)1 << 16)
#define STREAM_BUF ((size_t)1 << 22) /* the buffer's size before it is compacted */
#define READ_MAX ((size_t)1 << 20)   /* bytes one read asks for */

typedef struct ext_slot {
    uint64_t h;
    char *s;
} ext_slot;

struct tio_shard_stream {
    char *label;       /* the source as messages name it */
    tio_limits lim;
    int fd;            /* a file or the command's stdout, or -1 */
    pid_t pid;         /* pipe: the command, or 0 */
    tio_http *h;       /* a URL, or NULL */
    uint8_t *buf;      /* stream bytes [base, base + len) */
    size_t cap, len, used; /* used: bytes of buf handed out already */
    uint64_t base;
    int eof, done;
    tio_shard_member m;
    char *name;        /* m's name and key */
    char *last_key;    /* the previous member's key (samples: runs of one key) */
    size_t samples;
    ext_slot *es;      /* the extensions of the current sample (m.duplicate) */
    size_t ecap, en;
    tio__tar_zs *z;    /* a compressed shard's decoder, or NULL */
};

/* Up to n bytes of the source into dst: *got 0 at its end. */
static int raw_read(void *ctx, uint8_t *dst, size_t n, size_t *got, tio_error *err) {
    tio_shard_stream *s = ctx;
    *got = 0;
    if (s->h) return tio__http_stream_read(s->h, dst, n, got, err);
    for (;;) {
        ssize_t r = read(s->fd, dst, n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return tio__err(err, TIO_E_IO, NULL, -1, "%s: read failed: %s", s->label,
                            strerror(errno));
        *got = (size_t)r;
        return TIO_OK;
    }
}

/* Up to n bytes of the tar: decompressed when it is compressed. */
static int src_read(tio_shard_stream *s, uint8_t *dst, size_t n, size_t *got, tio_error *err) {
    return s->z ? tio__tar_zs_read(s->z, dst, n, got, err) : raw_read(s, dst, n, got, err);
}

/* The command's exit (stopped first when stop): TIO_OK for status 0. */
static int reap(tio_shard_stream *s, int stop, tio_error *err) {
    int rc = tio__pipe_finish(s->fd, s->pid, stop, s->label, err);
    s->fd = -1;
    s->pid = 0;
    return rc;
}

/* A new sample: no extension seen yet (a large table from a sample of many
 * members is dropped, so that clearing stays O(members)). */
static void ext_reset(tio_shard_stream *s) {
    for (size_t i = 0; i < s->ecap; i++) free(s->es[i].s);
    if (s->ecap > 64) {
        free(s->es);
        s->es = NULL;
        s->ecap = 0;
    } else if (s->ecap) {
        memset(s->es, 0, s->ecap * sizeof *s->es);
    }
    s->en = 0;
}

/* Whether the current sample has a member with extension ext already (1),
 * or not (0, ext added); -1: out of memory. Open addressing, O(1). */
static int ext_seen(tio_shard_stream *s, const char *ext) {
    if (2 * (s->en + 1) > s->ecap) {
        size_t nc = s->ecap ? 2 * s->ecap : 16;
        ext_slot *t = calloc(nc, sizeof *t);
        if (!t) return -1;
        for (size_t i = 0; i < s->ecap; i++) {
            if (!s->es[i].s) continue;
            size_t j = (size_t)s->es[i].h & (nc - 1);
            while (t[j].s) j = (j + 1) & (nc - 1);
            t[j] = s->es[i];
        }
        free(s->es);
        s->es = t;
        s->ecap = nc;
    }
    uint64_t h = tio__shard_ext_hash(tio__hash_seed(s), ext);
    for (size_t i = (size_t)h & (s->ecap - 1);; i = (i + 1) & (s->ecap - 1)) {
        if (!s->es[i].s) {
            s->es[i].s = strdup(ext);
            if (!s->es[i].s) return -1;
            s->es[i].h = h;
            s->en++;
            return 0;
        }
        if (s->es[i].h == h && tio__shard_ext_cmp(s->es[i].s, ext) == 0) return 1;
    }
}

void tio_shard_stream_free(tio_shard_stream *s) {
    if (!s) return;
    (void)reap(s, 1, NULL); /* a command not read to its end is stopped */
    tio__http_free(s->h);
    tio__tar_zs_free(s->z);
    free(s->buf);
    free(s->name);
    free(s->last_key);
    free(s->label);
    ext_reset(s);
    free(s->es);
    free(s);
}

static int fill(tio_shard_stream *s, tio_error *err);

int tio_shard_stream_open(const char *source, const tio_limits *limits, tio_shard_stream **out,
                          tio_error *err) {
    if (!source || !out)
        return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_shard_stream_open: bad arguments");
    *out = NULL;
    tio_shard_stream *s = calloc(1, sizeof *s);
    if (!s) return tio__nomem(err, FMT);
    s->fd = -1;
    s->lim = tio__limits_resolve(limits);
    s->cap = FIRST_CAP;
    s->buf = malloc(s->cap);
    s->label = strdup(source);
    int rc = s->buf && s->label ? TIO_OK : tio__nomem(err, FMT);
    if (rc == TIO_OK && strncmp(source, "pipe:", 5) == 0) {
        rc = tio__pipe_start(source + 5, s->label, &s->fd, &s->pid, err);
    } else if (rc == TIO_OK && tio__is_url(source)) {
        rc = tio__http_new(source, &s->lim, &s->h, err);
        free(s->label);
        s->label = rc == TIO_OK ? strdup(tio__http_name(s->h)) : NULL;
        if (rc == TIO_OK && !s->label) rc = tio__nomem(err, FMT);
        if (rc == TIO_OK) rc = tio__http_stream_start(s->h, err);
        if (rc == TIO_OK) rc = fill(s, err); /* the answer checked at open (a 404 fails here) */
    } else if (rc == TIO_OK && strcmp(source, "-") == 0) { /* standard input, left open */
        s->fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
        if (s->fd < 0) rc = tio__err(err, TIO_E_IO, NULL, -1, "-: %s", strerror(errno));
    } else if (rc == TIO_OK) {
        const char *path = strncmp(source, "file:", 5) == 0 ? source + 5 : source;
        s->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (s->fd < 0) rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: %s", path, strerror(errno));
    }
    if (rc) {
        tio_shard_stream_free(s);
        return rc;
    }
    *out = s;
    return TIO_OK;
}

static int too_large(const tio_shard_stream *s, tio_error *err) {
    return tio__err(err, TIO_E_LIMIT, FMT, (int64_t)s->base,
                    "%s: a member and its headers take more than max_member_bytes (%" PRIu64
                    ")", s->label, s->lim.max_member_bytes);
}

/* Doubles the buffer, up to the limit. */
static int grow(tio_shard_stream *s, uint64_t limit, tio_error *err) {
    uint64_t nc = (uint64_t)s->cap * 2 > limit ? limit : (uint64_t)s->cap * 2;
    if (nc > SIZE_MAX) nc = SIZE_MAX;
    uint8_t *nb = realloc(s->buf, (size_t)nc);
    if (!nb) return tio__nomem(err, FMT);
    s->buf = nb;
    s->cap = (size_t)nc;
    return TIO_OK;
}

/* More bytes into the buffer. What was handed out already is dropped from
 * its front when the partial member after it is small beside it (at most
 * 1/8: the bytes moved are at most 1/8 of the bytes read; after a large
 * member that is at once), or when little room is left at its end and the
 * buffer has its working size (STREAM_BUF, or max_member_bytes); otherwise
 * the buffer grows, up to max_member_bytes. */
static int fill(tio_shard_stream *s, tio_error *err) {
    uint64_t limit = s->lim.max_member_bytes;
    int rc = TIO_OK;
    size_t rest = s->len - s->used; /* a partial member */
    if (s->used && (rest <= s->used / 8 || (s->cap - s->len < FIRST_CAP &&
                                            (s->cap >= STREAM_BUF || s->cap >= limit)))) {
        memmove(s->buf, s->buf + s->used, s->len - s->used);
        s->len -= s->used;
        s->base += s->used;
        s->used = 0;
    }
    if (s->cap - s->len < FIRST_CAP && s->cap < limit) rc = grow(s, limit, err); /* no tiny reads */
    if (rc == TIO_OK && s->len == s->cap) rc = too_large(s, err); /* used is 0: cap >= limit */
    if (rc) return rc;
    size_t got, room = s->cap - s->len;
    /* at most READ_MAX at a time: what is read past a member is moved with it */
    rc = src_read(s, s->buf + s->len, room < READ_MAX ? room : READ_MAX, &got, err);
    if (rc) return rc;
    s->len += got;
    if (!got) s->eof = 1;
    return TIO_OK;
}

/* An error of the tar reader: the source named; a command that failed
 * says so instead (its output was cut short for a reason). */
static int stream_error(tio_shard_stream *s, int rc, const tio_error *terr, tio_error *err) {
    tio_error cmd;
    /* a command whose output is not wanted any more is stopped */
    if (reap(s, !s->eof, &cmd) != TIO_OK && s->eof) {
        if (err) *err = cmd;
        return cmd.code;
    }
    char msg[TIO_ERROR_MESSAGE_MAX];
    snprintf(msg, sizeof msg, "%s", terr->message);
    const char *m = msg;
    size_t fl = strlen(FMT ": ");
    if (strncmp(m, FMT ": ", fl) == 0) m += fl; /* tio__err puts it back */
    const char *o = strncmp(m, "offset ", 7) == 0 ? strstr(m, ": ") : NULL;
    if (o) m = o + 2;
    return tio__err(err, rc, FMT, terr->offset, "%s (in %s, read as a stream)", m, s->label);
}

int tio_shard_stream_next(tio_shard_stream *s, const tio_shard_member **out, tio_error *err) {
    if (!s || !out) return tio__err(err, TIO_E_ARGUMENT, FMT, -1, "tio_shard_stream_next: bad arguments");
    *out = NULL;
    if (s->done) return TIO_OK;
    for (;;) { /* the members from buf + used (stream offset base + used) on */
        tio_cursor cur;
        uint8_t *at = s->buf + s->used;
        tio__cursor_init(&cur, at, s->len - s->used, FMT);
        tio_tar_entry e;
        int done = 0;
        tio_error terr;
        int rc;
        const char *z =
            s->base + s->used == 0 && !s->z ? tio__tar_compression(at, s->len - s->used) : NULL;
        if (z) { /* the bytes read so far go to the decoder first */
            rc = tio__tar_zs_new(z, s->lim.max_member_bytes, s->label, raw_read, s, at,
                                 s->len - s->used, &s->z, err);
            s->len = s->used = 0;
            if (rc == TIO_OK) continue;
            s->done = 1;
            return rc;
        }
        rc = tio__tar_next(&cur, s->base + s->used, &s->lim, &e, &done, &terr);
        if (rc == TIO_OK && done) {
            s->done = 1;
            /* the rest (the second zero block, the record's padding) drained,
             * so that the command is not killed writing it; bounded */
            uint64_t drained = 0;
            while (s->pid && !s->eof && rc == TIO_OK) {
                s->len = s->used = 0;
                rc = fill(s, err);
                drained += s->len;
                if (drained > s->lim.max_header_bytes)
                    rc = tio__err(err, TIO_E_LIMIT, FMT, -1, "%s: more than max_header_bytes "
                                  "after the end-of-archive block", s->label);
            }
            s->len = 0;
            int rr = reap(s, 0, rc ? NULL : err);
            return rc ? rc : rr;
        }
        if (rc == TIO_OK && cur.pos > s->lim.max_member_bytes) { /* fit in a larger buffer */
            free(e.name);
            s->done = 1;
            return too_large(s, err);
        }
        if (rc == TIO_OK) {
            free(s->name);
            s->name = realloc(e.name, 2 * e.name_len + 2); /* room for the key */
            if (!s->name) {
                free(e.name);
                return tio__nomem(err, FMT);
            }
            memset(&s->m, 0, sizeof s->m);
            s->m.name = s->name;
            s->m.offset = s->base + s->used + e.offset;
            s->m.size = e.size;
            s->m.data = at + e.offset;
            s->m.sample = 0;
            tio__shard_split_name(&s->m, e.name_len);
            if (s->m.sample != TIO_SHARD_NONE) { /* a run of one key is one sample */
                if (!s->last_key || strcmp(s->last_key, s->m.key) != 0) {
                    s->samples++;
                    free(s->last_key);
                    s->last_key = strdup(s->m.key);
                    if (!s->last_key) return tio__nomem(err, FMT);
                    ext_reset(s);
                }
                s->m.sample = s->samples - 1;
                int dup = ext_seen(s, s->m.ext);
                if (dup < 0) return tio__nomem(err, FMT);
                s->m.duplicate = dup;
            }
            s->used += cur.pos;
            *out = &s->m;
            return TIO_OK;
        }
        /* the bytes at hand end inside a header or a member: more, unless
         * the source has ended (then the error stands) */
        if ((terr.code != TIO_E_TRUNCATED && terr.code != TIO_E_BOUNDS) || s->eof) {
            s->done = 1;
            return stream_error(s, rc, &terr, err);
        }
        rc = fill(s, err);
        if (rc) {
            s->done = 1;
            return rc;
        }
    }
}

size_t tio_shard_stream_samples(const tio_shard_stream *s) { return s ? s->samples : 0; }
