"""tensio.torch: WebDataset tar shards as a PyTorch dataset (docs/python.md).

    import torch, tensio.torch
    ds = tensio.torch.ShardDataset("https://host/train-{000000..000099}.tar",
                                   shuffle=True, seed=1, batch_size=64)
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=4)
    for epoch in range(10):
        ds.set_epoch(epoch)
        for batch in loader:
            ...

Also StreamDataset: batches served over ZeroMQ by `tensio send --epochs`
(tensorcom-style serving, docs/streaming.md), one epoch per iteration.

Importable only where torch is (`import tensio` never imports torch).
Local shards are mapped (tensio.Shard) and their tensors are torch views of
the mapping; remote ones (http(s)://, pipe:) are read in one pass
(tensio.stream_shards) and their tensors are views of each member's bytes.
"""

try:
    import torch as _torch
    import torch.utils.data as _data
except ImportError as _e:  # pragma: no cover (the tests run where torch is)
    raise ImportError("tensio.torch needs PyTorch, which is not importable here (%s); the "
                      "rest of tensio works without it (Debian: python3-torch)" % (_e,)) from _e

import hashlib as _hashlib
import itertools as _itertools
import os as _os
import random as _random

from . import Error
from .shard import Shard, shard_list, stream_shards
from ._torchstream import StreamDataset, StreamError  # noqa: F401 (tensorcom-style serving)


def to_torch(c, fmt):
    """The decode function ShardDataset uses (decode=True), as tensio.Shard
    and tensio.stream_shards take it: a tensor member opened as Container c
    of format fmt -> .ten: a list of torch tensors, .npy: a torch tensor,
    another format: a dict name -> torch tensor. Each tensor is
    tensio.Tensor.to_torch() of the member's data: zero-copy (DLPack) unless
    the data are not aligned to their element size, when it is copied."""
    if fmt == "tenbin":
        return [c.tensor(i).to_torch() for i in range(len(c))]
    if fmt == "npy":
        return c.tensor(0).to_torch()
    return {k: c.tensor(i).to_torch() for i, k in enumerate(c.keys())}


def _rng(*parts):
    """A random.Random seeded from parts alone (the same in every process
    and run: bytes seeds are hashed with SHA-512, not Python's hash())."""
    return _random.Random(_hashlib.sha256(repr(parts).encode()).digest())


def shuffled(samples, size, rng):
    """The samples in an order drawn from rng through a buffer of at most
    size samples: filled first, then each new sample takes the place of a
    random one, which is yielded; the rest drained in random order at the
    end. The buffer never holds more than size samples (size <= 1: the
    samples in order)."""
    if size <= 1:
        yield from samples
        return
    buf = []
    for s in samples:
        if len(buf) < size:
            buf.append(s)
            continue
        i = rng.randrange(size)
        out, buf[i] = buf[i], s
        yield out
    rng.shuffle(buf)
    while buf:
        yield buf.pop()


def _batched(samples, n, collate, partial):
    batch = []
    for s in samples:
        batch.append(s)
        if len(batch) == n:
            yield collate(batch)
            batch = []
    if batch and partial:
        yield collate(batch)


def _local_path(url):
    """The file a shard name maps (None for pipe:, http(s):// and "-")."""
    if url.startswith("file:"):
        return url[5:]
    if url == "-" or url.startswith("pipe:") or "://" in url:
        return None
    return url


def _named(e, url):
    """The tensio.Error e again, its message prefixed by the shard's name
    (a mapped shard's errors and a member's decoding errors do not name it)."""
    n = type(e)("%s: %s" % (url, e.message))
    for a in ("code", "code_name", "format", "offset"):
        setattr(n, a, getattr(e, a))
    n.message = n.args[0]
    return n


def _process_group():
    d = _torch.distributed
    if d.is_available() and d.is_initialized():
        return d.get_rank(), d.get_world_size()
    return None


def _worker():
    info = _data.get_worker_info()
    return (info.id, info.num_workers) if info is not None else (0, 1)


class ShardDataset(_data.IterableDataset):
    """WebDataset tar shards as an IterableDataset of samples ({"__key__",
    "__url__", ext: value}, as tensio.Shard builds them) or, with
    batch_size, of batches (collate(list of samples); default torch's
    default_collate: tensors stacked, a .ten's list position by position,
    keys and bytes as lists).

    urls: a shard-list spec (tensio.shard_list: "https://h/s-{000..099}.tar",
    "::" between lists) or a list of them. A path (or file:PATH) is mapped
    (tensio.Shard); http(s):// and pipe:COMMAND shards are streamed in one
    pass (tensio.stream_shards).

    decode=True: tensor members as torch tensors (to_torch: .ten a list,
    .npy a tensor, another format a dict name -> tensor), other members
    bytes; decode=False: every value bytes; a function (container, format)
    -> value: its result. Tensors are zero-copy where the data allow:
      - a mapped shard's tensors are views of the mapping, which is
        copy-on-write: an in-place op (x.add_(1)) gives the process its own
        copy of the pages it writes, never the file's. A member whose data
        are not aligned to the element size is copied.
      - a streamed shard's member is copied once out of the stream's
        buffer (bytes); its tensors are views of that copy.
      - batching copies (stacking), and a DataLoader worker's tensors reach
        the main process through shared memory (torch copies them there).

    Split: the shard list, in an order shuffled per epoch from (seed, epoch)
    when shuffle (the same on every rank), is dealt to rank x worker slots:
    slot = rank * num_workers + worker takes shards slot, slot + slots, ...
    rank and world size come from the initialised torch.distributed process
    group (else 0 of 1), or rank= and world_size=; worker and num_workers
    from the DataLoader (get_worker_info). With shuffle, samples then pass
    through a buffer of shuffle_buffer samples seeded from (seed, epoch,
    rank, worker).

    Uneven split: by default each slot reads whole shards, once per epoch:
    every sample is delivered exactly once, and slots' counts differ by the
    shards' sizes (a slot may get no shard when there are fewer shards than
    slots). samples_per_rank=N instead makes every rank yield exactly N
    samples per epoch (worker w of W: N // W, plus one for w < N % W): a
    slot reads its own shards, then, if short, goes on through the epoch's
    whole shard list from its slot's position (cycling), and stops at its
    count, as DDP needs equal counts on every rank; some samples then come
    twice in an epoch and others not at all.

    set_epoch(n) before iterating a DataLoader over it (workers copy the
    dataset when the iteration starts; with persistent_workers they keep
    the epoch they started with). limits: tensio's (tensio.open).
    """

    def __init__(self, urls, shuffle=False, seed=0, shuffle_buffer=1000, decode=True,
                 batch_size=None, collate=None, partial=True, rank=None, world_size=None,
                 samples_per_rank=None, limits=None):
        super().__init__()
        if isinstance(urls, (str, _os.PathLike)):
            urls = [urls]
        self.urls = [u for spec in urls for u in shard_list(_os.fspath(spec), limits)]
        if not self.urls:
            raise ValueError("ShardDataset: no shards")
        if (rank is None) != (world_size is None):
            raise ValueError("ShardDataset: give both rank and world_size, or neither")
        if world_size is not None and not 0 <= rank < world_size:
            raise ValueError("ShardDataset: rank %r not in [0, %r)" % (rank, world_size))
        for name, v in (("batch_size", batch_size), ("samples_per_rank", samples_per_rank)):
            if v is not None and (not isinstance(v, int) or v < 1):
                raise ValueError("ShardDataset: %s must be a positive int or None, not %r"
                                 % (name, v))
        self.shuffle, self.seed, self.shuffle_buffer = bool(shuffle), seed, int(shuffle_buffer)
        self.decode = to_torch if decode is True else decode
        self.batch_size, self.partial = batch_size, bool(partial)
        self.collate = collate if collate is not None else _data.default_collate
        self.rank, self.world_size = rank, world_size
        self.samples_per_rank = samples_per_rank
        self.limits = limits
        self.epoch = 0
        self._group = _process_group()

    def set_epoch(self, epoch):
        """The epoch the next iteration is (shard order and buffer seeds)."""
        self.epoch = int(epoch)
        self._group = _process_group() or self._group

    def _rank_world(self):
        if self.rank is not None:
            return self.rank, self.world_size
        return _process_group() or self._group or (0, 1)

    def shard_order(self, epoch=None):
        """The epoch's shard list: as given, or shuffled from (seed, epoch)."""
        epoch = self.epoch if epoch is None else epoch
        order = list(self.urls)
        if self.shuffle:
            _rng("shards", self.seed, epoch).shuffle(order)
        return order

    def _shard_samples(self, url):
        try:
            yield from self._read_shard(url)
        except Error as e:
            if url in e.message:
                raise
            raise _named(e, url) from e

    def _read_shard(self, url):
        path = _local_path(url)
        if path is None:
            it = stream_shards(url, self.limits, self.decode)
            try:
                yield from it
            finally:
                it.close()
            return
        with Shard(path, self.limits, self.decode) as s:
            for i in range(len(s)):
                d = s.sample(i)
                d["__url__"] = url
                yield d

    def _own(self, shards):
        for url in shards:
            yield from self._shard_samples(url)

    def _cycling(self, own, order, start):
        yield from self._own(own)
        while True:
            n = 0
            for j in range(len(order)):
                for d in self._shard_samples(order[(start + j) % len(order)]):
                    n += 1
                    yield d
            if n == 0:
                raise ValueError("ShardDataset: samples_per_rank: the shards hold no samples")

    def __iter__(self):
        rank, world = self._rank_world()
        worker, workers = _worker()
        epoch = self.epoch
        slots, slot = world * workers, rank * workers + worker
        order = self.shard_order(epoch)
        own = order[slot::slots]
        if self.samples_per_rank is None:
            read = self._own(own)
            samples = read
        else:
            n = self.samples_per_rank
            read = self._cycling(own, order, slot)
            samples = _itertools.islice(read, n // workers + (worker < n % workers))
        if self.shuffle:
            samples = shuffled(samples, self.shuffle_buffer,
                               _rng("samples", self.seed, epoch, rank, worker))
        if self.batch_size is not None:
            samples = _batched(samples, self.batch_size, self.collate, self.partial)
        try:
            yield from samples
        finally:
            # a shard left before its end (samples_per_rank, or the consumer
            # stopped): its stream (an HTTP transfer, a command) ends now
            read.close()

    def __repr__(self):
        return "<tensio.torch.ShardDataset: %d shards%s, epoch %d>" % (
            len(self.urls), ", shuffled" if self.shuffle else "", self.epoch)
