/* libFuzzer target: the protobuf wire reader alone (src/protobuf), on
 * arbitrary bytes.
 *  - A blind walk: every field of the buffer as a message, every
 *    length-delimited value again as a nested message (to a fixed depth) and
 *    as packed varints, fixed32s and fixed64s. The count of packed elements
 *    must agree with what iterating them yields; a reader must not move on
 *    failure; every failure must be a value with a message naming "onnx".
 *  - The schema verifier against onnx's ModelProto, with loose and tight
 *    depth limits: deterministic, tight never accepts what loose refuses,
 *    and once it accepts, a schema-guided walk (described messages
 *    descended into, every known field's wire type checked) meets no error.
 * Nothing here may crash, leak or read outside the input. */
#include <string.h>

#include "fuzz_common.h"
#include "onnx/schema.h"
#include "protobuf/pb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PB_WALK_DEPTH 12

static void check_err(int rc, const tio_error *e) {
    fz_check_error(rc, e, NULL);
    if (strncmp(e->message, "onnx: ", 6) != 0)
        fz_fail("error without the format prefix: %s", e->message);
}

/* Iterates field f's elements as `elem`; checks the count agrees. */
static void walk_packed(const tio_pb_reader *r, const tio_pb_field *f, tio_pb_wire elem) {
    tio_error e;
    uint64_t counted = 0, seen = 0;
    int crc = tio__pb_packed_count(r, f, elem, "packed", &counted, &e);
    if (crc) check_err(crc, &e);
    tio_pb_packed p;
    int rc = tio__pb_packed_init(r, f, elem, "packed", &p, &e);
    if (rc) {
        check_err(rc, &e);
        return;
    }
    while (!tio__pb_packed_done(&p)) {
        uint64_t v;
        size_t before = p.r.pos;
        rc = tio__pb_packed_next(&p, &v, &e);
        if (rc) {
            check_err(rc, &e);
            if (p.r.pos != before) fz_fail("a failed packed read moved the reader");
            return;
        }
        if (++seen > (f->wire == TIO_PB_LEN ? f->u : 1))
            fz_fail("more packed elements than bytes");
    }
    /* Fixed elements are counted exactly; a varint count holds when every
     * varint decoded (overlong ones fail above). */
    if (!crc && seen != counted)
        fz_fail("packed count %llu, iteration gave %llu", (unsigned long long)counted,
                (unsigned long long)seen);
}

/* Every field of r; length-delimited ones as messages and packed ranges. */
static void walk_blind(tio_pb_reader r, unsigned depth) {
    tio_error e;
    tio_pb_field f;
    while (!tio__pb_done(&r)) {
        size_t before = r.pos;
        int rc = tio__pb_next(&r, &f, &e);
        if (rc) {
            check_err(rc, &e);
            if (r.pos != before) fz_fail("a failed read moved the reader");
            return;
        }
        if (r.pos <= before) fz_fail("a field read did not advance");
        if (f.wire != TIO_PB_LEN) {
            walk_packed(&r, &f, (tio_pb_wire)f.wire);
            continue;
        }
        if (f.data + f.u > r.end) fz_fail("a length-delimited value runs past its message");
        walk_packed(&r, &f, TIO_PB_VARINT);
        walk_packed(&r, &f, TIO_PB_I32);
        walk_packed(&r, &f, TIO_PB_I64);
        if (depth >= PB_WALK_DEPTH) continue;
        tio_pb_reader sub;
        rc = tio__pb_sub(&r, &f, "sub", &sub, &e);
        if (rc) {
            check_err(rc, &e);
            continue;
        }
        walk_blind(sub, depth + 1);
    }
}

/* After the verifier accepted: every field reads, every known field has a
 * wire type its schema allows, described messages open. */
static void walk_schema(tio_pb_reader r, const tio_pb_msgdesc *m) {
    tio_error e;
    tio_pb_field f;
    while (!tio__pb_done(&r)) {
        int rc = tio__pb_next(&r, &f, &e);
        if (rc) fz_fail("verified, then a field failed: %s", e.message);
        const tio_pb_fielddesc *fd = NULL;
        rc = tio__pb_check_field(&r, &f, m, &fd, &e);
        if (rc) fz_fail("verified, then a field's wire type failed: %s", e.message);
        if (!fd) continue;
        if (fd->type == TIO_PB_T_MESSAGE) {
            tio_pb_reader sub;
            rc = tio__pb_sub(&r, &f, fd->name, &sub, &e);
            if (rc) fz_fail("verified, then a nested message failed: %s", e.message);
            if (fd->msg) walk_schema(sub, fd->msg);
        } else if (fd->repeated && f.wire == TIO_PB_LEN &&
                   tio__pb_type_wire(fd->type) != TIO_PB_LEN) {
            tio_pb_packed p;
            rc = tio__pb_packed_init(&r, &f, tio__pb_type_wire(fd->type), fd->name, &p, &e);
            while (!rc && !tio__pb_packed_done(&p)) {
                uint64_t v;
                rc = tio__pb_packed_next(&p, &v, &e);
            }
            if (rc) fz_fail("verified, then a packed field failed: %s", e.message);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tio_pb_reader r;
    tio__pb_init(&r, data, size, 0, "onnx", PB_WALK_DEPTH + 2);
    walk_blind(r, 1);

    tio_error e1, e2, e3;
    tio_pb_reader loose, tight;
    tio__pb_init(&loose, data, size, 0, "onnx", 3 * TIO_DEFAULT_MAX_DEPTH + 8);
    tio__pb_init(&tight, data, size, 0, "onnx", 4);
    int r1 = tio__pb_verify(&loose, &tio__onnx_ModelProto, &e1);
    int r2 = tio__pb_verify(&loose, &tio__onnx_ModelProto, &e2);
    if (r1 != r2 || (r1 && strcmp(e1.message, e2.message) != 0))
        fz_fail("the verifier is not deterministic");
    if (r1) check_err(r1, &e1);
    int r3 = tio__pb_verify(&tight, &tio__onnx_ModelProto, &e3);
    if (r3) check_err(r3, &e3);
    if (r3 == TIO_OK && r1 != TIO_OK)
        fz_fail("accepted with tight limits, refused with loose ones: %s", e1.message);
    if (r1 == TIO_OK && r3 != TIO_OK && r3 != TIO_E_LIMIT)
        fz_fail("tight limits gave %s instead of a limit error: %s", tio_status_name(r3),
                e3.message);
    if (r1 == TIO_OK) walk_schema(loose, &tio__onnx_ModelProto);
    return 0;
}
