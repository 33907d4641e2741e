"""WebDataset tar shards: tensio.Shard (docs/python.md, docs/formats/webdataset.md).

    with tensio.Shard("train-000123.tar") as s:
        for sample in s:                 # WebDataset-style dicts
            x, y = sample["ten"]         # .ten: a list of arrays, views
            label = sample["cls"]        # other members: bytes

The shard is mapped and indexed once (O(members)); a tensor member decodes
only when its sample is asked for, and its arrays are read-only views into
the mapping that stay valid after the Shard is closed.
"""

import collections as _collections
import os as _os

from . import _tensio
from . import Container, NotFoundError, _limits_tuple, _open_flags

Member = _collections.namedtuple(
    "Member", "name key ext offset size sample duplicate format")
Member.__doc__ = """A regular file of the tar: its path, sample key and extension (the
WebDataset split), its data's offset and size, its sample's index (None when
WebDataset would skip it), whether an earlier member of the same sample has
the same extension, and the tensio format its extension names (None for
.cls, .json, .jpg ...)."""


class Shard:
    """A WebDataset tar shard: a path (mapped) or a bytes-like object
    (borrowed). len() is the number of samples; iteration yields them as
    dicts {"__key__": key, "__url__": path, ext: value} as WebDataset builds
    them (extensions lower-cased). With decode (the default) a .ten member is
    a list of arrays (what WebDataset's tenbin decoder returns), a .npy one an
    array, another tensor member a tensio.Container, anything else bytes;
    without decode every value is bytes. decode may also be a function
    (container, format name) -> value, called for each tensor member (a
    member of no tensor format stays bytes): tensio.torch gives torch
    tensors that way."""

    def __init__(self, source, limits=None, decode=True):
        if isinstance(source, (str, _os.PathLike)):
            self.url = _os.fspath(source)
            self._s = _tensio.shard_open(self.url, _limits_tuple(limits))
        else:
            self.url = None
            self._s = _tensio.shard_open(source, _limits_tuple(limits))
        self._limits = _limits_tuple(limits)
        self.decode = decode
        nm, ns = self._s.counts()
        self.members = [Member(*self._s.member(i)) for i in range(nm)]
        self._nsamples = ns

    def _o(self):
        if self._s is None:
            raise ValueError("I/O operation on a closed tensio.Shard")
        return self._s

    def close(self):
        """Releases the shard; containers and arrays taken from it stay valid."""
        self._s = None

    closed = property(lambda self: self._s is None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __len__(self):
        return self._nsamples

    def keys(self):
        """The sample keys, in archive order."""
        s = self._o()
        return [s.sample(i)[0] for i in range(self._nsamples)]

    def _member_index(self, member):
        if isinstance(member, str):
            i = self._o().find(member)
            if i < 0:
                raise NotFoundError("no member %r in the shard" % member)
            return i
        i = member.__index__()
        if not 0 <= i < len(self.members):
            raise IndexError("member %d out of range (%d members)" % (i, len(self.members)))
        return i

    def data(self, member):
        """The bytes of a member (by path or index)."""
        return self._o().data(self._member_index(member))

    def open(self, member, format=None, strict=False, copy=False):
        """A member (by path or index) as a tensio.Container; format forces
        one (default: from its extension)."""
        flags = _open_flags(strict)
        if copy:
            flags |= _tensio.OPEN_COPY
        return Container(self._o().open_member(self._member_index(member), format, flags,
                                               self._limits))

    def _value(self, i, decode):
        m = self.members[i]
        if not decode or m.format is None:
            return self._o().data(i)
        return _decoded(self.open(i), m.format, decode)

    def sample(self, i, decode=None):
        """Sample i as a dict (see the class)."""
        decode = self.decode if decode is None else decode
        key, idx, _ = self._o().sample(i)
        d = {"__key__": key, "__url__": self.url}
        for j in idx:
            d[self.members[j].ext.lower()] = self._value(j, decode)
        return d

    def __getitem__(self, i):
        n = self._nsamples
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("sample %d out of range (%d samples)" % (i, n))
        return self.sample(i)

    def __iter__(self):
        for i in range(self._nsamples):
            yield self.sample(i)

    def __repr__(self):
        return "<tensio.Shard %s: %d samples, %d members%s>" % (
            self.url or "(bytes)", self._nsamples, len(self.members),
            ", closed" if self.closed else "")


def shard_list(spec, limits=None):
    """The names WebDataset's shard-list notation expands to:
    "https://h/shard-{000..099}.tar" (zero-padded as written), "{a,b}",
    several braces (every combination, the last varying fastest), "::"
    between lists, "@FILE" a file of such lists, one a line (no pipe: lines)
    (tio_shard_list_expand; at most limits["max_shards"])."""
    return _tensio.shard_list(_os.fspath(spec), _limits_tuple(limits))


def _arrays(c, fmt):
    """decode=True's value of a tensor member opened as c: .ten a list of
    arrays, .npy its array, another format the Container."""
    if fmt == "tenbin":
        return list(c)
    if fmt == "npy":
        return c[0]
    return c


def _decoded(c, fmt, decode):
    return (decode if callable(decode) else _arrays)(c, fmt)


def _format_for(name):
    """The format a member's name gives, or None: bytes (.bin is bytes, as
    WebDataset has it; tio_shard_format_for_name)."""
    return _tensio.shard_format(name)


def stream_shards(spec, limits=None, decode=True):
    """Samples of every shard `spec` names (shard_list), each shard read
    in one pass as a stream (tio_shard_stream: a path, "-", "pipe:COMMAND"
    or an http(s) URL, gzip/bzip2/xz/zstd-compressed or not; memory bounded
    by the largest member and limits["max_member_bytes"]): WebDataset-style
    dicts {"__key__": key,
    "__url__": shard, ext: value}, a sample per run of members with one key,
    values decoded as tensio.Shard decodes them (decode=False: bytes; a
    function: as for Shard)."""
    from . import formats, loads
    lim = _limits_tuple(limits)
    for url in shard_list(spec, limits):
        s = _tensio.shard_stream_open(url, lim)
        try:
            cur, sample = None, None
            while True:
                m = s.next()
                if m is None:
                    break
                name, key, ext, _, _, idx, data = m
                if idx is None:  # no sample (WebDataset's __X__ metadata)
                    continue
                if idx != cur:
                    if sample is not None:
                        yield sample
                    cur, sample = idx, {"__key__": key, "__url__": url}
                fmt = _format_for(name) if decode else None
                if fmt is None:
                    sample[ext.lower()] = data
                    continue
                sample[ext.lower()] = _decoded(loads(data, format=fmt, limits=limits), fmt, decode)
            if sample is not None:
                yield sample
        finally:
            s.close()
