/* Message schemas as data: field lookup, wire-type checks against a schema,
 * and a verifier that walks a whole message tree without recursion. */
#include "protobuf/pb.h"

#include <stdlib.h>

void *tio__pb_grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    size_t ncap = *cap ? *cap : 16, bytes;
    while (ncap < need)
        if (tio__mul_ovf(ncap, 2, &ncap)) ncap = SIZE_MAX;
    if (tio__mul_ovf(ncap, elem, &bytes)) return NULL;
    void *q = realloc(p, bytes);
    if (q) *cap = ncap;
    return q;
}

tio_pb_wire tio__pb_type_wire(unsigned type) {
    switch (type) {
    case TIO_PB_T_DOUBLE:
    case TIO_PB_T_FIXED64:
    case TIO_PB_T_SFIXED64:
        return TIO_PB_I64;
    case TIO_PB_T_FLOAT:
    case TIO_PB_T_FIXED32:
    case TIO_PB_T_SFIXED32:
        return TIO_PB_I32;
    case TIO_PB_T_STRING:
    case TIO_PB_T_BYTES:
    case TIO_PB_T_MESSAGE:
        return TIO_PB_LEN;
    default:
        return TIO_PB_VARINT;
    }
}

const tio_pb_fielddesc *tio__pb_field_desc(const tio_pb_msgdesc *m, uint32_t number) {
    if (!m) return NULL;
    size_t lo = 0, hi = m->nfields;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t n = m->fields[mid].number;
        if (n == number) return &m->fields[mid];
        if (n < number) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

int tio__pb_check_field(const tio_pb_reader *r, const tio_pb_field *f,
                        const tio_pb_msgdesc *m, const tio_pb_fielddesc **out,
                        tio_error *err) {
    const tio_pb_fielddesc *d = tio__pb_field_desc(m, f->number);
    *out = d;
    if (!d) return TIO_OK;
    tio_pb_wire want = tio__pb_type_wire(d->type);
    if (f->wire == (uint8_t)want) return TIO_OK;
    bool packable = d->repeated && want != TIO_PB_LEN;
    if (packable && f->wire == TIO_PB_LEN) return TIO_OK;
    return tio__err(err, TIO_E_CORRUPT, r->format, (int64_t)(r->base + f->at),
                    "field %lu (%s.%s): wire type %u (%s), expected %u (%s)%s",
                    (unsigned long)f->number, m->name, d->name, f->wire,
                    tio__pb_wire_name(f->wire), (unsigned)want,
                    tio__pb_wire_name((unsigned)want),
                    packable ? " or 2 (packed)" : "");
}

/* ------------------------------------------------------------ verifier */

typedef struct pb_vframe {
    tio_pb_reader r;
    const tio_pb_msgdesc *m; /* NULL: a message whose fields are not described */
} pb_vframe;

/* Every element of a packed range decoded. */
static int verify_packed(const tio_pb_reader *r, const tio_pb_field *f,
                         const tio_pb_fielddesc *d, tio_error *err) {
    tio_pb_packed p;
    int rc = tio__pb_packed_init(r, f, tio__pb_type_wire(d->type), d->name, &p, err);
    if (rc || tio__pb_type_wire(d->type) != TIO_PB_VARINT) return rc;
    while (!tio__pb_packed_done(&p)) {
        uint64_t v;
        if ((rc = tio__pb_packed_next(&p, &v, err))) return rc;
    }
    return TIO_OK;
}

int tio__pb_verify(const tio_pb_reader *root, const tio_pb_msgdesc *m, tio_error *err) {
    pb_vframe *stack = NULL;
    size_t cap = 0, depth = 0;
    int rc = TIO_OK;
    if (!(stack = tio__pb_grow(NULL, &cap, 1, sizeof *stack)))
        return tio__nomem(err, root->format);
    stack[depth++] = (pb_vframe){*root, m};
    while (depth && rc == TIO_OK) {
        pb_vframe *top = &stack[depth - 1];
        if (tio__pb_done(&top->r)) {
            depth--;
            continue;
        }
        tio_pb_field f;
        const tio_pb_fielddesc *d = NULL;
        if ((rc = tio__pb_next(&top->r, &f, err))) break;
        if ((rc = tio__pb_check_field(&top->r, &f, top->m, &d, err))) break;
        if (!d) continue; /* unknown: skipped */
        if (d->type == TIO_PB_T_MESSAGE) {
            tio_pb_reader sub;
            if ((rc = tio__pb_sub(&top->r, &f, d->name, &sub, err))) break;
            pb_vframe *s = tio__pb_grow(stack, &cap, depth + 1, sizeof *stack);
            if (!s) {
                rc = tio__nomem(err, root->format);
                break;
            }
            stack = s;
            stack[depth++] = (pb_vframe){sub, d->msg};
        } else if (f.wire == TIO_PB_LEN && tio__pb_type_wire(d->type) != TIO_PB_LEN) {
            rc = verify_packed(&top->r, &f, d, err);
        }
    }
    free(stack);
    return rc;
}
