"""A drop-in for WebDataset's tenbin.py (and tensorcom's ZeroMQ helpers).

    import tensio.tenbin as tenbin

The calls and their signatures are those of webdataset/tenbin.py
(encode_buffer, decode_buffer, encode_list, decode_list, encode_chunks,
decode_chunks, write, read, save, load, with the same infos= rules) and of
tensorcom/tenbin.py (zsend_single, zrecv_single, zsend_multipart,
zrecv_multipart). The encodings are byte-identical to the reference's; the
decoding and validation are libtensio's (tensio.loads / loads_parts /
dumps / dumps_parts), so:

- uint32 (code "u4") and rank-0 arrays work both ways (the reference cannot
  write uint32 and cannot read rank 0 back);
- decoded arrays are read-only, zero-copy views into the buffer, the file
  mapping or the received frames (copy=True gives writable copies);
- malformed input is rejected (a ValueError) where the reference accepts it
  or silently returns fewer arrays;
- big-endian arrays are written as little-endian values, non-contiguous ones
  in C order.

docs/python.md ("Drop-in for tenbin.py") lists every difference.
"""

import os as _os
import struct as _struct
import sys as _sys

import numpy as _np

import tensio as _tensio

__all__ = [
    "encode_buffer", "decode_buffer", "encode_list", "decode_list",
    "encode_chunks", "decode_chunks", "write", "read", "save", "load",
    "zsend_single", "zrecv_single", "zsend_multipart", "zrecv_multipart",
    "TenbinError", "long_to_short", "short_to_long", "magic_str", "magic_bytes",
    "roundup",
]

# numpy name -> tenbin code; uint32 is "u4" (the reference misspells it).
long_to_short = {
    "float16": "f2", "float32": "f4", "float64": "f8",
    "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8",
    "uint8": "u1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
}
short_to_long = {v: k for k, v in long_to_short.items()}
# the same as NumPy dtypes (both byte orders): a set lookup, where dtype.name
# costs some 1.5 µs per array
_TENBIN_DTYPES = frozenset(_np.dtype(n).newbyteorder(o) for n in long_to_short for o in "<>")

magic_str = "~TenBin~"
magic_bytes = magic_str.encode("ascii")

_MAX_NDIM = 9          # the reference writer refuses ndim >= 10
_READ_STEP = 1 << 26   # read() takes a claimed length in steps, never all at once


class TenbinError(ValueError):
    """Malformed tenbin data or arrays tenbin cannot hold. A ValueError, as
    the reference raises; the tensio.Error behind it (with .code, .offset) is
    its __cause__ and its .error."""

    def __init__(self, message, error=None):
        super().__init__(message)
        self.error = error


def roundup(n, k=64):
    """n rounded up to a multiple of k (chunks are padded to 64 bytes)."""
    return -(-n // k) * k


# ------------------------------------------------------------------ helpers

def _fail(e):
    """A tensio.Error (or a DtypeError) as the ValueError the reference raises."""
    if isinstance(e, TenbinError):
        return e
    err = TenbinError(str(e), e)
    err.__cause__ = e
    return err


def _check_infos(infos, count):
    """The names for tensio from encode-side infos (None: all unnamed)."""
    if infos is None:
        return None
    infos = list(infos)
    if len(infos) != count:
        raise ValueError("%d infos for %d arrays: infos must be None or one per array"
                         % (len(infos), count))
    names = []
    for info in infos:
        if not isinstance(info, str):
            raise ValueError("info %r is not a str" % (info,))
        try:
            raw = info.encode("ascii")
        except UnicodeEncodeError:
            raise ValueError("info %r is not ASCII" % (info,)) from None
        if len(raw) > 8 or "\0" in info:
            raise ValueError("info %r: at most 8 ASCII characters, no NUL" % (info,))
        names.append(info or None)
    return names


def _arrays(l):
    out = []
    for a in l:
        a = _np.asarray(a)
        if a.dtype in _TENBIN_DTYPES:
            pass
        elif a.dtype.name not in long_to_short or a.dtype.kind not in "iuf":
            raise ValueError("unsupported array type: %s (tenbin holds %s)"
                             % (a.dtype, ", ".join(long_to_short)))
        if a.ndim > _MAX_NDIM:
            raise ValueError("too many dimensions: %d (tenbin writers stop at %d)"
                             % (a.ndim, _MAX_NDIM))
        out.append(a)
    return out


def _prepare(l, infos):
    arrays = _arrays(l)
    return arrays, _check_infos(infos, len(arrays))


def _dumps(l, infos, as_bytearray=False):
    arrays, names = _prepare(l, infos)
    try:
        return _tensio.dumps(arrays, "tenbin", names=names, as_bytearray=as_bytearray)
    except _tensio.Error as e:
        raise _fail(e) from e


def _result(c, infos, copy):
    """The arrays of a decoded container, with the reference's infos= rule:
    False/None -> arrays; True -> (arrays, infos); a list/tuple -> each
    decoded info must equal the required one, then arrays."""
    arrays = c._list()
    if copy:
        arrays = [_np.array(a) for a in arrays]
    if infos is False or infos is None:
        return arrays
    actual = ["" if n is None else n for n in c.names]
    if infos is True:
        return arrays, actual
    if not isinstance(infos, (tuple, list)):
        raise ValueError("infos must be False, True, or a tuple or list of required infos")
    for required, got in zip(infos, actual):
        if required != got:
            raise ValueError("actual info %r doesn't match required info %r" % (got, required))
    return arrays


def _loads(buf, infos, copy):
    try:
        c = _tensio.loads(buf, "tenbin")
    except _tensio.Error as e:
        raise _fail(e) from e
    return _result(c, infos, copy)


def _loads_parts(parts, infos, copy):
    try:
        c = _tensio.loads_parts(list(parts), "tenbin")
    except _tensio.Error as e:
        raise _fail(e) from e
    return _result(c, infos, copy)


# --------------------------------------------------------- buffers and lists

def encode_list(l, infos=None):
    """Arrays -> the list [header, data, header, data, ...] of chunk payloads
    (bytes), as tensorcom sends them. infos: None (every info empty) or one
    string of at most 8 ASCII characters per array."""
    arrays, names = _prepare(l, infos)
    try:
        return _tensio.dumps_parts(arrays, "tenbin", names=names)
    except _tensio.Error as e:
        raise _fail(e) from e


def decode_list(l, infos=False, copy=False):
    """[header, data, ...] payloads (any bytes-like objects) -> arrays:
    read-only views into the payloads (copy=True: writable copies).
    infos=True returns (arrays, infos); a list of infos is checked."""
    return _loads_parts(l, infos, copy)


def encode_chunks(l):
    """Payloads (any bytes-like objects) -> one bytearray of chunks: the
    magic, the length (int64 little-endian), the payload, zeros to a
    multiple of 64 bytes."""
    views = []
    size = 0
    for b in l:
        m = memoryview(b)
        if m.ndim != 1 or m.format != "B":
            m = m.cast("B") if m.c_contiguous and m.ndim > 0 else memoryview(m.tobytes())
        views.append(m)
        size += 16 + roundup(m.nbytes)
    out = bytearray(size)
    pos = 0
    for m in views:
        n = m.nbytes
        out[pos:pos + 8] = magic_bytes
        _struct.pack_into("<q", out, pos + 8, n)
        out[pos + 16:pos + 16 + n] = m
        pos += 16 + roundup(n)
    return out


def decode_chunks(buf):
    """A buffer of chunks -> the list of payloads, as memoryviews into buf
    (no copy). A wrong magic, a negative length or a payload running past the
    end raises ValueError; padding is not checked, and the last chunk's
    padding may be cut short (decode_buffer reports both as warnings)."""
    m = memoryview(buf)
    if not m.c_contiguous:
        raise ValueError("decode_chunks: the buffer must be C-contiguous")
    m = m.cast("B") if m.ndim != 1 or m.format != "B" else m
    total = m.nbytes
    out = []
    pos = 0
    while pos < total:
        if total - pos < 16:
            raise TenbinError("offset %d: truncated chunk header (%d of 16 bytes)"
                              % (pos, total - pos))
        if m[pos:pos + 8] != magic_bytes:
            raise TenbinError("offset %d: magic bytes mismatch" % pos)
        n = _struct.unpack_from("<q", m, pos + 8)[0]
        if n < 0:
            raise TenbinError("offset %d: negative length %d" % (pos + 8, n))
        if n > total - pos - 16:
            raise TenbinError("offset %d: payload of %d bytes runs past the end (%d left)"
                              % (pos + 16, n, total - pos - 16))
        out.append(m[pos + 16:pos + 16 + n])
        pos += 16 + roundup(n)
    return out


def encode_buffer(l, infos=None):
    """Arrays (a list or tuple) -> their tenbin encoding, a bytearray,
    byte-identical to webdataset's tenbin.encode_buffer."""
    if not isinstance(l, (list, tuple)):
        raise ValueError("encode_buffer requires a list of arrays")
    return _dumps(l, infos, as_bytearray=True)


def decode_buffer(buf, infos=False, copy=False):
    """A tenbin encoding (any C-contiguous bytes-like object) -> arrays:
    read-only views into buf, which they keep referenced (copy=True: writable
    arrays of their own). infos as in decode_list."""
    return _loads(buf, infos, copy)


# ------------------------------------------------------- streams and files

def write(stream, l, infos=None):
    """Writes the encoding of arrays to a binary stream (one write call)."""
    stream.write(_dumps(l, infos))


def _read_exact(stream, n):
    """Up to n bytes (fewer only at EOF), reading a large claimed length in
    steps so that a hostile length costs no more memory than the stream
    really holds."""
    if n <= _READ_STEP:
        b = stream.read(n)
        return b if b is not None else b""
    parts = []
    left = n
    while left > 0:
        b = stream.read(min(left, _READ_STEP))
        if not b:
            break
        parts.append(b)
        left -= len(b)
    return b"".join(parts)


def _read_chunk(stream, out):
    """Appends one chunk (magic, length, payload, padding) from stream to out.
    False at a clean EOF; a short chunk is appended as it is (the decoder
    then reports it)."""
    head = _read_exact(stream, 16)
    if not head:
        return False
    out += head
    if len(head) < 16 or head[:8] != magic_bytes:
        return True
    n = _struct.unpack("<q", head[8:16])[0]
    if n < 0:
        return True
    body = _read_exact(stream, roundup(n))
    out += body
    return True


def read(stream, n=_sys.maxsize, infos=False, copy=False):
    """Reads at most n arrays (header and data chunks) from a binary stream;
    stops at EOF. The arrays are read-only views into the bytes read
    (copy=True: writable)."""
    buf = bytearray()
    for _ in range(n):
        if not _read_chunk(stream, buf):
            break
        if not _read_chunk(stream, buf):
            break  # a header without data: the decoder rejects it
    return _loads(buf, infos, copy)


def _check_name(fname, nocheck):
    path = _os.fspath(fname)
    name = _os.fsdecode(path)
    if not nocheck and not name.endswith(".ten"):
        raise ValueError("file name should end in .ten (or pass nocheck=True)")
    return path


def save(fname, *args, infos=None, nocheck=False):
    """Writes the arrays given as arguments to fname (a .ten file unless
    nocheck=True), atomically: a temporary file renamed over fname."""
    path = _check_name(fname, nocheck)
    arrays, names = _prepare(args, infos)
    try:
        _tensio.save(path, arrays, format="tenbin", names=names, sync=False)
    except _tensio.Error as e:
        raise _fail(e) from e


def load(fname, infos=False, nocheck=False, copy=False):
    """The arrays of a .ten file (nocheck=True: any name), as read-only views
    into the mapped file, which stays mapped while a view lives (copy=True:
    writable copies; the mapping goes with the container)."""
    path = _check_name(fname, nocheck)
    try:
        c = _tensio.open(path, format="tenbin")
    except _tensio.Error as e:
        raise _fail(e) from e
    return _result(c, infos, copy)


# ------------------------------------------------- tensorcom ZeroMQ helpers

def zsend_single(socket, l, infos=None):
    """Sends arrays as one ZeroMQ frame holding their tenbin encoding
    (socket: a pyzmq socket); returns what socket.send returns."""
    return socket.send(_dumps(l, infos))


def _recv_frames(socket, multipart):
    """Received frames without a copy where the socket allows it."""
    try:
        if multipart:
            return socket.recv_multipart(copy=False)
        return socket.recv(copy=False)
    except TypeError:  # a socket-like object without pyzmq's copy=
        return socket.recv_multipart() if multipart else socket.recv()


def zrecv_single(socket, infos=False, copy=False):
    """Receives one frame sent by zsend_single -> arrays (read-only views
    into the frame; copy=True: writable)."""
    return _loads(_recv_frames(socket, False), infos, copy)


def zsend_multipart(socket, l, infos=None):
    """Sends arrays as a multipart message, a header frame and a data frame
    per array (tensorcom's framing)."""
    return socket.send_multipart(encode_list(l, infos=infos))


def zrecv_multipart(socket, infos=False, copy=False):
    """Receives a message sent by zsend_multipart -> arrays (read-only views
    into the frames; copy=True: writable)."""
    return _loads_parts(_recv_frames(socket, True), infos, copy)
