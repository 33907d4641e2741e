/* Work bounds of the CLI (issue 15): every command on every vector and on
 * ~50 seeded mutations of each must finish within a generous time bound
 * (5 s of CPU time, also under ASan, whatever else the machine runs; and 60 s
 * of wall-clock time, for a command that would block) with exit 0 or 1:
 * never a signal, never exit 2,
 * never a sanitizer report.
 *
 * Inputs: every file of the five formats in tests/vectors and
 * ../shared/vectors (malformed/, quirks/ and upstream/ included), the file
 * inputs of fuzz/regress/, and for each of them MUTATIONS deterministic
 * mutations (fewer for files over 1 MiB): header, count and shape fields set
 * to 0, 1, 2^31, 2^62 and other edges, dims multiplied, counts bumped,
 * found per format (the BTF offset table, records, dims and COO counts; the
 * tenbin chunk lengths, ndim and dims; the numbers of a ZIO JSON label,
 * re-encoded into the .zmsg, its part sizes and coordinates; rten and tmfile
 * dims located from what the library decodes, and their u32 offsets and
 * counts), plus random byte writes.
 *
 * Commands (see commands[]): ls, ls --hash, ls --json --hash, info,
 * info --json, dump, dump --json, validate, diff --json IN IN (a file with
 * itself: exit 1 when it holds a NaN), stats --json, graph (exit 1 without a
 * graph), and convert --no-sync to every writable format (btf, tenbin, zio,
 * rten, tmfile) with --drop-names --drop-metadata --widen, with and without
 * --densify.
 *
 * Running a process per command would not fit the budget (~150,000 runs), so
 * the commands run in-process (tensio_run, the CLI's own entry point, linked
 * from tensio_cli_lib), in a forked child per input: stdout to /dev/null,
 * stderr to a scratch file, a CPU-time timer (ITIMER_PROF) and a wall-clock
 * alarm() per command as the time bounds. The child
 * reports each command's start and end on a pipe, so the parent knows which
 * command died, hung or returned what; after a failure it goes on with the
 * next command in a new child. A failure prints the command line, the
 * mutation (seed, offsets, old and new values) and the command's stderr, and
 * keeps the input in BUILD/tests/work_bounds_failures/ so the line can be run
 * with the real build/tensio. Under ASan the unmutated vectors' children also
 * check for leaks. Convert outputs go to a mkdtemp() directory, removed at the
 * end. TIO_WORK_BOUND_SECONDS overrides the bound (for a slow machine). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WB_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define WB_ASAN 1
#endif
#ifdef WB_ASAN
#include <sanitizer/lsan_interface.h>
#endif

#include "cli.h"
#include "tensio.h"
#include "tvec.h"

#ifndef TIO_FUZZ_REGRESS
#error "TIO_FUZZ_REGRESS must be defined (fuzz/regress)"
#endif

/* Under ThreadSanitizer the mutations are few: what that stage looks for is
 * in the commands' threads (hashing, CRCs, scattered reads), which every
 * input runs; the mutations are for ASan+UBSan and the gcc stage (50 each,
 * 291 s under TSan on a machine with slow page faults). */
#ifdef TIO_WORK_BOUND_FEW
#define TIO__MUTATIONS 5
#define TIO__MUTATIONS_BIG 2
#else
#define TIO__MUTATIONS 50
#define TIO__MUTATIONS_BIG 10
#endif

enum {
    MUTATIONS = TIO__MUTATIONS,         /* per input up to 1 MiB */
    MUTATIONS_BIG = TIO__MUTATIONS_BIG, /* per input over 1 MiB (their headers are as small) */
    MAX_FAILURES = 25,   /* then stop: the rest would say the same */
    MAX_FIELDS = 512,
    MAX_CHANGES = 4
};

/* ------------------------------------------------------------- commands */

/* The wall-clock bound of a command: this many times its CPU-time bound. */
#define WALL_FACTOR 12u

/* The command lines; IN and OUT.<ext> are replaced by the scratch paths.
 * Conversions run at the default max_dense_bytes (256 MiB): a densified
 * tensor is streamed to the file, so the worst a mutation can ask for is
 * writing 256 MiB (about 0.25 s here). */
#define CONV                                                                                   \
    "convert", "--no-sync", "--force", "--drop-names", "--drop-metadata", "--widen"
static const char *const commands[][14] = {
    {"ls", "IN"},
    {"ls", "--hash", "IN"},
    {"ls", "--json", "--hash", "IN"},
    {"info", "IN"},
    {"info", "--json", "IN"},
    {"dump", "IN"},
    {"dump", "--json", "IN"},
    {"validate", "IN"},
    {"diff", "--json", "IN", "IN"},
    {"stats", "--json", "IN"},
    {"graph", "IN"},
    {CONV, "IN", "OUT.btf"},
    {CONV, "IN", "OUT.ten"},
    {CONV, "IN", "OUT.zmsg"},
    {CONV, "IN", "OUT.rten"},
    {CONV, "IN", "OUT.tmfile"},
    {CONV, "IN", "OUT.onnx"},
    {CONV, "--densify", "IN", "OUT.btf"},
    {CONV, "--densify", "IN", "OUT.ten"},
    {CONV, "--densify", "IN", "OUT.zmsg"},
    {CONV, "--densify", "IN", "OUT.rten"},
    {CONV, "--densify", "IN", "OUT.tmfile"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

/* ---------------------------------------------------------------- state */

typedef struct change {
    size_t off;
    unsigned width; /* bytes; 0: a label number replaced (text) */
    int enc; /* E_LE, E_BE or E_VARINT */
    uint64_t old, val;
    const char *what;
} change;

typedef struct mutation {
    unsigned index; /* 0: the vector as it is */
    uint64_t seed;
    int random_bytes;
    size_t nchanges;
    change ch[MAX_CHANGES];
    char label_old[32], label_new[32];
} mutation;

typedef struct slow_case {
    double seconds;
    char line[512];
} slow_case;

static struct {
    char scratch[4096];
    char in[4200];
    char out[4200];
    char errfile[4200];
    unsigned bound;
    size_t inputs, runs, failures, by_rc[3];
    slow_case slowest[5];
    slow_case slowest_files[3];
} W;

/* ------------------------------------------------------ little helpers */

static uint64_t rd_le(const uint8_t *p, unsigned w) {
    uint64_t v = 0;
    for (unsigned k = 0; k < w; k++) v |= (uint64_t)p[k] << (8 * k);
    return v;
}

static uint64_t rd_be(const uint8_t *p, unsigned w) {
    uint64_t v = 0;
    for (unsigned k = 0; k < w; k++) v = v << 8 | p[k];
    return v;
}

/* How a number is stored: little-endian, big-endian, or a protobuf varint of
 * exactly `width` bytes (a value that needs fewer is padded with 0x80 bytes,
 * which the wire format allows; one that needs more loses its high bits). */
enum { E_LE, E_BE, E_VARINT };

static uint64_t rd_varint(const uint8_t *p, unsigned w) {
    uint64_t v = 0;
    for (unsigned k = 0; k < w && k < 10; k++) v |= (uint64_t)(p[k] & 0x7f) << (7 * k);
    return v;
}

static uint64_t rd(const uint8_t *p, unsigned w, int enc) {
    return enc == E_BE ? rd_be(p, w) : enc == E_VARINT ? rd_varint(p, w) : rd_le(p, w);
}

static void wr(uint8_t *p, unsigned w, uint64_t v, int enc) {
    for (unsigned k = 0; k < w; k++) {
        if (enc == E_VARINT)
            p[k] = (uint8_t)((k < 10 ? (v >> (7 * k)) & 0x7f : 0) | (k + 1 < w ? 0x80 : 0));
        else
            p[enc == E_BE ? w - 1 - k : k] = (uint8_t)(v >> (8 * k));
    }
}

/* snprintf that fails the test rather than truncate a path. */
static void pathf(char *out, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void pathf(char *out, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out, size, fmt, ap);
    va_end(ap);
    assert_true(n >= 0 && (size_t)n < size);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 0xcbf29ce484222325u;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3u;
    return h;
}

/* ------------------------------------------------------------- fields */

/* A number in the input that means something: where it is, how wide, and
 * what kind of value it holds (which decides what it is set to). */
typedef enum fkind { K_COUNT, K_OFFSET, K_SIZE, K_RANK, K_DIM, K_CODE } fkind;
static const char *const kind_names[] = {"count", "offset", "size", "rank", "dim", "code"};

typedef struct field {
    size_t off;
    unsigned width;
    int enc;
    fkind kind;
} field;

typedef struct fields {
    field f[MAX_FIELDS];
    size_t n;
} fields;

static void add_field(fields *fs, size_t len, size_t off, unsigned width, int enc, fkind k) {
    if (fs->n >= MAX_FIELDS || off > len || width > len - off) return;
    fs->f[fs->n++] = (field){off, width, enc, k};
}

/* BTF: NUM_TENSORS, the offset table, each record's rank, codes and dims,
 * and a COO record's INDICES dims and VALUES count. */
static void btf_fields(const uint8_t *b, size_t len, fields *fs) {
    if (len < 8) return;
    add_field(fs, len, 0, 8, 0, K_COUNT);
    uint64_t n = rd_le(b, 8);
    for (uint64_t i = 0; i < n && i < 48 && 16 + 8 * i <= len; i++) {
        add_field(fs, len, (size_t)(8 + 8 * i), 8, 0, K_OFFSET);
        uint64_t rec = rd_le(b + 8 + 8 * i, 8);
        if (rec > len || len - rec < 16) continue;
        size_t r = (size_t)rec;
        add_field(fs, len, r, 8, 0, K_RANK);
        add_field(fs, len, r + 8, 1, 0, K_CODE);
        add_field(fs, len, r + 9, 1, 0, K_CODE);
        uint64_t rank = rd_le(b + r, 8);
        if (rank > 16 || (len - r - 16) / 8 < rank) continue;
        for (uint64_t d = 0; d < rank; d++) add_field(fs, len, r + 16 + 8 * d, 8, 0, K_DIM);
        if (b[r + 9] != 1 && b[r + 9] != 2) continue;
        size_t p = r + 16 + 8 * (size_t)rank;
        if (len - p < 16) continue;
        add_field(fs, len, p, 8, 0, K_COUNT);
        add_field(fs, len, p + 8, 8, 0, K_RANK);
        uint64_t nnz = rd_le(b + p, 8);
        if (nnz > len || (rank && nnz > len / (8 * rank))) continue;
        size_t v = p + 16 + (size_t)(8 * nnz * rank);
        add_field(fs, len, v, 8, 0, K_COUNT);
    }
}

/* tenbin: every chunk's length; a header chunk's ndim and dims. */
static void tenbin_fields(const uint8_t *b, size_t len, fields *fs) {
    size_t pos = 0;
    for (int chunk = 0; len - pos >= 16 && chunk < 64; chunk++) {
        add_field(fs, len, pos + 8, 8, 0, K_SIZE);
        uint64_t n = rd_le(b + pos + 8, 8);
        if (n > len - pos - 16) break;
        if (chunk % 2 == 0 && n >= 24) {
            add_field(fs, len, pos + 16 + 16, 8, 0, K_RANK);
            uint64_t nd = rd_le(b + pos + 32, 8);
            for (uint64_t d = 0; d < nd && 8 * (3 + d) < n && d < 16; d++)
                add_field(fs, len, pos + 16 + 24 + 8 * (size_t)d, 8, 0, K_DIM);
        }
        pos += 16 + (size_t)((n + 63) / 64 * 64);
        if (pos > len) break;
    }
}

/* A .zmsg: where each part's size is, where it starts and how long it is. */
typedef struct zpart {
    size_t size_off;
    unsigned size_width; /* 1, or 4 after the 0xFF byte */
    size_t data;
    size_t len;
} zpart;

static size_t zmsg_parts(const uint8_t *b, size_t len, zpart *parts, size_t cap) {
    size_t pos = 0, n = 0;
    while (pos < len && n < cap) {
        zpart p = {pos, 1, pos + 1, b[pos]};
        if (b[pos] == 0xff) {
            if (len - pos < 5) break;
            p = (zpart){pos + 1, 4, pos + 5, (size_t)rd_be(b + pos + 1, 4)};
        }
        if (p.data > len || p.len > len - p.data) break;
        parts[n++] = p;
        pos = p.data + p.len;
    }
    return n;
}

/* ZIO: the part sizes and the coordinates (the label's numbers are text:
 * see label_mutation). */
static void zio_fields(const uint8_t *b, size_t len, fields *fs) {
    zpart parts[64];
    size_t n = zmsg_parts(b, len, parts, 64);
    for (size_t i = 0; i < n; i++)
        add_field(fs, len, parts[i].size_off, parts[i].size_width, parts[i].size_width == 4,
                  K_SIZE);
    if (n > 1 && parts[1].len == 24)
        for (size_t k = 0; k < 3; k++) add_field(fs, len, parts[1].data + 8 * k, 8, 0, K_COUNT);
}

/* rten and tmfile: the dims of every tensor the library decodes, found in
 * the bytes as u32 (both) or u64 sequences; then aligned u32 words whose
 * value could be an offset, a size or a count in this file. */
static void model_fields(const uint8_t *b, size_t len, const char *format, fields *fs) {
    tio_open_options o = {0};
    o.format = format;
    tio_container *c = NULL;
    tio_error e;
    if (tio_open_memory(b, len, &o, &c, &e) == TIO_OK) {
        for (size_t i = 0; i < tio_container_count(c) && fs->n < MAX_FIELDS / 2; i++) {
            const tio_tensor *t = tio_container_tensor(c, i);
            size_t r = tio_tensor_rank(t);
            const int64_t *sh = tio_tensor_shape(t);
            if (r == 0) continue;
            for (unsigned w = 4; w <= 8; w += 4) {
                size_t need = r * w;
                for (size_t at = 0; need <= len && at <= len - need; at += 4) {
                    size_t d = 0;
                    while (d < r && rd_le(b + at + d * w, w) == (uint64_t)sh[d]) d++;
                    if (d < r) continue;
                    for (d = 0; d < r; d++) add_field(fs, len, at + d * w, w, 0, K_DIM);
                    break; /* the first place is enough */
                }
            }
        }
        tio_container_free(c);
    }
    for (size_t at = 0; at + 4 <= len && fs->n < MAX_FIELDS; at += 4) {
        uint64_t v = rd_le(b + at, 4);
        if (v == 0 || v >= len) continue;
        add_field(fs, len, at, 4, 0, v < 64 ? K_COUNT : K_OFFSET);
    }
}

/* A protobuf varint at b[*pos..end): its value, *pos moved past it; -1 when
 * it runs past end or over 10 bytes. */
static int pb_varint(const uint8_t *b, size_t end, size_t *pos, uint64_t *v) {
    *v = 0;
    for (unsigned k = 0; k < 10 && *pos < end; k++) {
        uint8_t c = b[(*pos)++];
        *v |= (uint64_t)(c & 0x7f) << (7 * k);
        if (!(c & 0x80)) return 0;
    }
    return -1;
}

/* Whether b[pos..end) parses as protobuf fields to its end. */
static int pb_message(const uint8_t *b, size_t pos, size_t end) {
    while (pos < end) {
        uint64_t tag, v;
        if (pb_varint(b, end, &pos, &tag) != 0 || tag >> 3 == 0) return 0;
        switch (tag & 7) {
        case 0: if (pb_varint(b, end, &pos, &v) != 0) return 0; break;
        case 1: if (end - pos < 8) return 0; pos += 8; break;
        case 5: if (end - pos < 4) return 0; pos += 4; break;
        case 2:
            if (pb_varint(b, end, &pos, &v) != 0 || v > end - pos) return 0;
            pos += (size_t)v;
            break;
        default: return 0;
        }
    }
    return 1;
}

/* ONNX (protobuf): every varint field (a count, a dim, an enum, an int
 * attribute) and every length of a length-delimited field, in place at their
 * own width, walking into the payloads that parse as messages; a payload
 * that does not is taken as packed varints (dims, ints) when it parses so. */
static void pb_fields(const uint8_t *b, size_t len, size_t pos, size_t end, int depth,
                      fields *fs) {
    while (pos < end && fs->n < MAX_FIELDS) {
        uint64_t tag, v;
        if (pb_varint(b, end, &pos, &tag) != 0) return;
        size_t at = pos;
        switch (tag & 7) {
        case 0:
            if (pb_varint(b, end, &pos, &v) != 0) return;
            add_field(fs, len, at, (unsigned)(pos - at), E_VARINT, K_COUNT);
            break;
        case 1: pos += end - pos < 8 ? end - pos : 8; break;
        case 5: pos += end - pos < 4 ? end - pos : 4; break;
        case 2: {
            if (pb_varint(b, end, &pos, &v) != 0 || v > end - pos) return;
            add_field(fs, len, at, (unsigned)(pos - at), E_VARINT, K_SIZE);
            size_t body = pos, stop = pos + (size_t)v;
            pos = stop;
            if (v == 0 || v > 65536 || depth >= 8) break;
            if (pb_message(b, body, stop)) {
                pb_fields(b, len, body, stop, depth + 1, fs);
                break;
            }
            for (size_t p = body, q = body; p < stop && fs->n < MAX_FIELDS; p = q)
                if (pb_varint(b, stop, &q, &v) == 0)
                    add_field(fs, len, p, (unsigned)(q - p), E_VARINT, K_DIM);
                else
                    break;
            break;
        }
        default: return;
        }
    }
}

static void find_fields(const uint8_t *b, size_t len, const char *format, fields *fs) {
    fs->n = 0;
    if (strcmp(format, "onnx") == 0) pb_fields(b, len, 0, len, 0, fs);
    else if (strcmp(format, "btf") == 0) btf_fields(b, len, fs);
    else if (strcmp(format, "tenbin") == 0) tenbin_fields(b, len, fs);
    else if (strcmp(format, "zio") == 0) zio_fields(b, len, fs);
    else model_fields(b, len, format, fs);
}

/* ---------------------------------------------------------- mutations */

/* What a field of this kind is set to: the edges of the brief (0, 1, 2^31,
 * 2^62), their neighbours, dims multiplied, counts bumped. */
static uint64_t pick_value(uint64_t *rs, const field *f, uint64_t old) {
    static const uint64_t edges[] = {0,
                                     1,
                                     UINT64_C(1) << 31,
                                     UINT64_C(1) << 62,
                                     (UINT64_C(1) << 31) - 1,
                                     UINT64_C(1) << 32,
                                     UINT64_MAX,
                                     (UINT64_C(1) << 63) - 1,
                                     (UINT64_C(1) << 54) + 4,
                                     (UINT64_C(1) << 43) + 6};
    static const unsigned mults[] = {2, 3, 1000, 1u << 20, 1u << 30};
    uint64_t r = tvec_rand(rs);
    uint64_t v;
    if (r % 4 < 2)
        v = edges[(r >> 8) % (sizeof edges / sizeof edges[0])];
    else if (r % 4 == 2 && (f->kind == K_DIM || f->kind == K_SIZE))
        v = (old ? old : 1) * mults[(r >> 8) % (sizeof mults / sizeof mults[0])];
    else
        v = old + ((r >> 8) % 2 ? 1 : (uint64_t)-1); /* bumped */
    if (f->kind == K_CODE) v = (r >> 8) % 3 == 0 ? old + 1 : (r >> 16) & 0xff;
    unsigned bits = f->enc == E_VARINT ? 7 * f->width : 8 * f->width;
    if (bits < 64) v &= (UINT64_C(1) << bits) - 1;
    return v;
}

/* The decimal numbers of a ZIO label (outside strings): [start, end). */
static size_t label_numbers(const uint8_t *s, size_t n, size_t (*at)[2], size_t cap) {
    size_t k = 0;
    int in_str = 0;
    for (size_t i = 0; i < n && k < cap; i++) {
        if (in_str) {
            if (s[i] == '\\') i++;
            else if (s[i] == '"') in_str = 0;
            continue;
        }
        if (s[i] == '"') {
            in_str = 1;
            continue;
        }
        if ((s[i] >= '0' && s[i] <= '9') || (s[i] == '-' && i + 1 < n && s[i + 1] >= '0' &&
                                               s[i + 1] <= '9')) {
            size_t j = i + 1;
            while (j < n && s[j] >= '0' && s[j] <= '9') j++;
            at[k][0] = i;
            at[k][1] = j;
            k++;
            i = j - 1;
        }
    }
    return k;
}

/* Replaces one number of a .zmsg's label and writes the parts again (the
 * label part changes size). Returns the new buffer (malloc'ed) or NULL when
 * the input has no label numbers. */
static uint8_t *label_mutation(const uint8_t *b, size_t len, uint64_t *rs, mutation *m,
                               size_t *out_len) {
    zpart parts[64];
    size_t np = zmsg_parts(b, len, parts, 64);
    if (np < 2 || parts[0].len < 9 || parts[np - 1].data + parts[np - 1].len != len) return NULL;
    const uint8_t *label = b + parts[0].data + 8;
    size_t label_len = parts[0].len - 8;
    size_t nums[64][2];
    size_t nn = label_numbers(label, label_len, nums, 64);
    if (!nn) return NULL;
    size_t k = (size_t)(tvec_rand(rs) % nn);
    size_t ns = nums[k][0], ne = nums[k][1];
    size_t ol = ne - ns < sizeof m->label_old - 1 ? ne - ns : sizeof m->label_old - 1;
    memcpy(m->label_old, label + ns, ol);
    m->label_old[ol] = 0;
    unsigned long long old = (unsigned long long)strtoll(m->label_old, NULL, 10);
    static const char *const edges[] = {"0", "1", "2147483648", "4611686018427387904", "-1",
                                        "4294967296", "9223372036854775807",
                                        "18014398509481988", "1e3"};
    for (int tries = 0; tries < 8 && (!m->label_new[0] || !strcmp(m->label_new, m->label_old));
         tries++) {
        uint64_t r = tvec_rand(rs);
        if (r % 3 == 0)
            snprintf(m->label_new, sizeof m->label_new, "%llu",
                     (r >> 8) % 2 ? old + 1 : old * ((r >> 16) % 2 ? 1000u : 1u << 20));
        else
            snprintf(m->label_new, sizeof m->label_new, "%s",
                     edges[(r >> 8) % (sizeof edges / sizeof edges[0])]);
    }
    size_t nl = strlen(m->label_new);
    size_t new_label0 = parts[0].len - (ne - ns) + nl;
    uint8_t *o = malloc(len + nl + 16);
    assert_non_null(o);
    size_t w = 0;
    for (size_t i = 0; i < np; i++) {
        size_t plen = i == 0 ? new_label0 : parts[i].len;
        if (plen < 255) {
            o[w++] = (uint8_t)plen;
        } else {
            o[w++] = 0xff;
            wr(o + w, 4, plen, 1);
            w += 4;
        }
        if (i == 0) {
            size_t at = parts[0].data;
            memcpy(o + w, b + at, 8 + ns);
            w += 8 + ns;
            memcpy(o + w, m->label_new, nl);
            w += nl;
            memcpy(o + w, label + ne, label_len - ne);
            w += label_len - ne;
        } else {
            memcpy(o + w, b + parts[i].data, parts[i].len);
            w += parts[i].len;
        }
    }
    m->nchanges = 1;
    m->ch[0] = (change){parts[0].data + 8 + ns, 0, 0, (uint64_t)old, 0, "label number"};
    *out_len = w;
    return o;
}

/* Mutation m->index of buf (seeded by m->seed): a copy, malloc'ed. */
static uint8_t *mutate(const uint8_t *buf, size_t len, const char *format, const fields *fs,
                       mutation *m, size_t *out_len) {
    uint64_t rs = m->seed;
    uint64_t r = tvec_rand(&rs);
    *out_len = len;
    if (strcmp(format, "zio") == 0 && r % 2 == 0) {
        uint8_t *o = label_mutation(buf, len, &rs, m, out_len);
        if (o) return o;
    }
    uint8_t *o = malloc(len ? len : 1);
    assert_non_null(o);
    memcpy(o, buf, len);
    if (!len) return o;
    if (r % 5 == 1 || fs->n == 0) {
        /* random byte writes, most of them in the first 4 KiB */
        m->random_bytes = 1;
        size_t n = 1 + (size_t)(tvec_rand(&rs) % MAX_CHANGES);
        for (size_t k = 0; k < n; k++) {
            uint64_t x = tvec_rand(&rs);
            size_t span = len > 4096 && x % 4 ? 4096 : len;
            size_t off = (size_t)((x >> 8) % span);
            uint8_t v = (uint8_t)(x >> 40);
            m->ch[m->nchanges++] = (change){off, 1, 0, o[off], v, "byte"};
            o[off] = v;
        }
        return o;
    }
    size_t n = r % 5 == 2 && fs->n > 1 ? 2 : 1;
    size_t first = SIZE_MAX, ndims = 0;
    for (size_t i = 0; i < fs->n; i++) ndims += fs->f[i].kind == K_DIM;
    for (size_t k = 0; k < n; k++) {
        uint64_t x = tvec_rand(&rs);
        size_t fi = (size_t)((x >> 8) % fs->n);
        if (ndims && x % 5 < 2) { /* dims: 2 in 5, however many other fields there are */
            size_t j = (size_t)((x >> 8) % ndims);
            for (fi = 0; fs->f[fi].kind != K_DIM || j--;) fi++;
        }
        if (fi == first) fi = (fi + 1) % fs->n;
        first = fi;
        const field *f = &fs->f[fi];
        uint64_t old = rd(o + f->off, f->width, f->enc);
        uint64_t v = old;
        for (int tries = 0; tries < 8 && v == old; tries++) v = pick_value(&rs, f, old);
        wr(o + f->off, f->width, v, f->enc);
        m->ch[m->nchanges++] =
            (change){f->off, f->width, f->enc, old, v, kind_names[f->kind]};
    }
    return o;
}

static void describe(const mutation *m, char *out, size_t size) {
    if (m->index == 0) {
        snprintf(out, size, "the vector as it is");
        return;
    }
    size_t w = (size_t)snprintf(out, size, "mutation %u (seed 0x%016llx%s):", m->index,
                                (unsigned long long)m->seed,
                                m->random_bytes ? ", random bytes" : "");
    for (size_t k = 0; k < m->nchanges && w < size; k++) {
        const change *c = &m->ch[k];
        if (c->width == 0)
            w += (size_t)snprintf(out + w, size - w,
                                  " label number at offset %zu: %s -> %s (parts re-encoded)",
                                  c->off, m->label_old, m->label_new);
        else
            w += (size_t)snprintf(out + w, size - w, " %s%s at offset %zu (%u bytes%s): %llu -> %llu",
                                  k ? ";" : "", c->what, c->off, c->width,
                                  c->enc == E_BE       ? ", big-endian"
                                  : c->enc == E_VARINT ? ", varint"
                                                       : "",
                                  (unsigned long long)c->old, (unsigned long long)c->val);
    }
}

/* ----------------------------------------------------------- running */

/* One vector and what the sweep does with it. */
typedef struct vector {
    const char *rel; /* as printed: "btf/coo_int8_rank4.btf" */
    const uint8_t *buf;
    size_t len;
    const char *format, *ext;
    fields fs;
    unsigned count; /* mutations */
    uint64_t base;  /* seed of the mutations */
} vector;

/* Input k of v: the vector itself (k = 0) or mutation k, described in *m.
 * Returns the bytes: v->buf, or a malloc'ed copy (*owned). */
static const uint8_t *make_input(const vector *v, unsigned k, mutation *m, size_t *len,
                                 uint8_t **owned) {
    memset(m, 0, sizeof *m);
    m->index = k;
    m->seed = (v->base ^ (0x9e3779b97f4a7c15u * (k + 1))) | 1;
    *owned = NULL;
    *len = v->len;
    if (k == 0) return v->buf;
    *owned = mutate(v->buf, v->len, v->format, &v->fs, m, len);
    return *owned;
}

/* What a worker tells the parent: a command started or ended, or LSan found
 * leaks. */
typedef struct report {
    int32_t input;
    int32_t cmd;
    int32_t phase; /* 0 start, 1 done, 2 leak check failed */
    int32_t rc;
    double seconds;
} report;

/* argv of command i, with the scratch paths (strings in `store`). */
static int build_argv(size_t i, char *argv[16], char store[16][4300]) {
    int argc = 0;
    pathf(store[argc], sizeof store[argc], "tensio");
    argv[argc] = store[argc];
    argc++;
    for (size_t k = 0; k < 14 && commands[i][k]; k++) {
        const char *a = commands[i][k];
        if (strcmp(a, "IN") == 0)
            pathf(store[argc], sizeof store[argc], "%s", W.in);
        else if (strncmp(a, "OUT", 3) == 0)
            pathf(store[argc], sizeof store[argc], "%s%s", W.out, a + 3);
        else
            pathf(store[argc], sizeof store[argc], "%s", a);
        argv[argc] = store[argc];
        argc++;
    }
    argv[argc] = NULL;
    return argc;
}

/* Command i as a shell line for the real build/tensio, on `in`. */
static void command_line(size_t i, const char *in, char *out, size_t size) {
    char *argv[16];
    static char store[16][4300];
    int argc = build_argv(i, argv, store);
    size_t w = (size_t)snprintf(out, size, "%s/tensio", TIO_BUILD_DIR);
    for (int k = 1; k < argc && w < size; k++)
        w += (size_t)snprintf(out + w, size - w, " %s",
                              strcmp(argv[k], W.in) == 0 && in ? in : argv[k]);
}

static void send_report(int fd, report r) {
    ssize_t n = write(fd, &r, sizeof r);
    (void)n;
}

static void empty_stderr(void) {
    if (ftruncate(STDERR_FILENO, 0) != 0 || lseek(STDERR_FILENO, 0, SEEK_SET) != 0) _exit(98);
}

/* A worker: the inputs of v from input k0, command c0 on, every command on
 * each, one report per start and end. Stops at the first exit status that is
 * neither 0 nor 1, so that the command's stderr stays in W.errfile. Under
 * ASan, checks for leaks at the end. */
static void worker(int fd, const vector *v, unsigned k0, size_t c0) {
    int null = open("/dev/null", O_WRONLY);
    int err = open(W.errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (null < 0 || err < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0)
        _exit(99);
    close(null);
    close(err);
    /* cmocka catches these in the test process; a command that raises one
     * must kill the worker, not return into the test */
    static const int sigs[] = {SIGALRM, SIGPROF, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
    for (unsigned k = k0; k <= v->count; k++) {
        mutation m;
        size_t len;
        uint8_t *owned;
        const uint8_t *in = make_input(v, k, &m, &len, &owned);
        if (tvec_write(W.in, in, len) != 0) _exit(97);
        free(owned);
        for (size_t i = k == k0 ? c0 : 0; i < NCOMMANDS; i++) {
            char *argv[16];
            static char store[16][4300];
            int argc = build_argv(i, argv, store);
            empty_stderr();
            send_report(fd, (report){(int32_t)k, (int32_t)i, 0, 0, 0});
            double t0 = now();
            /* the bound is CPU time (work, whatever else the machine runs);
             * a wall-clock alarm far above it catches a command that blocks */
            struct itimerval cpu = {{0, 0}, {(time_t)W.bound, 0}}, off = {{0, 0}, {0, 0}};
            setitimer(ITIMER_PROF, &cpu, NULL);
            alarm(W.bound * WALL_FACTOR);
            int rc = tensio_run(argc, argv);
            alarm(0);
            setitimer(ITIMER_PROF, &off, NULL);
            clearerr(stdout);
            send_report(fd, (report){(int32_t)k, (int32_t)i, 1, rc, now() - t0});
            if (rc != 0 && rc != 1) _exit(0);
        }
    }
#ifdef WB_ASAN
    empty_stderr();
    if (__lsan_do_recoverable_leak_check()) send_report(fd, (report){-1, -1, 2, 0, 0});
#endif
    _exit(0);
}

/* Prints the last bytes of what the failed command wrote on stderr. */
static void print_stderr_tail(void) {
    uint8_t *b = NULL;
    size_t n = 0;
    if (tvec_read(W.errfile, &b, &n) != 0) return;
    size_t from = n > 3000 ? n - 3000 : 0;
    if (n) fprintf(stderr, "  its stderr%s:\n%.*s\n", from ? " (the end)" : "", (int)(n - from),
                   (const char *)b + from);
    free(b);
}

/* Keeps input k of v where the printed command line can find it. */
static void keep_input(const vector *v, const mutation *m, const uint8_t *buf, size_t len,
                       char *path, size_t size) {
    char dir[4096];
    pathf(dir, sizeof dir, "%s/tests/work_bounds_failures", TIO_BUILD_DIR);
    mkdir(dir, 0755);
    char name[512];
    size_t w = 0;
    for (const char *p = v->rel; *p && w < sizeof name - 1; p++)
        name[w++] = *p == '/' ? '_' : *p;
    name[w] = 0;
    pathf(path, size, "%s/%s.m%u%s", dir, name, m->index, v->ext);
    if (tvec_write(path, buf, len) != 0) pathf(path, size, "%s", W.in);
}

/* Reports a failure of command cmd on input k of v (cmd < 0: of the worker
 * as a whole, k < 0: of no input in particular). */
static void failure(const vector *v, long k, long cmd, const char *what) {
    W.failures++;
    if (W.failures > MAX_FAILURES) return;
    char kept[4096] = "", line[8192], desc[2048] = "every input";
    if (k >= 0) {
        mutation m;
        size_t len;
        uint8_t *owned;
        const uint8_t *in = make_input(v, (unsigned)k, &m, &len, &owned);
        keep_input(v, &m, in, len, kept, sizeof kept);
        free(owned);
        describe(&m, desc, sizeof desc);
    }
    if (cmd >= 0)
        command_line((size_t)cmd, kept, line, sizeof line);
    else
        snprintf(line, sizeof line, "(every command on the vector and its %u mutations, in one "
                                    "process)", v->count);
    fprintf(stderr, "FAIL: %s, %s\n  %s\n  %s\n", v->rel, desc, what, line);
    if (kept[0]) fprintf(stderr, "  input kept in %s\n", kept);
    print_stderr_tail();
    if (W.failures == MAX_FAILURES)
        fprintf(stderr, "(%d failures: the rest are counted, not shown)\n", MAX_FAILURES);
}

/* Keeps the n slowest (seconds, line) in top[], slowest first. */
static void keep_slowest(slow_case *top, size_t n, double s, const char *line) {
    if (s <= top[n - 1].seconds) return;
    size_t k = n - 1;
    while (k > 0 && top[k - 1].seconds < s) {
        top[k] = top[k - 1];
        k--;
    }
    top[k].seconds = s;
    snprintf(top[k].line, sizeof top[k].line, "%s", line);
}

static void note_time(const vector *v, unsigned k, size_t cmd, double s) {
    size_t n = sizeof W.slowest / sizeof W.slowest[0];
    if (s <= W.slowest[n - 1].seconds) return;
    mutation m;
    size_t len;
    uint8_t *owned;
    make_input(v, k, &m, &len, &owned);
    free(owned);
    char line[512], desc[256], cl[512];
    describe(&m, desc, sizeof desc);
    command_line(cmd, v->rel, cl, sizeof cl);
    if (snprintf(line, sizeof line, "%s, %s", cl + strlen(TIO_BUILD_DIR) + 1, desc) < 0) return;
    keep_slowest(W.slowest, n, s, line);
}

/* Every command on the vector and on each of its mutations, in workers:
 * one for the whole vector, and a new one after each failure, going on
 * with the next command. */
static void sweep_vector(const vector *v) {
    pathf(W.in, sizeof W.in, "%s/in%s", W.scratch, v->ext);
    W.inputs += v->count + 1;
    unsigned k0 = 0;
    size_t c0 = 0;
    while (k0 <= v->count && W.failures < MAX_FAILURES) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            worker(fds[1], v, k0, c0);
        }
        close(fds[1]);
        long k = -1, started = -1;
        int leaked = 0, resume = 0;
        report r;
        while (read(fds[0], &r, sizeof r) == (ssize_t)sizeof r) {
            if (r.phase == 2) {
                leaked = 1;
                continue;
            }
            if (r.cmd < 0 || (size_t)r.cmd >= NCOMMANDS || r.input < 0 ||
                (unsigned)r.input > v->count)
                break;
            k = r.input;
            if (r.phase == 0) {
                started = r.cmd;
                continue;
            }
            started = -1;
            W.runs++;
            W.by_rc[r.rc >= 0 && r.rc <= 2 ? r.rc : 2]++;
            note_time(v, (unsigned)k, (size_t)r.cmd, r.seconds);
            if (r.rc != 0 && r.rc != 1) {
                char what[128];
                snprintf(what, sizeof what, "exit status %d (expected 0 or 1) after %.2f s",
                         r.rc, r.seconds);
                failure(v, k, r.cmd, what);
                c0 = (size_t)r.cmd + 1;
                resume = 1;
            }
        }
        close(fds[0]);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        if (started >= 0) {
            char what[160];
            W.runs++;
            W.by_rc[2]++;
            if (WIFSIGNALED(st) && WTERMSIG(st) == SIGPROF)
                snprintf(what, sizeof what, "used more than %u s of CPU time (killed)",
                         W.bound);
            else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
                snprintf(what, sizeof what,
                         "did not finish within %u s of wall-clock time, far above the "
                         "%u s of CPU it may use (killed: blocked?)",
                         W.bound * WALL_FACTOR, W.bound);
            else if (WIFSIGNALED(st))
                snprintf(what, sizeof what, "killed by signal %d (%s)", WTERMSIG(st),
                         strsignal(WTERMSIG(st)));
            else
                snprintf(what, sizeof what,
                         "the process ended inside the command (status %d: a sanitizer "
                         "report or an exit())",
                         WIFEXITED(st) ? WEXITSTATUS(st) : -1);
            failure(v, k, started, what);
            c0 = (size_t)started + 1;
            resume = 1;
        } else if (leaked) {
            failure(v, -1, -1, "LeakSanitizer found leaks");
        } else if (!resume && (!WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
            failure(v, k, -1, "the worker failed outside any command");
        }
        if (!resume) break;
        k0 = (unsigned)k;
        if (c0 == NCOMMANDS) {
            k0++;
            c0 = 0;
        }
    }
}

static void sweep_file(const char *path, const char *rel, const char *format, const char *ext) {
    uint8_t *buf;
    size_t len;
    assert_int_equal(tvec_read(path, &buf, &len), 0);
    double t0 = now();
    vector *v = calloc(1, sizeof *v);
    assert_non_null(v);
    *v = (vector){rel, buf, len, format, ext, {{{0}}, 0},
                  len > (1u << 20) ? MUTATIONS_BIG : MUTATIONS, fnv1a(rel)};
    find_fields(buf, len, format, &v->fs);
    sweep_vector(v);
    free(v);
    keep_slowest(W.slowest_files, sizeof W.slowest_files / sizeof W.slowest_files[0],
                 now() - t0, rel);
    free(buf);
}

/* Without ../shared/vectors: names the files of `dir` whose manifest is in
 * tests/vectors but the file only in the shared directory. (A directory
 * that is only there is named by tvec_list.) */
static void skipped_by_name(const char *dir) {
    char local[4096];
    struct stat st;
    pathf(local, sizeof local, "%s/%s", TIO_TEST_VECTORS, dir);
    if (tvec_have_shared() || stat(local, &st) != 0) return;
    size_t n;
    char **manifests = tvec_list(dir, ".json", &n);
    for (size_t i = 0; i < n; i++) {
        char rel[512];
        pathf(rel, sizeof rel, "%s/%s", dir, manifests[i]);
        json_t *m = tvec_manifest(rel);
        const char *file = json_string_value(json_object_get(m, "file"));
        if (!file) file = json_string_value(json_object_get(m, "tmfile"));
        if (file && !strchr(file, '/')) {
            pathf(rel, sizeof rel, "%s/%s", dir, file);
            char *p = tvec_path_or_skip(rel); /* prints SKIPPED: <rel> */
            free(p);
        }
        json_decref(m);
    }
    tvec_list_free(manifests, n);
}

static void sweep_dir(const char *dir, const char *ext, const char *format) {
    skipped_by_name(dir);
    size_t n;
    char **names = tvec_list(dir, ext, &n);
    for (size_t i = 0; i < n && W.failures < MAX_FAILURES; i++) {
        char rel[512];
        pathf(rel, sizeof rel, "%s/%s", dir, names[i]);
        char *p = tvec_path(rel);
        assert_non_null(p);
        sweep_file(p, rel, format, ext);
        free(p);
    }
    tvec_list_free(names, n);
}

/* fuzz/regress/<target>/: the inputs that once broke something, as files of
 * the target's format. */
static void sweep_regress(const char *target, const char *format, const char *ext) {
    char dir[4096];
    pathf(dir, sizeof dir, "%s/%s", TIO_FUZZ_REGRESS, target);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && W.failures < MAX_FAILURES) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "README.md") == 0) continue;
        char p[4400], rel[600];
        pathf(p, sizeof p, "%s/%s", dir, e->d_name);
        pathf(rel, sizeof rel, "fuzz/regress/%s/%s", target, e->d_name);
        sweep_file(p, rel, format, ext);
    }
    closedir(d);
}

/* ------------------------------------------------------------- groups */

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char p[4400];
        pathf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static int setup(void **state) {
    (void)state;
    memset(&W, 0, sizeof W);
    const char *tmp = getenv("TMPDIR");
    pathf(W.scratch, sizeof W.scratch, "%s/tio-work-bounds-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(W.scratch)) return -1;
    pathf(W.out, sizeof W.out, "%s/out", W.scratch);
    pathf(W.errfile, sizeof W.errfile, "%s/stderr.txt", W.scratch);
    const char *b = getenv("TIO_WORK_BOUND_SECONDS");
    W.bound = b && atoi(b) > 0 ? (unsigned)atoi(b) : 5;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    remove_tree(W.scratch);
    return 0;
}

/* Prints what the group did, then fails it if anything failed. */
static void finish(const char *what, double t0, size_t min_inputs) {
    printf("%s: %zu inputs, %zu command runs in %.1f s: exit 0: %zu, exit 1: %zu, other: %zu; "
           "%zu failures\n",
           what, W.inputs, W.runs, now() - t0, W.by_rc[0], W.by_rc[1], W.by_rc[2], W.failures);
    printf("  slowest runs:\n");
    for (size_t k = 0; k < sizeof W.slowest / sizeof W.slowest[0] && W.slowest[k].line[0]; k++)
        printf("    %.3f s  %s\n", W.slowest[k].seconds, W.slowest[k].line);
    printf("  slowest inputs (every command on the vector and its mutations):");
    for (size_t k = 0; k < sizeof W.slowest_files / sizeof W.slowest_files[0] &&
                       W.slowest_files[k].line[0];
         k++)
        printf("%s %s %.1f s", k ? "," : "", W.slowest_files[k].line, W.slowest_files[k].seconds);
    printf("\n");
    size_t inputs = W.inputs, failures = W.failures;
    W.inputs = W.runs = W.failures = 0;
    memset(W.by_rc, 0, sizeof W.by_rc);
    memset(W.slowest, 0, sizeof W.slowest);
    memset(W.slowest_files, 0, sizeof W.slowest_files);
    assert_int_equal(failures, 0);
    assert_true(inputs >= min_inputs);
}

/* Every vector of one format, and the file inputs of fuzz target `target`
 * (its fuzz/regress directory). */
static void sweep_format(const char *format, const char *target, size_t min_vectors) {
    double t0 = now();
    const char *ext = NULL;
    for (const tvec_dir *d = tvec_dirs; d->dir; d++) {
        if (strcmp(d->format, format) != 0) continue;
        sweep_dir(d->dir, d->ext, format);
        if (!ext) ext = d->ext;
    }
    sweep_regress(target, format, ext);
    finish(format, t0, min_vectors * (MUTATIONS + 1));
}

static void test_work_bounds_btf(void **state) {
    (void)state;
    sweep_format("btf", "btf", 30);
}

static void test_work_bounds_tenbin(void **state) {
    (void)state;
    sweep_format("tenbin", "tenbin", 30);
}

static void test_work_bounds_rten(void **state) {
    (void)state;
    sweep_format("rten", "rten", 8);
}

static void test_work_bounds_tmfile(void **state) {
    (void)state;
    sweep_format("tmfile", "tmfile", 3);
}

static void test_work_bounds_zio(void **state) {
    (void)state;
    sweep_format("zio", "zmsg", 6);
}

static void test_work_bounds_onnx(void **state) {
    (void)state;
    sweep_format("onnx", "onnx", 7);
}

static void test_work_bounds_onnx_tensor(void **state) {
    (void)state;
    sweep_format("onnx-tensor", "tensorproto", 11);
}

static void test_work_bounds_tflite(void **state) {
    (void)state;
    sweep_format("tflite", "tflite", 8);
}

int main(void) {
    /* TIO_WORK_BOUND_ONLY=test_work_bounds_btf runs one group (cmocka pattern) */
    const char *only = getenv("TIO_WORK_BOUND_ONLY");
    if (only && *only) cmocka_set_test_filter(only);
    tvec_note_shared();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_work_bounds_btf),    cmocka_unit_test(test_work_bounds_tenbin),
        cmocka_unit_test(test_work_bounds_rten),   cmocka_unit_test(test_work_bounds_tmfile),
        cmocka_unit_test(test_work_bounds_zio),    cmocka_unit_test(test_work_bounds_onnx),
        cmocka_unit_test(test_work_bounds_onnx_tensor), cmocka_unit_test(test_work_bounds_tflite),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
