/* The ONNX reader's tensors: TensorProto (raw_data a view into the input,
 * typed fields decoded, external data mapped, strings), SparseTensorProto (a
 * COO tensor), and a bare TensorProto file (format onnx-tensor). */
#include "onnx/read.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ tensors */

#define OX_MAX_RANK 256u /* whatever max_rank says */

typedef struct ox_tparts {
    int64_t dims[OX_MAX_RANK]; /* bounded by max_rank below */
    size_t rank;
    int64_t dtype_code;
    tio_pb_field name, raw;
    bool has_name, has_raw, external;
    unsigned typed; /* bit per typed field number present */
} ox_tparts;

/* The wire type of typed field `want`'s elements. */
static tio_pb_wire ox_typed_wire(uint32_t want) {
    return (want == 4) ? TIO_PB_I32 : (want == 10) ? TIO_PB_I64 : TIO_PB_VARINT;
}

/* The values the typed fields hold for numel elements of dt (a complex
 * number is two values, real first). */
static uint64_t ox_typed_values(tio_dtype dt, uint64_t numel) {
    size_t esz = tio__dtype_swap_unit(dt);
    return esz && esz < tio_dtype_size(dt) ? numel * (tio_dtype_size(dt) / esz) : numel;
}

/* Counts the values of typed field `want` (without decoding them) and
 * checks them against the shape before anything is allocated for them. */
static int ox_typed_count(const tio_pb_reader *rd, uint32_t want, tio_dtype dt, uint64_t numel,
                          const char *lbl, tio_error *err) {
    tio_pb_reader it = *rd;
    tio_pb_field f;
    uint64_t k = 0, need = ox_typed_values(dt, numel);
    while (!tio__pb_done(&it)) {
        uint64_t n;
        int rc = tio__pb_next(&it, &f, err);
        if (!rc && f.number == want)
            rc = tio__pb_packed_count(&it, &f, ox_typed_wire(want), lbl, &n, err);
        if (rc) return rc;
        if (f.number == want) k += n;
    }
    if (k != need)
        return tio__err(err, TIO_E_CORRUPT, rd->format, ox_off(rd, rd->pos),
                        "%s: the typed data hold %llu values, the shape needs %llu", lbl,
                        (unsigned long long)k, (unsigned long long)need);
    return TIO_OK;
}

/* Decodes the typed fields of a tensor into little-endian bytes. */
static int ox_typed(const tio_pb_reader *rd, uint32_t want, tio_dtype dt, uint8_t *dst,
                    uint64_t numel, const char *lbl, tio_error *err) {
    tio_pb_reader it = *rd;
    uint64_t k = 0;
    size_t esz = tio__dtype_swap_unit(dt); /* a complex number is two values, real first */
    numel = ox_typed_values(dt, numel);
    tio_pb_wire ew = ox_typed_wire(want);
    tio_pb_field f;
    while (!tio__pb_done(&it)) {
        int rc = tio__pb_next(&it, &f, err);
        if (rc) return rc;
        if (f.number != want) continue;
        tio_pb_packed p;
        rc = tio__pb_packed_init(&it, &f, ew, lbl, &p, err);
        while (!rc && !tio__pb_packed_done(&p)) {
            uint64_t v;
            rc = tio__pb_packed_next(&p, &v, err);
            if (rc) break;
            if (k >= numel)
                return tio__err(err, TIO_E_CORRUPT, rd->format, ox_off(rd, f.at),
                                "%s: the typed data hold more than the %llu elements of the "
                                "shape",
                                lbl, (unsigned long long)numel);
            uint8_t *o = dst + k * esz;
            switch (esz) {
            case 1: o[0] = (uint8_t)v; break;
            case 2:
                o[0] = (uint8_t)v;
                o[1] = (uint8_t)(v >> 8);
                break;
            case 4: tio__st32(o, (uint32_t)v); break;
            default: tio__st64(o, v); break;
            }
            k++;
        }
        if (rc) return rc;
    }
    if (k != numel)
        return tio__err(err, TIO_E_CORRUPT, rd->format, ox_off(rd, rd->pos),
                        "%s: the typed data hold %llu elements, the shape needs %llu", lbl,
                        (unsigned long long)k, (unsigned long long)numel);
    return TIO_OK;
}

/* The typed field a dtype's values go in (TensorProto field numbers). */
static uint32_t ox_typed_field(tio_dtype dt) {
    switch (dt) {
    case TIO_FLOAT32:
    case TIO_COMPLEX64: return 4;
    case TIO_INT64: return 7;
    case TIO_FLOAT64:
    case TIO_COMPLEX128: return 10;
    case TIO_UINT32:
    case TIO_UINT64: return 11;
    default: return 5; /* int32_data: the 8- and 16-bit types, int32, bool */
    }
}

/* A StringStringEntryProto (field f of m): its key and value as new strings
 * (NULL when absent; the caller frees both, on failure too). */
int tio__ox_entry(ox_reader *r, const tio_pb_reader *m, const tio_pb_field *f,
                    const char *what, char **k, char **v, tio_error *err) {
    tio_pb_reader e;
    tio_pb_field h;
    int rc = tio__pb_sub(m, f, what, &e, err);
    while (!rc && !tio__pb_done(&e)) {
        if ((rc = tio__pb_next(&e, &h, err))) break;
        char **dst = h.number == 1 ? k : h.number == 2 ? v : NULL;
        if (!dst) continue;
        free(*dst);
        rc = tio__ox_str(r, &e, &h, what, dst, err);
    }
    return rc;
}

/* A decimal external_data value (offset, length): digits only, no overflow. */
static int ox_decimal(const char *fmt, const char *s, const char *key, int64_t at,
                      const char *lbl, uint64_t *out, tio_error *err) {
    uint64_t v = 0;
    if (!s[0]) goto bad;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || tio__mul64_ovf(v, 10, &v) ||
            tio__add64_ovf(v, (uint64_t)(*p - '0'), &v))
            goto bad;
    }
    *out = v;
    return TIO_OK;
bad:
    return tio__err(err, TIO_E_CORRUPT, fmt, at,
                    "%s: external_data '%s' is '%.40s' (expected a decimal byte count)", lbl,
                    key, s);
}

/* The external_data entries (TensorProto field 13) of the tensor rd holds,
 * then its bytes (src/onnx/external.c). */
static int ox_external(ox_reader *r, const tio_pb_reader *rd, const char *lbl, int64_t at,
                       uint64_t nbytes, const void **data, tio_error *err) {
    tio_pb_reader it = *rd;
    tio_pb_field f;
    char *loc = NULL;
    uint64_t offset = 0, length = 0;
    bool has_length = false;
    int rc = TIO_OK;
    while (!rc && !tio__pb_done(&it)) {
        if ((rc = tio__pb_next(&it, &f, err))) break;
        if (f.number != 13) continue;
        char *k = NULL, *v = NULL;
        rc = tio__ox_entry(r, &it, &f, "TensorProto.external_data", &k, &v, err);
        int64_t eat = ox_off(&it, f.at);
        if (!rc && k && strcmp(k, "location") == 0) {
            free(loc);
            loc = v;
            v = NULL;
            if (!loc && !(loc = calloc(1, 1))) rc = tio__nomem(err, r->fmt);
        } else if (!rc && k && strcmp(k, "offset") == 0) {
            rc = ox_decimal(r->fmt, v ? v : "", k, eat, lbl, &offset, err);
        } else if (!rc && k && strcmp(k, "length") == 0) {
            rc = ox_decimal(r->fmt, v ? v : "", k, eat, lbl, &length, err);
            has_length = true;
        }
        /* "checksum" (a SHA-1 of the bytes) is not verified: that would read
         * every byte at open; other keys are ignored, as onnx does. */
        free(k);
        free(v);
    }
    if (!rc && !loc)
        rc = tio__err(err, TIO_E_CORRUPT, r->fmt, at,
                      "%s: data_location is EXTERNAL but external_data has no 'location'",
                      lbl);
    const uint8_t *p = NULL;
    if (!rc)
        rc = tio__onnx_external(r->ctx, r->fmt, loc, offset, has_length, length, nbytes, at,
                                lbl, &p, err);
    if (!rc) *data = p;
    free(loc);
    return rc;
}

/* A STRING tensor's string_data (field 6 of rd, one bytes field per
 * element, numel of them) into the TIO_STRING layout of a new tensor (d has
 * the name and shape). Counted and sized first: the offsets are allocated
 * only for strings the input holds, and within max_dense_bytes. */
static int ox_strings(ox_reader *r, const tio_pb_reader *rd, tio_tensor_desc *d, uint64_t numel,
                      int64_t at, const char *lbl, tio_error *err) {
    tio_pb_reader it = *rd;
    tio_pb_field f;
    uint64_t count = 0, bytes = 0;
    int rc = TIO_OK;
    while (!rc && !tio__pb_done(&it)) {
        rc = tio__pb_next(&it, &f, err);
        if (!rc && f.number == 6) {
            rc = tio__pb_expect(&it, &f, TIO_PB_LEN, "TensorProto.string_data", err);
            count++;
            bytes += f.u; /* within the input */
        }
    }
    if (!rc && count != numel)
        rc = tio__err(err, TIO_E_CORRUPT, r->fmt, at,
                      "%s: string_data holds %llu strings, the shape needs %llu", lbl,
                      (unsigned long long)count, (unsigned long long)numel);
    uint64_t total = (count + 1) * 8 + bytes; /* count < the input's size */
    if (!rc) rc = ox_mem(r, tio__cost_block(total), at, err);
    tio_strbuild b;
    if (!rc) rc = tio__strbuild_init(&b, count, r->ctx->limits.max_dense_bytes, r->fmt, at, err);
    if (rc) return rc;
    it = *rd;
    while (!rc && !tio__pb_done(&it)) {
        rc = tio__pb_next(&it, &f, err);
        if (!rc && f.number == 6) rc = tio__strbuild_add(&b, tio__pb_bytes(&it, &f), f.u, err);
    }
    if (!rc) rc = tio__strbuild_finish(&b, err);
    tio_tensor *tt = NULL;
    d->data = b.buf;
    d->nbytes = b.len;
    if (!rc) rc = tio_container_add(r->ctx->c, d, TIO_ADD_BORROW, &tt, err);
    if (rc) {
        tio__strbuild_free(&b);
        return rc;
    }
    tt->owned_data = b.buf;
    tt->source_offset = at;
    return TIO_OK;
}

/* Reads a TensorProto into a container tensor; *index gets its index.
 * `name` overrides the tensor's own name (Constant outputs). */
int tio__ox_tensor(ox_reader *r, const tio_pb_reader *rd, const char *name, const char *lbl,
                     int64_t *index, tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    ox_tparts t;
    memset(&t, 0, sizeof t);
    tio_pb_reader it = *rd;
    tio_pb_field f;
    int rc;
    int64_t at = ox_off(rd, rd->pos);
    while (!tio__pb_done(&it)) {
        rc = tio__pb_next(&it, &f, err);
        if (rc) return rc;
        switch (f.number) {
        case 1: {
            tio_pb_packed p;
            rc = tio__pb_packed_init(&it, &f, TIO_PB_VARINT, "TensorProto.dims", &p, err);
            while (!rc && !tio__pb_packed_done(&p)) {
                uint64_t v;
                rc = tio__pb_packed_next(&p, &v, err);
                if (rc) break;
                if (t.rank >= ctx->limits.max_rank || t.rank >= OX_MAX_RANK)
                    return tio__err(err, TIO_E_LIMIT, r->fmt, ox_off(rd, f.at),
                                    "%s: the tensor has more dims than the limit of %u "
                                    "(tio_limits.max_rank)",
                                    lbl, ctx->limits.max_rank);
                if ((int64_t)v < 0)
                    return tio__err(err, TIO_E_CORRUPT, r->fmt, ox_off(rd, f.at),
                                    "%s: dim %zu is %lld (expected >= 0)", lbl, t.rank,
                                    (long long)(int64_t)v);
                t.dims[t.rank++] = (int64_t)v;
            }
            if (rc) return rc;
            break;
        }
        case 2: t.dtype_code = tio__pb_int32(&f); break;
        case 3:
            return tio__err(err, TIO_E_UNSUPPORTED, r->fmt, ox_off(rd, f.at),
                            "%s: segmented tensors (TensorProto.segment) are not supported",
                            lbl);
        case 6: t.typed |= 1u << 6; break;
        case 8:
            t.name = f;
            t.has_name = true;
            break;
        case 9:
            t.raw = f;
            t.has_raw = true;
            break;
        case 4:
        case 5:
        case 7:
        case 10:
        case 11: t.typed |= 1u << f.number; break;
        case 14: t.external = tio__pb_int32(&f) == 1; break;
        default: break;
        }
    }
    tio_dtype dt = tio__onnx_dtype(t.dtype_code);
    if (dt == TIO_DTYPE_INVALID) {
        const char *dn = tio__onnx_dtype_name(t.dtype_code);
        return tio__err(err, TIO_E_UNSUPPORTED, r->fmt, at,
                        "%s: data type %lld (%s) is not supported by tensio", lbl,
                        (long long)t.dtype_code, dn ? dn : "unknown");
    }
    uint64_t numel = 1, nbytes;
    for (size_t k = 0; k < t.rank; k++)
        if (tio__mul64_ovf(numel, (uint64_t)t.dims[k], &numel))
            return tio__err(err, TIO_E_OVERFLOW, r->fmt, at, "%s: the element count overflows",
                            lbl);
    if (tio__mul64_ovf(numel, tio_dtype_size(dt), &nbytes) || nbytes > SIZE_MAX)
        return tio__err(err, TIO_E_OVERFLOW, r->fmt, at, "%s: the byte size overflows", lbl);
    char *tname = NULL;
    if (!name && t.has_name) {
        rc = tio__ox_str(r, rd, &t.name, lbl, &tname, err);
        if (rc) return rc;
        name = tname;
    }
    rc = ox_count(r, 1, at, err);
    if (!rc) rc = ox_mem(r, tio__cost_tensor(name ? strlen(name) : 0, t.rank), at, err);
    if (!rc && tio_container_count(ctx->c) >= ctx->limits.max_tensors)
        rc = tio__err(err, TIO_E_LIMIT, r->fmt, at,
                      "%s: the model has more than %llu tensors (tio_limits.max_tensors)", lbl,
                      (unsigned long long)ctx->limits.max_tensors);
    tio_tensor_desc d;
    memset(&d, 0, sizeof d);
    d.name = name;
    d.dtype = dt;
    d.rank = t.rank;
    d.shape = t.dims;
    d.nbytes = (size_t)nbytes;
    if (rc) goto out;
    if (dt == TIO_STRING) {
        if (t.external || t.has_raw || (t.typed & ~(1u << 6)))
            rc = tio__err(err, TIO_E_CORRUPT, r->fmt, at,
                          "%s: a STRING tensor's data are in string_data (field 6), not in "
                          "%s",
                          lbl, t.external ? "external data" : t.has_raw ? "raw_data"
                                                                        : "another typed field");
        else
            rc = ox_strings(r, rd, &d, numel, at, lbl, err);
    } else if (t.external) {
        if (t.typed || t.has_raw) {
            rc = tio__err(err, TIO_E_CORRUPT, r->fmt, at,
                          "%s: the tensor's data are external (data_location = EXTERNAL) but "
                          "it also has raw_data or typed data",
                          lbl);
            goto out;
        }
        rc = ox_external(r, rd, lbl, at, nbytes, &d.data, err);
        tio_tensor *tt = NULL;
        if (!rc) rc = tio_container_add(ctx->c, &d, TIO_ADD_BORROW, &tt, err);
        if (!rc) tt->source_offset = at;
    } else if (t.has_raw) {
        if (t.typed)
            rc = tio__err(err, TIO_E_CORRUPT, r->fmt, ox_off(rd, t.raw.at),
                          "%s: the tensor has both raw_data and typed data fields", lbl);
        else if (t.raw.u != nbytes)
            rc = tio__err(err, TIO_E_CORRUPT, r->fmt, ox_off(rd, t.raw.at),
                          "%s: raw_data holds %llu bytes, the %s shape needs %llu", lbl,
                          (unsigned long long)t.raw.u, tio_dtype_name(dt),
                          (unsigned long long)nbytes);
        if (rc) goto out;
        d.data = tio__pb_bytes(rd, &t.raw);
        rc = tio__container_add_view(ctx->c, &d, ox_off(rd, t.raw.data), r->fmt, err);
    } else {
        uint32_t want = ox_typed_field(dt);
        if (t.typed & ~(1u << want)) {
            rc = tio__err(err, TIO_E_CORRUPT, r->fmt, at,
                          "%s: a %s tensor has data in a typed field other than the one its "
                          "type uses (field %u)",
                          lbl, tio_dtype_name(dt), want);
            goto out;
        }
        rc = ox_typed_count(rd, want, dt, numel, lbl, err);
        if (!rc) rc = ox_mem(r, tio__cost_block(nbytes), at, err);
        if (rc) goto out;
        uint8_t *buf = malloc(nbytes ? (size_t)nbytes : 1);
        if (!buf) {
            rc = tio__nomem(err, r->fmt);
            goto out;
        }
        rc = ox_typed(rd, want, dt, buf, numel, lbl, err);
        tio_tensor *tt = NULL;
        d.data = buf;
        if (!rc) rc = tio_container_add(ctx->c, &d, TIO_ADD_BORROW, &tt, err);
        if (rc) {
            free(buf);
            goto out;
        }
        tt->owned_data = buf;
        tt->source_offset = at;
    }
    if (!rc) *index = (int64_t)tio_container_count(ctx->c) - 1;
out:
    free(tname);
    return rc;
}

/* A SparseTensorProto: its values and indices decoded aside (a scratch
 * container), then one COO tensor named as its values (ONNX's rule), copied
 * into the container; *index gets its index. Indices are [NNZ, rank]
 * coordinates or [NNZ] positions in the dense tensor (each checked). */
int tio__ox_sparse(ox_reader *r, const tio_pb_reader *sp, const char *name, const char *lbl,
                     int64_t *index, tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    tio_pb_reader it = *sp, vr, ir;
    tio_pb_field f;
    bool hv = false, hi = false;
    int64_t dims[OX_MAX_RANK];
    size_t rank = 0;
    int64_t at = ox_off(sp, sp->pos);
    int rc = TIO_OK;
    while (!rc && !tio__pb_done(&it)) {
        if ((rc = tio__pb_next(&it, &f, err))) break;
        if (f.number == 1) {
            rc = tio__pb_sub(&it, &f, "SparseTensorProto.values", &vr, err);
            hv = true;
        } else if (f.number == 2) {
            rc = tio__pb_sub(&it, &f, "SparseTensorProto.indices", &ir, err);
            hi = true;
        } else if (f.number == 3) {
            tio_pb_packed p;
            rc = tio__pb_packed_init(&it, &f, TIO_PB_VARINT, "SparseTensorProto.dims", &p, err);
            while (!rc && !tio__pb_packed_done(&p)) {
                uint64_t v;
                if ((rc = tio__pb_packed_next(&p, &v, err))) break;
                if (rank >= ctx->limits.max_rank || rank >= OX_MAX_RANK)
                    return tio__err(err, TIO_E_LIMIT, r->fmt, ox_off(&it, f.at),
                                    "%s: the sparse tensor has more dims than the limit of %u "
                                    "(tio_limits.max_rank)",
                                    lbl, ctx->limits.max_rank);
                if ((int64_t)v < 0)
                    return tio__err(err, TIO_E_CORRUPT, r->fmt, ox_off(&it, f.at),
                                    "%s: dim %zu is %lld (expected >= 0)", lbl, rank,
                                    (long long)(int64_t)v);
                dims[rank++] = (int64_t)v;
            }
        }
    }
    if (rc) return rc;
    if (!hv || !hi || rank == 0)
        return tio__err(err, TIO_E_CORRUPT, r->fmt, at,
                        "%s: a SparseTensorProto needs values, indices and dims (it has %s)",
                        lbl, !hv ? "no values" : !hi ? "no indices" : "no dims");
    uint64_t numel = 1;
    for (size_t k = 0; k < rank; k++)
        if (tio__mul64_ovf(numel, (uint64_t)dims[k], &numel))
            return tio__err(err, TIO_E_OVERFLOW, r->fmt, at, "%s: the element count overflows",
                            lbl);
    tio_container *scratch = tio_container_new(), *keep = ctx->c;
    if (!scratch) return tio__nomem(err, r->fmt);
    int64_t vi = -1, ii = -1;
    ctx->c = scratch;
    rc = tio__ox_tensor(r, &vr, NULL, lbl, &vi, err);
    if (!rc) rc = tio__ox_tensor(r, &ir, "indices", lbl, &ii, err);
    ctx->c = keep;
    const tio_tensor *vt = rc ? NULL : tio_container_tensor(scratch, (size_t)vi),
                     *it2 = rc ? NULL : tio_container_tensor(scratch, (size_t)ii);
    uint64_t nnz = 0;
    if (!rc) {
        nnz = tio_tensor_rank(vt) == 1 ? (uint64_t)tio_tensor_shape(vt)[0] : 0;
        size_t ir_ = tio_tensor_rank(it2);
        const int64_t *is = tio_tensor_shape(it2);
        if (tio_tensor_rank(vt) != 1 || !tio_tensor_name(vt) || !tio_tensor_name(vt)[0])
            rc = tio__err(err, TIO_E_CORRUPT, r->fmt, at,
                          "%s: the values must be a named 1-D tensor (rank %zu)", lbl,
                          tio_tensor_rank(vt));
        else if (tio_tensor_dtype(vt) == TIO_STRING)
            rc = tio__err(err, TIO_E_UNSUPPORTED, r->fmt, at,
                          "%s: sparse string tensors are not supported", lbl);
        else if (tio_tensor_dtype(it2) != TIO_INT64 ||
                 !((ir_ == 2 && (uint64_t)is[0] == nnz && (uint64_t)is[1] == rank) ||
                   (ir_ == 1 && (uint64_t)is[0] == nnz)))
            rc = tio__err(err, TIO_E_CORRUPT, r->fmt, at,
                          "%s: the indices must be int64 [%llu, %zu] or [%llu] (found %s of "
                          "rank %zu)",
                          lbl, (unsigned long long)nnz, rank, (unsigned long long)nnz,
                          tio_dtype_name(tio_tensor_dtype(it2)), ir_);
    }
    uint64_t ncoord = 0;
    if (!rc && tio__mul64_ovf(nnz, (uint64_t)rank, &ncoord))
        rc = tio__err(err, TIO_E_OVERFLOW, r->fmt, at, "%s: the index count overflows", lbl);
    if (!rc) rc = ox_mem(r, tio__cost_i64s(ncoord) + tio__cost_tensor(0, rank), at, err);
    if (!rc) rc = ox_count(r, 1, at, err);
    int64_t *coords = rc ? NULL : malloc(ncoord ? (size_t)ncoord * 8 : 8);
    if (!rc && !coords) rc = tio__nomem(err, r->fmt);
    if (!rc) {
        const uint8_t *ib = tio_tensor_data(it2);
        bool linear = tio_tensor_rank(it2) == 1;
        for (uint64_t j = 0; !rc && j < nnz; j++) {
            if (!linear) {
                for (size_t k = 0; k < rank; k++)
                    coords[j * rank + k] = (int64_t)tio__ld64(ib + 8 * (j * rank + k));
                continue;
            }
            int64_t l = (int64_t)tio__ld64(ib + 8 * j);
            if (l < 0 || (uint64_t)l >= numel) {
                rc = tio__err(err, TIO_E_CORRUPT, r->fmt, at,
                              "%s: index %llu is %lld (expected 0 <= i < %llu)", lbl,
                              (unsigned long long)j, (long long)l, (unsigned long long)numel);
                break;
            }
            uint64_t rest = (uint64_t)l;
            for (size_t k = rank; k-- > 0;) {
                coords[j * rank + k] = (int64_t)(rest % (uint64_t)dims[k]);
                rest /= (uint64_t)dims[k];
            }
        }
    }
    if (!rc && tio_container_count(ctx->c) >= ctx->limits.max_tensors)
        rc = tio__err(err, TIO_E_LIMIT, r->fmt, at,
                      "%s: the model has more than %llu tensors (tio_limits.max_tensors)", lbl,
                      (unsigned long long)ctx->limits.max_tensors);
    if (!rc) {
        tio_tensor_desc d;
        memset(&d, 0, sizeof d);
        d.name = name ? name : tio_tensor_name(vt);
        d.dtype = tio_tensor_dtype(vt);
        d.rank = rank;
        d.shape = dims;
        d.layout = TIO_LAYOUT_COO;
        d.data = tio_tensor_data(vt);
        d.nbytes = tio_tensor_nbytes(vt);
        d.nnz = nnz;
        d.indices = coords;
        tio_tensor *tt = NULL;
        rc = tio_container_add(ctx->c, &d, 0, &tt, err); /* copied: indices range-checked */
        if (rc == TIO_E_CORRUPT || rc == TIO_E_ARGUMENT)
            rc = tio__err(err, TIO_E_CORRUPT, r->fmt, at, "%s: %s", lbl, err->message);
        if (!rc) {
            tt->source_offset = at;
            *index = (int64_t)tio_container_count(ctx->c) - 1;
        }
    }
    free(coords);
    tio_container_free(scratch);
    return rc;
}

/* ------------------------------------------------- a bare TensorProto */

/* The metadata_props entries a bare TensorProto's properties take (each is
 * set by key, which looks at the ones before it). */
#define OX_MAX_TENSOR_PROPS 1024u

/* A string field of the TensorProto (doc_string) or one metadata_props entry
 * as a container property, so that `info` shows it. */
static int ox_tensor_prop(ox_reader *r, const tio_pb_reader *m, const tio_pb_field *f,
                          tio_error *err) {
    char *k = NULL, *v = NULL;
    int rc;
    if (f->number == 12) {
        rc = tio__ox_str(r, m, f, "TensorProto.doc_string", &v, err);
        if (!rc) rc = tio__kv_set(&r->ctx->c->props, "doc_string", v, err);
    } else {
        rc = tio__ox_entry(r, m, f, "TensorProto.metadata_props", &k, &v, err);
        char key[160];
        snprintf(key, sizeof key, "metadata_props.%.140s", k ? k : "");
        if (!rc) rc = tio__kv_set(&r->ctx->c->props, key, v ? v : "", err);
    }
    free(k);
    free(v);
    return rc;
}

/* Whether a message has the form of a SequenceProto or OptionalProto
 * (onnx.proto: name = 1, elem_type = 2 (0..5), elements in fields 3..7, all
 * length-delimited; a name or an elem_type at least), which a TensorProto
 * only has when its dims are packed and its data in float_data ..
 * int64_data: the bytes are read as one when they do not read as a
 * TensorProto. */
static bool ox_seq_form(const tio_pb_reader *m) {
    tio_pb_reader it = *m;
    tio_pb_field f;
    bool named = false, typed = false;
    while (!tio__pb_done(&it)) {
        if (tio__pb_next(&it, &f, NULL)) return false;
        if (f.number == 1 && f.wire == TIO_PB_LEN) named = true;
        else if (f.number == 2 && f.wire == TIO_PB_VARINT && f.u <= 5) typed = true;
        else if (f.number < 3 || f.number > 7 || f.wire != TIO_PB_LEN) return false;
    }
    return named || typed;
}

/* A bare SequenceProto or OptionalProto (the backend test data's sequence
 * and optional values): each element tensor (tensor_values, field 3; sparse,
 * field 4, as COO) a tensor of the container, in order, under its own name
 * (ONNX leaves them unnamed); the message's name and elem_type, and which of
 * the two it may be, in the container's props (the format's bookkeeping).
 * Elements that are sequences, maps or optionals (fields 5-7) are refused by
 * name. The two messages differ only in how many elements they may hold. */
static int ox_read_sequence(ox_reader *r, const char *fmt, tio_error *err) {
    tio_read_ctx *ctx = r->ctx;
    tio_pb_reader m;
    tio__pb_init(&m, ctx->data, ctx->size, 0, fmt, 3);
    tio_pb_head ph;
    tio__pb_use_head(&m, &ph, ctx->head);
    int rc = tio__pb_verify(&m, &tio__onnx_SequenceProto, err);
    tio_pb_reader it = m;
    tio_pb_field f;
    size_t n = 0;
    int64_t elem_type = 0;
    while (!rc && !tio__pb_done(&it)) {
        if ((rc = tio__pb_next(&it, &f, err))) break;
        if (f.number == 1) {
            const uint8_t *b = tio__pb_bytes(&it, &f);
            size_t len = (size_t)f.u; /* in bounds: verified */
            if (memchr(b, 0, len))
                return tio__err(err, TIO_E_UNSUPPORTED, fmt, ox_off(&it, f.at),
                                "the SequenceProto's name holds a NUL byte");
            rc = tio__kv_set_n(&ctx->c->props, "name", 4, (const char *)b, len, err);
        } else if (f.number == 2) {
            elem_type = tio__pb_int32(&f);
        } else if (f.number == 3 || f.number == 4) {
            /* each element a container tensor record: the cost per tensor
             * that every container format may take (tests/core/test_memory.c,
             * many tiny tensors), on top of the budget of the bytes */
            if (tio__add64_ovf(r->mem.cap, TIO_DECODE_MEM_PER_TENSOR, &r->mem.cap))
                r->mem.cap = UINT64_MAX;
            char lbl[48];
            snprintf(lbl, sizeof lbl, "SequenceProto element %zu", n);
            tio_pb_reader sub;
            int64_t index;
            rc = tio__pb_sub(&it, &f, lbl, &sub, err);
            if (!rc)
                rc = f.number == 3 ? tio__ox_tensor(r, &sub, NULL, lbl, &index, err)
                                   : tio__ox_sparse(r, &sub, NULL, lbl, &index, err);
            n++;
        } else {
            return tio__err(err, TIO_E_UNSUPPORTED, fmt, ox_off(&it, f.at),
                            "element %zu is %s (SequenceProto field %u): tensio reads sequences "
                            "and optionals of tensors",
                            n, f.number == 5 ? "a sequence" : f.number == 6 ? "a map" : "an optional",
                            f.number);
        }
    }
    if (rc) return rc;
    if (elem_type != 0 && elem_type != 1 && elem_type != 2)
        return tio__err(err, TIO_E_UNSUPPORTED, fmt, 0,
                        "the SequenceProto's elem_type is %lld (expected 0, 1 tensor or 2 "
                        "sparse tensor: tensio reads sequences and optionals of tensors)",
                        (long long)elem_type);
    char et[24];
    snprintf(et, sizeof et, "%lld", (long long)elem_type);
    rc = tio__kv_set(&ctx->c->props, "elem_type", et, err);
    if (!rc)
        rc = tio__kv_set(&ctx->c->props, "value",
                         n > 1 ? "SequenceProto" : "SequenceProto or OptionalProto", err);
    return rc;
}

/* A message without its "<fmt>: " prefix, to be quoted inside another. */
static const char *ox_unprefixed(const char *msg, const char *fmt) {
    size_t n = strlen(fmt);
    return strncmp(msg, fmt, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ' ? msg + n + 2 : msg;
}

int tio__onnx_read_tensorproto(tio_read_ctx *ctx, const char *fmt, tio_error *err) {
    ox_reader r;
    tio__ox_reader_init(&r, ctx, fmt);
    if (ctx->size == 0)
        return tio__err(err, TIO_E_TRUNCATED, fmt, 0,
                        "the file is empty (expected an ONNX TensorProto, which has at least "
                        "its data_type)");
    /* the message, then its segment and external_data entries */
    tio_pb_reader m;
    tio__pb_init(&m, ctx->data, ctx->size, 0, fmt, 2);
    tio_pb_head ph;
    tio__pb_use_head(&m, &ph, ctx->head);
    int rc = tio__pb_verify(&m, &tio__onnx_TensorProto, err);
    if (rc) return rc;
    /* Strict, as nothing in the bytes says what they are: every field is one
     * of TensorProto's, and data_type is there. */
    tio_pb_reader it = m;
    tio_pb_field f;
    bool typed = false;
    unsigned nprops = 0;
    while (!rc && !tio__pb_done(&it)) {
        if ((rc = tio__pb_next(&it, &f, err))) break;
        if (!tio__pb_field_desc(&tio__onnx_TensorProto, f.number))
            return tio__err(err, TIO_E_CORRUPT, fmt, ox_off(&it, f.at),
                            "field %u (%s) is not a field of an ONNX TensorProto (expected "
                            "1..14 or 16; a .pb file is read as one TensorProto, as "
                            "onnx.numpy_helper writes it)",
                            f.number, tio__pb_wire_name(f.wire));
        if (f.number == 2) typed = true;
        if (f.number == 16 && ++nprops > OX_MAX_TENSOR_PROPS)
            return tio__err(err, TIO_E_LIMIT, fmt, ox_off(&it, f.at),
                            "the TensorProto has more than %u metadata_props entries",
                            OX_MAX_TENSOR_PROPS);
        if (f.number == 12 || f.number == 16) rc = ox_tensor_prop(&r, &it, &f, err);
    }
    if (rc) return rc;
    int64_t index;
    rc = typed ? tio__ox_tensor(&r, &m, NULL, "TensorProto", &index, err)
               : tio__err(err, TIO_E_CORRUPT, fmt, 0,
                          "the TensorProto has no data_type (field 2)");
    if (rc && ox_seq_form(&m) && ctx->c->count == 0) {
        /* not a TensorProto, and in the form of a SequenceProto: read as one,
         * or named as what it most likely is, the TensorProto reading kept */
        char was[TIO_ERROR_MESSAGE_MAX] = "";
        if (err) snprintf(was, sizeof was, "%s", ox_unprefixed(err->message, fmt));
        tio_error e2;
        rc = ox_read_sequence(&r, fmt, &e2);
        if (rc && err) {
            const char *why = ox_unprefixed(e2.message, fmt);
            if (strncmp(why, "offset ", 7) == 0 && strstr(why, ": ")) why = strstr(why, ": ") + 2;
            rc = tio__err(err, rc, fmt, e2.offset,
                          "the file has the form of an ONNX SequenceProto or OptionalProto, "
                          "and as one: %s; as a TensorProto: %s",
                          why, was);
        }
    }
    return rc;
}
