"""tensio.ShardWriter: WebDataset tar shards written sample by sample, as
WebDataset's ShardWriter writes them (docs/python.md, docs/formats/webdataset.md).

    with tensio.ShardWriter("train-%06d.tar", maxcount=10000) as w:
        for i, (x, y) in enumerate(data):
            w.write({"__key__": "%08d" % i, "ten": [x, y], "cls": 3})
    w.shards                          # the paths written, in order

Each shard is written by libtensio's tio_shard_writer_* (ustar members, an
atomic file: a temporary beside it, renamed over it when the shard is
complete), so a shard is either whole or absent.
"""

import collections.abc as _abc
import json as _json
import numbers as _numbers
import os as _os

from . import _tensio
from . import ArgumentError, Container, dumps, formats
from .shard import _format_for

_BLOCK = 512
_RECORD = 10240  # what tio_shard_writer pads the archive to (its default)
_OCTAL11_MAX = 0o77777777777  # the largest size a ustar header holds
# WebDataset's default encoders (webdataset/writer.py) besides tensio's formats
_SCALAR_EXTS = frozenset("cls cls2 class count index inx id".split())
_JSON_EXTS = frozenset(("json", "jsn"))


def _padded(n):
    return -(-n // _BLOCK) * _BLOCK


def _pax_record_len(key, value_len):
    """The length of pax record "LEN KEY=VALUE\\n", LEN counting itself."""
    body = 1 + len(key) + 1 + value_len + 1
    n = body + 1
    while len(str(n)) + body != n:
        n = len(str(n)) + body
    return n


def _member_bytes(name, size):
    """The bytes tio_shard_writer writes for a member: a pax header where
    ustar cannot hold the name (over 100 bytes: names here have no '/' to
    split at) or the size, the header, the data padded to 512."""
    pax = 0
    if len(name) > 100:
        pax += _pax_record_len("path", len(name))
    if size > _OCTAL11_MAX:
        pax += _pax_record_len("size", len(str(size)))
    return (_BLOCK + _padded(pax) if pax else 0) + _BLOCK + _padded(size)


def _file_size(members_bytes):
    """The shard file's size: the members, two zero blocks, padded to a record."""
    return -(-(members_bytes + 2 * _BLOCK) // _RECORD) * _RECORD


class ShardWriter:
    """Writes samples into numbered WebDataset tar shards, as WebDataset's
    ShardWriter: pattern is a path with a printf-style shard number
    ("out/train-%06d.tar"), shards numbered from start_shard. write(sample)
    takes a dict {"__key__": key, ext: value, ...}: each ext is a member
    KEY.EXT, in sorted order; keys starting with "_" (__key__, __url__ ...)
    are not written, as WebDataset's default. A value is written as:

    - bytes, bytearray, memoryview: as they are; str: UTF-8;
    - a tensio format's extension (.npy, .ten, .safetensors, .npz, .pth ...):
      the value encoded by tensio in that format (an array, a list/tuple/dict
      of arrays or a tensio.Container; one array alone is a list of one, as
      WebDataset's tenbin encoder has it);
    - cls, cls2, class, count, index, inx, id: str(value) in ASCII; json,
      jsn: json.dumps(value) in UTF-8 (WebDataset's encoders);
    - anything else is a TypeError naming the member.

    A new shard is started when the next sample would take the current one
    past maxcount samples or its file past maxsize bytes (headers, padding
    and the archive's end counted: no shard file is larger, except one
    holding a single sample that is larger alone). A sample is checked and
    encoded whole before anything is written: a refused one writes nothing
    and the writer stays usable. close() (or leaving a `with` block) ends
    the last shard; an exception inside the block, or abort(), removes the
    shard being written, leaving the finished ones. Nothing is written
    before the first sample (no empty shard).

    .shards: the paths of the finished shards, .counts: their samples,
    .total: samples written, .count / .size: samples and member bytes of
    the shard being written, .fname: its path, .shard: the next number.
    post(path) is called on each finished shard. mtime: every member's
    modification time (0: reproducible shards); sync=False skips fsync.
    """

    def __init__(self, pattern, maxcount=100000, maxsize=3e9, post=None, start_shard=0,
                 mtime=0, sync=True):
        pattern = _os.fspath(pattern)
        try:
            a, b = pattern % start_shard, pattern % (start_shard + 1)
        except (TypeError, ValueError) as e:
            raise ArgumentError("ShardWriter: pattern %r takes no shard number (%s): give "
                                "one like 'train-%%06d.tar'" % (pattern, e)) from None
        if a == b:
            raise ArgumentError("ShardWriter: pattern %r gives every shard one name" % pattern)
        if int(maxcount) < 1 or not maxsize > 0:
            raise ArgumentError("ShardWriter: maxcount and maxsize must be positive")
        if post is not None and not callable(post):
            raise TypeError("ShardWriter: post must be callable")
        self.pattern = pattern
        self.maxcount = int(maxcount)
        self.maxsize = int(maxsize)
        self.post = post
        self.shard = int(start_shard)
        self.shards = []
        self.counts = []
        self.total = 0
        self.count = 0
        self.size = 0
        self.fname = None
        self._mtime = int(mtime)
        self._flags = 0 if sync else _tensio.SAVE_NO_SYNC
        self._w = None
        self._closed = False
        self._writable = {n for n, f in formats().items() if f["write"]}

    # ------------------------------------------------------------ encoding

    def _encode(self, key, ext, value):
        if isinstance(value, (bytes, bytearray, memoryview)):
            return value
        if isinstance(value, str):
            return value.encode("utf-8")
        last = ext.rsplit(".", 1)[-1].lower()
        if last in _SCALAR_EXTS and isinstance(value, _numbers.Number):
            return str(value).encode("ascii")
        if last in _JSON_EXTS:
            try:
                return _json.dumps(value).encode("utf-8")
            except (TypeError, ValueError) as e:
                raise TypeError("ShardWriter: member %s.%s: %s" % (key, ext, e)) from None
        fmt = _format_for("x." + ext)
        fmt = fmt if fmt in self._writable else None
        if fmt is not None:
            if not isinstance(value, (list, tuple, dict, Container)):
                if not hasattr(value, "__array__") and not hasattr(value, "__array_interface__"):
                    raise TypeError("ShardWriter: member %s.%s: a %s is no array, list, dict "
                                    "or Container to encode as %s"
                                    % (key, ext, type(value).__name__, fmt))
                value = [value]
            return dumps(list(value) if isinstance(value, tuple) else value, format=fmt,
                         as_bytearray=True)
        raise TypeError("ShardWriter: member %s.%s: no encoder for a %s with extension '%s' "
                        "(give bytes or str, or use a tensio format's extension: .npy, .ten, "
                        ".safetensors ...)" % (key, ext, type(value).__name__, last))

    def _members(self, sample):
        """[(name, bytes-like)] of a sample, checked and encoded."""
        if not isinstance(sample, _abc.Mapping):
            raise TypeError("ShardWriter.write: a sample is a dict, not %s"
                            % type(sample).__name__)
        if "__key__" not in sample:
            raise ArgumentError("ShardWriter.write: the sample has no '__key__'")
        key = sample["__key__"]
        if not isinstance(key, str):
            raise TypeError("ShardWriter.write: '__key__' must be a str, not %s"
                            % type(key).__name__)
        for bad, why in (("/", "a key is one path component"),
                         (".", "a reader splits the key from the extension at the first dot"),
                         ("\0", "a NUL cannot be in a tar name")):
            if bad in key:
                raise ArgumentError("ShardWriter.write: key %r has a %r: %s"
                                    % (key, bad, why))
        if not key:
            raise ArgumentError("ShardWriter.write: the key is empty")
        out, seen = [], {}
        for ext in sorted(k for k in sample if not (isinstance(k, str) and k.startswith("_"))):
            if not isinstance(ext, str) or not ext or "/" in ext or "\0" in ext:
                raise ArgumentError("ShardWriter.write: %r is no extension (a non-empty str "
                                    "without '/')" % (ext,))
            if ext.lower() in seen:  # a reader lower-cases them: one would be lost
                raise ArgumentError("ShardWriter.write: extensions %r and %r differ in case only"
                                    % (seen[ext.lower()], ext))
            seen[ext.lower()] = ext
            name = key + "." + ext
            _tensio.shard_check_name(name)
            out.append((name, self._encode(key, ext, sample[ext])))
        if not out:
            raise ArgumentError("ShardWriter.write: sample %r has no member to write" % key)
        return out

    # -------------------------------------------------------------- shards

    def _start(self):
        fname = _os.fspath(self.pattern % self.shard)
        self._w = _tensio.shard_writer_open(fname, self._flags, self._mtime)
        self.fname = fname
        self.shard += 1
        self.count = 0
        self.size = 0

    def _finish(self):
        w, self._w = self._w, None
        if w is None:
            return
        w.close()
        self.shards.append(self.fname)
        self.counts.append(self.count)
        if self.post is not None:
            self.post(self.fname)

    def write(self, sample):
        """Writes one sample (see the class), starting a new shard first
        when it would not fit in the current one."""
        if self._closed:
            raise ValueError("I/O operation on a closed tensio.ShardWriter")
        members = self._members(sample)
        add = sum(_member_bytes(n.encode("utf-8"), memoryview(d).nbytes)
                  for n, d in members)
        if self._w is not None and (self.count >= self.maxcount or
                                    _file_size(self.size + add) > self.maxsize):
            self._finish()
        if self._w is None:
            self._start()
        try:
            for name, data in members:
                self._w.add(name, data)
        except BaseException:
            self.abort()  # a failed write: the shard is incomplete, none is left
            raise
        self.count += 1
        self.total += 1
        self.size = self._w.counts()[1]

    def close(self):
        """Ends the shard being written (renamed into place); idempotent."""
        self._closed = True
        self._finish()

    def abort(self):
        """Removes the shard being written (the finished ones stay)."""
        self._closed = True
        w, self._w = self._w, None
        if w is not None:
            w.abort()

    closed = property(lambda self: self._closed)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False

    def __repr__(self):
        return "<tensio.ShardWriter %s: %d shards, %d samples%s>" % (
            self.pattern, len(self.shards), self.total, ", closed" if self._closed else "")
