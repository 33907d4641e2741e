/*
 * zio (.zmsg): ZIO TENS messages (brettviren/zio, docs/tensors.org).
 *
 * A ZIO message is multipart: part 0 = "ZIO" + level digit + 4-byte form +
 * JSON label (no length field), part 1 = coordinates (origin, granule, seqno:
 * u64 LE), parts 2.. = payload. In a TENS message the label's "TENS" object
 * says which payload part holds which tensor. A .zmsg file is the CZMQ
 * zmsg_encode single buffer: per part, one size byte (< 255) or 0xFF and a
 * big-endian u32, then the bytes; no count, no total.
 * See docs/formats/zio.md for what is accepted, refused, kept and written.
 *
 * This file: the descriptor, the dtype letters, the native state's release.
 * Reading is in src/zio/read.c, writing in src/zio/write.c, the label's JSON
 * text as nlohmann prints it in src/json/text.c.
 */
#include "core/internal.h"
#include "zio/zio.h"

#include <stdlib.h>

const struct zio_kind tio__zio_kinds[ZIO_NKINDS] = {
    {'f', 2, TIO_FLOAT16}, {'f', 4, TIO_FLOAT32}, {'f', 8, TIO_FLOAT64}, {'i', 1, TIO_INT8},
    {'i', 2, TIO_INT16},   {'i', 4, TIO_INT32},   {'i', 8, TIO_INT64},   {'u', 1, TIO_UINT8},
    {'u', 2, TIO_UINT16},  {'u', 4, TIO_UINT32},  {'u', 8, TIO_UINT64},  {'b', 1, TIO_BOOL},
    {'c', 8, TIO_COMPLEX64}, {'c', 16, TIO_COMPLEX128},
};

const struct zio_kind *tio__zio_kind_of(tio_dtype dt) {
    for (size_t i = 0; i < ZIO_NKINDS; i++)
        if (tio__zio_kinds[i].dtype == dt) return &tio__zio_kinds[i];
    return NULL;
}

void tio__zio_native_free(void *p) {
    zio_native *st = p;
    if (!st) return;
    json_decref(st->label);
    free(st->ts);
    free(st->up);
    free(st);
}

/* ------------------------------------------------------------ the format */

extern const tio_format_desc tio__format_zio;

const tio_format_desc tio__format_zio = {
    .name = "zio",
    .description = "ZIO TENS message: prefix with JSON label, coordinates, one payload part "
                   "per tensor (CZMQ zmsg single buffer)",
    .extensions = ".zmsg",
    .caps = TIO_CAP_NAMES | TIO_CAP_METADATA,
    .dtypes = TIO_DTYPE_BIT(TIO_BOOL) | TIO_DTYPE_BIT(TIO_INT8) | TIO_DTYPE_BIT(TIO_INT16) |
              TIO_DTYPE_BIT(TIO_INT32) | TIO_DTYPE_BIT(TIO_INT64) | TIO_DTYPE_BIT(TIO_UINT8) |
              TIO_DTYPE_BIT(TIO_UINT16) | TIO_DTYPE_BIT(TIO_UINT32) |
              TIO_DTYPE_BIT(TIO_UINT64) | TIO_DTYPE_BIT(TIO_FLOAT16) |
              TIO_DTYPE_BIT(TIO_FLOAT32) | TIO_DTYPE_BIT(TIO_FLOAT64) |
              TIO_DTYPE_BIT(TIO_COMPLEX64) | TIO_DTYPE_BIT(TIO_COMPLEX128),
    .probe = tio__zio_probe,
    .read = tio__zio_read,
    .check = tio__zio_check,
    .write = tio__zio_write,
    .options = "level form origin granule seqno",
    .read_parts = tio__zio_read_parts,
    .write_parts = tio__zio_write_parts,
};

