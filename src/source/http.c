/* HTTP(S) through libcurl: range requests over one easy handle, every
 * response checked against what was asked (status, Content-Range, size,
 * ETag, body length), dropped transfers resumed with Range. */
#include "source/source.h"

#include "source/curl_api.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HTTP_TAG_MAX 128 /* an ETag longer than this is compared by its prefix */
#define HTTP_STREAM_BUFFER (256 * 1024) /* libcurl's receive buffer for a stream */
#define STREAM_MIN_READ ((size_t)256 * 1024) /* a stream read waits for this much */

/* What one response said, reset at each status line (a redirect's too). */
typedef struct http_resp {
    long status;
    int have_range;             /* a Content-Range header */
    uint64_t r_start, r_end;    /* bytes r_start-r_end/... (r_end inclusive) */
    int have_total;             /* its /total was a number */
    uint64_t r_total;
    int have_length;
    uint64_t length;            /* Content-Length */
    char etag[HTTP_TAG_MAX];
} http_resp;

struct tio_http {
    const tio_curl_api *cu;     /* libcurl's functions (curl_api.h) */
    CURL *curl;
    char *url;
    char *name;                 /* url without user info, for messages */
    uint64_t max_bytes;
    uint32_t max_retries;
    uint64_t size;
    int size_known, ranges;
    char etag[HTTP_TAG_MAX];    /* the first response's, "" when none */
    uint64_t received;
    /* the transfer under way */
    http_resp resp;
    int checked;                /* the response was checked at its first body byte */
    int first;                  /* tio__http_first: a 200 may carry the whole file */
    uint64_t off, want;         /* asked: [off, off+want) */
    uint8_t *dst;               /* where body bytes go */
    uint64_t cap, got;          /* dst's bytes; body bytes taken */
    uint64_t expect;            /* body bytes the request ends at (UINT64_MAX: the close) */
    int grow;                   /* dst is malloc'ed and may grow to max_bytes (a 200) */
    int fail;                   /* a callback refused the response: permanent */
    int fail_code;
    char why[200];
    /* a streamed GET (tio__http_stream_*): got counts body bytes taken, from 0 */
    CURLM *multi;               /* NULL until the stream starts */
    int streaming, attached, s_end, s_paused;
    uint64_t s_skip;            /* bytes still to drop of a 200 to a resumption */
    uint32_t s_tries;
    uint8_t *rdst;              /* the reader's buffer during a read */
    size_t rn, rgot;
    uint8_t *spill;             /* bytes of a callback past the reader's buffer */
    size_t spill_cap, spill_len, spill_at;
};

int tio__is_url(const char *path) {
    return path && (strncasecmp(path, "http://", 7) == 0 || strncasecmp(path, "https://", 8) == 0);
}

const char *tio__http_name(const tio_http *h) { return h->name; }
uint64_t tio__http_size(const tio_http *h) { return h->size; }
int tio__http_ranges(const tio_http *h) { return h->ranges; }
uint64_t tio__http_received(const tio_http *h) { return h->received; }

/* The URL without "user:password@" (messages must not show credentials). */
static char *url_name(const char *url) {
    const char *s = strstr(url, "://");
    const char *host = s ? s + 3 : url;
    size_t hl = strcspn(host, "/?#");
    const char *at = memchr(host, '@', hl);
    if (!at) return strdup(url);
    size_t pre = (size_t)(host - url), rest = strlen(at + 1);
    char *n = malloc(pre + rest + 1);
    if (!n) return NULL;
    memcpy(n, url, pre);
    memcpy(n + pre, at + 1, rest + 1);
    return n;
}

static int parse_u64(const char *s, const char *end, uint64_t *v, const char **next) {
    uint64_t x = 0;
    const char *p = s;
    while (p < end && *p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (x > (UINT64_MAX - d) / 10) return -1;
        x = x * 10 + d;
        p++;
    }
    if (p == s) return -1;
    *v = x;
    *next = p;
    return 0;
}

/* Whether the header line [p, end) is `name:`; *val is its value, trimmed. */
static int header_is(const char *p, const char *end, const char *name, const char **val,
                     const char **vend) {
    size_t n = strlen(name);
    if ((size_t)(end - p) <= n || strncasecmp(p, name, n) != 0 || p[n] != ':') return 0;
    const char *v = p + n + 1;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    const char *e = end;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t')) e--;
    *val = v;
    *vend = e;
    return 1;
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud) {
    tio_http *h = ud;
    size_t len = size * n;
    const char *p = buf, *end = buf + len, *v, *ve;
    http_resp *r = &h->resp;
    if (len > 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new response (after a redirect) */
        memset(r, 0, sizeof *r);
        const char *sp = memchr(p, ' ', len);
        uint64_t code;
        const char *nx;
        if (sp && parse_u64(sp + 1, end, &code, &nx) == 0 && code < 1000) r->status = (long)code;
        return len;
    }
    if (header_is(p, end, "content-range", &v, &ve)) {
        /* "bytes S-E/T", "bytes S-E/(star)" or "bytes (star)/T" */
        if (ve - v > 6 && strncasecmp(v, "bytes ", 6) == 0) {
            const char *q = v + 6, *nx;
            if (*q == '*') {
                nx = q + 1;
            } else if (parse_u64(q, ve, &r->r_start, &nx) == 0 && nx < ve && *nx == '-' &&
                       parse_u64(nx + 1, ve, &r->r_end, &nx) == 0 && r->r_end >= r->r_start) {
                r->have_range = 1;
            } else {
                return len; /* unreadable: as if absent (checked below) */
            }
            if (nx < ve && *nx == '/' && parse_u64(nx + 1, ve, &r->r_total, &nx) == 0 && nx == ve)
                r->have_total = 1;
        }
    } else if (header_is(p, end, "content-length", &v, &ve)) {
        const char *nx;
        if (parse_u64(v, ve, &r->length, &nx) == 0 && nx == ve) r->have_length = 1;
    } else if (header_is(p, end, "etag", &v, &ve)) {
        size_t el = (size_t)(ve - v);
        if (el >= sizeof r->etag) el = sizeof r->etag - 1;
        memcpy(r->etag, v, el);
        r->etag[el] = '\0';
    }
    return len;
}

static size_t refuse(tio_http *h, int code, const char *fmt, ...) TIO_PRINTF(3, 4);
static size_t refuse(tio_http *h, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->why, sizeof h->why, fmt, ap);
    va_end(ap);
    h->fail = 1;
    h->fail_code = code;
    return 0; /* curl stops: CURLE_WRITE_ERROR */
}

/* The response, at its first body byte: the status and range it must have. */
static size_t check_response(tio_http *h) {
    const http_resp *r = &h->resp;
    if (r->status >= 300 || r->status < 200) return 0; /* reported after the transfer */
    if (h->first && r->status == 200) { /* no ranges: the whole file, once */
        if (r->have_length && r->length > h->max_bytes)
            return refuse(h, TIO_E_LIMIT,
                          "the body is %" PRIu64 " bytes, above the limit (max_remote_bytes %"
                          PRIu64 ")", r->length, h->max_bytes);
        h->grow = 1;
        h->expect = r->have_length ? r->length : UINT64_MAX;
        return 1;
    }
    if (r->status != 206)
        return refuse(h, TIO_E_IO, "HTTP %ld to a range request for bytes %" PRIu64 "-%" PRIu64
                      " (expected 206 Partial Content)", r->status, h->off,
                      h->off + h->want - 1);
    if (!r->have_range || !r->have_total)
        return refuse(h, TIO_E_IO, "a 206 response without a complete Content-Range");
    if (r->have_length && r->length != r->r_end - r->r_start + 1)
        return refuse(h, TIO_E_IO, "Content-Length %" PRIu64 " disagrees with Content-Range "
                      "bytes %" PRIu64 "-%" PRIu64, r->length, r->r_start, r->r_end);
    if (h->size_known && r->r_total != h->size)
        return refuse(h, TIO_E_IO, "the file's size changed from %" PRIu64 " to %" PRIu64
                      " bytes between requests", h->size, r->r_total);
    if (h->size_known && h->etag[0] && r->etag[0] && strcmp(h->etag, r->etag) != 0)
        return refuse(h, TIO_E_IO, "the file changed between requests (ETag %s, then %s)",
                      h->etag, r->etag);
    uint64_t at = h->off + h->got;
    if (r->r_start != at || r->r_end > r->r_total - 1 ||
        (!h->first && r->r_end != h->off + h->want - 1))
        return refuse(h, TIO_E_IO, "asked for bytes %" PRIu64 "-%" PRIu64 ", the server sent "
                      "bytes %" PRIu64 "-%" PRIu64, at, h->off + h->want - 1, r->r_start,
                      r->r_end);
    h->expect = r->r_end + 1 - h->off; /* the first request: the file may be shorter */
    return 1;
}

static size_t on_stream_body(tio_http *h, const char *buf, size_t len);

static size_t on_body(char *buf, size_t size, size_t n, void *ud) {
    tio_http *h = ud;
    size_t len = size * n;
    if (h->streaming) return on_stream_body(h, buf, len);
    if (!h->checked) {
        if (check_response(h) == 0) return 0;
        h->checked = 1;
    }
    h->received += len;
    if (h->grow) {
        if (len > h->max_bytes - h->got)
            return refuse(h, TIO_E_LIMIT, "the body passed %" PRIu64 " bytes "
                          "(max_remote_bytes)", h->max_bytes);
        if (h->got + len > h->cap) {
            uint64_t nc = h->cap ? h->cap : 1u << 16;
            while (nc < h->got + len) nc = nc > h->max_bytes / 2 ? h->max_bytes : nc * 2;
            if (h->resp.have_length && h->resp.length >= h->got + len && nc > h->resp.length)
                nc = h->resp.length;
            if (nc > SIZE_MAX) return refuse(h, TIO_E_LIMIT, "the body does not fit in memory");
            uint8_t *nb = realloc(h->dst, (size_t)nc);
            if (!nb) return refuse(h, TIO_E_NOMEM, "out of memory for the body");
            h->dst = nb;
            h->cap = nc;
        }
    } else if (len > h->cap - h->got) {
        return refuse(h, TIO_E_IO, "the server sent more than the %" PRIu64 " bytes asked for",
                      h->cap);
    }
    memcpy(h->dst + h->got, buf, len);
    h->got += len;
    return len;
}

int tio__http_new(const char *url, const tio_limits *limits, tio_http **out, tio_error *err) {
    *out = NULL;
    tio_http *h = calloc(1, sizeof *h);
    if (!h) return tio__nomem(err, NULL);
    h->cu = tio__curl(err);
    if (!h->cu) {
        free(h);
        return TIO_E_IO; /* tio__curl said why */
    }
    /* thread-safe and reference-counted in libcurl >= 7.84 (Debian 12 has 7.88) */
    if (h->cu->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        free(h);
        return tio__err(err, TIO_E_IO, NULL, -1, "libcurl cannot be initialised");
    }
    h->url = strdup(url);
    h->name = url_name(url);
    h->curl = h->cu->easy_init();
    if (!h->url || !h->name || !h->curl) {
        tio__http_free(h);
        return tio__nomem(err, NULL);
    }
    h->max_bytes = limits->max_remote_bytes;
    h->max_retries = limits->max_retries;
    long tmo = (long)limits->timeout_ms;
    long stall = tmo >= 1000 ? tmo / 1000 : 1;
    CURL *c = h->curl;
    int bad = h->cu->easy_setopt(c, CURLOPT_URL, h->url) != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L) != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_MAXREDIRS, (long)limits->max_redirects) != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, tmo) != CURLE_OK;
    /* a stall, not a slow large file: less than 1 byte/s for that long */
    bad |= h->cu->easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L) != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall) != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    /* bytes as stored: a Content-Encoding would change offsets */
    bad |= h->cu->easy_setopt(c, CURLOPT_HTTP_CONTENT_DECODING, 0L) != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header) != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_HEADERDATA, h) != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_WRITEDATA, h) != CURLE_OK;
    bad |= h->cu->easy_setopt(c, CURLOPT_USERAGENT, "tensio") != CURLE_OK;
    if (bad) {
        tio__http_free(h);
        return tio__err(err, TIO_E_IO, NULL, -1, "libcurl refused an option (http/https)");
    }
    *out = h;
    return TIO_OK;
}

void tio__http_free(tio_http *h) {
    if (!h) return;
    if (h->multi) {
        if (h->attached) h->cu->multi_remove_handle(h->multi, h->curl);
        h->cu->multi_cleanup(h->multi);
    }
    free(h->spill);
    if (h->curl) h->cu->easy_cleanup(h->curl);
    free(h->url);
    free(h->name);
    const tio_curl_api *cu = h->cu;
    free(h);
    cu->global_cleanup();
}

/* Whether a failed transfer is worth resuming: the connection, not the
 * answer, failed. */
static int transient(CURLcode rc) {
    return rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
           rc == CURLE_GOT_NOTHING || rc == CURLE_OPERATION_TIMEDOUT ||
           rc == CURLE_HTTP2_STREAM || rc == CURLE_HTTP2;
}

/* One transfer of [off + got, off + want), appended at dst + got. */
static CURLcode transfer(tio_http *h) {
    char range[64];
    uint64_t from = h->off + h->got, to = h->off + h->want - 1;
    snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, from, to);
    memset(&h->resp, 0, sizeof h->resp);
    h->checked = 0;
    if (h->cu->easy_setopt(h->curl, CURLOPT_RANGE, range) != CURLE_OK) return CURLE_FAILED_INIT;
    return h->cu->easy_perform(h->curl);
}

static size_t check_stream(tio_http *h);

/* What a transfer's end means: TIO_OK with *again 0 when the request is
 * complete, 1 when it is to be resumed (tries so far: tries), or the
 * error naming the URL. */
static int settle(tio_http *h, CURLcode rc, uint32_t tries, int *again, tio_error *err) {
    const http_resp *r = &h->resp;
    *again = 0;
    if (rc == CURLE_OK && !h->checked && !h->fail && r->status < 300) /* an empty body: */
        (void)(h->streaming ? check_stream(h) : check_response(h)); /* no byte checked it */
    if (h->fail) return tio__err(err, h->fail_code, NULL, -1, "%s: %s", h->name, h->why);
    if (h->streaming && r->status == 416 && h->expect != UINT64_MAX && h->got == h->expect)
        return TIO_OK; /* resumed at the very end */
    if ((rc == CURLE_OK || rc == CURLE_WRITE_ERROR) && r->status >= 300)
        return tio__err(err, TIO_E_IO, NULL, -1, "%s: HTTP %ld%s", h->name, r->status,
                        r->status < 400 ? " (a redirect past max_redirects or without a "
                                          "Location)" : "");
    if (rc == CURLE_TOO_MANY_REDIRECTS)
        return tio__err(err, TIO_E_LIMIT, NULL, -1, "%s: more redirects than the limit "
                        "(max_redirects)", h->name);
    if (rc == CURLE_OK && (h->got >= h->expect || h->expect == UINT64_MAX)) return TIO_OK;
    if (rc != CURLE_OK && !transient(rc))
        return tio__err(err, rc == CURLE_OPERATION_TIMEDOUT ? TIO_E_TIMEOUT : TIO_E_IO, NULL,
                        -1, "%s: %s", h->name, h->cu->easy_strerror(rc));
    /* dropped, stalled or short: resume where it stopped */
    if (tries >= h->max_retries) {
        const char *what = rc == CURLE_OK ? "the body ended early" : h->cu->easy_strerror(rc);
        char total[32] = "?";
        if (h->expect != UINT64_MAX) snprintf(total, sizeof total, "%" PRIu64, h->expect);
        return tio__err(err, rc == CURLE_OPERATION_TIMEDOUT ? TIO_E_TIMEOUT : TIO_E_IO, NULL,
                        (int64_t)(h->off + h->got),
                        "%s: %s after %" PRIu64 " of %s bytes (from offset %" PRIu64 "), %u "
                        "retr%s", h->name, what, h->got, total, h->off, tries,
                        tries == 1 ? "y" : "ies");
    }
    *again = 1;
    return TIO_OK;
}

/* Runs the request set up in h (off, want, dst/cap, first) to its end:
 * resumed after a drop, at most max_retries times. */
static int request(tio_http *h, tio_error *err) {
    uint32_t tries = 0;
    h->fail = 0;
    h->expect = h->want;
    for (;;) {
        int again, rc = settle(h, transfer(h), tries, &again, err);
        if (rc != TIO_OK || !again) return rc;
        tries++;
        if (h->grow) h->got = 0; /* no ranges: start again */
    }
}

/* Sets up a request for [off, off+len) into dst (cap bytes). */
static void setup(tio_http *h, int first, uint64_t off, uint64_t len, uint8_t *dst) {
    h->first = first;
    h->off = off;
    h->want = h->cap = len;
    h->dst = dst;
    h->got = 0;
    h->grow = 0;
}

int tio__http_first(tio_http *h, uint64_t want, uint8_t **buf, uint64_t *got,
                    tio_error *err) {
    *buf = NULL;
    *got = 0;
    if (want == 0) want = 1;
    uint8_t *b0 = malloc((size_t)want);
    if (!b0) return tio__nomem(err, NULL);
    setup(h, 1, 0, want, b0);
    int rc = request(h, err);
    uint8_t *b = h->dst; /* grown by a 200 carrying the whole file */
    const http_resp *r = &h->resp;
    h->dst = NULL;
    h->first = 0;
    if (rc != TIO_OK && !h->fail && r->status == 416 && r->have_total && r->r_total == 0) {
        rc = TIO_OK; /* an empty file: no byte 0 to send */
        h->got = 0;
        h->size = 0;
        h->ranges = 1;
    } else if (rc == TIO_OK && h->grow) {
        h->size = h->got;
        h->ranges = 0;
    } else if (rc == TIO_OK) {
        h->size = r->r_total;
        h->ranges = 1;
        if (h->size > h->max_bytes)
            rc = tio__err(err, TIO_E_LIMIT, NULL, -1, "%s: the file is %" PRIu64 " bytes, above "
                          "the limit (max_remote_bytes %" PRIu64 ")", h->name, h->size,
                          h->max_bytes);
    }
    h->grow = 0;
    if (rc == TIO_OK) {
        h->size_known = 1;
        memcpy(h->etag, r->etag, sizeof h->etag);
    }
    if (rc != TIO_OK || h->got == 0) {
        free(b);
        return rc;
    }
    *buf = b;
    *got = h->got;
    return TIO_OK;
}

int tio__http_range(tio_http *h, uint64_t off, uint64_t len, uint8_t *dst, tio_error *err) {
    if (!len) return TIO_OK;
    if (!h->ranges || off > h->size || len > h->size - off)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "%s: bytes %" PRIu64 "+%" PRIu64
                        " are not in the file", h->name, off, len);
    setup(h, 0, off, len, dst);
    int rc = request(h, err);
    h->dst = NULL;
    return rc;
}

/* ------------------------------------------------------------ streaming */

/* A streamed GET's response, at its first body byte: 200 (the whole file;
 * a resumption's bytes already taken are dropped again) or 206 from
 * exactly the next byte to the end; the size and ETag those of the first
 * answer. */
static size_t check_stream(tio_http *h) {
    const http_resp *r = &h->resp;
    if (r->status >= 300 || r->status < 200) return 0; /* reported after the transfer */
    uint64_t at = h->got, total = 0;
    int known = 0;
    h->s_skip = 0;
    if (r->status == 206) {
        if (!r->have_range || !r->have_total)
            return refuse(h, TIO_E_IO, "a 206 response without a complete Content-Range");
        if (r->have_length && r->length != r->r_end - r->r_start + 1)
            return refuse(h, TIO_E_IO, "Content-Length %" PRIu64 " disagrees with "
                          "Content-Range bytes %" PRIu64 "-%" PRIu64, r->length, r->r_start,
                          r->r_end);
        known = 1;
        total = r->r_total;
    } else if (r->status == 200) {
        known = r->have_length;
        total = r->length;
        h->s_skip = at;
    } else {
        return refuse(h, TIO_E_IO, "HTTP %ld to a GET (expected 200 or 206)", r->status);
    }
    if (known && total > h->max_bytes)
        return refuse(h, TIO_E_LIMIT, "the file is %" PRIu64 " bytes, above the limit "
                      "(max_remote_bytes %" PRIu64 ")", total, h->max_bytes);
    if ((h->size_known && known && total != h->size) || (known && total < at))
        return refuse(h, TIO_E_IO, "the file's size changed from %" PRIu64 " to %" PRIu64
                      " bytes between requests", h->size_known ? h->size : at, total);
    if (r->status == 206 && (r->r_start != at || r->r_end + 1 != r->r_total))
        return refuse(h, TIO_E_IO, "asked for bytes %" PRIu64 "- (to the end), the server "
                      "sent bytes %" PRIu64 "-%" PRIu64 " of %" PRIu64, at, r->r_start,
                      r->r_end, r->r_total);
    if (at && h->etag[0] && r->etag[0] && strcmp(h->etag, r->etag) != 0)
        return refuse(h, TIO_E_IO, "the file changed between requests (ETag %s, then %s)",
                      h->etag, r->etag);
    if (!at) memcpy(h->etag, r->etag, sizeof h->etag);
    if (known && !h->size_known) {
        h->size_known = 1;
        h->size = total;
    }
    h->expect = h->size_known ? h->size : UINT64_MAX;
    return 1;
}

static size_t on_stream_body(tio_http *h, const char *buf, size_t len) {
    size_t all = len;
    if (!h->checked) {
        if (check_stream(h) == 0) return 0;
        h->checked = 1;
    }
    size_t skip = len < h->s_skip ? len : (size_t)h->s_skip; /* a 200 to a resumption: */
    uint64_t lim = h->size_known ? h->size : h->max_bytes;  /* the bytes taken already */
    len -= skip;
    if (len > lim - h->got)
        return h->size_known
                   ? refuse(h, TIO_E_IO, "the server sent more than the file's %" PRIu64
                            " bytes", h->size)
                   : refuse(h, TIO_E_LIMIT, "the body passed %" PRIu64 " bytes "
                            "(max_remote_bytes)", h->max_bytes);
    size_t room = h->rn - h->rgot;
    if (len > room && h->rgot) { /* the reader has bytes: this chunk for its next read */
        h->s_paused = 1;         /* (libcurl keeps it and hands it over when resumed) */
        return CURL_WRITEFUNC_PAUSE;
    }
    h->received += all;
    h->s_skip -= skip;
    buf += skip;
    size_t k = room < len ? room : len;
    if (k) memcpy(h->rdst + h->rgot, buf, k);
    h->rgot += k;
    if (len > k) { /* a chunk larger than the reader's room: the rest kept here */
        size_t rest = len - k;
        if (rest > h->spill_cap - h->spill_len) {
            size_t nc = h->spill_len + rest;
            uint8_t *nb = realloc(h->spill, nc);
            if (!nb) return refuse(h, TIO_E_NOMEM, "out of memory for the body");
            h->spill = nb;
            h->spill_cap = nc;
        }
        memcpy(h->spill + h->spill_len, buf + k, rest);
        h->spill_len += rest;
    }
    h->got += len;
    return all;
}

/* (Re)starts the transfer at byte got: a plain GET, or Range "got-". */
static int stream_attach(tio_http *h, tio_error *err) {
    char range[32];
    memset(&h->resp, 0, sizeof h->resp);
    h->checked = 0;
    h->fail = 0;
    h->s_skip = 0;
    snprintf(range, sizeof range, "%" PRIu64 "-", h->got);
    if (h->cu->easy_setopt(h->curl, CURLOPT_RANGE, h->got ? range : NULL) != CURLE_OK ||
        h->cu->multi_add_handle(h->multi, h->curl) != CURLM_OK)
        return tio__err(err, TIO_E_IO, NULL, -1, "%s: libcurl refused the request", h->name);
    h->attached = 1;
    return TIO_OK;
}

int tio__http_stream_start(tio_http *h, tio_error *err) {
    if (h->streaming || h->size_known)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "%s: already read", h->name);
    h->multi = h->cu->multi_init();
    if (!h->multi) return tio__nomem(err, NULL);
    /* larger reads than libcurl's 16 KiB default: fewer callbacks (curl's own is 100 KiB) */
    if (h->cu->easy_setopt(h->curl, CURLOPT_BUFFERSIZE, (long)HTTP_STREAM_BUFFER) != CURLE_OK)
        return tio__err(err, TIO_E_IO, NULL, -1, "libcurl refused a buffer size");
    h->streaming = 1;
    h->got = h->off = 0;
    h->expect = UINT64_MAX;
    return stream_attach(h, err);
}

int tio__http_stream_read(tio_http *h, uint8_t *dst, size_t n, size_t *got, tio_error *err) {
    *got = 0;
    if (!h->streaming)
        return tio__err(err, TIO_E_ARGUMENT, NULL, -1, "%s: not a stream", h->name);
    if (h->spill_at < h->spill_len) {
        size_t k = h->spill_len - h->spill_at < n ? h->spill_len - h->spill_at : n;
        memcpy(dst, h->spill + h->spill_at, k);
        h->spill_at += k;
        if (h->spill_at == h->spill_len) h->spill_at = h->spill_len = 0;
        *got = k;
        return TIO_OK;
    }
    h->rdst = dst;
    h->rn = n;
    h->rgot = 0;
    int rc = TIO_OK;
    if (h->s_paused && n) { /* the chunk held back comes now, into dst */
        h->s_paused = 0;
        if (h->cu->easy_pause(h->curl, CURLPAUSE_CONT) != CURLE_OK)
            rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: libcurl cannot resume", h->name);
        if (h->fail) rc = tio__err(err, h->fail_code, NULL, -1, "%s: %s", h->name, h->why);
    }
    /* at least STREAM_MIN_READ bytes (or n) before returning, unless the
     * body ends: a caller that needs more than it holds (a member not yet
     * complete) then parses again per 256 KiB, not per TCP segment */
    size_t want = n < STREAM_MIN_READ ? n : STREAM_MIN_READ;
    while (n && h->rgot < want && !h->s_end && rc == TIO_OK) {
        int running = 0;
        CURLMcode mc = h->cu->multi_perform(h->multi, &running);
        if (mc == CURLM_OK && h->rgot < want && running && !h->s_paused)
            mc = h->cu->multi_poll(h->multi, NULL, 0, 1000, NULL);
        if (mc != CURLM_OK) {
            rc = tio__err(err, TIO_E_IO, NULL, -1, "%s: libcurl: %s", h->name,
                          h->cu->multi_strerror(mc));
        } else if (h->s_paused) { /* dst is full: the rest for the next read */
            break;
        } else if (!running && h->rgot) { /* ended: what it sent first */
            break;
        } else if (!running) { /* the transfer ended */
            CURLcode res = CURLE_OK;
            int left;
            CURLMsg *msg;
            while ((msg = h->cu->multi_info_read(h->multi, &left)) != NULL)
                if (msg->msg == CURLMSG_DONE) res = msg->data.result;
            h->cu->multi_remove_handle(h->multi, h->curl);
            h->attached = 0;
            int again;
            rc = settle(h, res, h->s_tries, &again, err);
            if (rc == TIO_OK && again) {
                h->s_tries++;
                rc = stream_attach(h, err);
            } else if (rc == TIO_OK) {
                h->s_end = 1;
            }
        }
    }
    h->rdst = NULL;
    *got = h->rgot;
    return rc;
}
