/* The format registry: one line per format module. */
#include "core/internal.h"

#include <string.h>

extern const tio_format_desc tio__format_btf;
extern const tio_format_desc tio__format_tenbin;
extern const tio_format_desc tio__format_rten;
extern const tio_format_desc tio__format_tmfile;
extern const tio_format_desc tio__format_zio;
extern const tio_format_desc tio__format_onnx;
extern const tio_format_desc tio__format_tensorproto;
extern const tio_format_desc tio__format_safetensors;
extern const tio_format_desc tio__format_npy;
extern const tio_format_desc tio__format_gguf;
extern const tio_format_desc tio__format_npz;
extern const tio_format_desc tio__format_torch;
extern const tio_format_desc tio__format_hfindex;
extern const tio_format_desc tio__format_tflite;

static const tio_format_desc *const registry[] = {
    &tio__format_btf,
    &tio__format_tenbin,
    &tio__format_rten,
    &tio__format_tmfile,
    &tio__format_zio,
    &tio__format_onnx,
    &tio__format_tensorproto,
    &tio__format_safetensors,
    &tio__format_npy,
    &tio__format_gguf,
    &tio__format_npz,
    &tio__format_torch,
    &tio__format_hfindex,
    &tio__format_tflite,
};

size_t tio__format_count(void) { return sizeof registry / sizeof registry[0]; }

const tio_format_desc *tio__format_at(size_t i) {
    return i < tio__format_count() ? registry[i] : NULL;
}

const tio_format_desc *tio__format_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < tio__format_count(); i++)
        if (strcmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}
