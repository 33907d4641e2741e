/*
 * TensorFlow Lite (.tflite) serialiser: a tfl_wmodel (src/tflite/write.h) as
 * FlatBuffers bytes through the sink.
 */
#include "tflite/write.h"

int tio__tfl_w_serialise(const tfl_wmodel *m, tio_write_plan *plan, tio_sink *sink,
                         tio_error *err) {
    (void)m;
    (void)plan;
    (void)sink;
    return tio__err(err, TIO_E_UNSUPPORTED, "tflite", -1, "the serialiser is not written yet");
}
