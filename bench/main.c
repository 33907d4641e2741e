/* tio_bench: the benchmark program behind `make bench` (bench/run.sh drives
 * it). Uses only the public API of tensio, plus libc and libzmq for the
 * baselines. See docs/performance.md. */
#include "bench.h"

#include <stdlib.h>
#include <string.h>

static int usage(void) {
    fputs("usage: tio_bench [--reps N] [--max-reps N] [--warmup N] [--check] COMMAND ARGS...\n"
          "  --max-reps: paired cases repeat until their last N are steady, at most this\n"
          "              many times (default N: no extra repetitions)\n"
          "  gen ...     write benchmark data (see bench/gen.c)\n"
          "  files ...   open/scan/write/convert cases and their baselines\n"
          "  zmq ...     ZeroMQ loopback: tensio streams against raw libzmq\n"
          "  model ...   open + enumerate the constants of model files\n"
          "  recvfiles ... tensio recv -o, one file per message, against write()+rename()\n"
          "  machine ...  page-fault cost and memcpy bandwidth (lines of machine.tsv)\n"
          "  host ...     how a save onto a disk file system would write now (a line H)\n"
          "  hold --kept M  hold free memory until about M MiB are left in the blocks a\n"
          "              host that takes free memory back leaves alone (see machine.c)\n"
          "  lmdb ...    random reads from an LMDB store growing 10 k -> 1 M records\n"
          "  shards ...  WebDataset tar shards: generate, iterate every tensor (vs cat)\n"
          "Output: one tab-separated line per repetition (see bench/bench.h).\n",
          stderr);
    return 2;
}

int main(int argc, char **argv) {
    bn_ctx x = {5, 1, 0, 0};
    int i = 1;
    while (i < argc && strncmp(argv[i], "--", 2) == 0) {
        if (strcmp(argv[i], "--check") == 0) {
            x.check = 1;
            i++;
        } else if (i + 1 < argc && strcmp(argv[i], "--reps") == 0) {
            x.reps = atoi(argv[i + 1]);
            i += 2;
        } else if (i + 1 < argc && strcmp(argv[i], "--max-reps") == 0) {
            x.max_reps = atoi(argv[i + 1]);
            i += 2;
        } else if (i + 1 < argc && strcmp(argv[i], "--warmup") == 0) {
            x.warmup = atoi(argv[i + 1]);
            i += 2;
        } else {
            return usage();
        }
    }
    if (i >= argc || x.reps < 1 || x.warmup < 0 || x.max_reps < 0) return usage();
    if (x.max_reps < x.reps) x.max_reps = x.reps;
    const char *cmd = argv[i];
    int sub_argc = argc - i;
    char **sub_argv = argv + i;
    if (strcmp(cmd, "gen") == 0) return bn_cmd_gen(&x, sub_argc, sub_argv);
    if (strcmp(cmd, "files") == 0) return bn_cmd_files(&x, sub_argc, sub_argv);
    if (strcmp(cmd, "zmq") == 0) return bn_cmd_zmq(&x, sub_argc, sub_argv);
    if (strcmp(cmd, "model") == 0) return bn_cmd_model(&x, sub_argc, sub_argv);
    if (strcmp(cmd, "recvfiles") == 0) return bn_cmd_recvfiles(&x, sub_argc, sub_argv);
    if (strcmp(cmd, "machine") == 0) return bn_cmd_machine(&x, sub_argc, sub_argv);
    if (strcmp(cmd, "host") == 0) return bn_cmd_host(&x, sub_argc, sub_argv);
    if (strcmp(cmd, "hold") == 0) return bn_cmd_hold(&x, sub_argc, sub_argv);
    if (strcmp(cmd, "lmdb") == 0) return bn_cmd_lmdb(&x, sub_argc, sub_argv);
    if (strcmp(cmd, "shards") == 0) return bn_cmd_shards(&x, sub_argc, sub_argv);
    return usage();
}
