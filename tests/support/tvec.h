/* Test support: locating golden vectors, reading manifests and files. */
#ifndef TVEC_H
#define TVEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Full path of a vector, relative to the vectors root ("btf/dense_int8.btf"):
 * tests/vectors/<rel> when it was copied into the repository, otherwise
 * ../shared/vectors/<rel> when that exists; NULL when neither has it.
 * The result is malloc'ed. */
char *tvec_path(const char *rel);

/* Like tvec_path, but prints "SKIPPED: <rel> (...)" on stderr when missing. */
char *tvec_path_or_skip(const char *rel);

/* Whether ../shared/vectors is present. */
int tvec_have_shared(void);

/* When ../shared/vectors is absent, says so on stderr ("SKIPPED: the vectors
 * only in ../shared/vectors ..."), for programs that sweep every vector. */
void tvec_note_shared(void);

/* Loads a JSON manifest by relative path; NULL (and a SKIPPED line) if missing. */
json_t *tvec_manifest(const char *rel);

/* Reads a whole file; 0 on success. *buf is malloc'ed (non-NULL even for 0 bytes). */
int tvec_read(const char *path, uint8_t **buf, size_t *len);

/* Finds a vector by relative path (like tvec_path_or_skip) and reads it:
 * NULL (with a SKIPPED line) when it is in neither place; exits the test
 * program when it exists but cannot be read. The result is malloc'ed. */
uint8_t *tvec_load(const char *rel, size_t *len);

/* Loads the frame files a manifest lists (`frames`: an array of objects with
 * "file" and "size"), from vectors dir `dir` ("zio", "zio/tensorcom"), into
 * bufs/lens (malloc'ed, at most cap). Exits the test program when a frame is
 * missing, unreadable or not its listed size, or there are more than cap.
 * Returns the count. */
size_t tvec_load_frames(const char *dir, json_t *frames, uint8_t **bufs, size_t *lens,
                        size_t cap);

/* xorshift64 (13, 7, 17): the next deterministic pseudo-random value of the
 * state *s (which must not be 0). */
uint64_t tvec_rand(uint64_t *s);

/* A pid that surely is dead: a child forked and reaped (-1 on failure; no
 * cmocka asserts, so children may call it too). */
long tvec_dead_pid(void);

/* Writes a whole file; 0 on success. */
int tvec_write(const char *path, const void *buf, size_t len);

/* Lowercase hex of n bytes into out (2n+1 chars). */
void tvec_hex(const uint8_t *bytes, size_t n, char *out);

/* SHA-256 of a buffer as lowercase hex (65 chars). */
void tvec_sha256_hex(const void *p, size_t n, char out[65]);

/* Sorted, de-duplicated names (not paths) of the files in vectors dir `reldir`
 * ("btf", "btf/malformed") ending with `suffix`, from the local copy and the
 * shared directory together. Free with tvec_list_free. */
char **tvec_list(const char *reldir, const char *suffix, size_t *count);
void tvec_list_free(char **names, size_t count);
/* A protocol-2 pickle memo bomb into p (at least 24,100 bytes): 12 levels of
 * lists, each holding the list below 1,000 times through the memo; 13 lists,
 * 12,000 references. Returns its length. */
size_t tvec_memo_bomb(char *p);

/* Every directory of vectors in a format tensio reads, with the files'
 * extension and the format that reads them ("zio/tensorcom" holds tenbin
 * files), ending with {NULL, NULL, NULL}. The sweeps over every vector
 * (test_sweep, test_work_bounds) go through it. */
typedef struct tvec_dir {
    const char *dir, *ext, *format;
} tvec_dir;
extern const tvec_dir tvec_dirs[];

/* The value of IEEE half h (finite, or +-inf as HUGE_VAL). */
double tvec_half(uint16_t h);

/* Whether the float16 values at h (n, little-endian) are the n float32
 * values at f rounded to nearest: each within half a float16 ulp. 0 or 1;
 * on a miss, *bad is its index. */
int tvec_half_rounds(const uint8_t *h, const uint8_t *f, uint64_t n, uint64_t *bad);

#endif
