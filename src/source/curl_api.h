/* The libcurl functions the http:// source uses, loaded with dlopen() when
 * the first one is opened (core/dl.h). Not installed. */
#ifndef TIO_SOURCE_CURL_API_H
#define TIO_SOURCE_CURL_API_H

#include "core/internal.h"

#include <curl/curl.h>

/* name (after curl_), return type, parameters */
#define TIO_CURL_FUNCS(X)                                                         \
    X(global_init, CURLcode, (long))                                              \
    X(global_cleanup, void, (void))                                               \
    X(easy_init, CURL *, (void))                                                  \
    X(easy_setopt, CURLcode, (CURL *, CURLoption, ...))                           \
    X(easy_perform, CURLcode, (CURL *))                                           \
    X(easy_pause, CURLcode, (CURL *, int))                                        \
    X(easy_cleanup, void, (CURL *))                                               \
    X(easy_strerror, const char *, (CURLcode))                                    \
    X(multi_init, CURLM *, (void))                                                \
    X(multi_add_handle, CURLMcode, (CURLM *, CURL *))                             \
    X(multi_remove_handle, CURLMcode, (CURLM *, CURL *))                          \
    X(multi_perform, CURLMcode, (CURLM *, int *))                                 \
    X(multi_poll, CURLMcode, (CURLM *, struct curl_waitfd *, unsigned, int, int *)) \
    X(multi_info_read, CURLMsg *, (CURLM *, int *))                               \
    X(multi_cleanup, CURLMcode, (CURLM *))                                        \
    X(multi_strerror, const char *, (CURLMcode))

#define TIO_CURL_FIELD(f, R, A) R(*f) A;
typedef struct tio_curl_api {
    TIO_CURL_FUNCS(TIO_CURL_FIELD)
} tio_curl_api;
#undef TIO_CURL_FIELD

/* libcurl's functions, loading it the first time (thread-safe); NULL, with
 * TIO_E_IO in err naming the library and what failed, when it cannot be. */
const tio_curl_api *tio__curl(tio_error *err);

#endif /* TIO_SOURCE_CURL_API_H */
