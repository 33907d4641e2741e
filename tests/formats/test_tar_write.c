/* Writing WebDataset shards (tio_shard_writer_*): round trips through the
 * reader, ustar name/prefix split and pax long names, padding, determinism,
 * refused names, containers as members, abort and failed writes. */
#define _XOPEN_SOURCE 700
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensio.h"
#include "tvec.h"

static char dir[256];

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "%s/tar_write_XXXXXX", TIO_BUILD_DIR);
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[600];
    while (d && (de = readdir(d)))
        if (de->d_name[0] != '.' || (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))) {
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
    if (d) closedir(d);
    rmdir(dir);
    return 0;
}

static char *path_of(const char *name) {
    static char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

/* Entries in dir (besides . and ..). */
static int dir_entries(void) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    closedir(d);
    return n;
}

static uint8_t *slurp(const char *p, size_t *n) {
    uint8_t *b = NULL;
    assert_int_equal(tvec_read(p, &b, n), 0);
    return b;
}

#define OK(call)                                                                            \
    do {                                                                                    \
        tio_error e_;                                                                       \
        tio_error_clear(&e_);                                                               \
        int rc_ = (call);                                                                   \
        if (rc_ != TIO_OK) fail_msg("%s: %s", #call, e_.message);                           \
    } while (0)

/* A name of n bytes: directories of 30 'd's, then a file name. */
static char *long_name(size_t dirs, size_t file) {
    char *s = malloc(dirs * 31 + file + 1);
    size_t k = 0;
    for (size_t i = 0; i < dirs; i++) {
        memset(s + k, 'd', 30);
        s[k + 30] = '/';
        k += 31;
    }
    memset(s + k, 'f', file);
    memcpy(s + k + file - 4, ".ten", 4);
    s[k + file] = 0;
    return s;
}

typedef struct member {
    const char *name;
    const uint8_t *data;
    size_t size;
} member;

static void write_shard(const char *p, const member *m, size_t n,
                        const tio_shard_writer_options *o) {
    tio_shard_writer *w = NULL;
    tio_error e;
    tio_error_clear(&e);
    assert_int_equal(tio_shard_writer_open(p, o, &w, &e), TIO_OK);
    for (size_t i = 0; i < n; i++)
        if (tio_shard_writer_add_bytes(w, m[i].name, m[i].data, m[i].size, &e) != TIO_OK)
            fail_msg("add %s: %s", m[i].name, e.message);
    assert_int_equal(tio_shard_writer_count(w), n);
    if (tio_shard_writer_close(w, &e) != TIO_OK) fail_msg("close: %s", e.message);
}

static void test_round_trip(void **state) {
    (void)state;
    size_t big_n = (3u << 20) + 7; /* past the by-reference threshold */
    uint8_t *big = malloc(big_n);
    for (size_t i = 0; i < big_n; i++) big[i] = (uint8_t)(i * 131u + 7u);
    char *split = long_name(3, 60);   /* 153 bytes: prefix/name split, no pax */
    char *pax = long_name(2, 120);    /* the file name alone is over 100 bytes */
    char *deep = long_name(8, 20);    /* 268 bytes: no '/' leaves both parts short */
    char name100[101];
    memset(name100, 'n', 100);
    memcpy(name100 + 96, ".cls", 4);
    name100[100] = 0;
    const uint8_t small[] = "seven b";
    member m[] = {
        {"000000.txt", small, 7}, {"000000.ten", big, big_n}, {"000001.empty", small, 0},
        {split, small, 3},        {pax, small, 5},            {deep, big, 512},
        {name100, small, 1},      {"dir/sub/000002.json", small, 6},
    };
    size_t n = sizeof m / sizeof m[0];
    char *p = path_of("rt.tar");
    write_shard(p, m, n, NULL);

    size_t fsize = 0;
    uint8_t *bytes = slurp(p, &fsize);
    assert_int_equal(fsize % 10240, 0);
    /* the ustar header of the split name: prefix 92 bytes, name 60 */
    tio_shard *s = NULL;
    tio_error e;
    tio_error_clear(&e);
    assert_int_equal(tio_shard_open(p, NULL, &s, &e), TIO_OK);
    assert_int_equal(tio_shard_member_count(s), n);
    for (size_t i = 0; i < n; i++) {
        const tio_shard_member *x = tio_shard_member_at(s, i);
        assert_string_equal(x->name, m[i].name);
        assert_int_equal(x->size, m[i].size);
        if (m[i].size) assert_memory_equal(x->data, m[i].data, m[i].size);
        assert_int_equal(x->offset % 512, 0);
    }
    /* the first header: plain ustar, fixed fields */
    assert_memory_equal(bytes, "000000.txt\0", 11);
    assert_memory_equal(bytes + 100, "0000644\0" "0000000\0" "0000000\0", 24);
    assert_memory_equal(bytes + 124, "00000000007\0" "00000000000\0", 24);
    assert_int_equal(bytes[156], '0');
    assert_memory_equal(bytes + 257, "ustar\0" "00", 8);
    assert_int_equal(bytes[265], 0); /* empty uname */
    assert_int_equal(bytes[297], 0); /* empty gname */
    /* pax 'x' headers: exactly two (pax and deep), each with a path record */
    size_t xs = 0;
    for (size_t i = 0; i < n; i++) /* each member's own header: a regular file */
        assert_int_equal(bytes[tio_shard_member_at(s, i)->offset - 512 + 156], '0');
    /* the split name: prefix "ddd…/ddd…/ddd…" (92 bytes), name 60 bytes */
    const uint8_t *hs = bytes + tio_shard_member_at(s, 3)->offset - 512;
    assert_memory_equal(hs + 345, split, 92);
    assert_int_equal(hs[345 + 92], 0);
    assert_memory_equal(hs, split + 93, 60);
    for (size_t off = 0; off + 512 <= fsize; off += 512)
        if (bytes[off + 156] == 'x' && memcmp(bytes + off + 257, "ustar", 5) == 0) {
            xs++;
            assert_memory_equal(bytes + off, "././@PaxHeader", 15);
            assert_non_null(strstr((const char *)bytes + off + 512, " path="));
        }
    assert_int_equal(xs, 2);
    tio_shard_free(s);
    free(bytes);
    free(big);
    free(split);
    free(pax);
    free(deep);
}

static void test_determinism_and_options(void **state) {
    (void)state;
    const uint8_t d[] = {1, 2, 3, 4, 5};
    member m[] = {{"a/000001.cls", d, 1}, {"a/000001.ten", d, 5}, {"a/000002.cls", d, 2}};
    write_shard(path_of("one.tar"), m, 3, NULL);
    write_shard(path_of("two.tar"), m, 3, NULL);
    size_t n1, n2;
    uint8_t *b1 = slurp(path_of("one.tar"), &n1), *b2 = slurp(path_of("two.tar"), &n2);
    assert_int_equal(n1, n2);
    assert_int_equal(n1, 10240);
    assert_memory_equal(b1, b2, n1);
    free(b2);
    /* record_size 512: 3 members (header + 1 block each) + 2 end blocks */
    tio_shard_writer_options o;
    memset(&o, 0, sizeof o);
    o.record_size = 512;
    o.mtime = 1700000000;
    o.flags = TIO_SAVE_NO_SYNC;
    write_shard(path_of("rec.tar"), m, 3, &o);
    b2 = slurp(path_of("rec.tar"), &n2);
    assert_int_equal(n2, 3 * 1024 + 1024);
    char mt[12];
    snprintf(mt, sizeof mt, "%011llo", 1700000000ull);
    assert_memory_equal(b2 + 136, mt, 11);
    assert_memory_equal(b1, b2, 136); /* the same but for mtime and checksum */
    for (size_t i = n2 - 1024; i < n2; i++) assert_int_equal(b2[i], 0);
    free(b1);
    free(b2);
    /* bad options */
    tio_shard_writer *w = NULL;
    tio_error e;
    o.record_size = 1000;
    assert_int_equal(tio_shard_writer_open(path_of("x.tar"), &o, &w, &e), TIO_E_ARGUMENT);
    assert_non_null(strstr(e.message, "512"));
    o.record_size = 0;
    o.mtime = 1ull << 33;
    assert_int_equal(tio_shard_writer_open(path_of("x.tar"), &o, &w, &e), TIO_E_ARGUMENT);
    assert_null(w);
    assert_int_equal(access(path_of("x.tar"), F_OK), -1);
}

static void test_bad_names(void **state) {
    (void)state;
    static const char *const bad[] = {"",     "/abs.ten", "..", "../x.ten", "a/../b.ten",
                                      "a/..", ".",        "a/.", "a/",       "a/b/",
                                      "//x"};
    tio_shard_writer *w = NULL;
    tio_error e;
    tio_error_clear(&e);
    assert_int_equal(tio_shard_writer_open(path_of("names.tar"), NULL, &w, &e), TIO_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(tio_shard_check_name(bad[i], &e), TIO_E_ARGUMENT);
        assert_int_equal(tio_shard_writer_add_bytes(w, bad[i], "x", 1, &e), TIO_E_ARGUMENT);
        assert_non_null(strstr(e.message, "member name"));
    }
    assert_int_equal(tio_shard_writer_add_bytes(w, NULL, "x", 1, &e), TIO_E_ARGUMENT);
    char *huge = long_name(2200, 100); /* over 65536 bytes */
    assert_int_equal(tio_shard_writer_add_bytes(w, huge, "x", 1, &e), TIO_E_ARGUMENT);
    free(huge);
    /* names that are fine: dots inside components, "..." , leading-dot files */
    static const char *const good[] = {"a..b.ten", ".../x.ten", "x/.h", "a.b/c.d.e",
                                       "./000001.ten", "a//b/./c.ten"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        OK(tio_shard_writer_add_bytes(w, good[i], "y", 1, &e_));
    assert_int_equal(tio_shard_writer_count(w), 6);
    OK(tio_shard_writer_close(w, &e_));
    tio_shard *s = NULL;
    OK(tio_shard_open(path_of("names.tar"), NULL, &s, &e_));
    assert_int_equal(tio_shard_member_count(s), 6);
    assert_string_equal(tio_shard_member_at(s, 4)->name, "./000001.ten");
    tio_shard_free(s);
}

static void test_containers(void **state) {
    (void)state;
    tio_container *c = tio_container_new();
    float v[6] = {1, 2, 3, 4, 5, 6.5f};
    int64_t shape[2] = {2, 3};
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = "x";
    d.dtype = TIO_FLOAT32;
    d.rank = 2;
    d.shape = shape;
    d.data = v;
    d.nbytes = sizeof v;
    OK(tio_container_add(c, &d, 0, NULL, &e_));
    tio_shard_writer *w = NULL;
    tio_error e_unused;
    OK(tio_shard_writer_open(path_of("c.tar"), NULL, &w, &e_));
    tio_save_options so;
    memset(&so, 0, sizeof so);
    so.format = "btf"; /* btf holds no names: refused, nothing written */
    assert_int_equal(tio_shard_writer_add_container(w, "k/0001", c, &so, NULL, &e_unused),
                     TIO_E_LOSSY);
    assert_int_equal(tio_shard_writer_count(w), 0);
    so.flags = TIO_SAVE_DROP_NAMES;
    static const char *const fmts[] = {"tenbin", "npy", "safetensors", "btf"};
    static const char *const names[] = {"k/0001.ten", "k/0001.npy", "k/0001.safetensors",
                                        "k/0001.btf"};
    for (size_t i = 0; i < 4; i++) {
        so.format = fmts[i];
        char *name = NULL;
        OK(tio_shard_writer_add_container(w, "k/0001", c, &so, &name, &e_));
        assert_string_equal(name, names[i]);
        tio_free(name);
    }
    /* a refused encoding writes nothing, and the writer goes on */
    tio_error e;
    so.format = "nosuch";
    assert_int_equal(tio_shard_writer_add_container(w, "k/0002", c, &so, NULL, &e),
                     TIO_E_FORMAT);
    so.format = NULL;
    assert_int_equal(tio_shard_writer_add_container(w, "k/0002", c, &so, NULL, &e),
                     TIO_E_ARGUMENT);
    so.format = "npy";
    assert_int_equal(tio_shard_writer_add_container(w, "../k", c, &so, NULL, &e),
                     TIO_E_ARGUMENT);
    OK(tio_shard_writer_close(w, &e_));
    tio_shard *s = NULL;
    OK(tio_shard_open(path_of("c.tar"), NULL, &s, &e_));
    assert_int_equal(tio_shard_member_count(s), 4);
    assert_int_equal(tio_shard_sample_count(s), 1);
    for (size_t i = 0; i < 4; i++) {
        tio_container *m = NULL;
        OK(tio_shard_open_member(s, i, NULL, &m, &e_));
        assert_string_equal(tio_container_format(m), fmts[i]);
        assert_int_equal(tio_container_count(m), 1);
        const tio_tensor *t = tio_container_tensor(m, 0);
        assert_int_equal(tio_tensor_nbytes(t), sizeof v);
        assert_memory_equal(tio_tensor_data(t), v, sizeof v);
        tio_container_free(m);
    }
    tio_shard_free(s);
    tio_container_free(c);
}

static void test_abort_and_replace(void **state) {
    (void)state;
    int before = dir_entries();
    tio_shard_writer *w = NULL;
    OK(tio_shard_writer_open(path_of("gone.tar"), NULL, &w, &e_));
    OK(tio_shard_writer_add_bytes(w, "a.txt", "abc", 3, &e_));
    assert_int_equal(dir_entries(), before + 1); /* the temporary file */
    assert_int_equal(access(path_of("gone.tar"), F_OK), -1);
    tio_shard_writer_abort(w);
    assert_int_equal(dir_entries(), before);
    tio_shard_writer_abort(NULL);
    /* an existing target stays as it was until close, keeps its mode */
    assert_int_equal(tvec_write(path_of("old.tar"), "old", 3), 0);
    chmod(path_of("old.tar"), 0600);
    OK(tio_shard_writer_open(path_of("old.tar"), NULL, &w, &e_));
    OK(tio_shard_writer_add_bytes(w, "a.txt", "abc", 3, &e_));
    tio_shard_writer_abort(w);
    size_t n;
    uint8_t *b = slurp(path_of("old.tar"), &n);
    assert_int_equal(n, 3);
    free(b);
    OK(tio_shard_writer_open(path_of("old.tar"), NULL, &w, &e_));
    OK(tio_shard_writer_add_bytes(w, "a.txt", "abc", 3, &e_));
    OK(tio_shard_writer_close(w, &e_));
    b = slurp(path_of("old.tar"), &n);
    assert_int_equal(n, 10240);
    free(b);
    struct stat st;
    assert_int_equal(stat(path_of("old.tar"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* a directory that does not exist */
    tio_error e;
    assert_int_equal(tio_shard_writer_open(path_of("no/such/x.tar"), NULL, &w, &e), TIO_E_IO);
    assert_int_equal(tio_shard_writer_open(NULL, NULL, &w, &e), TIO_E_ARGUMENT);
    assert_int_equal(tio_shard_writer_close(NULL, &e), TIO_E_ARGUMENT);
}

/* The writer keeps its own copy of the target's name: the caller's may be
 * gone (freed, reused) long before close renames the file into place, as a
 * binding's temporary string is. */
static void test_path_not_borrowed(void **state) {
    (void)state;
    char *p = strdup(path_of("owned.tar"));
    assert_non_null(p);
    tio_shard_writer *w = NULL;
    OK(tio_shard_writer_open(p, NULL, &w, &e_));
    memset(p, 'x', strlen(p)); /* what a reused buffer would hold */
    free(p);
    OK(tio_shard_writer_add_bytes(w, "a.txt", "abc", 3, &e_));
    OK(tio_shard_writer_close(w, &e_));
    size_t n;
    uint8_t *b = slurp(path_of("owned.tar"), &n);
    assert_non_null(b);
    assert_int_equal(n, 10240);
    free(b);
}

/* A write that fails (file size limit, as a full disk) poisons the writer:
 * later adds and close report it, and no file is left. */
static void test_failed_write(void **state) {
    (void)state;
    tio_shard_writer *w = NULL;
    tio_error e;
    assert_int_equal(tio_shard_writer_add_bytes(NULL, "a.bin", "", 0, &e), TIO_E_ARGUMENT);
    OK(tio_shard_writer_open(path_of("full.tar"), NULL, &w, &e_));
    assert_int_equal(tio_shard_writer_add_bytes(w, "a.bin", NULL, 3, &e), TIO_E_ARGUMENT);
    int before = dir_entries();
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = 64 << 10;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    size_t n = 2u << 20;
    uint8_t *big = calloc(1, n);
    int rc = tio_shard_writer_add_bytes(w, "a.bin", big, n, &e);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    free(big);
    assert_int_equal(rc, TIO_E_IO);
    assert_int_equal(tio_shard_writer_add_bytes(w, "b.bin", "x", 1, &e), TIO_E_IO);
    assert_non_null(strstr(e.message, "earlier write failed"));
    assert_int_equal(tio_shard_writer_close(w, &e), TIO_E_IO);
    assert_int_equal(dir_entries(), before - 1);
    assert_int_equal(access(path_of("full.tar"), F_OK), -1);
}

/* A member of 8 GiB + 1 byte (past 11 octal digits): a pax 'x' header with
 * its size comes first and the ustar size field is 0. The data (a mapping
 * that costs no memory) are cut short by a file size limit after the
 * headers, which are read from the temporary file before close removes it. */
static void test_huge_size(void **state) {
    (void)state;
    uint64_t size = (8ull << 30) + 1;
    if (sizeof(size_t) < 8) skip();
    void *zeros = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
    assert_true(zeros != MAP_FAILED);
    tio_shard_writer *w = NULL;
    OK(tio_shard_writer_open(path_of("huge.tar"), NULL, &w, &e_));
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = 8192;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    tio_error e;
    int rc = tio_shard_writer_add_bytes(w, "big.bin", zeros, size, &e);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    munmap(zeros, (size_t)size);
    assert_int_equal(rc, TIO_E_IO);
    /* the temporary file holds the two headers */
    DIR *d = opendir(dir);
    struct dirent *de;
    char tmp[600] = "";
    while ((de = readdir(d)))
        if (strncmp(de->d_name, ".huge.tar.tio-", 14) == 0)
            snprintf(tmp, sizeof tmp, "%s/%s", dir, de->d_name);
    closedir(d);
    assert_true(tmp[0]);
    size_t n = 0;
    uint8_t *b = slurp(tmp, &n);
    assert_true(n >= 1536);
    assert_int_equal(b[156], 'x');
    assert_memory_equal(b, "././@PaxHeader", 15);
    assert_memory_equal(b + 512, "19 size=8589934593\n", 19);
    assert_int_equal(b[1024 + 156], '0');
    assert_memory_equal(b + 1024, "big.bin", 8);
    assert_memory_equal(b + 1024 + 124, "00000000000\0", 12);
    free(b);
    assert_int_equal(tio_shard_writer_close(w, &e), TIO_E_IO);
    assert_int_equal(access(tmp, F_OK), -1);
}

/* What a killed writer leaves (its temporary file, named as tio_save names
 * them) is removed by the next writer of the target with TIO_SAVE_CLEANUP;
 * a live process's is not. */
static void test_cleanup(void **state) {
    (void)state;
    char stale[600], live[600];
    snprintf(stale, sizeof stale, "%s/.k.tar.tio-%ld-0123456789abcdef.tmp", dir, tvec_dead_pid());
    snprintf(live, sizeof live, "%s/.k.tar.tio-%ld-0123456789abcdef.tmp", dir, (long)getppid());
    assert_int_equal(tvec_write(stale, "x", 1), 0);
    assert_int_equal(tvec_write(live, "x", 1), 0);
    tio_shard_writer_options o;
    memset(&o, 0, sizeof o);
    o.flags = TIO_SAVE_CLEANUP | TIO_SAVE_NO_SYNC;
    tio_shard_writer *w = NULL;
    OK(tio_shard_writer_open(path_of("k.tar"), &o, &w, &e_));
    assert_int_equal(access(stale, F_OK), -1);
    assert_int_equal(access(live, F_OK), 0);
    OK(tio_shard_writer_close(w, &e_));
    unlink(live);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),    cmocka_unit_test(test_determinism_and_options),
        cmocka_unit_test(test_bad_names),     cmocka_unit_test(test_containers),
        cmocka_unit_test(test_abort_and_replace),
        cmocka_unit_test(test_path_not_borrowed), cmocka_unit_test(test_failed_write),
        cmocka_unit_test(test_huge_size),     cmocka_unit_test(test_cleanup),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
