/* Opening a many-tensor file reads the record headers by pread(), not by
 * touching the mapping (src/core/cursor.c, tio_headsrc): counted with the
 * process's minor faults, which are deterministic where timings are not.
 *
 * The files are those of the benchmark's shape (10,000 tensors of 100 KiB, so
 * every header is on a page of its own, 25 pages apart) but sparse: the test
 * writes each record's header and the first bytes of its data, the rest are
 * holes. A hole is not in the page cache, so the kernel's fault-around (which
 * maps the cached pages near a fault, 64 KiB) maps no page of another record:
 * a decoder that read the headers from the mapping would fault >= 10,000
 * times, which the control measurement shows. On tmpfs (/dev/shm, 4 KiB
 * pages) no 1 GiB is ever held.
 *
 * Then tio_container_prefetch: both of its paths (MADV_POPULATE_READ and the
 * MADV_WILLNEED fallback of kernels before 5.14) keep the data unchanged, and
 * after the first, reading every tensor faults no more. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"

#if defined(__SANITIZE_THREAD__)
#define TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TSAN_BUILD 1
#endif
#endif
#ifndef TSAN_BUILD
#define TSAN_BUILD 0
#endif

#define COUNT 10000u
#define TBYTES (100u << 10) /* per tensor, as bench's 1 GiB / 10,000 */
#define MARK 16u            /* data bytes written per tensor (the rest: a hole) */
/* Pages of the mapping an open may map besides headers: the probes' and
 * their fault-around (16 pages), the BTF offset table (20 pages), zio's JSON
 * label (120 pages), the .npz central directory (130 pages). Far below
 * COUNT. */
#define OPEN_PAGES_MAX (COUNT / 20u)

static char dir[] = "/dev/shm/tio-openfast-XXXXXX";

static long minflt(void) {
    struct rusage u;
    assert_int_equal(getrusage(RUSAGE_SELF, &u), 0);
    return u.ru_minflt;
}

/* Pages of c's mapping that are mapped in this process (present in its page
 * table, /proc/self/pagemap bit 63): what opening touched, whatever the heap
 * (or a sanitizer's shadow memory) costs besides. */
static size_t mapped_pages(const tio_container *c) {
    long psz = sysconf(_SC_PAGESIZE);
    assert_true(psz > 0);
    uintptr_t first = (uintptr_t)c->map / (uintptr_t)psz;
    size_t n = (c->map_size + (size_t)psz - 1) / (size_t)psz, present = 0;
    int fd = open("/proc/self/pagemap", O_RDONLY);
    assert_true(fd >= 0);
    uint64_t e[512];
    for (size_t k = 0; k < n;) {
        size_t m = n - k < 512 ? n - k : 512;
        ssize_t r = pread(fd, e, m * 8, (off_t)((first + k) * 8));
        assert_int_equal(r, (ssize_t)(m * 8));
        for (size_t j = 0; j < m; j++) present += (size_t)(e[j] >> 63);
        k += m;
    }
    close(fd);
    return present;
}

static uint8_t mark_of(size_t i, size_t k) {
    return (uint8_t)(i * 31u + k * 7u + 1u);
}

static void put(int fd, uint64_t off, const void *p, size_t n) {
    assert_int_equal(pwrite(fd, p, n, (off_t)off), (ssize_t)n);
}

static void st64(uint8_t *p, uint64_t v) {
    for (int k = 0; k < 8; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* A file of `size` bytes mark_of(offset, k) at dir/name (path: its name,
 * *fd open on it); returns its bytes. */
static uint8_t *marked_file(const char *name, size_t size, size_t k, char path[96], int *fd) {
    snprintf(path, 96, "%s/%s", dir, name);
    *fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(*fd >= 0);
    uint8_t *b = malloc(size);
    assert_non_null(b);
    for (size_t i = 0; i < size; i++) b[i] = mark_of(i, k);
    put(*fd, 0, b, size);
    return b;
}

/* Writes tensor i's first MARK bytes at off. */
static void put_mark(int fd, size_t i, uint64_t off) {
    uint8_t m[MARK];
    for (size_t k = 0; k < MARK; k++) m[k] = mark_of(i, k);
    put(fd, off, m, MARK);
}

/* BTF: count, offset table, records (rank 1, uint8 = code 6, dense). */
static void make_btf(int fd) {
    uint64_t table_end = 8 + 8 * (uint64_t)COUNT, rec_bytes = 24 + TBYTES; /* 8-aligned */
    uint8_t *table = calloc(COUNT + 1, 8);
    assert_non_null(table);
    st64(table, COUNT);
    for (size_t i = 0; i < COUNT; i++) {
        uint64_t rec = table_end + i * rec_bytes;
        st64(table + 8 + 8 * i, rec);
        uint8_t h[24] = {0};
        st64(h, 1);
        h[8] = 6;
        st64(h + 16, TBYTES);
        put(fd, rec, h, sizeof h);
        put_mark(fd, i, rec + 24);
    }
    put(fd, 0, table, table_end);
    free(table);
    assert_int_equal(ftruncate(fd, (off_t)(table_end + COUNT * rec_bytes)), 0);
}

/* tenbin: per array a header chunk (u1, no name, ndim 1, dim) and a data
 * chunk, each "~TenBin~", length, payload, padding to 64. */
static void make_tenbin(int fd) {
    uint64_t data_pad = (TBYTES + 63u) & ~63ull, arr = 16 + 64 + 16 + data_pad;
    for (size_t i = 0; i < COUNT; i++) {
        uint8_t h[16 + 64 + 16] = {0};
        memcpy(h, "~TenBin~", 8);
        st64(h + 8, 32);
        memcpy(h + 16, "u1", 2);
        st64(h + 32, 1);
        st64(h + 40, TBYTES);
        memcpy(h + 80, "~TenBin~", 8);
        st64(h + 88, TBYTES);
        put(fd, i * arr, h, sizeof h);
        put_mark(fd, i, i * arr + sizeof h);
    }
    assert_int_equal(ftruncate(fd, (off_t)(COUNT * arr)), 0);
}

/* zio (.zmsg): per part a size field (0xff + big-endian u32 here), then the
 * bytes: the prefix and TENS label, the coordinates, one part per tensor. */
static void put_part_size(int fd, uint64_t off, size_t n) {
    uint8_t z[5] = {0xff, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8),
                    (uint8_t)n};
    put(fd, off, z, sizeof z);
}

static void make_zio(int fd) {
    static const char entry[] = "{\"dtype\":\"u\",\"part\":%zu,\"shape\":[%u],\"word\":1}";
    size_t cap = 64 + COUNT * 64, len = 0;
    char *label = malloc(cap);
    assert_non_null(label);
    len += (size_t)snprintf(label, cap, "ZIO0TENS{\"TENS\":{\"tensors\":[");
    for (size_t i = 0; i < COUNT; i++) {
        if (i) label[len++] = ',';
        len += (size_t)snprintf(label + len, cap - len, entry, i, TBYTES);
    }
    len += (size_t)snprintf(label + len, cap - len, "]}}");
    assert_true(len < cap);
    uint64_t off = 0;
    put_part_size(fd, off, len);
    put(fd, off + 5, label, len);
    off += 5 + len;
    uint8_t coord[24] = {0};
    put_part_size(fd, off, sizeof coord);
    put(fd, off + 5, coord, sizeof coord);
    off += 5 + sizeof coord;
    for (size_t i = 0; i < COUNT; i++) {
        put_part_size(fd, off, TBYTES);
        put_mark(fd, i, off + 5);
        off += 5 + TBYTES;
    }
    free(label);
    assert_int_equal(ftruncate(fd, (off_t)off), 0);
}

/* .npz (stored, as np.savez writes it): per tensor a local header, its
 * name, a 128-byte .npy header (|u1, shape (TBYTES,)) and the data; then the
 * central directory and the end record (CRCs 0: checked only under strict). */
static void st16(uint8_t *p, unsigned v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void st32(uint8_t *p, uint32_t v) {
    st16(p, v & 0xffffu);
    st16(p + 2, v >> 16);
}

static void make_npz(int fd) {
    uint8_t npy[128];
    memset(npy, ' ', sizeof npy);
    memcpy(npy, "\x93NUMPY\x01\x00", 8);
    st16(npy + 8, sizeof npy - 10);
    char dict[100];
    int dn = snprintf(dict, sizeof dict, "{'descr': '|u1', 'fortran_order': False, 'shape': (%u,), }",
                      TBYTES);
    memcpy(npy + 10, dict, (size_t)dn);
    npy[sizeof npy - 1] = '\n';
    uint32_t msize = (uint32_t)sizeof npy + TBYTES;
    uint8_t *cd = calloc(COUNT, 46 + 16);
    assert_non_null(cd);
    uint64_t off = 0, cdlen = 0;
    for (size_t i = 0; i < COUNT; i++) {
        char name[16];
        int nl = snprintf(name, sizeof name, "a%zu.npy", i);
        uint8_t lh[30] = {0};
        st32(lh, 0x04034b50u);
        st16(lh + 4, 20);
        st32(lh + 18, msize);
        st32(lh + 22, msize);
        st16(lh + 26, (unsigned)nl);
        put(fd, off, lh, sizeof lh);
        put(fd, off + 30, name, (size_t)nl);
        put(fd, off + 30 + (uint64_t)nl, npy, sizeof npy);
        put_mark(fd, i, off + 30 + (uint64_t)nl + sizeof npy);
        uint8_t *c = cd + cdlen;
        st32(c, 0x02014b50u);
        st16(c + 4, 20);
        st16(c + 6, 20);
        st32(c + 20, msize);
        st32(c + 24, msize);
        st16(c + 28, (unsigned)nl);
        st32(c + 42, (uint32_t)off);
        memcpy(c + 46, name, (size_t)nl);
        cdlen += 46 + (uint64_t)nl;
        off += 30 + (uint64_t)nl + msize;
    }
    put(fd, off, cd, cdlen);
    uint8_t end[22] = {0};
    st32(end, 0x06054b50u);
    st16(end + 8, COUNT);
    st16(end + 10, COUNT);
    st32(end + 12, (uint32_t)cdlen);
    st32(end + 16, (uint32_t)off);
    put(fd, off + cdlen, end, sizeof end);
    free(cd);
}

static void make_file(const char *path, const char *format) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    if (strcmp(format, "btf") == 0)
        make_btf(fd);
    else if (strcmp(format, "zio") == 0)
        make_zio(fd);
    else if (strcmp(format, "npz") == 0)
        make_npz(fd);
    else
        make_tenbin(fd);
    assert_int_equal(close(fd), 0);
}

static tio_container *open_file(const char *path, unsigned flags) {
    tio_open_options o = {0};
    o.flags = flags;
    tio_container *c = NULL;
    tio_error e;
    int rc = tio_open(path, &o, &c, &e);
    if (rc) fprintf(stderr, "%s: %s\n", path, e.message);
    assert_int_equal(rc, TIO_OK);
    return c;
}

/* Every tensor has its size and its first `checked` bytes are the marks
 * (the sparse files' holes are not read: tmpfs would fill them with pages). */
static void check_data(const tio_container *c, size_t count, size_t nbytes, size_t checked) {
    assert_int_equal(tio_container_count(c), count);
    for (size_t i = 0; i < count; i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        assert_int_equal(tio_tensor_nbytes(t), nbytes);
        const uint8_t *p = tio_tensor_data(t);
        for (size_t k = 0; k < checked; k++)
            if (p[k] != mark_of(i, k)) fail_msg("tensor %zu byte %zu differs", i, k);
    }
}

static void open_touches_no_page_per_tensor(const char *format) {
    char path[64];
    snprintf(path, sizeof path, "%s/many.%s", dir,
             strcmp(format, "zio") == 0 ? "zmsg" : format);
    make_file(path, format);
    /* once to warm the heap (and the page cache) */
    tio_container_free(open_file(path, 0));
    long before = minflt();
    tio_container *c = open_file(path, 0);
    long faults = minflt() - before;
    size_t pages = mapped_pages(c);
    fprintf(stderr, "%s: open of %u tensors: %zu pages of the mapping mapped, %ld minor faults\n",
            format, COUNT, pages, faults);
    assert_true(pages < OPEN_PAGES_MAX);
    /* What reading the headers from the mapping would have cost (the
     * control: the measure sees it): one byte per tensor, beside its header. */
    before = minflt();
    unsigned sum = 0;
    for (size_t i = 0; i < COUNT; i++)
        sum += *(const volatile uint8_t *)tio_tensor_data(tio_container_tensor(c, i));
    faults = minflt() - before;
    pages = mapped_pages(c);
    fprintf(stderr, "%s: then one byte of each tensor: %zu pages mapped, %ld minor faults (sum %u)\n",
            format, pages, faults, sum);
    assert_true(pages >= COUNT);
    assert_true(faults >= (long)COUNT - 16); /* the probe mapped the first */
    /* the tensors are views into the mapping, with the bytes written */
    const uint8_t *p = tio_tensor_data(tio_container_tensor(c, 0));
    assert_true(p >= (const uint8_t *)c->map && p < (const uint8_t *)c->map + c->map_size);
    check_data(c, COUNT, TBYTES, MARK);
    tio_container_free(c);
    unlink(path);
}

/* Per format (its name as the test's state). */
static void test_open(void **state) { open_touches_no_page_per_tensor(*state); }

/* A dense BTF of PF_COUNT tensors of PF_BYTES, by tio_save. */
#define PF_COUNT 1000u
#define PF_BYTES 4096u

/* The dense file's tensors (copied), named t0000... or unnamed. */
static tio_container *dense_container(bool named) {
    tio_container *c = tio_container_new();
    assert_non_null(c);
    uint8_t data[PF_BYTES];
    int64_t shape[1] = {PF_BYTES};
    for (size_t i = 0; i < PF_COUNT; i++) {
        for (size_t k = 0; k < PF_BYTES; k++) data[k] = mark_of(i, k);
        char name[16];
        snprintf(name, sizeof name, "t%04zu", i);
        tio_tensor_desc d;
        memset(&d, 0, sizeof d);
        d.name = named ? name : NULL;
        d.dtype = TIO_UINT8;
        d.rank = 1;
        d.shape = shape;
        d.data = data;
        d.nbytes = PF_BYTES;
        tio_error e;
        assert_int_equal(tio_container_add(c, &d, 0, NULL, &e), TIO_OK);
    }
    return c;
}

static void make_dense(const char *path) {
    tio_container *c = dense_container(false);
    tio_save_options so = {0};
    so.format = "btf";
    so.flags = TIO_SAVE_NO_SYNC;
    tio_error e;
    assert_int_equal(tio_save(c, path, &so, &e), TIO_OK);
    tio_container_free(c);
}

static void check_dense(const tio_container *c) {
    check_data(c, PF_COUNT, PF_BYTES, PF_BYTES);
}

/* Kernel >= 5.14 has MADV_POPULATE_READ. */
static int kernel_populates(void) {
    struct utsname u;
    assert_int_equal(uname(&u), 0);
    unsigned maj = 0, min = 0;
    if (sscanf(u.release, "%u.%u", &maj, &min) != 2) return 0;
    return maj > 5 || (maj == 5 && min >= 14);
}

/* tio_container_prefetch of a container that holds others prefetches
 * their mappings too: a Hugging Face index's shards (the index's own
 * mapping is its JSON), and a selection holding its source
 * (tio_container_hold). Every page of each is then mapped. */
static void test_prefetch_parts(void **state) {
    (void)state;
    if (!kernel_populates()) return; /* the hint leaves no page table to check */
    long psz = sysconf(_SC_PAGESIZE);
    tio_container *c = dense_container(true);
    tio_error e;
    char path[64];
    snprintf(path, sizeof path, "%s/pfhf/", dir);
    tio_save_options so = {.format = "safetensors", .flags = TIO_SAVE_NO_SYNC,
                           .max_shard_bytes = PF_COUNT * PF_BYTES / 3};
    assert_int_equal(tio_save(c, path, &so, &e), TIO_OK);
    tio_container_free(c);
    c = open_file(path, 0);
    assert_string_equal(tio_container_format(c), "hfindex");
    assert_true(c->nparts >= 3);
    /* the open maps a shard's header pages (and those the kernel maps
     * around a fault), not its data */
    size_t *before = calloc(c->nparts, sizeof *before);
    assert_non_null(before);
    for (size_t k = 0; k < c->nparts; k++) {
        const tio_container *s = c->parts[k];
        before[k] = mapped_pages(s);
        size_t pages = s->map_size / (size_t)psz;
        if (pages >= 64) assert_true(before[k] < pages / 2); /* the last may be small */
    }
    /* a selection holding the first shard: that one only */
    tio_container *sel = tio_container_new();
    assert_non_null(sel);
    assert_int_equal(tio_container_hold(sel, c->parts[0], &e), TIO_OK);
    assert_int_equal(tio_container_prefetch(sel, &e), TIO_OK);
    tio_container_free(sel);
    for (size_t k = 0; k < c->nparts; k++) {
        const tio_container *s = c->parts[k];
        assert_int_equal(mapped_pages(s),
                         k ? before[k] : (s->map_size + (size_t)psz - 1) / (size_t)psz);
    }
    free(before);
    /* the index: every shard */
    assert_int_equal(tio_container_prefetch(c, &e), TIO_OK);
    for (size_t k = 0; k < c->nparts; k++) {
        const tio_container *s = c->parts[k];
        assert_int_equal(mapped_pages(s), (s->map_size + (size_t)psz - 1) / (size_t)psz);
    }
    tio_container_free(c);
    DIR *d = opendir(path); /* the shards and the index */
    assert_non_null(d);
    struct dirent *f;
    while ((f = readdir(d)) != NULL)
        if (f->d_name[0] != '.') assert_int_equal(unlinkat(dirfd(d), f->d_name, 0), 0);
    closedir(d);
    assert_int_equal(rmdir(path), 0);
}

static void test_prefetch(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "%s/pf.btf", dir);
    make_dense(path);
    tio_error e;
    int how = -1;

    /* the fallback, as a kernel before 5.14 takes it */
    tio_container *c = open_file(path, 0);
    assert_int_equal(tio__prefetch(c, true, &how, &e), TIO_OK);
    assert_int_equal(how, TIO_PREFETCH_HINTED);
    check_dense(c);
    tio_container_free(c);

    /* MADV_POPULATE_READ: afterwards reading everything faults no more */
    c = open_file(path, 0);
    assert_int_equal(tio__prefetch(c, false, &how, &e), TIO_OK);
    if (kernel_populates()) {
        assert_int_equal(how, TIO_PREFETCH_POPULATED);
        /* every page of the file is mapped */
        long psz = sysconf(_SC_PAGESIZE);
        assert_int_equal(mapped_pages(c), (c->map_size + (size_t)psz - 1) / (size_t)psz);
        long before = minflt();
        check_dense(c);
        long faults = minflt() - before;
        fprintf(stderr, "reading %u prefetched tensors: %ld minor faults\n", PF_COUNT, faults);
        /* Under TSan every byte read gets shadow memory of its own, whose
         * pages fault in as the data are first read (4 MiB read: ~4,000
         * shadow faults): the process's count then measures the sanitizer.
         * The page table check above is the proof in every build. */
        if (!TSAN_BUILD) assert_true(faults < (long)(PF_COUNT / 100u));
    } else {
        assert_int_equal(how, TIO_PREFETCH_HINTED);
        check_dense(c);
    }
    assert_int_equal(tio_container_prefetch(c, &e), TIO_OK); /* twice is fine */
    tio_container_free(c);

    /* the open flag */
    c = open_file(path, TIO_OPEN_PREFETCH);
    check_dense(c);
    tio_container_free(c);

    /* memory input: nothing to do */
    c = open_file(path, TIO_OPEN_NO_MMAP | TIO_OPEN_PREFETCH);
    assert_int_equal(tio__prefetch(c, false, &how, &e), TIO_OK);
    assert_int_equal(how, TIO_PREFETCH_NONE);
    check_dense(c);
    tio_container_free(c);

    assert_int_equal(tio_container_prefetch(NULL, &e), TIO_E_ARGUMENT);
    unlink(path);
}

/* ----------------------------------------------- the same answers as memory */

/* Opening `path` (mapped: headers by pread) and its bytes in memory (headers
 * from the buffer) gives the same result: code, message, tensors, findings. */
static void same_as_memory(const char *path, const uint8_t *bytes, size_t n, const char *fmt) {
    tio_open_options o = {0};
    o.format = fmt;
    tio_container *a = NULL, *b = NULL;
    tio_error ea, eb;
    memset(&ea, 0, sizeof ea);
    memset(&eb, 0, sizeof eb);
    int ra = tio_open(path, &o, &a, &ea);
    int rb = tio_open_memory(bytes, n, &o, &b, &eb);
    if (ra != rb || (ra && strcmp(ea.message, eb.message) != 0))
        fail_msg("%s: mapped %d \"%s\", memory %d \"%s\"", path, ra, ea.message, rb,
                 eb.message);
    if (ra == TIO_OK) {
        assert_int_equal(tio_container_count(a), tio_container_count(b));
        assert_int_equal(tio_container_warning_count(a), tio_container_warning_count(b));
        for (size_t w = 0; w < tio_container_warning_count(a); w++)
            assert_string_equal(tio_container_warning(a, w)->message,
                                tio_container_warning(b, w)->message);
        for (size_t i = 0; i < tio_container_count(a); i++) {
            const tio_tensor *x = tio_container_tensor(a, i), *y = tio_container_tensor(b, i);
            size_t nb = tio_tensor_nbytes(x);
            assert_int_equal(nb, tio_tensor_nbytes(y));
            const uint8_t *px = tio_tensor_data(x), *py = tio_tensor_data(y);
            const uint8_t *m = a->map;
            int vx = px >= m && px < m + a->map_size, vy = py >= bytes && py < bytes + n;
            assert_int_equal(vx, vy); /* both views, or both copies (.npz: inflated,
                                         unaligned) */
            if (vx)
                assert_int_equal(px - m, py - bytes);
            else if (nb)
                assert_memory_equal(px, py, nb);
        }
    }
    tio_container_free(a);
    tio_container_free(b);
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long len = ftell(f);
    assert_true(len >= 0);
    rewind(f);
    uint8_t *b = malloc((size_t)len + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static void spill(const char *path, const uint8_t *b, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    if (n) put(fd, 0, b, n);
    assert_int_equal(close(fd), 0);
}

/* Every test vector of the format, and each of them cut short at every length
 * and with each byte set to 0xff (hostile headers read through the window). */
static void vectors_same_as_memory(const char *fmt) {
    char vdir[512], src[1024], tmp[64];
    snprintf(vdir, sizeof vdir, "%s/%s", TIO_TEST_VECTORS, fmt);
    snprintf(tmp, sizeof tmp, "%s/mut.%s", dir, strcmp(fmt, "zio") == 0 ? "zmsg" : fmt);
    DIR *d = opendir(vdir);
    assert_non_null(d);
    size_t files = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const char *dot = strrchr(e->d_name, '.');
        if (!dot || (strcmp(dot, ".btf") != 0 && strcmp(dot, ".ten") != 0 &&
                     strcmp(dot, ".zmsg") != 0 && strcmp(dot, ".npz") != 0 &&
                     strcmp(dot, ".onnx") != 0))
            continue;
        snprintf(src, sizeof src, "%s/%s", vdir, e->d_name);
        size_t n;
        uint8_t *b = slurp(src, &n);
        files++;
        same_as_memory(src, b, n, fmt);
        size_t step = n > 4096 ? n / 512 : 1; /* big vectors: a sample */
        for (size_t cut = 0; cut < n; cut += step) {
            spill(tmp, b, cut);
            same_as_memory(tmp, b, cut, fmt);
        }
        for (size_t k = 0; k < n; k += step) {
            uint8_t old = b[k];
            b[k] = 0xff;
            spill(tmp, b, n);
            same_as_memory(tmp, b, n, fmt);
            b[k] = old;
        }
        free(b);
    }
    closedir(d);
    unlink(tmp);
    assert_true(files > 0);
}





/* tmfile, written by tio_save (TM_COUNT constants of TM_BYTES, each a
 * Const node's output): its TM2_Tensor, name and dims lie in a table, its
 * TM2_Buffer just behind its data. Opening maps the table's pages (and the
 * kernel's fault-around, 16 pages, around each), not a page per tensor. */
#define TM_COUNT 4000u
#define TM_BYTES (32u << 10)

/* A model for the constants: input x, then y_i = Add(y_{i-1}, t_i). */
static void tm_chain(tio_container *c, size_t n, int64_t elems) {
    tio_graph *g;
    tio_error e;
    assert_int_equal(tio_container_new_graph(c, &g, &e), TIO_OK);
    tio_dim d = {elems, NULL};
    tio_value_info x = {.name = "x", .dtype = TIO_FLOAT32, .rank = 1, .dims = &d, .tensor = -1};
    size_t at[3]; /* y_{i-1}, t_i, y_i */
    assert_int_equal(tio_graph_add_value(g, &x, &at[0], &e), TIO_OK);
    int64_t io = (int64_t)at[0];
    assert_int_equal(tio_graph_set_inputs(g, &io, 1, &e), TIO_OK);
    for (size_t i = 0; i < n; i++) {
        char y[32];
        snprintf(y, sizeof y, "y%05zu", i);
        tio_value_info t = {.name = tio_tensor_name(tio_container_tensor(c, i)),
                            .tensor = (int64_t)i};
        x.name = y;
        assert_int_equal(tio_graph_add_value(g, &t, &at[1], &e), TIO_OK);
        assert_int_equal(tio_graph_add_value(g, &x, &at[2], &e), TIO_OK);
        int64_t ins[2] = {(int64_t)at[0], (int64_t)at[1]}, out = (int64_t)at[2];
        tio_node_info add = {.name = y, .op = "Add", .native_id = -1, .inputs = ins,
                             .input_count = 2, .outputs = &out, .output_count = 1};
        size_t ni;
        assert_int_equal(tio_graph_add_node(g, &add, &ni, &e), TIO_OK);
        at[0] = at[2];
    }
    io = (int64_t)at[0];
    assert_int_equal(tio_graph_set_outputs(g, &io, 1, &e), TIO_OK);
}

/* save_constants' graph for a format of tensors alone (BTF): none, and the
 * names dropped. */
static void no_graph(tio_container *c, size_t n, int64_t elems) {
    (void)c;
    (void)n;
    (void)elems;
}

/* Saves TM_COUNT constants of TM_BYTES (all the same marked bytes) as
 * `format`, with the graph `graph` gives them (NULL: constants only, no
 * operators), at path. */
static void save_constants(const char *path, const char *format,
                           void (*graph)(tio_container *c, size_t n, int64_t elems)) {
    uint8_t *data = malloc(TM_BYTES);
    assert_non_null(data);
    for (size_t k = 0; k < TM_BYTES; k++) data[k] = mark_of(7, k);
    tio_container *w = tio_container_new();
    assert_non_null(w);
    int64_t shape[1] = {TM_BYTES / 4};
    tio_error e;
    for (size_t i = 0; i < TM_COUNT; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%05zu", i);
        tio_tensor_desc d;
        memset(&d, 0, sizeof d);
        d.name = name;
        d.dtype = TIO_FLOAT32;
        d.rank = 1;
        d.shape = shape;
        d.data = data; /* all the same bytes, borrowed */
        d.nbytes = TM_BYTES;
        assert_int_equal(tio_container_add(w, &d, TIO_ADD_BORROW, NULL, &e), TIO_OK);
    }
    if (graph) {
        graph(w, TM_COUNT, TM_BYTES / 4);
    } else {
        tio_graph *g;
        assert_int_equal(tio_container_new_graph(w, &g, &e), TIO_OK);
        for (size_t i = 0; i < TM_COUNT; i++) {
            tio_value_info cv = {.name = tio_tensor_name(tio_container_tensor(w, i)),
                                 .tensor = (int64_t)i};
            size_t ci;
            assert_int_equal(tio_graph_add_value(g, &cv, &ci, &e), TIO_OK);
        }
    }
    tio_save_options so = {0};
    so.format = format;
    so.flags = TIO_SAVE_NO_SYNC | (graph == no_graph ? TIO_SAVE_DROP_NAMES : 0u);
    int rc = tio_save(w, path, &so, &e);
    if (rc) fprintf(stderr, "save: %s\n", e.message);
    assert_int_equal(rc, TIO_OK);
    tio_container_free(w);
    free(data);
}

/* Opens what save_constants wrote: far fewer pages of the mapping mapped
 * than tensors; then the control, one byte of each tensor, maps a page per
 * tensor (the measure sees it). Returns the container. */
static tio_container *open_constants(const char *path, const char *format) {
    tio_container *c = NULL;
    tio_error e;
    long before = minflt();
    int rc = tio_open(path, NULL, &c, &e);
    if (rc) fprintf(stderr, "open: %s\n", e.message);
    assert_int_equal(rc, TIO_OK);
    long faults = minflt() - before;
    size_t pages = mapped_pages(c);
    fprintf(stderr, "%s: opened %zu tensors: %zu pages of the mapping mapped, %ld minor "
            "faults\n", format, tio_container_count(c), pages, faults);
    assert_int_equal(tio_container_count(c), TM_COUNT);
    assert_true(pages < TM_COUNT / 4);
    unsigned sum = 0;
    for (size_t i = 0; i < TM_COUNT; i++)
        sum += *(const volatile uint8_t *)tio_tensor_bytes(tio_container_tensor(c, i));
    pages = mapped_pages(c);
    assert_true(pages >= TM_COUNT);
    fprintf(stderr, "%s: then one byte of each tensor: %zu pages mapped\n", format, pages);
    assert_int_equal(sum, (unsigned)mark_of(7, 0) * TM_COUNT);
    return c;
}

/* save_constants to dir/file, then open_constants. */
static void save_and_open(const char *file, const char *format,
                          void (*graph)(tio_container *c, size_t n, int64_t elems)) {
    char path[64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    save_constants(path, format, graph);
    tio_container_free(open_constants(path, format));
    unlink(path);
}

static void test_tmfile_open(void **state) {
    (void)state;
    save_and_open("many.tmfile", "tmfile", tm_chain);
}

/* TensorFlow Lite, written by tio_save (a model of TM_COUNT constants of
 * TM_BYTES): the buffers' tables sit together, each buffer's length word
 * beside its data, a page apart. The open reads those words by pread
 * (tio__fb_bytes, the verifier's tio_fb_limits.head), most of them on a
 * thread of their own (tfl_ahead: tio_preads, from the last buffer down),
 * so it maps no page per tensor. The mapped open (the thread) and the open
 * from memory (no thread) give the same tensors, and the same error for a
 * length word made to run past the end of the file at the first buffer
 * (the caller's to read), a middle one and the last (the thread's first). */
static void test_tflite_open(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "%s/many.tflite", dir);
    save_constants(path, "tflite", NULL);
    tio_container *c = open_constants(path, "tflite");
    const size_t which[3] = {0, TM_COUNT / 2, TM_COUNT - 1};
    uint64_t at[3];
    for (size_t k = 0; k < 3; k++) {
        const uint8_t *d = tio_tensor_bytes(tio_container_tensor(c, which[k]));
        at[k] = (uint64_t)(d - (const uint8_t *)c->map) - 4;
    }
    tio_container_free(c);
    size_t n;
    uint8_t *b = slurp(path, &n);
    same_as_memory(path, b, n, "tflite");
    const uint8_t big[4] = {0xf0, 0xff, 0xff, 0x7f};
    for (size_t k = 0; k < 3; k++) {
        uint8_t old[4];
        memcpy(old, b + at[k], 4);
        memcpy(b + at[k], big, 4);
        int fd = open(path, O_WRONLY);
        assert_true(fd >= 0);
        put(fd, at[k], big, 4);
        assert_int_equal(close(fd), 0);
        c = NULL;
        tio_error e;
        assert_int_equal(tio_open(path, NULL, &c, &e), TIO_E_TRUNCATED);
        assert_null(c);
        if (!strstr(e.message, "Buffer.data") || !strstr(e.message, "2147483632 elements"))
            fail_msg("%s", e.message);
        same_as_memory(path, b, n, "tflite");
        fd = open(path, O_WRONLY);
        assert_true(fd >= 0);
        put(fd, at[k], old, 4);
        assert_int_equal(close(fd), 0);
        memcpy(b + at[k], old, 4);
    }
    free(b);
    unlink(path);
}

/* Byte `at` of the file at path, and of its copy b, set to v. */
static void set_byte(const char *path, uint8_t *b, size_t at, uint8_t v) {
    b[at] = v;
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    put(fd, at, &v, 1);
    assert_int_equal(close(fd), 0);
}

/* BTF, written by tio_save (TM_COUNT tensors of TM_BYTES): each record's
 * header lies beside its data, 32 KiB apart. The open reads them by pread
 * (the header windows), most on a thread of their own (btf_ahead:
 * tio__headsrc_ahead, from the last record down), so it maps no page per
 * tensor. The mapped open (the thread) and the open from memory (no thread)
 * give the same tensors, and the same error for a dtype code made wrong in
 * the first record (the caller's to read), a middle one and the last (the
 * thread's first). */
static void test_btf_open(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "%s/many.btf", dir);
    save_constants(path, "btf", no_graph);
    tio_container_free(open_constants(path, "btf"));
    size_t n;
    uint8_t *b = slurp(path, &n);
    same_as_memory(path, b, n, "btf");
    assert_true(n >= 8 + 8 * TM_COUNT);
    const size_t which[3] = {0, TM_COUNT / 2, TM_COUNT - 1};
    for (size_t k = 0; k < 3; k++) {
        uint64_t at = 0;
        for (unsigned j = 0; j < 8; j++) at |= (uint64_t)b[8 + 8 * which[k] + j] << (8 * j);
        at += 8; /* the dtype code */
        assert_true(at < n);
        uint8_t old = b[at];
        set_byte(path, b, at, 0xee);
        tio_container *c = NULL;
        tio_error e;
        assert_int_equal(tio_open(path, NULL, &c, &e), TIO_E_DTYPE);
        assert_null(c);
        if (!strstr(e.message, "dtype code 238")) fail_msg("%s", e.message);
        same_as_memory(path, b, n, "btf");
        set_byte(path, b, at, old);
    }
    free(b);
    unlink(path);
}

/* ONNX, written by tio_save (a graph of TM_COUNT initializers of TM_BYTES,
 * 32 KiB apart): the protobuf reader reads each initializer's fields by
 * pread (tio_pb_head), and walks the graph's fields from one index, so the
 * open maps no page per tensor (before: every initializer's page, in each of
 * seven walks of the graph). */
static void test_onnx_open(void **state) {
    (void)state;
    save_and_open("many.onnx", "onnx", NULL);
}

/* tio_save of an opened ONNX model writes each initializer's raw_data as
 * every tensor format's save writes tensor bytes (tio__plan_sink_tensor: from
 * the source file, copied in the kernel or read in by pread()), not from the
 * mapping: the protobuf writer wrote them from it, faulting in every page
 * (rten -> ONNX of 1 GiB onto tmpfs: 0.79 s against cp's 0.28 s, now 0.28 s).
 * The rewrite is the same bytes. */
static void test_onnx_save(void **state) {
    (void)state;
    char path[64], out[64];
    snprintf(path, sizeof path, "%s/save.onnx", dir);
    snprintf(out, sizeof out, "%s/save.out.onnx", dir);
    save_constants(path, "onnx", NULL);
    tio_container *c = NULL;
    tio_error e;
    int rc = tio_open(path, NULL, &c, &e);
    if (rc) fail_msg("open: %s", e.message);
    size_t before = mapped_pages(c);
    tio_save_options so = {.format = "onnx"};
    rc = tio_save(c, out, &so, &e);
    if (rc) fail_msg("save: %s", e.message);
    size_t after = mapped_pages(c);
    fprintf(stderr, "onnx: saved %zu initializers: %zu pages of the mapping mapped before, "
            "%zu after\n", tio_container_count(c), before, after);
    assert_true(after < before + TM_COUNT / 4);
    size_t n, m;
    uint8_t *a = slurp(path, &n), *b = slurp(out, &m);
    assert_int_equal(n, m);
    assert_memory_equal(a, b, n);
    free(a);
    free(b);
    tio_container_free(c);
    unlink(path);
    unlink(out);
}

/* The thread of tio_preads reads through io_uring where the kernel gives a
 * ring; ring_off makes it refuse (as a kernel without io_uring, or with
 * kernel.io_uring_disabled, does), so both ways are tested (linked with
 * --wrap=tio__uring_new, tests/CMakeLists.txt). */
tio_uring *__real_tio__uring_new(void);
tio_uring *__wrap_tio__uring_new(void);
static _Atomic int ring_off, rings_made;
tio_uring *__wrap_tio__uring_new(void) {
    if (ring_off) return NULL;
    tio_uring *u = __real_tio__uring_new();
    if (u) rings_made++;
    return u;
}

/* Saves TM_COUNT constants as `format` to dir/file (path: its name), opens
 * them (open_constants), and checks that the open made a ring of io_uring
 * where the kernel gives one (the read-ahead thread's: tio__headsrc_ahead)
 * and gives what the open from memory gives. Returns the file's bytes. */
static uint8_t *save_open_ahead(const char *file, const char *format, char *path,
                                size_t path_size, size_t *n) {
    snprintf(path, path_size, "%s/%s", dir, file);
    save_constants(path, format, no_graph);
    tio_uring *u = __real_tio__uring_new();
    bool kernel_rings = u != NULL;
    tio__uring_free(u);
    rings_made = 0;
    tio_container_free(open_constants(path, format));
    fprintf(stderr, "%s: %d rings made by the open (this kernel %s io_uring)\n", format,
            (int)rings_made, kernel_rings ? "gives" : "refuses");
    if (kernel_rings) assert_true(rings_made >= 1); /* the read-ahead's */
    uint8_t *b = slurp(path, n);
    same_as_memory(path, b, *n, format);
    return b;
}

/* .npz, written by tio_save (TM_COUNT members of TM_BYTES, 32 KiB apart):
 * each member's local header and .npy header are read by pread (the header
 * windows), most on a thread of their own (the zip reader's zip_ahead:
 * tio__headsrc_ahead, from the last member down, through a ring of io_uring
 * where the kernel gives one), so the open maps no page per tensor. The
 * mapped open (the thread) and the open from memory (no thread) give the
 * same tensors, and the same error for a .npy magic made wrong in the
 * first member (the caller's to read), a middle one and the last (the
 * thread's first). */
static void test_npz_open(void **state) {
    (void)state;
    char path[64];
    size_t n;
    uint8_t *b = save_open_ahead("many.npz", "npz", path, sizeof path, &n);
    static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    size_t *at = malloc(TM_COUNT * sizeof *at), found = 0;
    assert_non_null(at);
    for (size_t k = 0; k + sizeof magic <= n && found < TM_COUNT; k++)
        if (b[k] == 0x93 && memcmp(b + k, magic, sizeof magic) == 0) at[found++] = k;
    assert_int_equal(found, TM_COUNT);
    const size_t which[3] = {0, TM_COUNT / 2, TM_COUNT - 1};
    for (size_t k = 0; k < 3; k++) {
        size_t w = at[which[k]];
        set_byte(path, b, w, 0x94);
        tio_container *c = NULL;
        tio_error e;
        assert_true(tio_open(path, NULL, &c, &e) != TIO_OK);
        assert_null(c);
        char member[96];
        snprintf(member, sizeof member, "offset %zu: member 't%05zu.npy': the file does not "
                 "start with", w, which[k]);
        if (!strstr(e.message, member)) fail_msg("want \"%s\", got \"%s\"", member, e.message);
        same_as_memory(path, b, n, "npz");
        set_byte(path, b, w, magic[0]);
    }
    free(at);
    free(b);
    unlink(path);
}

/* ZIO (.zmsg), written by tio_save (TM_COUNT tensors of TM_BYTES, 32 KiB
 * apart): each part's size field says where the next part starts, so the
 * open predicts where they lie from the label's shapes and dtypes and reads
 * them on a thread of its own (zio_ahead: tio__headsrc_ahead, from the last
 * part down, through a ring of io_uring where the kernel gives one); it maps
 * no page per tensor. The mapped open and the open from memory (no thread)
 * give the same tensors, and the same error where the prediction misses:
 * the size field of the first payload part, a middle one or the last made a
 * byte short (every part after it then lies elsewhere than predicted), and
 * the first tensor's shape in the label made an element larger (every
 * prediction 4 bytes off). */
static void test_zio_open(void **state) {
    (void)state;
    char path[64];
    size_t n;
    uint8_t *b = save_open_ahead("many.zmsg", "zio", path, sizeof path, &n);
    /* where the payload parts' size fields lie (0xff and 4 bytes for theirs) */
    size_t *at = malloc(TM_COUNT * sizeof *at), parts = 0;
    assert_non_null(at);
    for (size_t pos = 0, len = 0; pos < n; pos += len) {
        assert_true(pos + 5 <= n);
        len = b[pos] == 0xff ? 5 + (((size_t)b[pos + 1] << 24) | ((size_t)b[pos + 2] << 16) |
                                    ((size_t)b[pos + 3] << 8) | b[pos + 4])
                             : 1 + (size_t)b[pos];
        if (parts >= 2) {
            assert_int_equal(b[pos], 0xff);
            assert_true(parts - 2 < TM_COUNT);
            assert_int_equal(len, 5 + TM_BYTES);
            at[parts - 2] = pos;
        }
        parts++;
    }
    assert_int_equal(parts, TM_COUNT + 2);
    const size_t which[3] = {0, TM_COUNT / 2, TM_COUNT - 1};
    for (size_t k = 0; k < 3; k++) {
        size_t w = at[which[k]] + 4; /* the size's low byte */
        uint8_t old = b[w];
        set_byte(path, b, w, (uint8_t)(old - 1));
        tio_container *c = NULL;
        tio_error e;
        assert_true(tio_open(path, NULL, &c, &e) != TIO_OK);
        assert_null(c);
        same_as_memory(path, b, n, "zio");
        set_byte(path, b, w, old);
    }
    static const char shape[] = "\"shape\":[8192]";
    assert_int_equal(TM_BYTES / 4, 8192);
    size_t digit = 0;
    for (size_t k = 0; k + sizeof shape - 1 <= n && !digit; k++)
        if (memcmp(b + k, shape, sizeof shape - 1) == 0) digit = k + sizeof shape - 3;
    assert_true(digit > 0);
    set_byte(path, b, digit, '3');
    tio_container *c = NULL;
    tio_error e;
    assert_int_equal(tio_open(path, NULL, &c, &e), TIO_E_CORRUPT);
    fprintf(stderr, "zio: shape made wrong: %s\n", e.message);
    if (!strstr(e.message, "8193")) fail_msg("%s", e.message);
    same_as_memory(path, b, n, "zio");
    free(at);
    free(b);
    unlink(path);
}

/* tio_uring (src/core/uring.c): a batch of reads at scattered offsets, each
 * with its own result: whole, short at the end of the file, 0 past it, an
 * error for a bad descriptor; batches of more than TIO__URING_DEPTH, or of
 * none, refused. Where this kernel refuses io_uring the ring is NULL and
 * every call says false (the callers then pread()). */
static void test_uring_reads(void **state) {
    (void)state;
    char path[96];
    int fd;
    enum { SZ = 1 << 20 };
    uint8_t *b = marked_file("ur.bin", SZ, 3, path, &fd);
    tio_uring *u = __real_tio__uring_new();
    tio_uring_read r[TIO__URING_DEPTH + 1];
    uint8_t got[TIO__URING_DEPTH + 1][64];
    for (size_t i = 0; i <= TIO__URING_DEPTH; i++)
        r[i] = (tio_uring_read){fd, got[i], 64, (uint64_t)(i * 16411u) % (SZ - 64), 0};
    r[1].off = SZ - 40; /* short: 40 bytes */
    r[2].off = SZ;      /* at the end: 0 */
    r[3].fd = -1;       /* EBADF */
    assert_false(tio__uring_reads(u, r, 0));
    assert_false(tio__uring_reads(u, r, TIO__URING_DEPTH + 1));
    if (!u) {
        fprintf(stderr, "io_uring: this kernel gives no ring; the readers pread()\n");
        assert_false(tio__uring_reads(u, r, TIO__URING_DEPTH));
    } else {
        for (int round = 0; round < 3; round++) { /* a ring is reused */
            memset(got, 0, sizeof got);
            assert_true(tio__uring_reads(u, r, TIO__URING_DEPTH));
            for (size_t i = 0; i < TIO__URING_DEPTH; i++) {
                int32_t want = i == 1 ? 40 : i == 2 ? 0 : i == 3 ? -EBADF : 64;
                if (r[i].res != want)
                    fail_msg("read %zu: %d bytes, expected %d", i, (int)r[i].res, (int)want);
                if (want > 0) assert_memory_equal(got[i], b + r[i].off, (size_t)want);
            }
        }
        tio__uring_free(u);
    }
    tio__uring_free(NULL);
    free(b);
    close(fd);
    unlink(path);
}

/* tio_preads (src/core/preads.c): small reads at scattered offsets taken by
 * a thread while the caller takes them in any order, reads some itself,
 * takes some twice, or ends before the thread is done; the reads through
 * io_uring (the thread's and the caller's rings, where this kernel gives
 * them) and by pread(). */
#define PR_COUNT 3000u
#define PR_SIZE (4u << 20)
static void test_preads(void **state) {
    (void)state;
    char path[96];
    int fd;
    uint8_t *b = marked_file("pr.bin", PR_SIZE, 5, path, &fd);
    uint64_t *off = malloc(PR_COUNT * sizeof *off);
    assert_non_null(off);
    uint64_t r = 88172645463325252u; /* xorshift */
    for (size_t i = 0; i < PR_COUNT; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        off[i] = r % (PR_SIZE - 8);
    }
    off[7] = UINT64_MAX;       /* none */
    off[100] = PR_SIZE - 4;    /* 8 bytes past the end */
    off[PR_COUNT - 1] = PR_SIZE - 8; /* the last 8 bytes: served */
    /* arguments the helper refuses: the caller reads every struct itself */
    assert_null(tio__preads_start(-1, off, PR_COUNT, 8, PR_SIZE));
    assert_null(tio__preads_start(fd, off, 0, 8, PR_SIZE));
    assert_null(tio__preads_start(fd, off, PR_COUNT, TIO__PREADS_MAX + 1, PR_SIZE));
    uint8_t got[8];
    assert_false(tio__preads_take(NULL, 0, got));
    tio_uring *u = __real_tio__uring_new();
    bool kernel_rings = u != NULL;
    tio__uring_free(u);
    rings_made = 0;
    for (int order = 0; order < 8; order++) {
        ring_off = order >= 4;
        tio_preads *j = tio__preads_start(fd, off, PR_COUNT, 8, PR_SIZE);
        assert_non_null(j);
        /* order 3: forwards after the thread had time to read ahead */
        if (order % 4 == 3) nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL);
        size_t mine = 0, theirs = 0, stop = order % 4 == 2 ? PR_COUNT / 3 : PR_COUNT;
        for (size_t q = 0; q < stop; q++) {
            size_t i = order % 4 == 1 ? PR_COUNT - 1 - q : q; /* forwards, backwards */
            for (int twice = 0; twice < 2; twice++) {
                if (tio__preads_take(j, i, got)) {
                    theirs++;
                    assert_true(off[i] != UINT64_MAX && off[i] + 8 <= PR_SIZE);
                    assert_memory_equal(got, b + off[i], 8);
                } else {
                    mine++; /* the caller's to read: never one the thread read */
                }
            }
        }
        assert_false(tio__preads_take(j, PR_COUNT, got));
        tio__preads_end(j); /* order 2: ends with most entries untaken */
        fprintf(stderr, "preads, order %d, %s: %zu taken read, %zu left to the "
                "caller\n", order % 4, ring_off ? "pread()" : "a ring if given", theirs, mine);
        assert_int_equal(mine + theirs, 2 * stop);
        /* the two unreadable ones, each taken twice; with rings the caller
         * reads none alone: an entry the thread has not begun is read in a
         * batch from it up, through the caller's own ring */
        if (!ring_off && kernel_rings) assert_int_equal(mine, 4);
        else assert_true(mine >= 4);
        if (order % 4 == 3) assert_true(theirs > 0);
    }
    ring_off = 0;
    fprintf(stderr, "preads: %d rings made (this kernel %s io_uring)\n", (int)rings_made,
            kernel_rings ? "gives" : "refuses");
    /* one per thread with the ring allowed, and one per caller that reached
     * an entry the thread had not begun */
    if (kernel_rings) assert_true(rings_made >= 4 && rings_made <= 8);
    else assert_int_equal(rings_made, 0);
    free(off);
    free(b);
    close(fd);
    unlink(path);
}

/* The header windows themselves (src/core/cursor.c), on the access
 * patterns of the readers that use them, counting pread() calls: tmfile's
 * (a table of small structs read a little backwards within each record,
 * and one struct beside each buffer, far away) and .npz's (a local header,
 * then the .npy header just behind it). Every byte handed out is the
 * file's. */
#define HS_RECS 2000u
#define HS_TABLE 56u          /* bytes of structs per record in the table */
#define HS_FAR (64u << 10)    /* buffers 64 KiB apart */

static void hs_same(const uint8_t *got, uint64_t off, size_t n) {
    assert_non_null(got);
    for (size_t k = 0; k < n; k++) assert_int_equal(got[k], mark_of(off + k, 3));
}

static void test_headsrc_windows(void **state) {
    (void)state;
    char path[96];
    snprintf(path, sizeof path, "%s/hs.bin", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    uint64_t table = 4096, far0 = table + HS_RECS * HS_TABLE + HS_FAR;
    uint64_t size = far0 + (uint64_t)HS_RECS * HS_FAR;
    assert_int_equal(ftruncate(fd, (off_t)size), 0);
    /* the bytes read: the table, and 1 KiB at each buffer */
    uint8_t *b = malloc(HS_RECS * HS_TABLE);
    assert_non_null(b);
    for (size_t k = 0; k < HS_RECS * HS_TABLE; k++) b[k] = mark_of(table + k, 3);
    put(fd, table, b, HS_RECS * HS_TABLE);
    for (size_t i = 0; i < HS_RECS; i++) {
        uint8_t m[1024];
        uint64_t at = far0 + i * HS_FAR;
        for (size_t k = 0; k < sizeof m; k++) m[k] = mark_of(at + k, 3);
        put(fd, at, m, sizeof m);
    }
    free(b);
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(map != MAP_FAILED);
    tio_headsrc *h = malloc(sizeof *h);
    assert_non_null(h);

    /* tmfile: per record, structs at +24, +8, +0 of its table slot, then
     * the struct beside its buffer */
    tio__headsrc_init(h, fd, map, (size_t)size);
    for (size_t i = 0; i < HS_RECS; i++) {
        uint64_t slot = table + i * HS_TABLE;
        hs_same(tio__headsrc_get(h, slot + 24, 32), slot + 24, 32);
        hs_same(tio__headsrc_get(h, slot + 8, 16), slot + 8, 16);
        hs_same(tio__headsrc_get(h, slot, 8), slot, 8);
        uint64_t buf = far0 + i * HS_FAR + 100;
        hs_same(tio__headsrc_get(h, buf, 8), buf, 8);
    }
    /* one call per buffer, and one per 3/4 window of the table (not one per
     * record, as a single window had) */
    uint64_t table_reads = HS_RECS * HS_TABLE / (TIO__HEAD_WINDOW * 3 / 4) + 2;
    assert_true(h->preads <= HS_RECS + table_reads);
    assert_true(h->preads >= HS_RECS);

    /* .npz: a 30-byte local header, its name, then 12 bytes and a 128-byte
     * .npy header behind it: one call per member */
    tio__headsrc_init(h, fd, map, (size_t)size);
    for (size_t i = 0; i < HS_RECS; i++) {
        uint64_t at = far0 + i * HS_FAR;
        hs_same(tio__headsrc_get(h, at, 30), at, 30);
        hs_same(tio__headsrc_get(h, at + 30, 10), at + 30, 10);
        hs_same(tio__headsrc_get(h, at + 40, 12), at + 40, 12);
        hs_same(tio__headsrc_get(h, at + 40, 128), at + 40, 128);
    }
    assert_int_equal(h->preads, HS_RECS);

    /* headers packed closely, read in order: one call per 3/4 window */
    tio__headsrc_init(h, fd, map, (size_t)size);
    for (size_t k = 0; k + 24 <= HS_RECS * HS_TABLE; k += 24)
        hs_same(tio__headsrc_get(h, table + k, 24), table + k, 24);
    assert_true(h->preads <= table_reads);

    /* what the windows do not serve: longer than TIO__HEAD_MAX, or past the
     * end; the end itself is served */
    assert_null(tio__headsrc_get(h, table, TIO__HEAD_MAX + 1));
    assert_null(tio__headsrc_get(h, size - 4, 8));
    assert_null(tio__headsrc_get(h, size + 1, 0));
    const uint8_t *e = tio__headsrc_get(h, size - 8, 8);
    assert_non_null(e);
    for (size_t k = 0; k < 8; k++) assert_int_equal(e[k], 0); /* a hole */
    free(h);
    munmap(map, (size_t)size);
    close(fd);
    unlink(path);
}

static void test_same_as_memory(void **state) { vectors_same_as_memory(*state); }

/* a test of one format, named after it (cmocka_unit_test_prestate without
 * the format in the name) */
#define PER_FORMAT(fn, f)                                                                  \
    { .name = #fn " " f, .test_func = fn, .initial_state = f }

int main(void) {
    if (!mkdtemp(dir)) return 1;
    const struct CMUnitTest tests[] = {
        PER_FORMAT(test_open, "btf"),
        PER_FORMAT(test_open, "tenbin"),
        PER_FORMAT(test_open, "zio"),
        PER_FORMAT(test_open, "npz"),
        cmocka_unit_test(test_prefetch),
        cmocka_unit_test(test_prefetch_parts),
        cmocka_unit_test(test_tmfile_open),
        cmocka_unit_test(test_tflite_open),
        cmocka_unit_test(test_onnx_open),
        cmocka_unit_test(test_onnx_save),
        cmocka_unit_test(test_uring_reads),
        cmocka_unit_test(test_preads),
        cmocka_unit_test(test_btf_open),
        cmocka_unit_test(test_npz_open),
        cmocka_unit_test(test_zio_open),
        cmocka_unit_test(test_headsrc_windows),
        PER_FORMAT(test_same_as_memory, "btf"),
        PER_FORMAT(test_same_as_memory, "tenbin"),
        PER_FORMAT(test_same_as_memory, "zio"),
        PER_FORMAT(test_same_as_memory, "npz"),
        PER_FORMAT(test_same_as_memory, "onnx"),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    /* a failed test leaves its file: the sparse ones stand for 1 GiB */
    static const char *const left[] = {"many.btf", "many.tenbin", "many.zmsg", "pf.btf",
                                       "mut.btf", "mut.tenbin", "mut.zmsg", "hs.bin", "many.tmfile",
                                       "many.tflite", "many.onnx", "mut.onnx"};
    char path[96];
    for (size_t k = 0; k < sizeof left / sizeof left[0]; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, left[k]);
        unlink(path);
    }
    rmdir(dir);
    return rc;
}
