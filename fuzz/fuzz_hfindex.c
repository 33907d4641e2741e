/* libFuzzer target: a Hugging Face index (src/formats/hfindex.c). The input
 * is written as model.safetensors.index.json into a directory of this
 * process that holds fixed shards (model-00001-of-00002.safetensors: "a",
 * "b"; model-00002-of-00002.safetensors: "c"; model-00003-of-00003.bin, not
 * a checkpoint; sub.safetensors, a directory; out.safetensors, a symbolic
 * link out of the directory), and the directory is opened. A failure keeps
 * the error contract; a success is written as safetensors, read back and
 * must hold the same tensors. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static char index_path[128];

static void shard(const char *name, const char *names) {
    tio_container *c = tio_container_new();
    static const float v[4] = {1, 2, 3, 4};
    char buf[32];
    snprintf(buf, sizeof buf, "%s", names);
    int64_t k = 1;
    for (char *t = strtok(buf, " "); t; t = strtok(NULL, " "), k++) {
        tio_tensor_desc d = {t, TIO_FLOAT32, 1, &k, TIO_LAYOUT_DENSE, v,
                             (size_t)k * sizeof(float), 0, NULL};
        if (tio_container_add(c, &d, 0, NULL, NULL) != TIO_OK) fz_fail("setup: add");
    }
    char p[192];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    tio_save_options o = {.format = "safetensors", .flags = TIO_SAVE_NO_SYNC};
    if (tio_save(c, p, &o, NULL) != TIO_OK) fz_fail("setup: save %s", p);
    tio_container_free(c);
}

/* Removes what cleanup() removes in dir d (another process's, gone). */
static void remove_dir(const char *d);

/* libFuzzer ends a run with _Exit() (no atexit) and a crash ends it too: the
 * directories of processes that are gone ("tio-fuzz-hf-PID-XXXXXX") are
 * removed when the next run starts. */
static void remove_stale(const char *base) {
    DIR *dd = opendir(base);
    if (!dd) return;
    struct dirent *de;
    while ((de = readdir(dd)) != NULL) {
        long pid = 0;
        if (sscanf(de->d_name, "tio-fuzz-hf-%ld-", &pid) != 1 || pid <= 0) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char p[300];
        snprintf(p, sizeof p, "%s/%s", base, de->d_name);
        remove_dir(p);
    }
    closedir(dd);
}

static void cleanup(void) { remove_dir(dir); }

static void remove_dir(const char *d) {
    static const char *const files[] = {"model.safetensors.index.json",
                                        "model-00001-of-00002.safetensors",
                                        "model-00002-of-00002.safetensors",
                                        "model-00003-of-00003.bin", "out.safetensors"};
    char p[400];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", d, files[i]);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/sub.safetensors", d);
    rmdir(p);
    rmdir(d);
}

static void setup(void) {
    /* tmpfs where there is one: on ext4 rewriting the index (O_TRUNC) makes
     * close() flush it (auto_da_alloc), 3-5 ms an input */
    struct stat st;
    const char *base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    remove_stale(base);
    snprintf(dir, sizeof dir, "%s/tio-fuzz-hf-%ld-XXXXXX", base, (long)getpid());
    if (!mkdtemp(dir)) {
        snprintf(dir, sizeof dir, "/tmp/tio-fuzz-hf-%ld-XXXXXX", (long)getpid());
        if (!mkdtemp(dir)) fz_fail("setup: mkdtemp");
    }
    snprintf(index_path, sizeof index_path, "%s/model.safetensors.index.json", dir);
    shard("model-00001-of-00002.safetensors", "a b");
    shard("model-00002-of-00002.safetensors", "c");
    char p[192];
    snprintf(p, sizeof p, "%s/model-00003-of-00003.bin", dir);
    FILE *f = fopen(p, "wb");
    if (!f) fz_fail("setup: %s", p);
    fputs("not a checkpoint", f);
    fclose(f);
    snprintf(p, sizeof p, "%s/sub.safetensors", dir);
    if (mkdir(p, 0777) != 0) fz_fail("setup: mkdir");
    snprintf(p, sizeof p, "%s/out.safetensors", dir);
    if (symlink("/dev/null", p) != 0) fz_fail("setup: symlink");
    atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0]) setup();
    int fd = open(index_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fz_fail("cannot write the index");
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) fz_fail("cannot write the index");
        off += (size_t)w;
    }
    close(fd);
    tio_limits lim = {.max_dense_bytes = FZ_MAX_DENSE_BYTES, .max_shards = 8};
    tio_open_options o = {.limits = &lim};
    tio_container *c = NULL;
    tio_error e;
    tio_error_clear(&e);
    int rc = tio_open(dir, &o, &c, &e);
    if (rc != TIO_OK) {
        fz_check_error(rc, &e, c);
        return 0;
    }
    void *buf = NULL;
    size_t n = 0;
    tio_save_options so = {.format = "safetensors"};
    rc = tio_save_memory(c, &so, &buf, &n, &e);
    if (rc != TIO_OK) fz_fail("saving what was read: %s", e.message);
    tio_container *back = NULL;
    tio_open_options bo = {.format = "safetensors", .limits = &lim};
    rc = tio_open_memory(buf, n, &bo, &back, &e);
    if (rc != TIO_OK) fz_fail("reading it back: %s", e.message);
    /* safetensors orders by dtype then name; the index's order is the shards' */
    for (size_t i = 0; i < tio_container_count(c); i++) {
        const tio_tensor *t = tio_container_tensor(c, i);
        const tio_tensor *b = tio_container_find(back, tio_tensor_name(t));
        if (!b || tio_tensor_nbytes(b) != tio_tensor_nbytes(t) ||
            memcmp(tio_tensor_bytes(b), tio_tensor_bytes(t), tio_tensor_nbytes(t)) != 0)
            fz_fail("tensor '%s' differs after a round trip", tio_tensor_name(t));
    }
    if (tio_container_count(back) != tio_container_count(c)) fz_fail("tensor count differs");
    tio_container_free(back);
    tio_free(buf);
    tio_container_free(c);
    return 0;
}
