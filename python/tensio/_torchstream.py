"""tensio.torch.StreamDataset: batches served over ZeroMQ (`tensio send
--epochs`, docs/streaming.md "Serving batches to trainers") as a PyTorch
IterableDataset whose iteration is one epoch.

    ds = StreamDataset("zpull://0.0.0.0:7880", servers=2)   # binds, as tensorcom does
    for epoch in range(10):
        for x, y in ds:            # torch tensors, zero-copy views of the frames
            ...

torch is imported here only; `tensio.torch` re-exports the class.
"""

import collections

import torch

from . import Error, ArgumentError
from .stream import Stream

EPOCH = "__epoch"
KEY = "__key__"


class StreamError(Error):
    """The served messages do not make sense as epochs (a batch of an epoch
    already ended, more batches ahead than max_ahead)."""


class StreamDataset(torch.utils.data.IterableDataset):
    """An IterableDataset over the batches `servers` servers send to `url`.

    url: a tensorcom URL (zpull://0.0.0.0:7880 binds, zrpull://host:7880
    connects, +ipc, braces) or a plain endpoint with bind=...; as
    tensio.Stream. servers: how many servers send to this trainer: an epoch
    ends when the end-of-epoch marker of each has arrived (ZeroMQ keeps each
    connection's messages in order, so every batch a server sent here for the
    epoch came before its marker). Each iteration is the next epoch (0, 1,
    ...): it yields the epoch's batches, each a list of torch tensors in the
    message's order (the `__epoch` and `__key__` tensors removed), or, with
    keys=True, a (tensors, keys) pair, keys the batch's sample keys (`tensio
    send --keys`). Tensors are zero-copy views of the received frames where
    they are aligned (copies otherwise; read-only memory: clone to write).

    A server may run ahead of the others into the next epoch: its batches
    are kept (at most max_ahead of them, else StreamError) and yielded by
    the next iteration. An iteration left before its end resumes the same
    epoch the next time. timeout: seconds one receive may wait (None:
    forever); tensio.TimeoutError when it runs out. hwm: the receive queue
    in messages (per server connection). The socket is opened at the first
    iteration and kept for the next epochs (close() or the end of `with`).
    Use it in the main process (DataLoader(batch_size=None, num_workers=0)):
    the batches are batched already, and only one process can bind the URL.
    """

    def __init__(self, url, servers=1, keys=False, timeout=None, hwm=0, bind=None,
                 max_ahead=100000, limits=None):
        super().__init__()
        if int(servers) < 1:
            raise ArgumentError("servers must be >= 1, not %r" % (servers,))
        self.url = str(url)
        self.servers = int(servers)
        self.keys = bool(keys)
        self.timeout = timeout
        self.hwm = int(hwm)
        self.bind = bind
        self.max_ahead = int(max_ahead)
        self.limits = limits
        self.epoch = 0          # the epoch the next iteration yields
        self._stream = None
        self._ahead = collections.defaultdict(collections.deque)  # epoch -> batches
        self._markers = collections.Counter()                     # epoch -> markers seen
        self._nahead = 0

    @property
    def endpoint(self):
        """The endpoint as bound (the port chosen for *); opens the socket."""
        return self._open().endpoint

    def _open(self):
        if self._stream is None:
            self._stream = Stream(self.url, socket="pull", bind=self.bind, timeout=self.timeout,
                                  hwm=self.hwm, limits=self.limits)
        return self._stream

    def close(self):
        s, self._stream = self._stream, None
        if s is not None:
            s.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _batch(self, c, names):
        tensors, keys = [], None
        for i, n in enumerate(names):
            if n == EPOCH:
                continue
            if n == KEY:
                keys = bytes(c[i]).decode("utf-8", "surrogateescape").split("\0")
                continue
            tensors.append(c.tensor(i).to_torch())
        return (tensors, keys) if self.keys else tensors

    def __iter__(self):
        s = self._open()
        epoch = self.epoch
        queued = self._ahead.get(epoch)
        while queued:  # (one at a time: an iteration left early keeps the rest)
            b = queued.popleft()
            self._nahead -= 1
            yield b
        self._ahead.pop(epoch, None)
        while self._markers[epoch] < self.servers:
            c = s.recv()
            names = c.names or []
            if EPOCH in names:
                e = int(c[names.index(EPOCH)][0])
            else:
                e = epoch  # a message without epochs: this one
            if len(names) == 1:  # a marker
                if e < epoch:
                    raise StreamError("the end-of-epoch marker of epoch %d arrived during "
                                      "epoch %d: more servers send here than servers=%d" %
                                      (e, epoch, self.servers))
                self._markers[e] += 1
                continue
            if e < epoch:
                raise StreamError("a batch of epoch %d arrived during epoch %d, after the "
                                  "markers of %d servers: more servers send here than "
                                  "servers=%d" % (e, epoch, self.servers, self.servers))
            b = self._batch(c, names)
            if e == epoch:
                yield b
                continue
            if self._nahead >= self.max_ahead:
                raise StreamError("%d batches of later epochs are waiting for epoch %d to end "
                                  "(max_ahead): a server is that far ahead of another" %
                                  (self._nahead, epoch))
            self._ahead[e].append(b)
            self._nahead += 1
        del self._markers[epoch]
        self.epoch = epoch + 1
