/*
 * Tengine tmfile (tm2, .tmfile): Tengine's model format.
 *
 * Little-endian C structs at absolute u32 offsets (0 = not set): a 12-byte
 * TM2_Header whose offset_root names the 16-byte TM2_Model; the model names a
 * vector of subgraphs (always one); the subgraph names the vectors of nodes,
 * tensors and buffers and the input/output *node* indices. Two writers exist:
 * Tengine-lite's tools/save_graph (40-byte TM2_Subgraph, the operator table
 * with 108 codes) and the old C++ Tengine (36-byte subgraph, a model name,
 * codes 88..90 numbered differently, some shorter param structs).
 *
 * Read: every offset, size and count is checked before use; constants with
 * data become tensors of the container (views into the file), the whole
 * model becomes the container's graph (one value per tensor, one node per
 * node, params as attributes). Write: the order, numbering and 4-byte
 * alignment of the official writer, zeros in every byte it leaves
 * uninitialised. See docs/formats/tmfile.md and ../shared/specs/notes-tmfile.md.
 *
 * This file is the format descriptor. Reading (and the probe) is in
 * src/tmfile/read.c, writing in src/tmfile/write.c, the schema (param structs,
 * operator table, dtype codes) as data in src/tmfile/schema.c.
 */
#include "core/internal.h"
#include "tmfile/tmfile.h"

/* ----------------------------------------------------------- the format */

extern const tio_format_desc tio__format_tmfile;

const tio_format_desc tio__format_tmfile = {
    .name = "tmfile",
    .description = "Tengine model (.tmfile, tm2): Tengine-lite and old C++ layouts",
    .extensions = ".tmfile",
    .caps = TIO_CAP_NAMES | TIO_CAP_GRAPH | TIO__CAP_NARROW_SHAPES,
    .versions = 0,
    .dtypes = TIO_DTYPE_BIT(TIO_FLOAT32) | TIO_DTYPE_BIT(TIO_FLOAT16) | TIO_DTYPE_BIT(TIO_INT8) |
              TIO_DTYPE_BIT(TIO_UINT8) | TIO_DTYPE_BIT(TIO_INT32) | TIO_DTYPE_BIT(TIO_INT16),
    .probe = tio__tmfile_probe,
    .read = tio__tmfile_read,
    .check = tio__tmfile_check,
    .write = tio__tmfile_write,
    .options = "fuse dims",
};

