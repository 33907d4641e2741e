"""A minimal FlatBuffers writer for TensorFlow Lite test models (tensio's
tests only; written here from the FlatBuffers binary format: a table is an
soffset to its vtable, then its fields; references are uoffsets forward).

build_model(tensors, buffers, operators, inputs, outputs, opcodes) returns
the .tflite bytes. tensors: (name, shape, type, buffer); buffers: bytes;
operators: (opcode_index, inputs, outputs, options_type, options_fields);
options_fields: [(field id, struct format, value)]; opcodes: builtin codes.
"""

import struct


class _W:
    def __init__(self):
        self.b = bytearray()

    def align(self, n):
        while len(self.b) % n:
            self.b.append(0)

    def patch(self, at, target):
        struct.pack_into("<I", self.b, at, target - at)

    def table(self, fields):
        """fields: (id, fmt, value) scalars, or (id, 'off', writer) where
        writer() writes the child and returns its position."""
        n = max([f[0] for f in fields] + [-1]) + 1
        # layout: soffset, then fields (each aligned to its size)
        layout, size = {}, 4
        for fid, fmt, _ in sorted(fields, key=lambda f: -struct.calcsize(
                "<" + ("I" if f[1] == "off" else f[1]))):
            fs = struct.calcsize("<" + ("I" if fmt == "off" else fmt))
            while size % fs:
                size += 1
            layout[fid] = size
            size += fs
        while size % 4:
            size += 1
        self.align(4)
        vt = len(self.b)
        self.b += struct.pack("<HH", 4 + 2 * n, size)
        for i in range(n):
            self.b += struct.pack("<H", layout.get(i, 0))
        self.align(8)
        pos = len(self.b)
        self.b += bytes(size)
        struct.pack_into("<i", self.b, pos, pos - vt)
        later = []
        for fid, fmt, v in fields:
            if fmt == "off":
                later.append((pos + layout[fid], v))
            else:
                struct.pack_into("<" + fmt, self.b, pos + layout[fid], v)
        for at, wr in later:
            self.patch(at, wr())
        return pos

    def vector(self, fmt, values, elem_align=None):
        es = struct.calcsize("<" + fmt)
        a = max(4, elem_align or es)
        self.align(4)
        while (len(self.b) + 4) % a:
            self.b.append(0)
        pos = len(self.b)
        self.b += struct.pack("<I", len(values))
        for v in values:
            self.b += struct.pack("<" + fmt, v)
        return pos

    def bytes_vector(self, data):
        self.align(4)
        while (len(self.b) + 4) % 16:
            self.b.append(0)
        pos = len(self.b)
        self.b += struct.pack("<I", len(data)) + data
        return pos

    def string(self, s):
        self.align(4)
        pos = len(self.b)
        e = s.encode()
        self.b += struct.pack("<I", len(e)) + e + b"\0"
        return pos

    def tables(self, writers):
        self.align(4)
        pos = len(self.b)
        self.b += struct.pack("<I", len(writers)) + bytes(4 * len(writers))
        for k, wr in enumerate(writers):
            self.patch(pos + 4 + 4 * k, wr())
        return pos


def build_model(tensors, buffers, operators, inputs, outputs, opcodes):
    w = _W()
    w.b += bytes(8)

    def tensor(t):
        name, shape, ty, buf = t
        return lambda: w.table([(0, "off", lambda: w.vector("i", shape)), (1, "b", ty),
                                (2, "I", buf), (3, "off", lambda: w.string(name))])

    def buffer(d):
        return lambda: w.table([(0, "off", lambda: w.bytes_vector(d))] if d else [])

    def operator(o):
        oc, ins, outs, otype, ofields = o
        f = [(0, "I", oc), (1, "off", lambda: w.vector("i", ins)),
             (2, "off", lambda: w.vector("i", outs))]
        if otype:
            f += [(3, "B", otype), (4, "off", lambda: w.table(ofields))]
        return lambda: w.table(f)

    def opcode(c):
        return lambda: w.table([(0, "b", min(c, 127)), (2, "i", 1), (3, "i", c)])

    def subgraph():
        return w.table([(0, "off", lambda: w.tables([tensor(t) for t in tensors])),
                        (1, "off", lambda: w.vector("i", inputs)),
                        (2, "off", lambda: w.vector("i", outputs)),
                        (3, "off", lambda: w.tables([operator(o) for o in operators])),
                        (4, "off", lambda: w.string("main"))])

    root = w.table([(0, "I", 3), (1, "off", lambda: w.tables([opcode(c) for c in opcodes])),
                    (2, "off", lambda: w.tables([subgraph])),
                    (3, "off", lambda: w.string("tensio test")),
                    (4, "off", lambda: w.tables([buffer(d) for d in buffers]))])
    struct.pack_into("<I", w.b, 0, root)
    w.b[4:8] = b"TFL3"
    w.align(16)
    return bytes(w.b)
