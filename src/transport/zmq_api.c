/* libzmq through dlopen() (zmq_api.h, core/dl.h). */
#include "transport/zmq_api.h"

#include "core/dl.h"

/* each entry has the type zmq.h declares (TIO_DL_CHECK) */
#define TIO_ZMQ_CHECK(f, R, A) TIO_DL_CHECK(zmq_##f, R, A)
TIO_ZMQ_FUNCS(TIO_ZMQ_CHECK)

#define TIO_ZMQ_SYM(f, R, A) TIO_DL_SYM(tio_zmq_api, f, "zmq_" #f),
static const tio_dl_sym zmq_syms[] = {TIO_ZMQ_FUNCS(TIO_ZMQ_SYM)};

#ifndef TIO_ZMQ_SONAME
#define TIO_ZMQ_SONAME "libzmq.so.5"
#endif

/* written once, under zmq_lib's lock; read-only after */
static tio_zmq_api zmq_table;
static tio_dl_lib zmq_lib = TIO_DL_LIB(TIO_ZMQ_SONAME, zmq_syms, zmq_table);

const tio_zmq_api *tio__zmq(tio_error *err) {
    if (tio__dl_load(&zmq_lib)) return &zmq_table;
    tio__err(err, TIO_E_TRANSPORT, "", -1, "%s (streams need libzmq)", zmq_lib.why);
    return NULL;
}

const tio_zmq_api *tio__zmq_loaded(void) { return &zmq_table; }
