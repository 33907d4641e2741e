/* libcurl through dlopen() (curl_api.h, core/dl.h). */
#include "source/curl_api.h"

#include "core/dl.h"

/* each entry has the type curl/curl.h declares (TIO_DL_CHECK) */
#define TIO_CURL_CHECK(f, R, A) TIO_DL_CHECK(curl_##f, R, A)
TIO_CURL_FUNCS(TIO_CURL_CHECK)

#define TIO_CURL_SYM(f, R, A) TIO_DL_SYM(tio_curl_api, f, "curl_" #f),
static const tio_dl_sym curl_syms[] = {TIO_CURL_FUNCS(TIO_CURL_SYM)};

#ifndef TIO_CURL_SONAME
#define TIO_CURL_SONAME "libcurl.so.4"
#endif

/* written once, under curl_lib's lock; read-only after */
static tio_curl_api curl_table;
static tio_dl_lib curl_lib = TIO_DL_LIB(TIO_CURL_SONAME, curl_syms, curl_table);

const tio_curl_api *tio__curl(tio_error *err) {
    if (tio__dl_load(&curl_lib)) return &curl_table;
    tio__err(err, TIO_E_IO, "http", -1, "%s (http:// and https:// need libcurl)", curl_lib.why);
    return NULL;
}
