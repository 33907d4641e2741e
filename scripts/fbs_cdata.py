"""What scripts/gen_rten_schema.py and scripts/gen_tflite_schema.py share:
a FlatBuffers schema field as one row of tio_fb_field C data
(src/flatbuf/flatbuf.h)."""

SCALARS = {'bool': 'BOOL', 'byte': 'I8', 'int8': 'I8', 'ubyte': 'U8', 'uint8': 'U8',
           'short': 'I16', 'int16': 'I16', 'ushort': 'U16', 'uint16': 'U16',
           'int': 'I32', 'int32': 'I32', 'uint': 'U32', 'uint32': 'U32', 'long': 'I64',
           'int64': 'I64', 'ulong': 'U64', 'uint64': 'U64', 'float': 'F32',
           'float32': 'F32', 'double': 'F64', 'float64': 'F64'}


def field_row(tname, f, enums, unions, tables):
    """f: dict(name, type, default, required[, tag][, deprecated]); enums maps
    a name to (base type, [(value name, value)]). A `tag` field is the union
    type field of union `tag`; a deprecated field is an unused slot."""
    t = f['type']
    kind, elem, table, un, enum = 'NONE', 'NONE', 'NULL', 'NULL', 'NULL'
    optional, default = 0, '0'
    if f.get('tag'):
        kind, un = 'UNION_TYPE', '&u_' + f['tag']
    elif t.startswith('['):
        kind = 'VECTOR'
        e = t[1:-1]
        if e in SCALARS:
            elem = SCALARS[e]
        elif e in enums:
            elem = SCALARS[enums[e][0]]
        elif e == 'string':
            elem = 'STRING'
        elif e in tables:
            elem, table = 'TABLE', '&t_' + e
        else:
            raise SystemExit('unknown vector type %s in %s' % (e, tname))
    elif t == 'string':
        kind = 'STRING'
    elif t in SCALARS:
        kind = SCALARS[t]
    elif t in enums:
        kind = SCALARS[enums[t][0]]
        enum = '"%s"' % t
    elif t in unions:
        kind, un = 'UNION', '&u_' + t
    elif t in tables:
        kind, table = 'TABLE', '&t_' + t
    else:
        raise SystemExit('unknown type %s in %s' % (t, tname))
    d = f['default']
    if d is not None:
        if d == 'null':
            optional = 1
        elif d in ('true', 'false'):
            default = '1' if d == 'true' else '0'
        elif t in enums:
            default = str(dict(enums[t][1])[d])
        else:
            default = d
    if f.get('deprecated'):
        kind, elem, table, un, enum, default, optional = ('NONE', 'NONE', 'NULL', 'NULL', 'NULL',
                                                          '0', 0)
    return '{"%s", TIO_FB_%s, TIO_FB_%s, %d, %d, %s, %s, %s, %s}' % (
        f['name'], kind, elem, 1 if f['required'] else 0, optional, default, table, un, enum)
