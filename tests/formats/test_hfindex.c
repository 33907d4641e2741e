/* Hugging Face sharded checkpoints (src/formats/hfindex.c, hfsave.c): repos
 * written here (shards by tio_save, indexes by hand or by the sharded save),
 * opened as one container; hostile indexes (paths out of the directory,
 * missing shards and tensors, duplicates, huge counts, malformed JSON), each
 * refused with a message that names what is wrong; the packing and the
 * index bytes of a sharded save; tio_parse_size. The same against Debian's
 * torch and Python's json: tests/formats/test_hfindex.py. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"

/* ------------------------------------------------------------- helpers */

static char root[256];

static int setup(void **state) {
    (void)state;
    snprintf(root, sizeof root, "/tmp/tio-hfindex-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static void rm_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) rm_tree(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static int teardown(void **state) {
    (void)state;
    rm_tree(root);
    return 0;
}

/* A fresh directory root/name; its path in out. */
static void fresh_dir(const char *name, char *out, size_t cap) {
    snprintf(out, cap, "%s/%s", root, name);
    rm_tree(out);
    assert_int_equal(mkdir(out, 0777), 0);
}

static void write_text(const char *dir, const char *name, const char *text) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A safetensors file dir/name holding float32 tensors `names` (space
 * separated), tensor k of shape [k+1] with values k*10 + i, and metadata
 * "format" = fmt unless NULL. */
static void write_shard_meta(const char *dir, const char *name, const char *names,
                             const char *fmt) {
    tio_container *c = tio_container_new();
    if (fmt) assert_int_equal(tio_container_meta_set(c, "format", fmt, NULL), TIO_OK);
    assert_non_null(c);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", names);
    int k = 0;
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " "), k++) {
        float *v = malloc(sizeof(float) * (size_t)(k + 1));
        for (int i = 0; i <= k; i++) v[i] = (float)(k * 10 + i);
        int64_t shape[1] = {k + 1};
        tio_tensor_desc d = {tok, TIO_FLOAT32, 1, shape, TIO_LAYOUT_DENSE, v,
                             sizeof(float) * (size_t)(k + 1), 0, NULL};
        tio_error e;
        assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
        free(v);
    }
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    tio_save_options o = {.format = "safetensors", .flags = TIO_SAVE_NO_SYNC};
    tio_error e;
    assert_int_equal(tio_save(c, p, &o, &e), TIO_OK);
    tio_container_free(c);
}

static void write_shard(const char *dir, const char *name, const char *names) {
    write_shard_meta(dir, name, names, NULL);
}

/* The usual two-shard repo: a, b in shard 1; c in shard 2. */
static const char two_shards[] =
    "{\n  \"metadata\": {\"total_size\": 16},\n  \"weight_map\": {\n"
    "    \"a\": \"model-00001-of-00002.safetensors\",\n"
    "    \"b\": \"model-00001-of-00002.safetensors\",\n"
    "    \"c\": \"model-00002-of-00002.safetensors\"\n  }\n}\n";

static void make_repo(const char *name, char *dir, size_t cap, const char *index) {
    fresh_dir(name, dir, cap);
    write_shard(dir, "model-00001-of-00002.safetensors", "a b");
    write_shard(dir, "model-00002-of-00002.safetensors", "c");
    write_text(dir, "model.safetensors.index.json", index);
}

static int open_dir(const char *dir, unsigned flags, const tio_limits *lim, tio_container **c,
                    tio_error *e) {
    tio_open_options o = {.flags = flags, .limits = lim};
    tio_error_clear(e);
    return tio_open(dir, &o, c, e);
}

/* Opening dir must fail with code and a message holding want. */
static void refused(const char *dir, unsigned flags, int code, const char *want) {
    tio_container *c = NULL;
    tio_error e;
    int rc = open_dir(dir, flags, NULL, &c, &e);
    if (rc != code || !strstr(e.message, want)) {
        fprintf(stderr, "%s: got %s: %s (expected %s, '%s')\n", dir, tio_status_name(rc),
                e.message, tio_status_name(code), want);
        fail();
    }
    assert_null(c);
}

/* Writes index text into a repo named name and expects the open refused. */
static void refused_index(const char *name, const char *index, int code, const char *want) {
    char dir[512];
    make_repo(name, dir, sizeof dir, index);
    refused(dir, 0, code, want);
}

/* ---------------------------------------------------------------- reading */

static void test_two_shards(void **state) {
    (void)state;
    char dir[512], idx[600];
    make_repo("two", dir, sizeof dir, two_shards);
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
    const char *paths[] = {dir, idx};
    for (int k = 0; k < 2; k++) {
        tio_container *c = NULL;
        tio_error e;
        assert_int_equal(open_dir(paths[k], TIO_OPEN_STRICT, NULL, &c, &e), TIO_OK);
        assert_string_equal(tio_container_format(c), "hfindex");
        assert_int_equal(tio_container_count(c), 3);
        const char *want[] = {"a", "b", "c"};
        const float first[] = {0, 10, 0};
        const size_t n[] = {1, 2, 1};
        for (size_t i = 0; i < 3; i++) {
            const tio_tensor *t = tio_container_tensor(c, i);
            assert_string_equal(tio_tensor_name(t), want[i]);
            assert_int_equal(tio_tensor_numel(t), n[i]);
            const float *v = tio_tensor_data(t);
            assert_true(v[0] == first[i]);
        }
        assert_string_equal(tio_container_prop_get(c, "shards"), "2");
        assert_string_equal(tio_container_prop_get(c, "total_size"), "16");
        assert_int_equal(tio_container_warning_count(c), 0);
        /* prefetching the index's container prefetches its shards */
        int how = -1;
        assert_int_equal(tio__prefetch(c, false, &how, &e), TIO_OK);
        assert_int_not_equal(how, TIO_PREFETCH_NONE);
        tio_container_free(c); /* the shards' mappings go with it (ASan) */
    }
    /* from memory there is no directory to find the shards in */
    tio_container *c = NULL;
    tio_error e;
    tio_open_options o = {.format = "hfindex"};
    assert_int_equal(tio_open_memory(two_shards, sizeof two_shards - 1, &o, &c, &e),
                     TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "by its path"));
    /* the probe takes the index's bytes */
    assert_string_equal(tio_format_probe(two_shards, sizeof two_shards - 1), "hfindex");
    assert_null(tio_format_probe("{\"a\": 1}", 8));
    assert_string_equal(tio_format_for_path("x/pytorch_model.bin.index.json"), "hfindex");
}

static void test_model_dir(void **state) {
    (void)state;
    char dir[512];
    fresh_dir("empty", dir, sizeof dir);
    refused(dir, 0, TIO_E_IO, "is a directory without model.safetensors");
    /* each file as the format its name says, not probed: an index that is
     * not JSON is refused as an index (not read as the BTF it is) */
    fresh_dir("notjson", dir, sizeof dir);
    {
        char src[600];
        snprintf(src, sizeof src, "%s/model.safetensors.index.json", dir);
        int64_t one = 1;
        float v = 1;
        tio_container *c = tio_container_new();
        tio_tensor_desc d = {NULL, TIO_FLOAT32, 1, &one, TIO_LAYOUT_DENSE, &v, 4, 0, NULL};
        tio_error e;
        assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
        tio_save_options o = {.format = "btf", .flags = TIO_SAVE_NO_SYNC};
        assert_int_equal(tio_save(c, src, &o, &e), TIO_OK);
        tio_container_free(c);
    }
    refused(dir, 0, TIO_E_CORRUPT, "the index is not valid JSON");
    /* a single file wins over an index, as transformers looks */
    make_repo("both", dir, sizeof dir, two_shards);
    write_shard(dir, "model.safetensors", "x");
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(open_dir(dir, 0, NULL, &c, &e), TIO_OK);
    assert_string_equal(tio_container_format(c), "safetensors");
    assert_int_equal(tio_container_count(c), 1);
    tio_container_free(c);
}

static void test_findings(void **state) {
    (void)state;
    char dir[512];
    /* total_size other than the tensors' bytes; a tensor the map does not name */
    make_repo("findings", dir, sizeof dir,
              "{\"metadata\": {\"total_size\": 17}, \"weight_map\": {"
              "\"a\": \"model-00001-of-00002.safetensors\","
              "\"c\": \"model-00002-of-00002.safetensors\"}}");
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(open_dir(dir, 0, NULL, &c, &e), TIO_OK);
    assert_int_equal(tio_container_count(c), 2); /* b left out */
    assert_int_equal(tio_container_warning_count(c), 2);
    assert_non_null(strstr(tio_container_warning(c, 0)->message,
                           "holds tensor 'b', which weight_map does not name"));
    assert_non_null(strstr(tio_container_warning(c, 1)->message,
                           "total_size is 17, but the tensors hold 8 bytes"));
    tio_container_free(c);
    refused(dir, TIO_OPEN_STRICT, TIO_E_INVALID, "which weight_map does not name");
    /* total_size of another type; no metadata at all is fine */
    make_repo("findings2", dir, sizeof dir,
              "{\"metadata\": {\"total_size\": \"16\"}, \"weight_map\": {"
              "\"a\": \"model-00001-of-00002.safetensors\", \"b\": "
              "\"model-00001-of-00002.safetensors\", \"c\": \"model-00002-of-00002.safetensors\"}}");
    refused(dir, TIO_OPEN_STRICT, TIO_E_INVALID, "total_size is a string");
    make_repo("nometa", dir, sizeof dir,
              "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", \"b\": "
              "\"model-00001-of-00002.safetensors\", \"c\": \"model-00002-of-00002.safetensors\"}}");
    assert_int_equal(open_dir(dir, TIO_OPEN_STRICT, NULL, &c, &e), TIO_OK);
    assert_int_equal(tio_container_count(c), 3);
    tio_container_free(c);
}

static void test_metadata(void **state) {
    (void)state;
    char dir[512];
    make_repo("meta", dir, sizeof dir, two_shards);
    write_shard_meta(dir, "model-00001-of-00002.safetensors", "a b", "pt");
    write_shard_meta(dir, "model-00002-of-00002.safetensors", "c", "pt");
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(open_dir(dir, TIO_OPEN_STRICT, NULL, &c, &e), TIO_OK);
    assert_string_equal(tio_container_meta_get(c, "format"), "pt");
    assert_int_equal(tio_container_meta_count(c), 1);
    tio_container_free(c);
    write_shard_meta(dir, "model-00002-of-00002.safetensors", "c", "tf");
    assert_int_equal(open_dir(dir, 0, NULL, &c, &e), TIO_OK);
    assert_string_equal(tio_container_meta_get(c, "format"), "pt");
    assert_int_equal(tio_container_warning_count(c), 1);
    assert_non_null(strstr(tio_container_warning(c, 0)->message,
                           "has metadata 'format' = 'tf', an earlier shard 'pt'"));
    tio_container_free(c);
}

static void test_hostile_paths(void **state) {
    (void)state;
    char dir[512], p[1024];
    refused_index("dotdot", "{\"weight_map\": {\"a\": \"../model-00001-of-00002.safetensors\"}}",
                  TIO_E_UNSUPPORTED, "is a path, not a file name");
    refused_index("abs", "{\"weight_map\": {\"a\": \"/etc/passwd\"}}", TIO_E_UNSUPPORTED,
                  "is a path");
    refused_index("dot", "{\"weight_map\": {\"a\": \"..\"}}", TIO_E_UNSUPPORTED, "is a directory");
    refused_index("emptyname", "{\"weight_map\": {\"a\": \"\"}}", TIO_E_UNSUPPORTED, "is empty");
    refused_index("missing", "{\"weight_map\": {\"a\": \"model-00009-of-00009.safetensors\"}}",
                  TIO_E_NOT_FOUND, "names shard 'model-00009-of-00009.safetensors', which cannot");
    refused_index("nested", "{\"weight_map\": {\"a\": \"model.safetensors.index.json\"}}",
                  TIO_E_UNSUPPORTED, "expected a .safetensors or PyTorch");
    refused_index("npy", "{\"weight_map\": {\"a\": \"x.npy\"}}", TIO_E_UNSUPPORTED,
                  "expected a .safetensors");
    /* a shard that is a directory or a pipe (opening it would block) */
    make_repo("notreg", dir, sizeof dir,
              "{\"weight_map\": {\"a\": \"d.safetensors\", \"b\": \"p.safetensors\"}}");
    snprintf(p, sizeof p, "%s/d.safetensors", dir);
    assert_int_equal(mkdir(p, 0777), 0);
    write_shard(p, "model.safetensors", "a");
    snprintf(p, sizeof p, "%s/p.safetensors", dir);
    assert_int_equal(mkfifo(p, 0666), 0);
    refused(dir, 0, TIO_E_UNSUPPORTED, "shard 'd.safetensors' is not a regular file");
    write_text(dir, "model.safetensors.index.json",
               "{\"weight_map\": {\"b\": \"p.safetensors\"}}");
    refused(dir, 0, TIO_E_UNSUPPORTED, "shard 'p.safetensors' is not a regular file");
    /* a symbolic link out of the directory: refused, unless the caller allows it */
    make_repo("link", dir, sizeof dir,
              "{\"weight_map\": {\"x\": \"model-00003-of-00003.safetensors\"}}");
    char outside[512];
    fresh_dir("outside", outside, sizeof outside);
    write_shard(outside, "secret.safetensors", "x");
    snprintf(p, sizeof p, "%s/model-00003-of-00003.safetensors", dir);
    char target[1024];
    snprintf(target, sizeof target, "%s/secret.safetensors", outside);
    assert_int_equal(symlink(target, p), 0);
    refused(dir, 0, TIO_E_UNSUPPORTED, "outside the index's directory");
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(open_dir(dir, TIO_OPEN_EXTERNAL_ANYWHERE, NULL, &c, &e), TIO_OK);
    assert_int_equal(tio_container_count(c), 1);
    tio_container_free(c);
    /* a Hugging Face cache: snapshots/REV/NAME -> ../../blobs/SHA is followed */
    char cache[512], snap[600], blobs[600];
    fresh_dir("models--x", cache, sizeof cache);
    snprintf(blobs, sizeof blobs, "%s/blobs", cache);
    snprintf(snap, sizeof snap, "%s/snapshots", cache);
    assert_int_equal(mkdir(blobs, 0777), 0);
    assert_int_equal(mkdir(snap, 0777), 0);
    snprintf(snap, sizeof snap, "%s/snapshots/0123abc", cache);
    assert_int_equal(mkdir(snap, 0777), 0);
    write_shard(blobs, "f00d", "a b");
    write_text(blobs, "beef", "{\"weight_map\": {\"a\": \"model-00001-of-00001.safetensors\", "
                              "\"b\": \"model-00001-of-00001.safetensors\"}}");
    snprintf(p, sizeof p, "%s/model-00001-of-00001.safetensors", snap);
    assert_int_equal(symlink("../../blobs/f00d", p), 0);
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", snap);
    assert_int_equal(symlink("../../blobs/beef", p), 0);
    assert_int_equal(open_dir(snap, TIO_OPEN_STRICT, NULL, &c, &e), TIO_OK);
    assert_int_equal(tio_container_count(c), 2);
    tio_container_free(c);
}

static void test_hostile_maps(void **state) {
    (void)state;
    /* a tensor the map puts in a shard that does not hold it */
    refused_index("notthere",
                  "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", \"b\": "
                  "\"model-00001-of-00002.safetensors\", \"c\": \"model-00002-of-00002.safetensors\","
                  " \"d\": \"model-00002-of-00002.safetensors\"}}",
                  TIO_E_CORRUPT,
                  "weight_map puts tensor 'd' in shard 'model-00002-of-00002.safetensors', which "
                  "does not hold it");
    /* a tensor in another shard than the map says */
    refused_index("wrong",
                  "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", \"b\": "
                  "\"model-00001-of-00002.safetensors\", \"c\": \"model-00001-of-00002.safetensors\","
                  " \"x\": \"model-00002-of-00002.safetensors\"}}",
                  TIO_E_CORRUPT, "holds tensor 'c', which weight_map puts in shard "
                                 "'model-00001-of-00002.safetensors'");
    /* one tensor in two shards */
    char dir[512];
    fresh_dir("twice", dir, sizeof dir);
    write_shard(dir, "model-00001-of-00002.safetensors", "a b");
    write_shard(dir, "model-00002-of-00002.safetensors", "b");
    write_text(dir, "model.safetensors.index.json",
               "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", \"b\": "
               "\"model-00001-of-00002.safetensors\", \"z\": \"model-00002-of-00002.safetensors\"}}");
    refused(dir, 0, TIO_E_CORRUPT,
            "tensor 'b' is in two shards, 'model-00001-of-00002.safetensors' and "
            "'model-00002-of-00002.safetensors'");
    /* JSON the index is not */
    refused_index("badjson", "{\"weight_map\": {\"a\": ", TIO_E_CORRUPT, "not valid JSON");
    refused_index("dupkey",
                  "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", \"a\": "
                  "\"model-00001-of-00002.safetensors\"}}",
                  TIO_E_CORRUPT, "a duplicate key");
    refused_index("nul", "{\"weight_map\": {\"a\\u0000\": \"x.safetensors\"}}", TIO_E_CORRUPT,
                  "\\u0000");
    refused_index("array", "[\"weight_map\"]", TIO_E_CORRUPT, "an array, expected a JSON object");
    refused_index("nomap", "{\"weight_map\": [1]}", TIO_E_CORRUPT, "has an array \"weight_map\"");
    refused_index("intval", "{\"weight_map\": {\"a\": 7}}", TIO_E_CORRUPT,
                  "weight_map['a'] is an integer, expected a shard file name");
    /* a deeply nested value: jansson's depth bound, an error like any other */
    char deep[20100];
    strcpy(deep, "{\"weight_map\": {}, \"x\": ");
    size_t l = strlen(deep);
    for (int i = 0; i < 10000; i++) deep[l++] = '[';
    deep[l] = 0;
    refused_index("deep", deep, TIO_E_CORRUPT, "not valid JSON");
}

static void test_limits(void **state) {
    (void)state;
    char dir[512];
    make_repo("lim", dir, sizeof dir, two_shards);
    tio_limits lim = {.max_shards = 1};
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(open_dir(dir, 0, &lim, &c, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "more than 1 shard files (max_shards)"));
    tio_limits lt = {.max_tensors = 2};
    assert_int_equal(open_dir(dir, 0, &lt, &c, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "max_tensors"));
    tio_limits lh = {.max_header_bytes = 64};
    assert_int_equal(open_dir(dir, 0, &lh, &c, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "max_header_bytes"));
    /* 100,000 shard names: refused at the default limit, before any is opened */
    size_t cap = 100000 * 64 + 64, n = 0;
    char *big = malloc(cap);
    assert_non_null(big);
    n += (size_t)snprintf(big + n, cap - n, "{\"weight_map\": {");
    for (int i = 0; i < 100000; i++)
        n += (size_t)snprintf(big + n, cap - n, "%s\"t%d\": \"s%d.safetensors\"", i ? "," : "",
                              i, i);
    snprintf(big + n, cap - n, "}}");
    fresh_dir("huge", dir, sizeof dir);
    write_text(dir, "model.safetensors.index.json", big);
    free(big);
    assert_int_equal(open_dir(dir, 0, NULL, &c, &e), TIO_E_LIMIT);
    assert_non_null(strstr(e.message, "more than 16384 shard files"));
}

/* ---------------------------------------------------------------- writing */

static void test_parse_size(void **state) {
    (void)state;
    static const struct {
        const char *text;
        uint64_t want;
    } ok[] = {
        {"5GB", 5000000000u},       {"5gB", 5000000000u},  {"5Gb", 625000000u},
        {"5gb", 625000000u}, /* transformers: a final lowercase b is bits */
        {"500MB", 500000000u},      {"10KB", 10000u},      {"2GiB", UINT64_C(2) << 30},
        {"3mib", UINT64_C(3) << 20}, {"1KiB", 1024u},       {"123", 123u},
        {"123B", 123u},             {"1TB", UINT64_C(1000000000000)},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 0;
        tio_error e;
        assert_int_equal(tio_parse_size(ok[i].text, &v, &e), TIO_OK);
        assert_int_equal(v, ok[i].want);
    }
    static const char *bad[] = {"", "GB", "5 GB", "-5GB", "5.5GB", "0", "5XB", "5GBs",
                                "99999999999999999999", "20000000000GB"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 0;
        tio_error e;
        assert_int_equal(tio_parse_size(bad[i], &v, &e), TIO_E_ARGUMENT);
    }
}

/* A container of float32 tensors t0, t1, ... of the given element counts. */
static tio_container *sized(const size_t *n, size_t count) {
    tio_container *c = tio_container_new();
    static float zeros[256];
    for (size_t i = 0; i < count; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%zu", i);
        int64_t shape[1] = {(int64_t)n[i]};
        tio_tensor_desc d = {name, TIO_FLOAT32, 1, shape, TIO_LAYOUT_DENSE, zeros,
                             n[i] * sizeof(float), 0, NULL};
        tio_error e;
        assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
    }
    return c;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    fclose(f);
    b[got] = 0;
    if (len) *len = got;
    return b;
}

static int exists(const char *dir, const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct stat st;
    return lstat(p, &st) == 0;
}

static void test_save_packing(void **state) {
    (void)state;
    char dir[512];
    fresh_dir("packed", dir, sizeof dir);
    /* huggingface_hub's own example: [6, 6, 2, 6, 2, 2] (units of 4 bytes)
     * with a maximum of 10 give [6], [6+2], [6+2+2] */
    const size_t n[] = {6, 6, 2, 6, 2, 2};
    tio_container *c = sized(n, 6);
    tio_save_options o = {.flags = TIO_SAVE_NO_SYNC, .max_shard_bytes = 40};
    tio_error e;
    char path[600];
    snprintf(path, sizeof path, "%s/", dir);
    assert_int_equal(tio_save(c, path, &o, &e), TIO_OK);
    char ipath[700];
    snprintf(ipath, sizeof ipath, "%s/model.safetensors.index.json", dir);
    char *idx = slurp(ipath, NULL);
    assert_non_null(idx);
    assert_string_equal(idx,
                        "{\n"
                        "  \"metadata\": {\n"
                        "    \"total_parameters\": 24,\n"
                        "    \"total_size\": 96\n"
                        "  },\n"
                        "  \"weight_map\": {\n"
                        "    \"t0\": \"model-00001-of-00003.safetensors\",\n"
                        "    \"t1\": \"model-00002-of-00003.safetensors\",\n"
                        "    \"t2\": \"model-00002-of-00003.safetensors\",\n"
                        "    \"t3\": \"model-00003-of-00003.safetensors\",\n"
                        "    \"t4\": \"model-00003-of-00003.safetensors\",\n"
                        "    \"t5\": \"model-00003-of-00003.safetensors\"\n"
                        "  }\n"
                        "}\n");
    free(idx);
    /* read back; a shard has the "format": "pt" transformers' loader wants */
    tio_container *back = NULL;
    assert_int_equal(open_dir(dir, TIO_OPEN_STRICT, NULL, &back, &e), TIO_OK);
    assert_int_equal(tio_container_count(back), 6);
    assert_string_equal(tio_container_meta_get(back, "format"), "pt");
    assert_string_equal(tio_container_prop_get(back, "total_size"), "96");
    tio_container_free(back);
    /* deterministic: the same bytes again */
    char s1[700];
    snprintf(s1, sizeof s1, "%s/model-00002-of-00003.safetensors", dir);
    size_t l1 = 0, l2 = 0;
    char *b1 = slurp(s1, &l1);
    assert_int_equal(tio_save(c, path, &o, &e), TIO_OK);
    char *b2 = slurp(s1, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    free(b1);
    free(b2);
    tio_container_free(c);

    /* a tensor over the maximum gets its own shard at once, before the
     * current one is closed (huggingface_hub's order) */
    const size_t m[] = {2, 20, 2};
    c = sized(m, 3);
    assert_int_equal(tio_save(c, path, &o, &e), TIO_OK);
    idx = slurp(ipath, NULL);
    assert_non_null(strstr(idx, "\"t0\": \"model-00002-of-00002.safetensors\""));
    assert_non_null(strstr(idx, "\"t1\": \"model-00001-of-00002.safetensors\""));
    assert_non_null(strstr(idx, "\"t2\": \"model-00002-of-00002.safetensors\""));
    assert_non_null(strstr(idx, "\"total_parameters\": 24,\n    \"total_size\": 96\n"));
    free(idx);
    /* the three shards of the save before are gone, the two new ones there */
    assert_false(exists(dir, "model-00003-of-00003.safetensors"));
    assert_false(exists(dir, "model-00001-of-00003.safetensors"));
    assert_true(exists(dir, "model-00001-of-00002.safetensors"));
    tio_container_free(c);
}

static void test_save_single_and_stale(void **state) {
    (void)state;
    char dir[512];
    fresh_dir("single", dir, sizeof dir);
    const size_t n[] = {4, 4};
    tio_container *c = sized(n, 2);
    tio_save_options o = {.flags = TIO_SAVE_NO_SYNC, .max_shard_bytes = 16};
    tio_error e;
    char path[600];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    assert_int_equal(tio_save(c, path, &o, &e), TIO_OK);
    assert_true(exists(dir, "model.safetensors.index.json"));
    assert_true(exists(dir, "model-00001-of-00002.safetensors"));
    write_text(dir, "model-00007-of-00009.safetensors", "stale");
    write_text(dir, "model-7-of-9.safetensors", "not a shard name");
    write_text(dir, "other-00001-of-00002.safetensors", "another model's");
    /* one shard: model.safetensors alone; the index and shards of before go */
    o.max_shard_bytes = 1000;
    assert_int_equal(tio_save(c, path, &o, &e), TIO_OK);
    assert_true(exists(dir, "model.safetensors"));
    assert_false(exists(dir, "model.safetensors.index.json"));
    assert_false(exists(dir, "model-00001-of-00002.safetensors"));
    assert_false(exists(dir, "model-00007-of-00009.safetensors"));
    assert_true(exists(dir, "model-7-of-9.safetensors"));
    assert_true(exists(dir, "other-00001-of-00002.safetensors"));
    /* and sharded again: the single file goes (it would be loaded first) */
    o.max_shard_bytes = 16;
    assert_int_equal(tio_save(c, path, &o, &e), TIO_OK);
    assert_false(exists(dir, "model.safetensors"));
    assert_true(exists(dir, "model-00002-of-00002.safetensors"));
    tio_container_free(c);

    /* refusals, before anything is written */
    fresh_dir("refused", dir, sizeof dir);
    c = sized(n, 2);
    snprintf(path, sizeof path, "%s/model.npy", dir);
    assert_int_equal(tio_save(c, path, &o, &e), TIO_E_UNSUPPORTED);
    assert_non_null(strstr(e.message, "safetensors or PyTorch shards"));
    snprintf(path, sizeof path, "%s/", dir);
    tio_tensor *t = tio_container_tensor(c, 1);
    assert_int_equal(tio_tensor_meta_set(t, "k", "v", &e), TIO_OK);
    assert_int_equal(tio_save(c, path, &o, &e), TIO_E_LOSSY);
    char newdir[600];
    snprintf(newdir, sizeof newdir, "%s/new/", dir);
    assert_int_equal(tio_save(c, newdir, &o, &e), TIO_E_LOSSY);
    assert_false(exists(dir, "new")); /* not even the directory */
    tio_container_free(c);
    c = tio_container_new();
    float v = 1;
    int64_t one = 1;
    tio_tensor_desc d = {NULL, TIO_FLOAT32, 1, &one, TIO_LAYOUT_DENSE, &v, 4, 0, NULL};
    assert_int_equal(tio_container_add(c, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
    assert_int_equal(tio_save(c, path, &o, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "has no name"));
    tio_container_free(c);
    DIR *dd = opendir(dir);
    struct dirent *de;
    int files = 0;
    while ((de = readdir(dd)))
        if (de->d_name[0] != '.') files++;
    closedir(dd);
    assert_int_equal(files, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_shards),     cmocka_unit_test(test_model_dir),
        cmocka_unit_test(test_findings),       cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_hostile_paths),
        cmocka_unit_test(test_hostile_maps),   cmocka_unit_test(test_limits),
        cmocka_unit_test(test_parse_size),     cmocka_unit_test(test_save_packing),
        cmocka_unit_test(test_save_single_and_stale),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
