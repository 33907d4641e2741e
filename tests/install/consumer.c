/* A program built against an installed tensio: builds a container, writes it
 * in every format, reads it back. */
#include <stdio.h>
#include <string.h>
#include <tensio.h>

int main(void) {
    if (tio_version_number() != TIO_VERSION_NUMBER) {
        fprintf(stderr, "header %s, library %s\n", TIO_VERSION_STRING, tio_version_string());
        return 1;
    }
    tio_container *c = tio_container_new();
    float v[6] = {0, 1, 2, 3, 4, 5};
    int64_t shape[2] = {2, 3};
    tio_tensor_desc d = {0};
    d.dtype = TIO_FLOAT32;
    d.rank = 2;
    d.shape = shape;
    d.data = v;
    d.nbytes = sizeof v;
    tio_error err;
    if (tio_container_add(c, &d, 0, NULL, &err) != TIO_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    for (size_t i = 0; i < tio_format_count(); i++) {
        tio_save_options so = {0};
        so.format = tio_format_name(i);
        /* A model format needs a graph; this container holds tensors only. */
        if (tio_format_caps(so.format) & TIO_CAP_GRAPH) continue;
        if (!tio_format_can_write(so.format)) continue; /* read only (torch) */
        void *buf;
        size_t len;
        tio_container *r = NULL;
        /* read back as the format written (a bare TensorProto has no magic
         * to probe) */
        tio_open_options oo = {0};
        oo.format = so.format;
        if (tio_save_memory(c, &so, &buf, &len, &err) != TIO_OK ||
            tio_open_memory(buf, len, &oo, &r, &err) != TIO_OK) {
            fprintf(stderr, "%s\n", err.message);
            return 1;
        }
        const tio_tensor *t = tio_container_tensor(r, 0);
        if (memcmp(tio_tensor_data(t), v, sizeof v) != 0) return 1;
        printf("%s ok (%zu bytes)\n", so.format, len);
        tio_container_free(r);
        tio_free(buf);
    }
    tio_container_free(c);
    printf("tensio %s\n", tio_version_string());
    return 0;
}
