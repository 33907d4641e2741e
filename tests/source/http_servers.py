"""Servers for the http:// source tests, on 127.0.0.1 only: Debian's nginx
started with its own configuration in a directory of the caller's, and a
small server of the tests' own that misbehaves as the URL's first path part
says (tests/source/test_http.py, python/tests/test_http.py)."""
import json
import os
import re
import shutil
import socket
import socketserver
import struct
import subprocess
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_safetensors(path, tensors):
    hdr, off, blobs = {}, 0, []
    for name, a in tensors:
        b = a.tobytes()
        hdr[name] = {"dtype": {"float32": "F32", "int64": "I64", "uint8": "U8"}[str(a.dtype)],
                     "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


# ------------------------------------------------------------------ nginx

class Nginx:
    def __init__(self, tmp, root):
        exe = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx")
                                        else None)
        if not exe:
            raise RuntimeError("nginx is not installed (scripts/install-deps.sh installs it); "
                               "the http tests need it")
        self.dir = os.path.join(tmp, "nginx")
        os.makedirs(os.path.join(self.dir, "tmp"))
        self.log = os.path.join(self.dir, "access.log")
        self.port = free_port()
        d = self.dir
        # started by root, nginx's workers would run as nobody, who cannot read
        # the caller's temporary directory: as root then (without root the
        # workers are this user)
        user = "user root;" if os.geteuid() == 0 else ""
        conf = f"""
{user}
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 64; }}
http {{
  log_format bytes '$status $body_bytes_sent "$request" "$http_range"';
  access_log {self.log} bytes;
  client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp; fastcgi_temp_path {d}/tmp;
  uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;
  types {{ }}
  default_type application/octet-stream;
  server {{
    listen 127.0.0.1:{self.port};
    root {root};
    location = /moved.safetensors {{ return 302 /big.safetensors; }}
    location = /loop.safetensors {{ return 302 /loop.safetensors; }}
  }}
}}
"""
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write(conf)
        with open(os.path.join(d, "stderr"), "wb") as err:
            self.proc = subprocess.Popen([exe, "-c", os.path.join(d, "nginx.conf"), "-p", d],
                                         stderr=err)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None:
                    with open(os.path.join(d, "stderr")) as err:
                        raise RuntimeError("nginx did not start: " + err.read())
                time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}"

    def log_lines(self):
        """The access log's lines since the last call (nginx writes each line
        when the request ends; a request that the client closed is logged too)."""
        time.sleep(0.2)
        with open(self.log) as f:
            lines = f.read().splitlines()
        new = lines[getattr(self, "seen", 0):]
        self.seen = len(lines)
        return new

    def bytes_sent(self):
        return sum(int(line.split()[1]) for line in self.log_lines())

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


# ------------------------------------------------------- the test's server

class Handler(socketserver.BaseRequestHandler):
    """Serves files of ROOT by range, misbehaving as the path's first part
    says (MODE/NAME)."""

    def handle(self):
        srv = self.server
        rng = None
        with self.request.makefile("rb") as f:
            line = f.readline().decode("latin-1")
            if not line:
                return
            _, target, _ = line.split(" ", 2)
            while True:
                h = f.readline().decode("latin-1")
                if h in ("\r\n", "\n", ""):
                    break
                k, _, v = h.partition(":")
                if k.lower() == "range":
                    rng = v.strip()
        mode, _, name = target.lstrip("/").partition("/")
        with srv.lock:
            srv.log.append((mode, rng))
            srv.names.append((mode, name))
            nth = srv.names.count((mode, name))  # the first request for this file
        path = os.path.join(srv.root, name)
        data = b""
        if os.path.exists(path):
            with open(path, "rb") as f:
                data = f.read()
        size = len(data)
        first = nth == 1
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng or "")  # "N-": to the end (a stream's)
        s, e = (int(m.group(1)), min(int(m.group(2) or size - 1), size - 1)) if m else (0, size - 1)
        body = data[s:e + 1]
        hdrs = {"Content-Range": f"bytes {s}-{e}/{size}", "Content-Length": str(len(body))}
        status = "206 Partial Content"
        send = body
        close_after = None
        # MODE may join several with "+": drop-once+grow drops a stream's
        # first GET (no Range) half-way and then misbehaves in its resumption
        modes = set(mode.split("+"))
        # a later request: a range after the first, or a stream's resumption
        later = not first or (rng is not None and rng.endswith("-") and s > 0)
        if "drop-once" in modes and (s > 0 or rng is None) and not srv.dropped:
            srv.dropped = True
            close_after = len(body) // 2
        elif "drop-always" in modes and (s > 0 or rng is None):
            close_after = len(body) // 2
        if "badlen" in modes and later:
            hdrs["Content-Length"] = str(len(body) + 100)
        elif "endless206" in modes and not first:
            del hdrs["Content-Length"]
            hdrs["Connection"] = "close"
            send = None
        elif "norange" in modes:
            status = "200 OK"
            hdrs = {"Content-Length": str(size)}
            send = data
            if close_after is not None:
                close_after = size // 2
        elif "endless200" in modes:
            status = "200 OK"
            hdrs = {"Connection": "close"}
            send = None
        elif "huge" in modes:
            hdrs["Content-Range"] = f"bytes {s}-{e}/{1 << 60}"
        elif "hugelen" in modes:
            status = "200 OK"
            hdrs = {"Content-Length": str(1 << 60)}
            send = data
        elif "grow" in modes and later:
            hdrs["Content-Range"] = f"bytes {s}-{e}/{size + 1}"
        elif "etag" in modes:
            hdrs["ETag"] = '"v1"' if first else '"v2"'
        elif "stall" in modes and (s > 0 or rng is None):
            close_after = -1
        head = f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in hdrs.items())
        if "Connection" not in hdrs:
            head += "Connection: close\r\n"
        try:
            self.request.sendall(head.encode() + b"\r\n")
            if send is None:  # endless: until the client gives up
                chunk = b"\0" * 65536
                for _ in range(1 << 16):
                    self.request.sendall(chunk)
            elif close_after == -1:  # half, then nothing for 30 s
                self.request.sendall(send[:len(send) // 2])
                time.sleep(30)
            elif close_after is not None:
                self.request.sendall(send[:close_after])
            else:
                self.request.sendall(send)
        except OSError:
            pass


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def own_server(root):
    srv = Server(("127.0.0.1", 0), Handler)
    srv.root, srv.log, srv.names, srv.lock, srv.dropped = root, [], [], threading.Lock(), False
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}"
