/* tensio recv: the thread that makes the -o files durable (recv_sync.h). */
/* syncfs (Linux); everything else is POSIX. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "recv_sync.h"

#include "stream_common.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* While files are written, they are synced at most this long after. */
#define SYNC_INTERVAL_NS 1000000000LL

typedef struct synced_fs {
    int fd;     /* a directory on it, open since before its first file */
    dev_t dev;
    char *dir;  /* for messages */
} synced_fs;

struct recv_syncer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    /* under mu */
    synced_fs *fs;
    size_t nfs, capfs;
    int sync_all;      /* a directory could not be opened: sync() as well */
    uint64_t saved;    /* files saved (the receiving thread counts) */
    uint64_t synced;   /* of those, durable (the sync thread) */
    int kick, stop, failed;
};

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* File systems one round syncs one by one; beyond, sync() syncs them all
 * (no allocation on this thread: it would get a malloc arena of its own). */
#define ROUND_FS 16

/* One round: syncs every file system tracked when it starts. Called with mu
 * held; releases it while syncing. */
static void sync_round(recv_syncer *s) {
    uint64_t upto = s->saved;
    size_t n = s->nfs < ROUND_FS ? s->nfs : ROUND_FS;
    int all = s->sync_all || s->nfs > ROUND_FS;
    int fds[ROUND_FS];
    const char *dirs[ROUND_FS];
    for (size_t i = 0; i < n; i++) {
        fds[i] = s->fs[i].fd; /* open until recv_syncer_finish, after this thread */
        dirs[i] = s->fs[i].dir;
    }
    s->kick = 0;
    pthread_mutex_unlock(&s->mu);
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
#ifdef __linux__
        int bad = syncfs(fds[i]) != 0;
#else
        int bad = fsync(fds[i]) != 0; /* the directory; its files by sync() below */
        all = 1;
#endif
        if (bad) {
            cli_cmd_error("recv", "syncing the files written to %s failed: %s", dirs[i],
                          strerror(errno));
            failed = 1;
        }
    }
    if (all) sync();
    pthread_mutex_lock(&s->mu);
    s->synced = upto;
    if (failed) s->failed = 1;
}

static void *sync_main(void *arg) {
    recv_syncer *s = arg;
    pthread_mutex_lock(&s->mu);
    int64_t last = mono_ns();
    for (;;) {
        int pending = s->saved > s->synced;
        if (pending && (s->kick || s->stop || mono_ns() - last >= SYNC_INTERVAL_NS)) {
            sync_round(s);
            last = mono_ns();
            continue;
        }
        if (s->stop) break; /* nothing pending */
        if (!pending) {
            pthread_cond_wait(&s->cv, &s->mu);
            if (s->saved > s->synced) last = mono_ns(); /* the interval starts now */
            continue;
        }
        int64_t due = last + SYNC_INTERVAL_NS;
        struct timespec ts = {(time_t)(due / 1000000000LL), (long)(due % 1000000000LL)};
        pthread_cond_timedwait(&s->cv, &s->mu, &ts);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int recv_syncer_start(recv_syncer **out) {
    *out = NULL;
    recv_syncer *s = calloc(1, sizeof *s);
    if (!s) return cli_error("out of memory");
    pthread_condattr_t ca;
    int e = pthread_condattr_init(&ca);
    if (e == 0) {
        e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        if (e == 0) e = pthread_cond_init(&s->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    if (e == 0 && (e = pthread_mutex_init(&s->mu, NULL)) != 0) pthread_cond_destroy(&s->cv);
    if (e == 0) {
        /* SIGINT and SIGTERM are for the receiving thread: blocked in this one */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        e = pthread_create(&s->thread, NULL, sync_main, s);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (e != 0) {
            pthread_cond_destroy(&s->cv);
            pthread_mutex_destroy(&s->mu);
        }
    }
    if (e != 0) {
        free(s);
        return cli_cmd_error("recv", "cannot start the thread that syncs the files: %s",
                             strerror(e));
    }
    *out = s;
    return CLI_EXIT_OK;
}

int recv_syncer_track(recv_syncer *s, const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    int rc = CLI_EXIT_OK;
    pthread_mutex_lock(&s->mu);
    if (fd < 0 || fstat(fd, &st) != 0) {
        s->sync_all = 1; /* the save will say what is wrong with dir, if anything */
        goto done;
    }
    for (size_t i = 0; i < s->nfs; i++)
        if (s->fs[i].dev == st.st_dev) goto done;
    if (s->nfs == s->capfs) {
        size_t cap = s->capfs ? 2 * s->capfs : 4;
        synced_fs *fs = realloc(s->fs, cap * sizeof *fs);
        if (!fs) {
            rc = cli_error("out of memory");
            goto done;
        }
        s->fs = fs;
        s->capfs = cap;
    }
    char *name = strdup(dir);
    if (!name) {
        rc = cli_error("out of memory");
        goto done;
    }
    s->fs[s->nfs].fd = fd;
    s->fs[s->nfs].dev = st.st_dev;
    s->fs[s->nfs].dir = name;
    s->nfs++;
    fd = -1; /* kept */
done:
    pthread_mutex_unlock(&s->mu);
    if (fd >= 0) close(fd);
    return rc;
}

void recv_syncer_saved(recv_syncer *s) {
    pthread_mutex_lock(&s->mu);
    if (s->saved++ == s->synced) pthread_cond_signal(&s->cv); /* the first pending one */
    pthread_mutex_unlock(&s->mu);
}

void recv_syncer_kick(recv_syncer *s) {
    pthread_mutex_lock(&s->mu);
    if (s->saved > s->synced && !s->kick) {
        s->kick = 1;
        pthread_cond_signal(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

int recv_syncer_failed(recv_syncer *s) {
    pthread_mutex_lock(&s->mu);
    int f = s->failed;
    pthread_mutex_unlock(&s->mu);
    return f;
}

int recv_syncer_finish(recv_syncer *s) {
    if (!s) return CLI_EXIT_OK;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    int rc = s->failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    for (size_t i = 0; i < s->nfs; i++) {
        close(s->fs[i].fd);
        free(s->fs[i].dir);
    }
    free(s->fs);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return rc;
}
