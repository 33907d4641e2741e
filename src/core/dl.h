/* Shared libraries that only some operations need (libcurl, libzmq,
 * libcrypto), opened with dlopen() the first time one of them is used, so
 * that a program that reads files never maps them (dl.c). Each user keeps a static tio_dl_lib,
 * filled once per process under its lock: after that the table is
 * read-only, and every handle that uses it is as independent as before. */
#ifndef TIO_CORE_DL_H
#define TIO_CORE_DL_H

#include <pthread.h>
#include <stddef.h>

/* A function the library must export, and where its address goes in the
 * table (a struct of function pointers: offsetof). */
typedef struct tio_dl_sym {
    const char *name;
    size_t offset;
} tio_dl_sym;

typedef struct tio_dl_lib {
    const char *soname;     /* e.g. "libzmq.so.5" */
    const tio_dl_sym *syms;
    size_t count;
    void *table;            /* the struct the addresses go into */
    pthread_mutex_t lock;   /* held while the first tio__dl_load loads */
    int tried;
    int ok;                 /* the functions are in the table */
    char why[256];          /* when not ok: the soname and what failed */
} tio_dl_lib;

/* A static tio_dl_lib for the array syms[] and the struct table. */
#define TIO_DL_LIB(soname, syms, table)                                          \
    {(soname), (syms), sizeof(syms) / sizeof((syms)[0]), &(table),              \
     PTHREAD_MUTEX_INITIALIZER, 0, 0, {0}}

/* Loads lib the first time (thread-safe; later calls only look): 1 when its
 * functions are in its table, 0 when they cannot be (lib->why says why). */
int tio__dl_load(tio_dl_lib *lib);

/* dlopen(lib->soname) and every symbol into lib->table; lib->ok, or
 * lib->why (what tio__dl_load does, once, under lib->lock). */
void tio__dl_bind(tio_dl_lib *lib);

/* The entry of a table for `name` in struct type T, field `field`. */
#define TIO_DL_SYM(T, field, name) {name, offsetof(T, field)}

/* Checks at compile time that function fn has the type R(*)A its header
 * declares, without referring to it (the operand of _Generic is not
 * evaluated, so nothing is linked): one per entry of a table. */
#define TIO_DL_CHECK(fn, R, A)                                                   \
    _Static_assert(_Generic(&fn, R(*) A: 1, default: 0),                        \
                   #fn " differs from its declaration in the library's header");

#endif /* TIO_CORE_DL_H */
