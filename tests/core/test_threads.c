/* Threads (docs/architecture.md, "Threads"): the promises the API makes about
 * threads, with real threads and fixed iteration counts (no timing), run
 * under ThreadSanitizer by `make test-tsan`:
 * - distinct containers of every vector (every format, malformed ones too)
 *   opened, hashed, converted and saved by 8 threads at once;
 * - one container of each vector shared read-only by 8 threads: every
 *   accessor, the three hash kinds, densify, graph traversal, properties,
 *   findings, conversions (ONNX -> rten runs its onnx_hash thread), message
 *   encoding (hold counts) and saves;
 * - saves of distinct files into one directory from 16 threads (both the
 *   O_TMPFILE and the named-temporary path) with a thread cleaning stale
 *   temporary files meanwhile;
 * - the stale-temporary cleanup racing with another process's saves.
 * Every thread computes a digest of what it saw; each must equal the one
 * computed before on one thread. Threads never call cmocka's asserts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/internal.h"
#include "tensio.h"
#include "tvec.h"

#define NTHREADS 8
/* Rounds over every vector per thread (distinct containers) and over every
 * shared container per thread: 8 x 2 x ~180 opens, 8 x 3 x ~150 readings. */
#define DISTINCT_ROUNDS 2
#define SHARED_ROUNDS 3
/* Vectors larger than this are left out: they add bytes, not interleavings. */
#define MAX_VECTOR_BYTES (512u << 10)
/* Densified copies compared in full up to this size. */
#define MAX_DENSE_COPY (1u << 20)

#define EXPECT(cond, ...)                   \
    do {                                    \
        if (!(cond)) fail_msg(__VA_ARGS__); \
    } while (0)

/* ------------------------------------------------------------- digests */

/* FNV-1a over everything a reader sees, read by this (instrumented) code so
 * that ThreadSanitizer checks each byte against the other threads. */
typedef struct dg {
    uint64_t h;
} dg;

static void dg_init(dg *d) { d->h = 0xcbf29ce484222325ull; }

static void dg_bytes(dg *d, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) d->h = (d->h ^ b[i]) * 0x100000001b3ull;
}

static void dg_u64(dg *d, uint64_t v) { dg_bytes(d, &v, sizeof v); }

static void dg_str(dg *d, const char *s) {
    if (!s) {
        dg_u64(d, 0xffffffffu);
        return;
    }
    size_t n = strlen(s);
    dg_u64(d, n);
    dg_bytes(d, s, n);
}

static void dg_err(dg *d, int rc, const tio_error *err) {
    dg_u64(d, (uint64_t)rc);
    if (rc) {
        dg_str(d, err->message);
        dg_u64(d, (uint64_t)err->offset);
    }
}

/* ----------------------------------------------------------- the readers */

static void graph_digest(dg *d, const tio_graph *g, const tio_graph *parent, int depth);

static void attr_digest(dg *d, const tio_graph *g, const tio_attr *a, int depth) {
    dg_str(d, a->name);
    dg_u64(d, (uint64_t)a->type);
    dg_u64(d, (uint64_t)a->i);
    dg_bytes(d, &a->f, sizeof a->f);
    dg_str(d, a->s);
    dg_str(d, a->label);
    dg_u64(d, a->count);
    if (a->ints) dg_bytes(d, a->ints, a->count * sizeof *a->ints);
    if (a->floats) dg_bytes(d, a->floats, a->count * sizeof *a->floats);
    if (a->tensors) dg_bytes(d, a->tensors, a->count * sizeof *a->tensors);
    for (size_t k = 0; a->strings && k < a->count; k++) dg_str(d, a->strings[k]);
    if (a->type == TIO_ATTR_GRAPH) graph_digest(d, a->graph, g, depth + 1);
    for (size_t k = 0; a->type == TIO_ATTR_GRAPHS && k < a->count; k++)
        graph_digest(d, a->graphs[k], g, depth + 1);
}

static void ids_digest(dg *d, size_t n, const int64_t *v) {
    dg_u64(d, n);
    if (n) dg_bytes(d, v, n * sizeof *v);
}

/* Every getter of a graph and of its subgraphs. */
static void graph_digest(dg *d, const tio_graph *g, const tio_graph *parent, int depth) {
    dg_u64(d, g != NULL);
    if (!g || depth > 64) return;
    dg_u64(d, tio_graph_parent(g) == parent);
    dg_str(d, tio_graph_native_format(g));
    size_t nv = tio_graph_value_count(g);
    dg_u64(d, nv);
    for (size_t i = 0; i < nv; i++) {
        tio_value_info v;
        dg_u64(d, (uint64_t)tio_graph_value(g, i, &v));
        dg_str(d, v.name);
        dg_u64(d, (uint64_t)v.dtype);
        dg_u64(d, (uint64_t)v.rank);
        dg_u64(d, (uint64_t)v.tensor);
        for (int64_t k = 0; k < v.rank; k++) {
            dg_u64(d, (uint64_t)v.dims[k].value);
            dg_str(d, v.dims[k].name);
        }
        if (v.name) dg_u64(d, (uint64_t)tio_graph_find_value(g, v.name));
    }
    size_t nn = tio_graph_node_count(g);
    dg_u64(d, nn);
    for (size_t i = 0; i < nn; i++) {
        tio_node_info n;
        dg_u64(d, (uint64_t)tio_graph_node(g, i, &n));
        dg_str(d, n.name);
        dg_str(d, n.op);
        dg_str(d, n.native_op);
        dg_str(d, n.domain);
        dg_u64(d, (uint64_t)n.native_id);
        ids_digest(d, n.input_count, n.inputs);
        ids_digest(d, n.output_count, n.outputs);
        dg_u64(d, n.attr_count);
        for (size_t j = 0; j < n.attr_count; j++) {
            tio_attr a, b;
            dg_u64(d, (uint64_t)tio_graph_attr(g, i, j, &a));
            attr_digest(d, g, &a, depth);
            dg_u64(d, (uint64_t)tio_graph_find_attr(g, i, a.name, &b));
            dg_str(d, b.name);
        }
    }
    ids_digest(d, tio_graph_input_count(g), tio_graph_inputs(g));
    ids_digest(d, tio_graph_output_count(g), tio_graph_outputs(g));
    ids_digest(d, tio_graph_capture_count(g), tio_graph_captures(g));
    size_t nm = tio_graph_meta_count(g);
    dg_u64(d, nm);
    for (size_t i = 0; i < nm; i++) {
        const char *k = NULL, *v = NULL;
        dg_u64(d, (uint64_t)tio_graph_meta_at(g, i, &k, &v));
        dg_str(d, k);
        dg_str(d, v);
        dg_u64(d, tio_graph_meta_get(g, k) != NULL);
    }
    size_t no = tio_graph_opset_count(g);
    dg_u64(d, no);
    for (size_t i = 0; i < no; i++) {
        const char *dom = NULL;
        int64_t ver = 0;
        dg_u64(d, (uint64_t)tio_graph_opset_at(g, i, &dom, &ver));
        dg_str(d, dom);
        dg_u64(d, (uint64_t)ver);
    }
}

static void kv_digest(dg *d, size_t n, int (*at)(const void *, size_t, const char **, const char **),
                      const void *obj) {
    dg_u64(d, n);
    for (size_t i = 0; i < n; i++) {
        const char *k = NULL, *v = NULL;
        dg_u64(d, (uint64_t)at(obj, i, &k, &v));
        dg_str(d, k);
        dg_str(d, v);
    }
}

static int tmeta_at(const void *t, size_t i, const char **k, const char **v) {
    return tio_tensor_meta_at(t, i, k, v);
}
static int cmeta_at(const void *c, size_t i, const char **k, const char **v) {
    return tio_container_meta_at(c, i, k, v);
}
static int cprop_at(const void *c, size_t i, const char **k, const char **v) {
    return tio_container_prop_at(c, i, k, v);
}

static void tensor_digest(dg *d, const tio_container *c, size_t i) {
    const tio_tensor *t = tio_container_tensor(c, i);
    const char *name = tio_tensor_name(t);
    dg_str(d, name);
    if (name) dg_u64(d, (uint64_t)tio_tensor_source_offset(tio_container_find(c, name)));
    dg_u64(d, (uint64_t)tio_tensor_dtype(t));
    dg_u64(d, (uint64_t)tio_tensor_layout(t));
    size_t rank = tio_tensor_rank(t);
    dg_u64(d, rank);
    dg_bytes(d, tio_tensor_shape(t), rank * sizeof(int64_t));
    dg_u64(d, tio_tensor_numel(t));
    dg_u64(d, tio_tensor_nbytes(t));
    dg_u64(d, tio_tensor_nnz(t));
    dg_u64(d, (uint64_t)tio_tensor_is_aligned(t));
    dg_u64(d, (uint64_t)tio_tensor_source_offset(t));
    if (tio_tensor_nbytes(t)) dg_bytes(d, tio_tensor_data(t), tio_tensor_nbytes(t));
    if (tio_tensor_indices(t))
        dg_bytes(d, tio_tensor_indices(t), (size_t)tio_tensor_nnz(t) * rank * 8);
    kv_digest(d, tio_tensor_meta_count(t), tmeta_at, t);
    static const int kinds[3] = {TIO_HASH_DENSE, TIO_HASH_VALUES, TIO_HASH_INDICES};
    for (int k = 0; k < 3; k++) {
        uint8_t h[32];
        tio_error err;
        int rc = tio_tensor_sha256(t, kinds[k], h, &err);
        dg_err(d, rc, &err);
        if (rc == TIO_OK) dg_bytes(d, h, sizeof h);
    }
    size_t dense = (size_t)tio_tensor_numel(t) * tio_dtype_size(tio_tensor_dtype(t));
    if (dense <= MAX_DENSE_COPY) {
        uint8_t *buf = malloc(dense ? dense : 1);
        tio_error err;
        int rc = buf ? tio_tensor_densify(t, buf, dense, &err) : TIO_E_NOMEM;
        dg_u64(d, (uint64_t)rc);
        if (rc == TIO_OK) dg_bytes(d, buf, dense);
        free(buf);
    }
}

static const unsigned LOSSY = TIO_SAVE_DENSIFY | TIO_SAVE_DROP_NAMES | TIO_SAVE_DROP_METADATA |
                              TIO_SAVE_WIDEN;

/* Everything a reader can ask a container, its encodings in every format
 * and as messages, and (when save_base is set) a save of it as a file in
 * its own format (or btf), read back. */
static void container_digest(dg *d, const tio_container *c, const char *save_base) {
    dg_str(d, tio_container_format(c));
    dg_u64(d, tio_container_source_size(c));
    tio_limits lim;
    tio_container_get_limits(c, &lim);
    const uint64_t limv[7] = {lim.max_tensors,  lim.max_rank,    lim.max_header_bytes,
                              lim.max_name_bytes, lim.max_depth, lim.max_objects,
                              lim.max_dense_bytes}; /* not the struct: its padding */
    dg_bytes(d, limv, sizeof limv);
    size_t n = tio_container_count(c);
    dg_u64(d, n);
    for (size_t i = 0; i < n; i++) tensor_digest(d, c, i);
    kv_digest(d, tio_container_meta_count(c), cmeta_at, c);
    kv_digest(d, tio_container_prop_count(c), cprop_at, c);
    for (size_t i = 0; i < tio_container_meta_count(c); i++) {
        const char *k = NULL;
        tio_container_meta_at(c, i, &k, NULL);
        dg_str(d, tio_container_meta_get(c, k));
    }
    size_t nw = tio_container_warning_count(c);
    dg_u64(d, nw);
    for (size_t i = 0; i < nw; i++) {
        const tio_error *w = tio_container_warning(c, i);
        dg_u64(d, (uint64_t)w->code);
        dg_u64(d, (uint64_t)w->offset);
        dg_str(d, w->format);
        dg_str(d, w->message);
    }
    graph_digest(d, tio_container_graph(c), NULL, 0);
    /* every format (ONNX -> rten hashes the source on a thread of its own) */
    for (size_t f = 0; f < tio_format_count(); f++) {
        tio_save_options so = {.format = tio_format_name(f), .flags = LOSSY};
        tio_error err;
        dg_err(d, tio_check_save(c, &so, &err), &err);
        void *buf = NULL;
        size_t size = 0;
        int rc = tio_save_memory(c, &so, &buf, &size, &err);
        dg_err(d, rc, &err);
        if (rc == TIO_OK) {
            dg_u64(d, size);
            dg_bytes(d, buf, size);
        }
        tio_free(buf);
    }
    /* messages hold the container (its hold count) until freed */
    static const char *const msg_formats[2] = {"zio", "tenbin"};
    for (int k = 0; k < 2; k++) {
        tio_save_options so = {.format = msg_formats[k], .flags = LOSSY};
        tio_message *m = NULL;
        tio_error err;
        int rc = tio_message_encode(c, &so, &m, &err);
        dg_err(d, rc, &err);
        for (size_t p = 0; rc == TIO_OK && p < tio_message_part_count(m); p++) {
            tio_part part = tio_message_part(m, p);
            dg_u64(d, part.size);
            dg_bytes(d, part.data, part.size);
        }
        tio_message_free(m);
    }
    if (save_base) {
        const char *fmt = tio_container_format(c) ? tio_container_format(c) : "btf";
        char path[700];
        snprintf(path, sizeof path, "%s.%s", save_base, fmt);
        tio_save_options so = {.format = fmt, .flags = LOSSY | TIO_SAVE_NO_SYNC};
        tio_error err;
        int rc = tio_save(c, path, &so, &err);
        dg_u64(d, (uint64_t)rc); /* messages name the path */
        uint8_t *bytes = NULL;
        size_t len = 0;
        if (rc == TIO_OK && tvec_read(path, &bytes, &len) == 0) {
            dg_u64(d, len);
            dg_bytes(d, bytes, len);
        }
        free(bytes);
    }
}

/* ------------------------------------------------------------ the vectors */

typedef struct vec {
    char *path;
    const char *format;
    tio_container *shared; /* opened once (shared test), or NULL */
    uint64_t opened;       /* digest of open + container_digest (with a save) */
    uint64_t read;         /* digest of container_digest of `shared` */
} vec;

typedef struct vectors {
    vec *v;
    size_t n;
    char dir[256]; /* where saves go */
} vectors;

static vectors V;

static uint64_t open_digest(const vec *v, const char *save_base) {
    dg d;
    dg_init(&d);
    tio_open_options oo = {.format = v->format};
    tio_container *c = NULL;
    tio_error err;
    int rc = tio_open(v->path, &oo, &c, &err);
    dg_err(&d, rc, &err);
    if (rc == TIO_OK) container_digest(&d, c, save_base);
    tio_container_free(c);
    return d.h;
}

static uint64_t shared_digest(const vec *v, const char *save_base) {
    dg d;
    dg_init(&d);
    container_digest(&d, v->shared, save_base);
    return d.h;
}

static int setup(void **state) {
    (void)state;
    tvec_note_shared();
    size_t cap = 0;
    for (const tvec_dir *td = tvec_dirs; td->dir; td++) {
        size_t count = 0;
        char **names = tvec_list(td->dir, td->ext, &count);
        for (size_t k = 0; k < count; k++) {
            char rel[512];
            snprintf(rel, sizeof rel, "%s/%s", td->dir, names[k]);
            char *path = tvec_path(rel);
            struct stat st;
            if (!path || stat(path, &st) != 0 || st.st_size > (off_t)MAX_VECTOR_BYTES) {
                free(path);
                continue;
            }
            if (V.n == cap) {
                cap = cap ? cap * 2 : 64;
                V.v = realloc(V.v, cap * sizeof *V.v);
                if (!V.v) return -1;
            }
            memset(&V.v[V.n], 0, sizeof *V.v);
            V.v[V.n].path = path;
            V.v[V.n].format = td->format;
            V.n++;
        }
        tvec_list_free(names, count);
    }
    snprintf(V.dir, sizeof V.dir, "/tmp/tio-threads-XXXXXX");
    if (!mkdtemp(V.dir)) return -1;
    return 0;
}

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static int teardown(void **state) {
    (void)state;
    for (size_t i = 0; i < V.n; i++) {
        free(V.v[i].path);
        tio_container_free(V.v[i].shared);
    }
    free(V.v);
    remove_tree(V.dir);
    return 0;
}

/* ------------------------------------------------------------ thread runs */

typedef struct worker {
    pthread_t th;
    int id;
    void *arg;
    unsigned long done;     /* iterations completed */
    unsigned long mismatch; /* digests that differ from the single-threaded one */
    char first[512];        /* the first mismatch */
} worker;

/* Starts n threads on fn and joins them; fails unless all started. */
static void run_threads(worker *w, int n, void *(*fn)(void *), void *arg) {
    for (int k = 0; k < n; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].id = k;
        w[k].arg = arg;
        EXPECT(pthread_create(&w[k].th, NULL, fn, &w[k]) == 0, "pthread_create %d", k);
    }
    for (int k = 0; k < n; k++) pthread_join(w[k].th, NULL);
}

static void note(worker *w, const char *fmt, ...) TIO_PRINTF(2, 3);
static void note(worker *w, const char *fmt, ...) {
    if (w->mismatch++) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->first, sizeof w->first, fmt, ap);
    va_end(ap);
}

static void expect_clean(const worker *w, int n, unsigned long want_done, const char *what) {
    unsigned long done = 0;
    for (int k = 0; k < n; k++) {
        EXPECT(w[k].mismatch == 0, "%s: thread %d: %lu mismatches, first: %s", what, k,
               w[k].mismatch, w[k].first);
        done += w[k].done;
    }
    EXPECT(done == want_done, "%s: %lu iterations done, expected %lu", what, done, want_done);
    fprintf(stderr, "%s: %d threads, %lu iterations, all equal to the single-threaded run\n",
            what, n, done);
}

/* -------------------------------------------------- distinct containers */

static void *distinct_main(void *arg) {
    worker *w = arg;
    for (int r = 0; r < DISTINCT_ROUNDS; r++) {
        for (size_t j = 0; j < V.n; j++) {
            size_t i = (j + (size_t)w->id * V.n / NTHREADS + (size_t)r) % V.n;
            char base[400];
            snprintf(base, sizeof base, "%s/t%d-%zu", V.dir, w->id, i);
            uint64_t h = open_digest(&V.v[i], base);
            if (h != V.v[i].opened) note(w, "%s: round %d differs", V.v[i].path, r);
            w->done++;
        }
    }
    return NULL;
}

/* Distinct containers of every vector: opened, read, hashed, converted to
 * every format, encoded as messages and saved (to distinct files in one
 * directory, created in the first round and replaced in the second) by 8
 * threads at once. */
static void test_distinct_containers(void **state) {
    (void)state;
    assert_true(V.n > 0);
    for (size_t i = 0; i < V.n; i++) {
        char base[400];
        snprintf(base, sizeof base, "%s/base-%zu", V.dir, i);
        V.v[i].opened = open_digest(&V.v[i], base);
    }
    /* every format has vectors here */
    for (size_t f = 0; f < tio_format_count(); f++) {
        size_t k = 0;
        while (k < V.n && strcmp(V.v[k].format, tio_format_name(f)) != 0) k++;
        EXPECT(k < V.n, "no vector of format %s", tio_format_name(f));
    }
    worker w[NTHREADS];
    run_threads(w, NTHREADS, distinct_main, NULL);
    expect_clean(w, NTHREADS, (unsigned long)NTHREADS * DISTINCT_ROUNDS * V.n,
                 "distinct containers");
}

/* ------------------------------------------------------ shared container */

static void *shared_main(void *arg) {
    worker *w = arg;
    for (int r = 0; r < SHARED_ROUNDS; r++) {
        for (size_t j = 0; j < V.n; j++) {
            size_t i = (j + (size_t)w->id * 7 + (size_t)r) % V.n;
            if (!V.v[i].shared) continue;
            char base[400];
            snprintf(base, sizeof base, "%s/s%d-%zu", V.dir, w->id, i);
            if (shared_digest(&V.v[i], base) != V.v[i].read)
                note(w, "%s: round %d differs", V.v[i].path, r);
            w->done++;
        }
    }
    return NULL;
}

/* One container per vector, shared read-only by 8 threads: every call the
 * header lists as safe on a shared container, at once. */
static void test_shared_container(void **state) {
    (void)state;
    size_t shared = 0, graphs = 0, onnx = 0;
    for (size_t i = 0; i < V.n; i++) {
        tio_open_options oo = {.format = V.v[i].format};
        tio_error err;
        if (tio_open(V.v[i].path, &oo, &V.v[i].shared, &err) != TIO_OK) continue;
        char base[400];
        snprintf(base, sizeof base, "%s/base-s%zu", V.dir, i);
        V.v[i].read = shared_digest(&V.v[i], base);
        shared++;
        graphs += tio_container_graph(V.v[i].shared) != NULL;
        onnx += strcmp(V.v[i].format, "onnx") == 0;
    }
    assert_true(shared > 0);
    if (tvec_have_shared()) {
        EXPECT(graphs >= 10, "only %zu containers with a graph", graphs);
        EXPECT(onnx >= 3, "only %zu ONNX containers", onnx);
    }
    worker w[NTHREADS];
    run_threads(w, NTHREADS, shared_main, NULL);
    expect_clean(w, NTHREADS, (unsigned long)NTHREADS * SHARED_ROUNDS * shared,
                 "shared containers");
    for (size_t i = 0; i < V.n; i++) {
        if (V.v[i].shared) EXPECT(atomic_load(&V.v[i].shared->refs) == 1, "%s: hold count %u",
                                  V.v[i].path, (unsigned)atomic_load(&V.v[i].shared->refs));
    }
}

/* ------------------------------------------------- saves in one directory */

#define SAVERS 16
#define SAVES_PER_THREAD 150
#define STALE 40

typedef struct save_run {
    const char *dir;
    const tio_container *c[4]; /* contents: file j of thread k gets c[(j + k) % 4] */
    uint64_t want[4];          /* dg of their btf bytes */
    atomic_int savers_left;
    atomic_ulong cleaned;      /* tio_save_cleanup's counts */
    atomic_ulong cleanups;
} save_run;

/* A float32 tensor of n elements, values from `seed`. */
static tio_container *make_container(size_t n, float seed) {
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = seed + (float)i;
    tio_container *c = tio_container_new();
    const int64_t shape[1] = {(int64_t)n};
    tio_tensor_desc d = {NULL, TIO_FLOAT32, 1, shape, TIO_LAYOUT_DENSE, v, n * sizeof *v, 0, NULL};
    tio_error err;
    if (tio_container_add(c, &d, 0, NULL, &err) != TIO_OK) fail_msg("%s", err.message);
    free(v);
    return c;
}

static uint64_t file_dg(const char *path) {
    uint8_t *b = NULL;
    size_t n = 0;
    if (tvec_read(path, &b, &n) != 0) return 0;
    dg d;
    dg_init(&d);
    dg_bytes(&d, b, n);
    free(b);
    return d.h;
}

static void *saver_main(void *arg) {
    worker *w = arg;
    save_run *s = w->arg;
    for (int j = 0; j < SAVES_PER_THREAD; j++) {
        char path[700];
        snprintf(path, sizeof path, "%s/f%d-%d.btf", s->dir, w->id, j);
        int which = (j + w->id) % 4;
        /* both paths; every 8th save cleans first, every 32nd is synced */
        unsigned how = (unsigned)(j & 1) ? TIO__SAVE_NO_TMPFILE : 0;
        unsigned flags = (j % 32 == 5 ? 0u : TIO_SAVE_NO_SYNC) | (j % 8 == 3 ? TIO_SAVE_CLEANUP : 0u);
        tio_save_options so = {.flags = flags};
        tio_error err;
        int rc = tio__save_file(s->c[which], path, &so, how, &err);
        if (rc != TIO_OK) note(w, "save %s: %s", path, err.message);
        else if (file_dg(path) != s->want[which]) note(w, "%s: other bytes", path);
        w->done++;
    }
    atomic_fetch_sub(&s->savers_left, 1);
    return NULL;
}

static void *cleaner_main(void *arg) {
    worker *w = arg;
    save_run *s = w->arg;
    /* bounded by the savers' iteration counts: until the last one is done */
    while (atomic_load(&s->savers_left) > 0) {
        size_t removed = 0;
        tio_error err;
        if (tio_save_cleanup(s->dir, &removed, &err) != TIO_OK)
            note(w, "cleanup: %s", err.message);
        atomic_fetch_add(&s->cleaned, removed);
        atomic_fetch_add(&s->cleanups, 1);
        w->done++;
    }
    return NULL;
}

static void *save_or_clean(void *arg) {
    worker *w = arg;
    return w->id < SAVERS ? saver_main(arg) : cleaner_main(arg);
}

/* Plants n temporary files of a dead process in dir, for other targets
 * than the saves' ("<what><k>.btf"): only the directory cleanups remove them. */
static void plant_stale(const char *dir, const char *what, int n) {
    long dead = tvec_dead_pid();
    assert_true(dead > 0);
    for (int k = 0; k < n; k++) {
        char p[600];
        snprintf(p, sizeof p, "%s/.%s%d.btf.tio-%ld-%016llx.tmp", dir, what, k, dead,
                 (unsigned long long)(0x1234567890abcdefull + (unsigned)k));
        EXPECT(tvec_write(p, "x", 1) == 0, "create %s: %s", p, strerror(errno));
    }
}

/* Lists dir: how many entries, and how many are temporary files (".*.tmp"). */
static void count_entries(const char *dir, size_t *files, size_t *temps) {
    *files = *temps = 0;
    DIR *d = opendir(dir);
    EXPECT(d != NULL, "opendir %s", dir);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        size_t n = strlen(de->d_name);
        ++*files;
        if (de->d_name[0] == '.' && n > 4 && strcmp(de->d_name + n - 4, ".tmp") == 0) ++*temps;
    }
    closedir(d);
}

/* 16 threads save 150 distinct files each into one directory (O_TMPFILE and
 * named temporary files, some with TIO_SAVE_CLEANUP) while two threads clean
 * the directory's stale temporary files over and over: every save succeeds
 * and reads back, the dead process's files planted before are removed (each
 * once), nothing of this process's is. */
static void test_saves_one_directory(void **state) {
    (void)state;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/saves", V.dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    save_run s;
    memset(&s, 0, sizeof s);
    s.dir = dir;
    tio_container *c[4];
    for (int k = 0; k < 4; k++) {
        c[k] = make_container(1024u << k, (float)k); /* 4 KiB .. 32 KiB */
        s.c[k] = c[k];
        void *buf = NULL;
        size_t n = 0;
        tio_save_options so = {.format = "btf"};
        tio_error err;
        assert_int_equal(tio_save_memory(c[k], &so, &buf, &n, &err), TIO_OK);
        dg d;
        dg_init(&d);
        dg_bytes(&d, buf, n);
        s.want[k] = d.h;
        tio_free(buf);
    }
    plant_stale(dir, "stale", STALE);
    atomic_init(&s.savers_left, SAVERS);
    worker w[SAVERS + 2];
    run_threads(w, SAVERS + 2, save_or_clean, &s);
    unsigned long saves = 0;
    for (int k = 0; k < SAVERS + 2; k++) {
        EXPECT(w[k].mismatch == 0, "thread %d: %lu failures, first: %s", k, w[k].mismatch,
               w[k].first);
        if (k < SAVERS) saves += w[k].done;
    }
    assert_int_equal(saves, SAVERS * SAVES_PER_THREAD);
    size_t removed = 0;
    tio_error err;
    assert_int_equal(tio_save_cleanup(dir, &removed, &err), TIO_OK);
    EXPECT(atomic_load(&s.cleaned) + removed == STALE,
           "the cleanups removed %lu + %zu files, expected the %d stale ones",
           atomic_load(&s.cleaned), removed, STALE);
    size_t files, temps;
    count_entries(dir, &files, &temps);
    EXPECT(files == SAVERS * SAVES_PER_THREAD && temps == 0,
           "%zu entries (%zu temporary files), expected %d saved files", files, temps,
           SAVERS * SAVES_PER_THREAD);
    fprintf(stderr, "saves: %lu saves by %d threads, %lu cleanups meanwhile, %d stale removed\n",
            saves, SAVERS, atomic_load(&s.cleanups), STALE);
    for (int k = 0; k < 4; k++) tio_container_free(c[k]);
}

/* ------------------------------------ cleanup racing another process's save */

#define CHILD_SAVES 400
#define TARGETS 8

/* The child: CHILD_SAVES saves over TARGETS names, most through named
 * temporary files (they exist while the file is written), every one read
 * back. Exit status 0 when all succeeded; 1 + the first failure otherwise. */
static int child_saves(const char *dir, const tio_container *c, uint64_t want) {
    for (int j = 0; j < CHILD_SAVES; j++) {
        char path[700];
        snprintf(path, sizeof path, "%s/shared%d.btf", dir, j % TARGETS);
        tio_save_options so = {.flags = TIO_SAVE_NO_SYNC};
        tio_error err;
        unsigned how = j % 4 == 0 ? 0u : TIO__SAVE_NO_TMPFILE;
        if (tio__save_file(c, path, &so, how, &err) != TIO_OK) {
            fprintf(stderr, "child: save %d: %s\n", j, err.message);
            return 1;
        }
    }
    for (int t = 0; t < TARGETS; t++) {
        char path[700];
        snprintf(path, sizeof path, "%s/shared%d.btf", dir, t);
        if (file_dg(path) != want) return 2;
    }
    return 0;
}

typedef struct race_run {
    const char *dir;
    const tio_container *c;
    atomic_int child_done;
    atomic_ulong cleaned;
} race_run;

/* Parent threads: saves of the child's targets with TIO_SAVE_CLEANUP (which
 * looks at those targets' temporary files), and tio_save_cleanup of the
 * whole directory, until the child is done (it is bounded by its count). */
static void *race_main(void *arg) {
    worker *w = arg;
    race_run *r = w->arg;
    for (int j = 0; !atomic_load(&r->child_done); j++) {
        tio_error err;
        if (w->id % 2) {
            size_t removed = 0;
            if (tio_save_cleanup(r->dir, &removed, &err) != TIO_OK)
                note(w, "cleanup: %s", err.message);
            atomic_fetch_add(&r->cleaned, removed);
        } else {
            char path[700];
            snprintf(path, sizeof path, "%s/shared%d.btf", r->dir, (j + w->id) % TARGETS);
            tio_save_options so = {.flags = TIO_SAVE_NO_SYNC | TIO_SAVE_CLEANUP};
            if (tio__save_file(r->c, path, &so, (unsigned)j & 1u, &err) != TIO_OK)
                note(w, "save %s: %s", path, err.message);
        }
        w->done++;
    }
    return NULL;
}

/* A forked process saves 400 times over 8 targets while 4 threads here save
 * the same targets with TIO_SAVE_CLEANUP and clean the directory: the
 * child's temporary files belong to a live process and are never removed
 * (its saves would fail: the rename finds no file), while a dead process's
 * planted files are, each once. */
static void test_cleanup_races_another_process(void **state) {
    (void)state;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/race", V.dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    tio_container *c = make_container(64u << 10, 7.0f); /* 256 KiB: a wide window */
    void *buf = NULL;
    size_t n = 0;
    tio_save_options bo = {.format = "btf"};
    tio_error err;
    assert_int_equal(tio_save_memory(c, &bo, &buf, &n, &err), TIO_OK);
    dg d;
    dg_init(&d);
    dg_bytes(&d, buf, n);
    tio_free(buf);
    plant_stale(dir, "gone", STALE);
    fflush(NULL);
    pid_t child = fork(); /* no other thread runs here now */
    assert_true(child >= 0);
    if (child == 0) _exit(child_saves(dir, c, d.h));
    race_run r;
    memset(&r, 0, sizeof r);
    r.dir = dir;
    r.c = c;
    atomic_init(&r.child_done, 0);
    worker w[4];
    for (int k = 0; k < 4; k++) {
        memset(&w[k], 0, sizeof w[k]);
        w[k].id = k;
        w[k].arg = &r;
        assert_int_equal(pthread_create(&w[k].th, NULL, race_main, &w[k]), 0);
    }
    int status = 0;
    pid_t got = waitpid(child, &status, 0);
    atomic_store(&r.child_done, 1);
    for (int k = 0; k < 4; k++) pthread_join(w[k].th, NULL);
    assert_int_equal(got, child);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "the child's saves failed (status %d): a temporary file of it was removed?", status);
    unsigned long ops = 0;
    for (int k = 0; k < 4; k++) {
        EXPECT(w[k].mismatch == 0, "thread %d: %s", k, w[k].first);
        ops += w[k].done;
    }
    size_t removed = 0;
    assert_int_equal(tio_save_cleanup(dir, &removed, &err), TIO_OK);
    EXPECT(atomic_load(&r.cleaned) + removed == STALE, "removed %lu + %zu, expected %d",
           atomic_load(&r.cleaned), removed, STALE);
    size_t files, temps;
    count_entries(dir, &files, &temps);
    EXPECT(files == TARGETS && temps == 0, "%zu entries (%zu temporary), expected %d", files,
           temps, TARGETS);
    for (int t = 0; t < TARGETS; t++) {
        char path[700];
        snprintf(path, sizeof path, "%s/shared%d.btf", dir, t);
        EXPECT(file_dg(path) == d.h, "%s: other bytes", path);
    }
    fprintf(stderr, "race: %d child saves, %lu saves/cleanups here meanwhile\n", CHILD_SAVES,
            ops);
    tio_container_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distinct_containers),
        cmocka_unit_test(test_shared_container),
        cmocka_unit_test(test_saves_one_directory),
        cmocka_unit_test(test_cleanup_races_another_process),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
