/*
 * tensio's pickle machine: Python pickles of protocols 0-5 read as data.
 * Internal (docs/formats/torch.md).
 *
 * Nothing is imported, called or evaluated. Every GLOBAL/STACK_GLOBAL/INST
 * becomes a GLOBAL object carrying its module, name and byte offset, and is
 * looked up in a fixed vocabulary (vocab.c, a table); REDUCE, NEWOBJ,
 * NEWOBJ_EX, INST and OBJ become CALL objects (what would be called and
 * with what), which the reader interprets for the vocabulary's functions
 * only. The one exception is collections.OrderedDict() with no arguments,
 * which is a dict from the start so that SETITEM(S) can fill it.
 *
 * Objects live in one array and refer to each other by index: the memo
 * hands out references, never copies, so a memo bomb costs O(bytes). Every
 * opcode's operands are checked (SETITEM/SETITEMS on dicts only,
 * APPEND/APPENDS on lists only, ADDITEMS on sets, memo keys that were set,
 * lengths inside the pickle, marks balanced at STOP); the pickle's size,
 * its objects and its marks are bounded by tio_limits (max_pickle_bytes,
 * max_pickle_objects, max_pickle_depth).
 */
#ifndef TIO_PICKLE_H
#define TIO_PICKLE_H

#include "core/internal.h"

#define TIO_PK_NIL UINT32_MAX /* no object */

typedef enum tio_pk_kind {
    TIO_PK_NONE = 1,
    TIO_PK_BOOL,    /* i: 0 or 1 */
    TIO_PK_INT,     /* i */
    TIO_PK_BIGINT,  /* an integer past int64: s/n its two's-complement bytes
                       (LONG1/LONG4) or its decimal text (LONG, INT: how 'L') */
    TIO_PK_FLOAT,   /* f */
    TIO_PK_STR,     /* s/n: UTF-8 bytes (a view into the pickle) */
    TIO_PK_BYTES,   /* s/n: a view into the pickle */
    TIO_PK_TUPLE,   /* kids[0..n) */
    TIO_PK_LIST,    /* kids[0..n) */
    TIO_PK_DICT,    /* n pairs: kids[2k] the key, kids[2k+1] the value; state:
                       what BUILD set (an OrderedDict's attributes) */
    TIO_PK_SET,     /* kids[0..n) (EMPTY_SET + ADDITEMS) */
    TIO_PK_FROZENSET,
    TIO_PK_GLOBAL,  /* g: module.name; vocab: its entry (0: outside) */
    TIO_PK_CALL,    /* call: func (a GLOBAL or any object), args, kwargs
                       (NEWOBJ_EX); state: what BUILD set; how: the opcode */
    TIO_PK_PERSID   /* call.args: the persistent id (BINPERSID's object, or
                       PERSID's text as a STR) */
} tio_pk_kind;

/* The vocabulary: globals with a known meaning (vocab.c). */
typedef enum tio_pk_vocab {
    TIO_PKV_NONE = 0,          /* outside the vocabulary */
    TIO_PKV_REBUILD_TENSOR,    /* torch._utils._rebuild_tensor */
    TIO_PKV_REBUILD_TENSOR_V2, /* torch._utils._rebuild_tensor_v2 */
    TIO_PKV_REBUILD_TENSOR_V3, /* torch._utils._rebuild_tensor_v3 */
    TIO_PKV_REBUILD_PARAMETER, /* torch._utils._rebuild_parameter */
    TIO_PKV_REBUILD_PARAMETER_STATE, /* ..._with_state */
    TIO_PKV_REBUILD_FROM_TYPE, /* torch._tensor._rebuild_from_type_v2 */
    TIO_PKV_REBUILD_QTENSOR,   /* torch._utils._rebuild_qtensor */
    TIO_PKV_STORAGE,           /* torch.FloatStorage …: dtype */
    TIO_PKV_UNTYPED_STORAGE,   /* torch.storage.UntypedStorage (+ a dtype elsewhere) */
    TIO_PKV_ORDERED_DICT,      /* collections.OrderedDict */
    TIO_PKV_SIZE,              /* torch.Size */
    TIO_PKV_DEVICE,            /* torch.device */
    TIO_PKV_DTYPE,             /* torch.float32 …: dtype */
    TIO_PKV_SET,               /* builtins.set */
    TIO_PKV_FROZENSET,         /* builtins.frozenset */
    TIO_PKV_SLICE,             /* builtins.slice */
    TIO_PKV_CODECS_ENCODE,     /* _codecs.encode (protocol 2's bytes) */
    TIO_PKV_NP_RECONSTRUCT,    /* numpy.core.multiarray._reconstruct */
    TIO_PKV_NP_DTYPE,          /* numpy.dtype */
    TIO_PKV_NP_NDARRAY,        /* numpy.ndarray */
    TIO_PKV_NP_SCALAR,         /* numpy.core.multiarray.scalar */
    TIO_PKV_JIT_LIST,          /* torch.jit._pickle.build_intlist …: (list,) */
    TIO_PKV_JIT_TYPE_TAG,      /* torch.jit._pickle.restore_type_tag: (value, type) */
    TIO_PKV_JIT_TENSOR_ID,     /* torch.jit._pickle.build_tensor_from_id: (index,) */
    TIO_PKV_QSTORAGE,          /* torch.QInt8Storage …: a quantized tensor's integers */
    TIO_PKV_QSCHEME,           /* torch.per_tensor_affine …: a quantization scheme */
    TIO_PKV_BYTES,             /* builtins.bytes (protocol 2's b'': bytes()) */
    TIO_PKV_REBUILD_SPARSE,    /* torch._utils._rebuild_sparse_tensor: (layout, data) */
    TIO_PKV_GET_LAYOUT         /* torch.serialization._get_layout: ("torch.sparse_coo",) */
} tio_pk_vocab;

typedef struct tio_pk_vocab_entry {
    const char *module;
    const char *name;
    tio_pk_vocab id;
    tio_dtype dtype;    /* STORAGE, QSTORAGE, DTYPE: the element type (INVALID:
                           known to torch, not to tensio: refused by name) */
} tio_pk_vocab_entry;

/* The entry of module.name (1-based, for tio_pk_obj.vocab), or 0: outside
 * the vocabulary. */
unsigned tio__pk_vocab_find(const uint8_t *mod, size_t mod_len, const uint8_t *name,
                            size_t name_len);
/* Entry v (1-based), or NULL for 0. */
const tio_pk_vocab_entry *tio__pk_vocab_at(unsigned v);

typedef struct tio_pk_obj {
    uint8_t kind;    /* tio_pk_kind */
    uint8_t how;     /* CALL: the opcode that made it ('R' REDUCE, 0x81 NEWOBJ, …) */
    uint16_t vocab;  /* GLOBAL: its vocabulary entry (tio__pk_vocab_at), 0: outside */
    uint32_t n;      /* items (DICT: pairs); STR/BYTES/BIGINT: bytes */
    uint32_t cap;    /* kids allocated */
    uint32_t state;  /* DICT, CALL: BUILD's state, or TIO_PK_NIL */
    uint64_t off;    /* byte offset of the opcode that made it, in the source */
    union {
        int64_t i;
        double f;
        const uint8_t *s;
        uint32_t *kids;
        struct {
            uint32_t func, args, kwargs;
        } call;
        struct {
            const uint8_t *mod, *name;
            uint32_t mod_len, name_len;
        } g;
    } u;
} tio_pk_obj;

typedef struct tio_pickle {
    tio_pk_obj *obj;   /* obj[0..count): 0 None, 1 False, 2 True */
    size_t count, cap;
    uint32_t root;     /* what STOP returned */
    int protocol;      /* PROTO's operand, 0 without one */
    uint64_t end;      /* offset in the source just past STOP */
    size_t first_unknown; /* the first GLOBAL outside the vocabulary (count: none) */
    struct tio_pk_chunk *chunks; /* the kids of tuples and frozensets (never grown) */
    uint32_t *heap;    /* the lists, dicts and sets whose kids are malloc'ed */
    size_t nheap, heap_cap;
} tio_pickle;

/* Runs the pickle that starts at data[0] (source offset base) and ends at
 * its STOP, at most size bytes on (bytes after STOP are not read: *p->end
 * tells where it ended). Errors name `format` and the source offset. */
int tio__pickle_run(tio_pickle *p, const uint8_t *data, size_t size, uint64_t base,
                    const char *format, const tio_limits *lim, tio_error *err);
void tio__pickle_free(tio_pickle *p);

static inline const tio_pk_obj *tio__pk(const tio_pickle *p, uint32_t i) {
    return i < p->count ? &p->obj[i] : NULL;
}
/* Item k of a TUPLE/LIST/SET (a DICT: kid k), or NULL. */
const tio_pk_obj *tio__pk_item(const tio_pickle *p, const tio_pk_obj *o, size_t k);
/* The vocabulary entry a CALL's function is, or NULL. */
const tio_pk_vocab_entry *tio__pk_callee(const tio_pickle *p, const tio_pk_obj *o);

/* The object tree (tio_object, core/object.h) of object `root` of p, made in
 * t (tree.c): dicts, lists, tuples, sets and scalars as they are, CALLs
 * tensor_of[] names as TENSOR objects (tensor_of[i]: the container index
 * of the tensor object i was read as, or -1), the vocabulary's torch.Size,
 * set, frozenset, torch.device and _codecs.encode rebuilt as data, any other
 * global, call or object OPAQUE (its module.name, offset and state). An
 * object the pickle reaches twice is made once (shared). Offsets are the
 * source's when source_offsets is set, else -1. Nesting is bounded by
 * lim->max_pickle_depth: an object deeper is OPAQUE "(nested past
 * max_pickle_depth)", so that only memory running short fails it. */
struct tio_objtree;
int tio__pickle_tree(const tio_pickle *p, uint32_t root, const int64_t *tensor_of,
                     int source_offsets, const tio_limits *lim, struct tio_objtree *t,
                     const char *format, tio_error *err, const tio_object **out);

/* The container's object tree made when first asked for (tio_container_
 * object), from pickles kept until then. Each call hands a part to c: p's
 * objects (p is left empty), tensor_of (as above) and owned (the pickle's
 * bytes when they are not the container's own, else NULL), all freed with
 * the tree's making or the container. One part makes the tree's root;
 * several a dict {key: root} in the order handed (at most
 * TIO_PK_LATER_PARTS; key a string that outlives c, a literal). *later: NULL before the first part, then the
 * holder the next part goes to. On failure (TIO_E_NOMEM, TIO_E_LIMIT)
 * nothing was handed: the caller still owns p, tensor_of and owned. */
#define TIO_PK_LATER_PARTS 4u
struct tio_pk_later;
int tio__pickle_tree_later(tio_container *c, struct tio_pk_later **later, tio_pickle *p,
                           int64_t *tensor_of, uint8_t *owned, int source_offsets,
                           const char *key, const tio_limits *lim);

/* ------------------------------------------------------------ writing */

/* A pickle being written (write.c): opcodes of protocol 2 as CPython's
 * pickler writes them, into a growable buffer. The caller decides what to
 * memoize, as the pickler would (tio__pkw_put after an object, then
 * tio__pkw_get to refer to it again); keys count up from 0. Out of memory
 * is sticky: w->b.oom. */
typedef struct tio_pkw {
    tio_buf b;
    uint32_t memo; /* the next memo key */
} tio_pkw;

void tio__pkw_op(tio_pkw *w, uint8_t op); /* one opcode without operands */
void tio__pkw_proto(tio_pkw *w, uint8_t proto);
/* BININT1, BININT2 or BININT where v fits in int32, else LONG1 (protocol 2). */
void tio__pkw_int(tio_pkw *w, int64_t v);
/* BINUNICODE of s[0..n) (UTF-8, the caller's to check). */
void tio__pkw_str(tio_pkw *w, const char *s, size_t n);
/* GLOBAL "module\nname\n". */
void tio__pkw_global(tio_pkw *w, const char *module, const char *name);
/* Memoizes the object on top of the stack (BINPUT, LONG_BINPUT from key
 * 256 on): returns its key. */
uint32_t tio__pkw_put(tio_pkw *w);
void tio__pkw_get(tio_pkw *w, uint32_t key); /* BINGET / LONG_BINGET */
/* A tuple of n items, as save_tuple writes it: tuple_begin before its
 * items (MARK when n > 3), tuple_end after them (EMPTY_TUPLE, TUPLE1..3 or
 * TUPLE). */
void tio__pkw_tuple_begin(tio_pkw *w, size_t n);
void tio__pkw_tuple_end(tio_pkw *w, size_t n);

/* Opcodes the writers use. */
#define TIO_PKO_MARK 0x28u      /* '(' */
#define TIO_PKO_STOP 0x2Eu      /* '.' */
#define TIO_PKO_REDUCE 0x52u    /* 'R' */
#define TIO_PKO_BINPERSID 0x51u /* 'Q' */
#define TIO_PKO_SETITEM 0x73u   /* 's' */
#define TIO_PKO_SETITEMS 0x75u  /* 'u' */
#define TIO_PKO_NEWTRUE 0x88u
#define TIO_PKO_NEWFALSE 0x89u

#endif
