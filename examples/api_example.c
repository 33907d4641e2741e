/* api_example: build a container in memory, save it, reopen it, inspect it.
 * Usage: api_example OUT.ten   (any extension tensio knows) */
#include <stdio.h>
#include <string.h>
#include <tensio.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUT.ten\n", argv[0]);
        return 2;
    }
    float image[2][3][4];
    for (int i = 0; i < 24; i++) (&image[0][0][0])[i] = (float)i / 4.0f;
    int64_t labels[2] = {7, 3};
    uint8_t mask[3][3] = {{1, 0, 1}, {0, 1, 0}, {1, 1, 1}};

    tio_container *c = tio_container_new();
    tio_error err;
    const int64_t image_shape[3] = {2, 3, 4}, label_shape[1] = {2}, mask_shape[2] = {3, 3};
    const tio_tensor_desc tensors[3] = {
        {.name = "image", .dtype = TIO_FLOAT32, .rank = 3, .shape = image_shape,
         .data = image, .nbytes = sizeof image},
        {.name = "label", .dtype = TIO_INT64, .rank = 1, .shape = label_shape,
         .data = labels, .nbytes = sizeof labels},
        {.name = "mask", .dtype = TIO_UINT8, .rank = 2, .shape = mask_shape,
         .data = mask, .nbytes = sizeof mask},
    };
    for (int i = 0; i < 3; i++) {
        /* copies the data; TIO_ADD_BORROW would keep pointers instead */
        if (tio_container_add(c, &tensors[i], 0, NULL, &err) != TIO_OK) goto fail;
    }
    /* atomic: temp file + rename; format from the extension */
    if (tio_save(c, argv[1], NULL, &err) != TIO_OK) goto fail;
    tio_container_free(c);

    /* reopen: the file is mapped, tensor data are views into it */
    tio_container *r;
    if (tio_open(argv[1], NULL, &r, &err) != TIO_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    printf("%s: %s, %zu tensors\n", argv[1], tio_container_format(r), tio_container_count(r));
    for (size_t i = 0; i < tio_container_count(r); i++) {
        const tio_tensor *t = tio_container_tensor(r, i);
        uint8_t h[32];
        tio_tensor_sha256(t, TIO_HASH_DENSE, h, NULL);
        printf("  %-6s %-8s rank %zu, %zu bytes, sha256 %02x%02x%02x%02x...\n",
               tio_tensor_name(t), tio_dtype_name(tio_tensor_dtype(t)), tio_tensor_rank(t),
               tio_tensor_nbytes(t), h[0], h[1], h[2], h[3]);
    }
    const tio_tensor *img = tio_container_find(r, "image");
    float last;
    memcpy(&last, (const char *)tio_tensor_data(img) + tio_tensor_nbytes(img) - 4, 4);
    printf("  image[1][2][3] = %g\n", (double)last);
    tio_container_free(r);
    return 0;
fail:
    fprintf(stderr, "%s (%s)\n", err.message, tio_status_name(err.code));
    tio_container_free(c);
    return 1;
}
