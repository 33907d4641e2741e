/* Optional libraries loaded when first used (dl.h): libcurl for http://
 * sources, libzmq for streams, libcrypto for SHA-256. Linked instead, their
 * ~45 shared objects (with libcurl's TLS, SSH, LDAP, IDN and GSSAPI stacks)
 * were mapped and relocated at every start of every program using tensio:
 * about 25 ms of the 35 ms a `tensio ls` took on a VM with slow page faults,
 * and more under sanitizers; libcrypto alone 2.8 ms of 8.9 ms. */
#include "core/dl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

void tio__dl_bind(tio_dl_lib *lib) {
    lib->ok = 0;
    lib->why[0] = '\0';
    /* RTLD_NODELETE: the functions stay valid for the life of the process
     * (a frame libzmq still holds may be released after the last stream) */
    void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        const char *e = dlerror();
        snprintf(lib->why, sizeof lib->why, "%s cannot be loaded: %s", lib->soname,
                 e ? e : "dlopen failed");
        return;
    }
    for (size_t i = 0; i < lib->count; i++) {
        dlerror();
        void *sym = dlsym(h, lib->syms[i].name);
        if (!sym) {
            snprintf(lib->why, sizeof lib->why, "%s has no function %s (too old?)", lib->soname,
                     lib->syms[i].name);
            dlclose(h);
            return;
        }
        /* POSIX: a function's address fits in a void * and back */
        memcpy((char *)lib->table + lib->syms[i].offset, &sym, sizeof sym);
    }
    lib->ok = 1;
}

int tio__dl_load(tio_dl_lib *lib) {
    pthread_mutex_lock(&lib->lock);
    if (!lib->tried) {
        tio__dl_bind(lib);
        lib->tried = 1;
    }
    int ok = lib->ok;
    pthread_mutex_unlock(&lib->lock);
    return ok;
}
