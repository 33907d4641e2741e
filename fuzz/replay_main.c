/* A main() for the fuzz targets outside libFuzzer: runs
 * LLVMFuzzerTestOneInput on every file named on the command line, and on
 * every regular file in every directory named (not recursive). CTest uses it
 * to replay fuzz/regress/<target>/ in every build, gcc and ASan alike; a
 * broken invariant aborts (see fuzz_common.h). Prints how many inputs ran;
 * fails when none did. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return -1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *nb = realloc(buf, cap * 2);
        if (!nb) free(buf);
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    /* exact-size copy, so ASan sees a read one past the input */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

int main(int argc, char **argv) {
    size_t ran = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s does not exist\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) != 0) return 1;
            ran++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) return 1;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.') continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], de->d_name);
            if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) continue;
            if (strcmp(de->d_name, "README.md") == 0) continue;
            if (run_file(p) != 0) {
                closedir(d);
                return 1;
            }
            ran++;
        }
        closedir(d);
    }
    printf("replay: %zu inputs, no invariant broken\n", ran);
    return ran ? 0 : 1;
}
