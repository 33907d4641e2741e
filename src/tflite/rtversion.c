/*
 * The TensorFlow Lite runtime each operator version first ran in, as
 * TensorFlow's converter records it (tensorflow/lite/tools/versioning:
 * runtime_version.cc's FindMinimumRuntimeVersionForOp), for the builtins
 * the lowering writes; and the model's `min_runtime_version` metadata made
 * from it, as its UpdateMinimumRuntimeVersionForModel makes it: the latest
 * among the operators' (a version the table lacks is passed over), in a
 * 16-byte buffer, NUL-padded.
 */
#include "tflite/write.h"

#include "tflite/schema.h"

#include <string.h>

#define TFL "tflite"

typedef struct rt_entry {
    int32_t builtin;
    int32_t version;
    const char *runtime;
} rt_entry;

#define B(x) TFL_BuiltinOperator_##x
static const rt_entry RT[] = {
    {B(ABS), 1, "1.13.0"}, {B(ABS), 2, "2.4.0"}, {B(ABS), 3, "2.5.0"}, {B(ABS), 4, "2.6.0"},
    {B(ADD), 1, "1.5.0"}, {B(ADD), 2, "1.14.0"}, {B(ADD), 3, "2.4.0"}, {B(ADD), 4, "2.6.0"},
    {B(AVERAGE_POOL_2D), 1, "1.5.0"}, {B(AVERAGE_POOL_2D), 2, "1.14.0"},
    {B(AVERAGE_POOL_2D), 3, "2.3.0"},
    {B(CEIL), 1, "1.14.0"},
    {B(CONCATENATION), 1, "1.5.0"}, {B(CONCATENATION), 2, "1.14.0"},
    {B(CONCATENATION), 3, "2.3.0"},
    {B(CONV_2D), 1, "1.5.0"}, {B(CONV_2D), 2, "1.14.0"}, {B(CONV_2D), 3, "1.14.0"},
    {B(CONV_2D), 4, "2.3.0"}, {B(CONV_2D), 5, "2.4.0"}, {B(CONV_2D), 6, "2.9.0"},
    {B(DEPTHWISE_CONV_2D), 1, "1.5.0"}, {B(DEPTHWISE_CONV_2D), 2, "1.12.0"},
    {B(DEPTHWISE_CONV_2D), 3, "1.14.0"}, {B(DEPTHWISE_CONV_2D), 4, "2.2.0"},
    {B(DEPTHWISE_CONV_2D), 5, "2.3.0"}, {B(DEPTHWISE_CONV_2D), 6, "2.3.0"},
    {B(DEQUANTIZE), 1, "1.13.1"}, {B(DEQUANTIZE), 2, "1.14.0"}, {B(DEQUANTIZE), 3, "1.15.0"},
    {B(DEQUANTIZE), 4, "2.2.0"}, {B(DEQUANTIZE), 5, "2.7.0"},
    {B(DIV), 1, "1.6.0"}, {B(DIV), 2, "2.3.0"},
    {B(ELU), 1, "1.14.0"},
    {B(EXP), 1, "1.7.0"},
    {B(FLOOR), 1, "1.9.0"},
    {B(FULLY_CONNECTED), 1, "1.5.0"}, {B(FULLY_CONNECTED), 2, "1.10.0"},
    {B(FULLY_CONNECTED), 3, "1.14.0"}, {B(FULLY_CONNECTED), 4, "1.14.0"},
    {B(FULLY_CONNECTED), 5, "2.0.0"}, {B(FULLY_CONNECTED), 6, "2.1.0"},
    {B(FULLY_CONNECTED), 7, "2.3.0"}, {B(FULLY_CONNECTED), 8, "2.3.0"},
    {B(FULLY_CONNECTED), 9, "2.3.0"},
    {B(GELU), 1, "2.9.0"}, {B(GELU), 2, "2.9.0"},
    {B(HARD_SWISH), 1, "1.15.0"},
    {B(LEAKY_RELU), 1, "1.13.1"}, {B(LEAKY_RELU), 2, "2.3.0"},
    {B(LOG), 1, "1.14.0"},
    {B(LOG_SOFTMAX), 1, "1.14.0"}, {B(LOG_SOFTMAX), 2, "1.14.0"},
    {B(LOGISTIC), 1, "1.14.0"}, {B(LOGISTIC), 2, "1.14.0"}, {B(LOGISTIC), 3, "2.3.0"},
    {B(MAX_POOL_2D), 1, "1.5.0"}, {B(MAX_POOL_2D), 2, "1.14.0"}, {B(MAX_POOL_2D), 3, "2.3.0"},
    {B(MAXIMUM), 1, "1.14.0"}, {B(MAXIMUM), 2, "1.14.0"}, {B(MAXIMUM), 3, "2.3.0"},
    {B(MAXIMUM), 4, "2.3.0"},
    {B(MEAN), 1, "1.6.0"}, {B(MEAN), 2, "1.14.0"}, {B(MEAN), 3, "2.4.0"},
    {B(MINIMUM), 1, "1.14.0"}, {B(MINIMUM), 2, "1.14.0"}, {B(MINIMUM), 3, "2.3.0"},
    {B(MINIMUM), 4, "2.3.0"},
    {B(MUL), 1, "1.5.0"}, {B(MUL), 2, "1.14.0"}, {B(MUL), 3, "1.15.0"}, {B(MUL), 4, "2.3.0"},
    {B(MUL), 5, "2.6.0"},
    {B(NEG), 1, "1.9.0"},
    {B(PAD), 1, "1.5.0"}, {B(PAD), 2, "1.14.0"}, {B(PAD), 3, "2.4.0"}, {B(PAD), 4, "2.6.0"},
    {B(PADV2), 1, "1.9.0"}, {B(PADV2), 2, "1.14.0"}, {B(PADV2), 3, "2.4.0"},
    {B(PADV2), 4, "2.6.0"},
    {B(POW), 1, "1.10.0"},
    {B(QUANTIZE), 1, "1.14.0"}, {B(QUANTIZE), 2, "1.15.0"}, {B(QUANTIZE), 3, "2.7.0"},
    {B(REDUCE_MAX), 1, "1.11.0"}, {B(REDUCE_MAX), 2, "1.14.0"}, {B(REDUCE_MAX), 3, "2.5.0"},
    {B(RELU), 1, "1.5.0"}, {B(RELU), 2, "2.1.0"}, {B(RELU), 3, "2.5.0"},
    {B(RELU_N1_TO_1), 1, "1.5.0"},
    {B(RELU6), 1, "1.5.0"}, {B(RELU6), 2, "1.14.0"}, {B(RELU6), 3, "2.5.0"},
    {B(RESHAPE), 1, "1.5.0"},
    {B(SOFTMAX), 1, "1.5.0"}, {B(SOFTMAX), 2, "1.14.0"}, {B(SOFTMAX), 3, "2.3.0"},
    {B(SPLIT), 1, "1.5.0"}, {B(SPLIT), 2, "1.14.0"}, {B(SPLIT), 3, "1.14.0"},
    {B(SPLIT), 4, "2.3.0"},
    {B(SPLIT_V), 1, "1.13.1"}, {B(SPLIT_V), 2, "2.3.0"},
    {B(SQRT), 1, "1.10.0"},
    {B(STRIDED_SLICE), 1, "1.6.0"}, {B(STRIDED_SLICE), 2, "1.14.0"},
    {B(STRIDED_SLICE), 3, "2.1.0"}, {B(STRIDED_SLICE), 4, "2.2.0"},
    {B(STRIDED_SLICE), 5, "2.5.0"}, {B(STRIDED_SLICE), 6, "2.6.0"},
    {B(SUB), 1, "1.6.0"}, {B(SUB), 2, "1.14.0"}, {B(SUB), 3, "2.3.0"}, {B(SUB), 4, "2.4.0"},
    {B(SUB), 5, "2.4.0"},
    {B(SUM), 1, "1.10.0"}, {B(SUM), 2, "1.15.0"},
    {B(TANH), 1, "1.14.0"}, {B(TANH), 2, "1.14.0"}, {B(TANH), 3, "2.3.0"},
    {B(TRANSPOSE), 1, "1.6.0"}, {B(TRANSPOSE), 2, "1.14.0"}, {B(TRANSPOSE), 3, "1.15.0"},
    {B(TRANSPOSE), 4, "2.3.0"}, {B(TRANSPOSE), 5, "2.4.0"},
    {B(TRANSPOSE_CONV), 1, "1.9.0"}, {B(TRANSPOSE_CONV), 2, "2.2.0"},
    {B(TRANSPOSE_CONV), 3, "2.3.0"},
};
#undef B

const char *tio__tfl_runtime_version(int32_t builtin, int32_t version) {
    for (size_t k = 0; k < sizeof RT / sizeof RT[0]; k++)
        if (RT[k].builtin == builtin && RT[k].version == version) return RT[k].runtime;
    return NULL;
}

/* The converter's buffer for the text: 16 bytes (a longer text is not
 * written, and the buffer stays zero). */
#define RT_BUFFER 16u
#define RT_NAME "min_runtime_version"

int tio__tfl_w_min_runtime(tfl_wmodel *m, tio_error *err) {
    const char *v = "";
    for (size_t g = 0; g < m->nsubgraphs; g++) {
        const tfl_wsubgraph *sg = &m->subgraphs[g];
        for (size_t k = 0; k < sg->nops; k++) {
            if (sg->ops[k].opcode >= m->ncodes) continue;
            const tfl_wcode *c = &m->codes[sg->ops[k].opcode];
            const char *r = c->custom ? NULL : tio__tfl_runtime_version(c->builtin, c->version);
            if (r && tio__tfl_runtime_before((const uint8_t *)v, strlen(v), r)) v = r;
        }
    }
    uint8_t *text = tio__tfl_w_alloc(m, RT_BUFFER); /* zeroed */
    if (!text) return tio__nomem(err, TFL);
    if (strlen(v) < RT_BUFFER) memcpy(text, v, strlen(v));
    /* a container's own entry of that name (its value a buffer of its
     * own) says what the operators say, as the converter has it */
    for (size_t i = 0; i < m->nmetadata; i++)
        if (m->metadata[i].name && strcmp(m->metadata[i].name, RT_NAME) == 0 &&
            m->metadata[i].buffer < m->nbuffers) {
            m->buffers[m->metadata[i].buffer].data = text;
            m->buffers[m->metadata[i].buffer].size = RT_BUFFER;
            return TIO_OK;
        }
    tfl_wmetadata *md = tio__tfl_w_alloc(m, (m->nmetadata + 1) * sizeof *md);
    if (!md) return tio__nomem(err, TFL);
    if (m->nmetadata) memcpy(md, m->metadata, m->nmetadata * sizeof *md);
    md[m->nmetadata].name = RT_NAME;
    m->metadata = md;
    return tio__tfl_w_buffer(m, -1, text, RT_BUFFER, &md[m->nmetadata++].buffer, err);
}
