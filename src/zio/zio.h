/*
 * ZIO TENS internals shared by the format module (src/formats/zio.c), the
 * reader (read.c) and the writer (write.c); the label's JSON text is
 * src/json/text.c's. Not installed.
 */
#ifndef TIO_ZIO_H
#define TIO_ZIO_H

#include "core/internal.h"
#include "json/json.h"

#include <jansson.h>

#define ZIO_FMT "zio"
#define ZIO_PREFIX_LEN 8u   /* "ZIO" + level + form */
#define ZIO_COORD_LEN 24u   /* origin, granule, seqno */
#define ZIO_HEADER_PARTS 2u /* prefix, coordinates */
#define ZIO_MAX_LEVEL 8u
#define ZIO_SMALL_RANK 16u
#define ZIO_BIG_SIZE 0xFFu  /* size byte announcing a 4-byte big-endian size */

/* ZIO's dtype letters and word sizes. */
struct zio_kind {
    char kind;
    uint8_t word;
    tio_dtype dtype;
};
#define ZIO_NKINDS 14u
extern const struct zio_kind tio__zio_kinds[ZIO_NKINDS];
const struct zio_kind *tio__zio_kind_of(tio_dtype dt);

/* --------------------------------------------------------- native state */

/* What the reader keeps of one tensor entry for the writer. */
typedef struct zio_tstate {
    const tio_tensor *t; /* the container tensor it describes */
    size_t part;         /* payload index */
    bool part_explicit;  /* the entry had "part" */
    bool keep_layout;    /* its order/ascend (if any) still describe the data */
    json_t *entry;       /* the entry object, borrowed from the label */
    json_t *meta;        /* entry["metadata"] (borrowed) or NULL */
} zio_tstate;

/* A payload part no tensor refers to: a view into the source. */
typedef struct zio_upart {
    size_t index;
    const uint8_t *data;
    size_t size;
} zio_upart;

/* The container's native state (native_format "zio"): everything a
 * read -> write round trip needs that the generic model has no place for. */
typedef struct zio_native {
    unsigned level;
    char form[4];
    uint64_t coord[3];
    bool label_empty;     /* part 0 was exactly 8 bytes */
    json_t *label;        /* the parsed label (owned) or NULL when empty */
    json_t *tens;         /* label["TENS"] (borrowed) or NULL */
    bool tensors_present; /* TENS had "tensors" */
    zio_tstate *ts;       /* one per tensor, in container order */
    size_t nts;
    size_t npayload;
    zio_upart *up;        /* unreferenced payload parts, by index */
    size_t nup;
} zio_native;
void tio__zio_native_free(void *p);

/* ------------------------------------------------------- read and write */

int tio__zio_probe(const uint8_t *data, size_t size);
int tio__zio_read(tio_read_ctx *ctx, tio_error *err);
int tio__zio_read_parts(tio_read_ctx *ctx, const tio_rpart *parts, size_t n, tio_error *err);
int tio__zio_check(const tio_write_plan *p, tio_error *err);
int tio__zio_write(tio_write_plan *p, tio_sink *s, tio_error *err);
int tio__zio_write_parts(tio_write_plan *p, struct tio_message *m, tio_error *err);

#endif
