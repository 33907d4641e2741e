"""tensio.Stream: containers sent and received over ZeroMQ (libtensio's
tio_stream_*), as ZIO TENS messages or in tensorcom's tenbin framing.

    with tensio.Stream("zpull://127.0.0.1:7880") as rx:    # tensorcom URL: PULL, binds
        c = rx.recv(timeout=5)                             # Container of views into the frames
    with tensio.Stream("tcp://127.0.0.1:5555", socket="push") as tx:
        tx.send([a, b])                                    # a ZIO TENS message

See docs/python.md (Streams) and docs/streaming.md.
"""

from . import _tensio
from . import _owner_for, _save_args, _limits_tuple, _open_flags, Container, TimeoutError, \
    ArgumentError

_SOCKETS = {"push": 1, "pull": 2, "pub": 3, "sub": 4, "dealer": 5, "router": 6, "pair": 7}
_PROTOS = {None: 0, "auto": 0, "zio": 1, "tensorcom": 2}
_PROTO_FORMAT = {1: "zio", 2: "tenbin"}


def _ms(seconds, what):
    """Seconds (None = the default, 0 or None = forever where allowed) to ms."""
    if seconds is None:
        return -1
    ms = int(-(-float(seconds) * 1000 // 1))  # rounded up, as the CLI does
    if ms < 0:
        raise ArgumentError("%s must be >= 0 seconds" % what)
    return min(ms, 2**31 - 1)


class Stream:
    """One ZeroMQ socket sending or receiving containers (tio_stream).

    url: tcp://HOST:PORT, ipc://PATH, inproc://NAME, or a tensorcom URL
    (zpush:// zpull:// zpub:// zsub://, zr* with bind and connect swapped,
    +ipc, #TOPIC for a SUB, {a,b} and {1..3} braces), as `tensio send/recv`.
    socket: "push", "pull", "pub", "sub", "dealer", "router", "pair" (default:
    the URL scheme's; required for a plain endpoint). bind: True binds, False
    connects, None follows the scheme (plain endpoints connect). proto:
    "zio", "tensorcom" or None (send: ZIO, tensorcom for a tensorcom URL;
    receive: decided per message). timeout: the default of send/recv in
    seconds (None: wait forever). single: send each message as one frame (its
    file encoding). linger: seconds close waits for the messages libzmq
    still queues (None: as long as it takes, as libzmq; 0: not at all);
    close raises tensio.TimeoutError naming how many it dropped, so nothing
    is lost silently. hwm: high-water mark in messages. topic, identity,
    max_frame_bytes, strict, limits: as tio_stream_options.
    """

    def __init__(self, url, socket=None, bind=None, proto=None, timeout=None, single=False,
                 linger=None, hwm=0, topic=None, identity=None, max_frame_bytes=None,
                 strict=False, limits=None):
        if socket is not None and socket not in _SOCKETS:
            raise ArgumentError("socket must be one of %s, not %r" % (", ".join(_SOCKETS),
                                                                       socket))
        if proto not in _PROTOS:
            raise ArgumentError("proto must be 'zio', 'tensorcom' or None, not %r" % (proto,))
        flags = 0
        if bind is True:
            flags |= _tensio.STREAM_BIND
        elif bind is False:
            flags |= _tensio.STREAM_CONNECT
        if single:
            flags |= _tensio.STREAM_SINGLE
        timeout_ms = _ms(timeout, "timeout")
        linger_ms = 0 if linger is None else (_ms(linger, "linger") or -1)
        self._proto = _PROTOS[proto]
        self._stream = _tensio.stream_open(
            str(url), _SOCKETS.get(socket, 0), self._proto, flags, max(timeout_ms, 0),
            linger_ms, int(hwm), topic, identity, _limits_tuple(limits), _open_flags(strict),
            0 if max_frame_bytes is None else int(max_frame_bytes))
        self.single = bool(single)

    def _s(self):
        s = self._stream
        if s is None:
            raise ValueError("I/O operation on a closed tensio.Stream")
        return s

    @property
    def endpoint(self):
        """The (first) endpoint as bound or connected (the port chosen for *)."""
        return self._s().endpoint()

    @property
    def stats(self):
        """{"sent", "received", "malformed", "bytes_sent", "bytes_received",
        "queued"}; queued: messages sent that libzmq has not yet written to a
        connection (0 over inproc://)."""
        return dict(zip(("sent", "received", "malformed", "bytes_sent", "bytes_received",
                         "queued"), self._s().stats()))

    def send(self, arrays, names=None, metadata=None, format=None, timeout=None, copy=True,
             _every=False, **options):
        """Sends one message: arrays (a list, a dict name -> array, or a
        Container) as a ZIO TENS message or a tensorcom batch (the stream's
        protocol, or format="zio"/"tenbin"). Options as for tensio.save
        (widen, drop_names, densify, ...; zio: level, form, origin, granule,
        seqno). timeout in seconds (None: the stream's).

        A Container tensio owns the memory of (a file's mapping, a received
        message) is lent to libzmq without a copy. Arrays whose memory Python
        owns are copied once into the message (copy=True), so they may be
        changed as soon as send returns; with copy=False they are lent too,
        as pyzmq's send(copy=False) lends them: they are kept alive until
        libzmq has sent them, and must not be changed before (close()
        waits for that, up to the linger time)."""
        s = self._s()
        # libzmq may still be sending lent frames after this returns: they
        # point into memory the C container owns (a file mapping, frames
        # received, a copy), or, lent, into Python buffers the container keeps
        # until libzmq is done (_tensio.c, "buffers lent to libzmq"). One frame
        # is a new buffer anyway.
        lend = not copy and not self.single
        owned = (self.single or lend or
                 (isinstance(arrays, Container) and names is None and metadata is None and
                  not arrays._o().borrows()))
        owner = _owner_for(arrays, names, metadata, copy=not owned)
        if format is None:
            format = _PROTO_FORMAT.get(self._proto)
        fmt, flags, version, opts, cast = _save_args(format, options)
        if cast:
            raise ArgumentError("send: cast applies to files (save, dumps), not messages")
        s.send(owner, fmt, flags, version, opts, _ms(timeout, "timeout"), lend,
               bool(_every))

    def send_all(self, arrays, names=None, metadata=None, format=None, timeout=None, copy=True,
                 **options):
        """Sends one message to every endpoint of a PUSH on several endpoints
        (a socket each: the fan-out), each as soon as it has room, so a full
        one holds up only itself; on other streams, the same as send. What
        end-of-epoch markers are sent with (docs/streaming.md, "Serving
        batches to trainers"). timeout: TimeoutError naming the endpoints
        that had no room (the others have their copy). Arguments as send."""
        self.send(arrays, names, metadata, format, timeout, copy, _every=True, **options)

    def recv(self, timeout=None):
        """The next message as a Container whose arrays are read-only views
        into the received frames (no copy; they may be unaligned). timeout in
        seconds (None: the stream's; a stream without one waits forever,
        interruptible by Ctrl-C). tensio.TimeoutError when none arrives; a
        malformed message raises its tensio.Error and is counted
        (stats["malformed"]); the stream stays usable. Properties: "proto",
        "frames", "bytes" (and "peer" on a ROUTER), plus ZIO's coordinates."""
        return Container(self._s().recv(_ms(timeout, "timeout")))

    def __iter__(self):
        """Received messages, one Container each, until none arrives within
        the stream's timeout (without one: forever)."""
        while True:
            try:
                c = self.recv()
            except TimeoutError:
                return
            yield c

    def wait_subscribers(self, n=1, timeout=None):
        """PUB: waits until n subscribers have subscribed (a PUB drops what
        is published before); TimeoutError after timeout seconds (None:
        forever)."""
        self._s().wait_subscribers(int(n), max(_ms(timeout, "timeout"), 0))

    def set_peer(self, peer):
        """ROUTER: the routing id (bytes) the next sends go to; None: the
        last peer received from."""
        if isinstance(peer, str):
            peer = peer.encode()
        self._s().set_peer(peer)

    def flush(self, timeout=None):
        """Waits until libzmq has written every message sent so far to its
        connection; tensio.TimeoutError after timeout seconds (None: as long
        as it takes), naming how many are still queued. Drops nothing."""
        s = self._s()
        t = _ms(timeout, "timeout")
        s.flush(max(t, 0))

    def close(self):
        """Closes the socket, waiting up to `linger` for the messages libzmq
        still queues. Raises tensio.TimeoutError naming how many it dropped
        when the linger time ran out (the stream is closed either way)."""
        s, self._stream = self._stream, None
        if s is not None:
            s.close()

    closed = property(lambda self: self._stream is None)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:  # the exception under way is the one raised; a drop is still told
            try:
                self.close()
            except Exception as e:  # noqa: BLE001
                import warnings
                warnings.warn("tensio.Stream close: %s" % e, RuntimeWarning, stacklevel=2)
        return False

    def __repr__(self):
        if self._stream is None:
            return "<tensio.Stream closed>"
        return "<tensio.Stream %s>" % self.endpoint
