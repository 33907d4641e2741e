"""ZIO TENS messages from Python: a list of frames (bytes) for pyzmq's
send_multipart, and back.

    frames = tensio.zio.encode([a, b], label_extra={"flow": "DAT"}, seqno=7)
    sock.send_multipart(frames)
    c = tensio.zio.decode(sock.recv_multipart(copy=False))   # views into the frames

The frames are those `tensio send` sends (ZIO's C++ writes the same), and
`tensio recv` reads these. See docs/python.md and docs/formats/zio.md.
"""

import json as _json

from . import dumps_parts, loads_parts, ArgumentError

__all__ = ["encode", "decode", "label"]

_PREFIX = 8  # "ZIO", the level digit, the 4-byte form; the label follows


def _members(text):
    """The top-level members of a JSON object's text as [(key, raw value
    text)], each value exactly as written."""
    dec = _json.JSONDecoder()
    ws = " \t\r\n"
    i = len(text) - len(text.lstrip(ws))
    if text[i:i + 1] != "{":
        raise ValueError("the label is not a JSON object")
    out = []
    i += 1
    while True:
        while text[i] in ws:
            i += 1
        if text[i] == "}" and not out:
            return out
        key, i = dec.raw_decode(text, i)
        while text[i] in ws:
            i += 1
        i += 1  # ':'
        while text[i] in ws:
            i += 1
        _, end = dec.raw_decode(text, i)
        out.append((key, text[i:end]))
        i = end
        while text[i] in ws:
            i += 1
        if text[i] == "}":
            return out
        i += 1  # ','


def _with_extra(prefix_part, extra):
    """Part 0 with the top-level label keys of `extra` added (or replacing
    keys other than TENS). The label stays as ZIO's C++ writes it: compact,
    keys in byte order; tensio's TENS text is kept as written."""
    head, text = prefix_part[:_PREFIX], bytes(prefix_part[_PREFIX:]).decode("utf-8")
    members = dict(_members(text)) if text else {}
    for k, v in extra.items():
        if not isinstance(k, str):
            raise ArgumentError("label_extra: keys must be str, not %s" % type(k).__name__)
        if k == "TENS":
            raise ArgumentError("label_extra: TENS is the tensors' description, written by "
                                "tensio (use metadata= for TENS.metadata)")
        try:
            members[k] = _json.dumps(v, ensure_ascii=False, separators=(",", ":"),
                                     sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ArgumentError("label_extra[%r]: not JSON: %s" % (k, e)) from None
    body = ",".join(_json.dumps(k, ensure_ascii=False) + ":" + members[k]
                    for k in sorted(members))
    return bytes(head) + ("{" + body + "}").encode("utf-8")


def encode(arrays, label_extra=None, seqno=None, names=None, metadata=None, level=None,
           form=None, origin=None, granule=None, **options):
    """A ZIO TENS message of arrays (a list, a dict name -> array, or a
    Container) as a list of frames (bytes): the prefix with the JSON label,
    the coordinates (origin, granule, seqno), one payload frame per tensor.
    label_extra: a dict of other top-level label keys ({"flow": "DAT"});
    metadata goes to TENS.metadata; names to each tensor's metadata.name.
    level (0..8), form (1-4 characters, default TENS), origin, granule, seqno:
    the header; other options as for tensio.save (widen, drop_names, ...)."""
    for k, v in (("seqno", seqno), ("level", level), ("form", form), ("origin", origin),
                 ("granule", granule)):
        if v is not None:
            options[k] = v
    frames = dumps_parts(arrays, "zio", names=names, metadata=metadata, **options)
    if label_extra:
        frames[0] = _with_extra(frames[0], label_extra)
    return frames


def decode(frames, strict=False, limits=None, copy=False):
    """A Container of the ZIO TENS message in frames (bytes-like objects, or
    pyzmq Frames): arrays are read-only views into the frames (copy=True:
    into a copy). Its .properties have "level", "form", "origin", "granule",
    "seqno"; .metadata is TENS.metadata. Malformed frames raise a
    tensio.Error."""
    return loads_parts(frames, "zio", strict=strict, limits=limits, copy=copy)


def label(frames):
    """The label of a ZIO message's first frame, parsed (a dict; {} for an
    empty label)."""
    part = bytes(memoryview(frames[0]))
    if part[:3] != b"ZIO" or len(part) < _PREFIX:
        raise ArgumentError("not a ZIO message: the first frame does not start with the "
                            "ZIO prefix")
    text = part[_PREFIX:].decode("utf-8")
    return _json.loads(text) if text else {}
