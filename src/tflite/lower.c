/*
 * ONNX -> TensorFlow Lite lowering (tio__tfl_lower, see src/tflite/write.h).
 * Not written yet: graphs from other formats are refused.
 */
#include "tflite/write.h"

int tio__tfl_lower(tio_write_plan *plan, const tio_graph *g, tfl_wmodel *m, tio_error *err) {
    (void)plan;
    (void)g;
    (void)m;
    return tio__err(err, TIO_E_UNSUPPORTED, "tflite", -1,
                    "writing a graph from another format as TensorFlow Lite (the ONNX -> "
                    "TFLite lowering) is not implemented yet; only a .tflite read by tensio "
                    "is rewritten");
}
