#define _POSIX_C_SOURCE 200809L
#include "tvec.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TIO_TEST_VECTORS
#error "TIO_TEST_VECTORS must be defined (tests/vectors)"
#endif
#ifndef TIO_SHARED_VECTORS
#error "TIO_SHARED_VECTORS must be defined (../shared/vectors)"
#endif

static char *join(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 2);
    if (!p) return NULL;
    memcpy(p, a, la);
    p[la] = '/';
    memcpy(p + la + 1, b, lb + 1);
    return p;
}

static int exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0;
}

int tvec_have_shared(void) { return exists(TIO_SHARED_VECTORS); }

void tvec_note_shared(void) {
    if (!tvec_have_shared())
        fprintf(stderr, "SKIPPED: the vectors only in ../shared/vectors (upstream files, "
                        "big_init, the large ones): it is not there\n");
}

char *tvec_path(const char *rel) {
    char *p = join(TIO_TEST_VECTORS, rel);
    if (p && exists(p)) return p;
    free(p);
    p = join(TIO_SHARED_VECTORS, rel);
    if (p && exists(p)) return p;
    free(p);
    return NULL;
}

char *tvec_path_or_skip(const char *rel) {
    char *p = tvec_path(rel);
    if (!p)
        fprintf(stderr, "SKIPPED: %s (not in tests/vectors, and %s is absent)\n", rel,
                TIO_SHARED_VECTORS);
    return p;
}

json_t *tvec_manifest(const char *rel) {
    char *p = tvec_path_or_skip(rel);
    if (!p) return NULL;
    json_error_t je;
    json_t *j = json_load_file(p, 0, &je);
    if (!j) fprintf(stderr, "bad manifest %s: %s\n", p, je.text);
    free(p);
    return j;
}

int tvec_read(const char *path, uint8_t **buf, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return -1; }
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return -1; }
    uint8_t *b = malloc((size_t)n + 1);
    if (!b) { fclose(f); return -1; }
    if (n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); fclose(f); return -1; }
    fclose(f);
    *buf = b;
    *len = (size_t)n;
    return 0;
}

uint8_t *tvec_load(const char *rel, size_t *len) {
    char *p = tvec_path_or_skip(rel);
    if (!p) return NULL;
    uint8_t *b = NULL;
    if (tvec_read(p, &b, len) != 0) {
        fprintf(stderr, "ERROR: %s exists but cannot be read\n", p);
        exit(1); /* a broken checkout, not a skip */
    }
    free(p);
    return b;
}

size_t tvec_load_frames(const char *dir, json_t *frames, uint8_t **bufs, size_t *lens,
                        size_t cap) {
    size_t n = json_array_size(frames);
    if (n > cap) {
        fprintf(stderr, "ERROR: %s: %zu frames, more than %zu\n", dir, n, cap);
        exit(1);
    }
    for (size_t k = 0; k < n; k++) {
        json_t *f = json_array_get(frames, k);
        const char *file = json_string_value(json_object_get(f, "file"));
        char rel[512];
        snprintf(rel, sizeof rel, "%s/%s", dir, file ? file : "?");
        bufs[k] = tvec_load(rel, &lens[k]);
        json_t *size = json_object_get(f, "size");
        if (!bufs[k] || (size && (json_int_t)lens[k] != json_integer_value(size))) {
            fprintf(stderr, "ERROR: frame %s is missing or not its listed size\n", rel);
            exit(1);
        }
    }
    return n;
}

long tvec_dead_pid(void) {
    fflush(NULL);
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    if (dead < 0 || waitpid(dead, NULL, 0) != dead) return -1;
    return (long)dead;
}

int tvec_write(const char *path, const void *buf, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int rc = (len == 0 || fwrite(buf, 1, len, f) == len) ? 0 : -1;
    if (fclose(f) != 0) rc = -1;
    return rc;
}

void tvec_hex(const uint8_t *bytes, size_t n, char *out) {
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[bytes[i] >> 4];
        out[2 * i + 1] = hx[bytes[i] & 15];
    }
    out[2 * n] = 0;
}

static int cmpstr(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void scan(const char *dir, const char *suffix, char ***names, size_t *n, size_t *cap) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    size_t ls = strlen(suffix);
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < ls || strcmp(e->d_name + l - ls, suffix) != 0) continue;
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 32;
            *names = realloc(*names, *cap * sizeof **names);
        }
        (*names)[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
}

char **tvec_list(const char *reldir, const char *suffix, size_t *count) {
    char **names = NULL;
    size_t n = 0, cap = 0;
    char *a = join(TIO_TEST_VECTORS, reldir), *b = join(TIO_SHARED_VECTORS, reldir);
    scan(a, suffix, &names, &n, &cap);
    scan(b, suffix, &names, &n, &cap);
    struct stat st;
    if (stat(a, &st) != 0 && stat(b, &st) != 0)
        fprintf(stderr, "SKIPPED: %s/*%s (only in %s, which is absent)\n", reldir, suffix,
                TIO_SHARED_VECTORS);
    free(a);
    free(b);
    if (n) qsort(names, n, sizeof *names, cmpstr);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        if (w && strcmp(names[w - 1], names[i]) == 0) { free(names[i]); continue; }
        names[w++] = names[i];
    }
    *count = w;
    return names;
}

const tvec_dir tvec_dirs[] = {
    {"btf", ".btf", "btf"},
    {"btf/malformed", ".btf", "btf"},
    {"btf/upstream", ".btf", "btf"},
    {"tenbin", ".ten", "tenbin"},
    {"tenbin/malformed", ".ten", "tenbin"},
    {"tenbin/quirks", ".ten", "tenbin"},
    {"tenbin/upstream", ".ten", "tenbin"},
    {"zio/tensorcom", ".ten", "tenbin"},
    {"rten/matmul_add", ".rten", "rten"},
    {"rten/small_cnn", ".rten", "rten"},
    {"rten/shape_ops", ".rten", "rten"},
    {"rten/int_consts", ".rten", "rten"},
    {"rten/big_init", ".rten", "rten"},
    {"tmfile", ".tmfile", "tmfile"},
    {"zio", ".zmsg", "zio"},
    {"onnx", ".onnx", "onnx"}, /* local copies of the small ones below */
    {"rten/big_init", ".onnx", "onnx"},
    {"tmfile", ".onnx", "onnx"},
    {"onnx_tensor", ".pb", "onnx-tensor"}, /* written by onnx (make_pb.py) */
    {"safetensors", ".safetensors", "safetensors"},
    {"npy", ".npy", "npy"},
    {"gguf", ".gguf", "gguf"},
    {"npz", ".npz", "npz"},
    {"torch", ".pt", "torch"},
    {"hfindex", ".index.json", "hfindex"}, /* indexes; their shards beside them */
    {"tflite/small", ".tflite", "tflite"}, /* local copies of the small TFLM models */
    {NULL, NULL, NULL},
};

void tvec_list_free(char **names, size_t count) {
    for (size_t i = 0; i < count; i++) free(names[i]);
    free(names);
}

uint64_t tvec_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

size_t tvec_memo_bomb(char *p) {
    size_t n = 0;
    memcpy(p, "\x80\x02]q\x00" "0", 6);
    n = 6;
    for (int lvl = 1; lvl <= 12; lvl++) {
        p[n++] = ']';
        p[n++] = '(';
        for (int k = 0; k < 1000; k++) {
            p[n++] = 'h';
            p[n++] = (char)(lvl - 1);
        }
        p[n++] = 'e';
        p[n++] = 'q';
        p[n++] = (char)lvl;
        p[n++] = '0';
    }
    p[n++] = 'h';
    p[n++] = 12;
    p[n++] = '.';
    return n;
}

double tvec_half(uint16_t h) {
    int ex = (h >> 10) & 31, m = h & 1023;
    double v = ex == 31 ? HUGE_VAL : ex ? (1024 + m) * ldexp(1, ex - 25) : m * ldexp(1, -24);
    return (h & 0x8000) ? -v : v;
}

int tvec_half_rounds(const uint8_t *h, const uint8_t *f, uint64_t n, uint64_t *bad) {
    for (uint64_t k = 0; k < n; k++) {
        float x;
        memcpy(&x, f + 4 * k, 4);
        double got = tvec_half((uint16_t)(h[2 * k] | h[2 * k + 1] << 8));
        /* half an ulp of float16 at |x| (subnormals: 2^-25) */
        double ulp = fabs(x) >= ldexp(1, -14) ? ldexp(1, ilogb(x) - 10) : ldexp(1, -24);
        if (fabs(got - x) > ulp / 2) {
            *bad = k;
            return 0;
        }
    }
    return 1;
}
