#!/usr/bin/python3
"""A small, independent tensorcom peer for the `tensio send` / `tensio recv` tests.

It speaks NVlabs tensorcom's wire format over ZeroMQ, written from the notes
(shared/specs/notes-zio.md section 6 and shared/specs/tenbin.md), not from
tensorcom's code:

- multipart (tensorcom's default): per array a header frame, the int64 words
  [dtype code, 8 ASCII bytes NUL-padded][info, 8 bytes][ndim][dims...], then a
  data frame with the raw C-order little-endian bytes;
- single: one frame holding the .ten chunk stream, each chunk being the magic
  "~TenBin~", the payload length as int64 LE, the payload, and zero padding to
  a multiple of 64 bytes.

Needs pyzmq and numpy (Debian: python3-zmq python3-numpy), so run it with
/usr/bin/python3.

Usage:
  tensorcom_peer.py send URL [--count N] [--single] [--timeout SEC]
  tensorcom_peer.py recv URL [--count N] [--timeout SEC] [--hold SEC] [--hwm N]
  tensorcom_peer.py raw URL [--timeout SEC]

URL is a tensorcom URL: zpush:// zpull:// zpub:// zsub:// (PUSH connects, PULL
binds, PUB binds, SUB connects), zrpush:// … with bind and connect swapped,
"+ipc" (zpush+ipc://PATH) for ipc, "#TOPIC" for a SUB subscription. A binding
peer may use port "*" and prints "tensorcom_peer: bound ENDPOINT" on stderr.

send: sends N batches of four deterministic arrays (float32 [2,3,4], int16
[4,5], uint8 [65], float64 [3]; batch i adds i to every element) and prints
one JSON line per batch: {"index", "arrays": [{"name", "dtype", "shape",
"sha256"}]}.

recv: (after --hold seconds) receives N batches and prints one JSON line per batch: {"index",
"frames", "bytes", "arrays": [...]} as above. A batch it cannot decode is an
error (exit 1).

raw: sends a fixed list of hand-made messages, valid and malformed,
interleaved (see RAW_PLAN), then prints one JSON object describing them:
{"messages": [{"kind": "valid"|"malformed", "what", "frames", "arrays"?}],
"valid": V, "malformed": M}.

Exit status: 0 success, 1 failure (timeout, bad data), 2 usage error.
"""

import argparse
import hashlib
import json
import struct
import sys
import time

try:
    import numpy as np
    import zmq
except ImportError as e:  # pragma: no cover - reported to the test
    print(f"tensorcom_peer: needs pyzmq and numpy (python3-zmq, python3-numpy): {e}",
          file=sys.stderr)
    sys.exit(3)

MAGIC = b"~TenBin~"

# tensorcom's short dtype codes and the NumPy dtypes they stand for. uint32 is
# "u4" (tensorcom's own table misspells it "unit32"; that bug is not copied).
CODES = {
    "f2": "float16", "f4": "float32", "f8": "float64",
    "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
    "u1": "uint8", "u2": "uint16", "u4": "uint32", "u8": "uint64",
}
CODE_OF = {v: k for k, v in CODES.items()}


class PeerError(Exception):
    pass


# ------------------------------------------------------------------ framing

def pack8(s):
    """An ASCII string of at most 8 characters as 8 NUL-padded bytes."""
    b = s.encode("ascii")
    if len(b) > 8:
        raise PeerError(f"'{s}' is longer than 8 bytes")
    return b + b"\0" * (8 - len(b))


def unpack8(b):
    """8 NUL-padded ASCII bytes as a string (NULs stripped at both ends)."""
    return b.decode("ascii").strip("\0")


def le(a):
    """The array as C-contiguous little-endian."""
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a


def header_frame(a, info=""):
    a = le(a)
    code = CODE_OF.get(a.dtype.name)
    if code is None:
        raise PeerError(f"tensorcom has no code for {a.dtype.name}")
    words = pack8(code) + pack8(info) + struct.pack("<q", a.ndim)
    words += b"".join(struct.pack("<q", d) for d in a.shape)
    return words


def encode_multipart(arrays, infos):
    frames = []
    for a, info in zip(arrays, infos):
        frames.append(header_frame(a, info))
        frames.append(le(a).tobytes())
    return frames


def roundup64(n):
    return (n + 63) // 64 * 64


def chunk(payload):
    pad = roundup64(len(payload)) - len(payload)
    return MAGIC + struct.pack("<q", len(payload)) + payload + b"\0" * pad


def encode_single(arrays, infos):
    return b"".join(chunk(f) for f in encode_multipart(arrays, infos))


def decode_header(h):
    if len(h) < 24 or len(h) % 8 != 0:
        raise PeerError(f"header frame of {len(h)} bytes (expected 24 + 8*ndim)")
    code = unpack8(h[0:8])
    if code not in CODES:
        raise PeerError(f"unknown dtype code {code!r}")
    info = unpack8(h[8:16])
    (ndim,) = struct.unpack("<q", h[16:24])
    if ndim < 0 or len(h) != 24 + 8 * ndim:
        raise PeerError(f"ndim {ndim} does not match a {len(h)}-byte header")
    shape = struct.unpack(f"<{ndim}q", h[24:24 + 8 * ndim])
    if any(d < 0 for d in shape):
        raise PeerError(f"negative dimension in {shape}")
    return np.dtype(CODES[code]).newbyteorder("<"), info, tuple(shape)


def decode_multipart(frames):
    if len(frames) % 2 != 0:
        raise PeerError(f"{len(frames)} frames (expected a header and a data frame per array)")
    out = []
    for h, d in zip(frames[0::2], frames[1::2]):
        dtype, info, shape = decode_header(h)
        n = 1
        for x in shape:
            n *= x
        if len(d) != n * dtype.itemsize:
            raise PeerError(f"data frame of {len(d)} bytes for {dtype.name} {list(shape)} "
                            f"(expected {n * dtype.itemsize})")
        out.append((info, np.frombuffer(d, dtype=dtype, count=n).reshape(shape)))
    return out


def decode_chunks(buf):
    chunks = []
    off = 0
    while off < len(buf):
        if buf[off:off + 8] != MAGIC:
            raise PeerError(f"offset {off}: no ~TenBin~ magic")
        if off + 16 > len(buf):
            raise PeerError(f"offset {off}: truncated chunk length")
        (n,) = struct.unpack("<q", buf[off + 8:off + 16])
        if n < 0 or off + 16 + n > len(buf):
            raise PeerError(f"offset {off}: chunk length {n} runs past the end")
        chunks.append(buf[off + 16:off + 16 + n])
        off += 16 + roundup64(n)
    return chunks


def decode_message(frames):
    if len(frames) == 1 and frames[0][:8] == MAGIC:
        return decode_multipart(decode_chunks(frames[0]))
    return decode_multipart(frames)


def describe(info, a):
    return {"name": info or None, "dtype": a.dtype.name, "shape": list(a.shape),
            "sha256": hashlib.sha256(le(a).tobytes()).hexdigest()}


# --------------------------------------------------------------- test data

INFOS = ["image", "label", "bytes", "weight"]


def batch(i):
    """Batch i: four arrays of four dtypes; every element is offset by i."""
    return [
        (np.arange(24, dtype="<f4").reshape(2, 3, 4) * 0.5 + i),
        (np.arange(20, dtype="<i2").reshape(4, 5) - 7 + i),
        ((np.arange(65) * 3 + i) % 256).astype("<u1"),
        (np.array([1.0 / 3, -2.5, 1e300], dtype="<f8") + i),
    ]


def zio_tens(arrays, seqno):
    """A ZIO TENS message (prefix, coordinates, one payload part per array)."""
    kinds = {"f": "f", "i": "i", "u": "u", "b": "b"}
    tensors = []
    for k, a in enumerate(arrays):
        tensors.append({"dtype": kinds[a.dtype.kind], "word": a.dtype.itemsize,
                        "shape": list(a.shape), "part": k})
    label = json.dumps({"TENS": {"tensors": tensors}}).encode()
    prefix = b"ZIO" + b"0" + b"TENS" + label
    coord = struct.pack("<QQQ", 7, 0, seqno)
    return [prefix, coord] + [le(a).tobytes() for a in arrays]


def raw_plan():
    """(kind, what, frames, arrays-or-None) for the raw mode, in send order."""
    a0 = batch(100)
    a1 = [np.arange(6, dtype="<f4").reshape(2, 3)]
    z = [np.array([[1.5, -2.0], [3.25, 4.0]], dtype="<f4")]
    a3 = batch(103)
    good_single = encode_single(a1, ["single"])
    bad_short = encode_multipart([np.zeros((4, 5), dtype="<i2")], [""])
    bad_short[1] = bad_short[1][:30]
    hdr_big_ndim = pack8("f4") + pack8("") + struct.pack("<q", 5) + struct.pack("<qq", 2, 2)
    truncated_ten = encode_single([np.arange(40, dtype="<f4")], [""])[:120]
    return [
        ("valid", "tensorcom multipart, 4 arrays", encode_multipart(a0, INFOS),
         list(zip(INFOS, a0))),
        ("malformed", "header frame of 20 bytes",
         [pack8("f4") + pack8("") + b"\1\0\0\0", b"\0" * 4], None),
        ("valid", "tensorcom single frame", [good_single], [("single", a1[0])]),
        ("malformed", "unknown dtype code q9",
         [pack8("q9") + pack8("") + struct.pack("<qq", 1, 4), b"\0" * 16], None),
        ("valid", "ZIO TENS multipart", zio_tens(z, 42), [("", z[0])]),
        ("malformed", "data frame 30 bytes for int16 [4, 5]", bad_short, None),
        ("malformed", "a single frame no format recognises",
         [b"hello, this is not a tensor message\n"], None),
        ("malformed", "ZIO prefix whose label is not JSON",
         [b"ZIO0TENS{not json", struct.pack("<QQQ", 0, 0, 0), b"\0" * 8], None),
        ("malformed", "3 frames: a header without its data",
         encode_multipart(a1, [""]) + [header_frame(a1[0])], None),
        ("malformed", "ndim 5 in a header holding 2 dims", [hdr_big_ndim, b"\0" * 16], None),
        ("malformed", "single .ten frame cut inside a data chunk", [truncated_ten], None),
        ("valid", "tensorcom multipart, 4 arrays", encode_multipart(a3, INFOS),
         list(zip(INFOS, a3))),
    ]


# ------------------------------------------------------------------ sockets

SCHEMES = {"zpush": (zmq.PUSH, False), "zpull": (zmq.PULL, True),
           "zpub": (zmq.PUB, True), "zsub": (zmq.SUB, False)}


def parse_url(url):
    """(socket type, bind?, zmq endpoint, topic) of a tensorcom URL."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise PeerError(f"'{url}' is not a URL")
    ipc = scheme.endswith("+ipc")
    if ipc:
        scheme = scheme[:-4]
    swap = scheme.startswith("zr")
    base = "z" + scheme[2:] if swap else scheme
    if base not in SCHEMES:
        raise PeerError(f"'{scheme}' is not a tensorcom scheme (zpush zpull zpub zsub, zr*)")
    stype, bind = SCHEMES[base]
    if swap:
        bind = not bind
    rest, _, topic = rest.partition("#")
    endpoint = ("ipc://" if ipc else "tcp://") + rest
    return stype, bind, endpoint, topic


def open_socket(ctx, url, timeout, hwm=0):
    stype, bind, endpoint, topic = parse_url(url)
    s = ctx.socket(stype)
    if hwm:
        s.setsockopt(zmq.RCVHWM, hwm)
        s.setsockopt(zmq.SNDHWM, hwm)
    ms = int(timeout * 1000)
    s.setsockopt(zmq.SNDTIMEO, ms)
    s.setsockopt(zmq.RCVTIMEO, ms)
    s.setsockopt(zmq.LINGER, ms)  # deliver what was sent before exiting
    if stype == zmq.SUB:
        s.setsockopt(zmq.SUBSCRIBE, topic.encode())
    if bind:
        s.bind(endpoint)
        ep = s.getsockopt(zmq.LAST_ENDPOINT).decode()
        print(f"tensorcom_peer: bound {ep}", file=sys.stderr, flush=True)
    else:
        s.connect(endpoint)
    return s


def send_frames(s, frames):
    try:
        s.send_multipart(frames, copy=True)
    except zmq.Again:
        raise PeerError("send timed out (no peer?)") from None


def emit(obj):
    print(json.dumps(obj), flush=True)


# -------------------------------------------------------------------- modes

def mode_send(s, args):
    for i in range(args.count):
        arrays = batch(i)
        frames = [encode_single(arrays, INFOS)] if args.single else \
            encode_multipart(arrays, INFOS)
        send_frames(s, frames)
        emit({"index": i, "arrays": [describe(n, a) for n, a in zip(INFOS, arrays)]})


def mode_recv(s, args):
    if args.hold:
        time.sleep(args.hold)
    for i in range(args.count):
        try:
            frames = s.recv_multipart(copy=True)
        except zmq.Again:
            raise PeerError(f"timed out waiting for batch {i}") from None
        decoded = decode_message(frames)
        emit({"index": i, "frames": len(frames), "bytes": sum(len(f) for f in frames),
              "arrays": [describe(n, a) for n, a in decoded]})


def mode_raw(s, args):
    out = []
    for kind, what, frames, arrays in raw_plan():
        send_frames(s, frames)
        m = {"kind": kind, "what": what, "frames": len(frames)}
        if arrays is not None:
            m["arrays"] = [describe(n, a) for n, a in arrays]
        out.append(m)
    emit({"messages": out, "valid": sum(m["kind"] == "valid" for m in out),
          "malformed": sum(m["kind"] == "malformed" for m in out)})


def main():
    ap = argparse.ArgumentParser(description="tensorcom peer for the tensio tests")
    ap.add_argument("mode", choices=["send", "recv", "raw"])
    ap.add_argument("url")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--single", action="store_true")
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--hold", type=float, default=0.0,
                    help="recv: wait this many seconds before reading")
    ap.add_argument("--hwm", type=int, default=0, help="the socket's high-water marks")
    args = ap.parse_args()
    if args.count < 1 or args.timeout <= 0:
        ap.error("--count and --timeout must be positive")
    ctx = zmq.Context()
    try:
        s = open_socket(ctx, args.url, args.timeout, args.hwm)
        try:
            {"send": mode_send, "recv": mode_recv, "raw": mode_raw}[args.mode](s, args)
        finally:
            s.close()
    except (PeerError, zmq.ZMQError) as e:
        print(f"tensorcom_peer: {e}", file=sys.stderr)
        return 1
    finally:
        ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
