/* The library's own threads (a hash or CRC beside the caller's work). */
#include "internal.h"

#include <signal.h>

bool tio__spawn(pthread_t *t, void *(*fn)(void *), void *arg) {
    /* the thread takes no signal of the caller's: all blocked while it starts */
    sigset_t all, old;
    sigfillset(&all);
    bool masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
    bool ok = pthread_create(t, NULL, fn, arg) == 0;
    if (masked) pthread_sigmask(SIG_SETMASK, &old, NULL);
    return ok;
}
