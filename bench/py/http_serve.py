#!/usr/bin/python3
"""make bench, http case: serves a directory with Debian's nginx on
127.0.0.1 (the tests' configuration, tests/source/http_servers.py), prints
its URL on the first line of standard output, and stops it when standard
input closes (run.sh holds a pipe to it).

Usage: http_serve.py ROOT WORKDIR
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "source"))
from http_servers import Nginx  # noqa: E402


def main():
    root, work = sys.argv[1], sys.argv[2]
    ng = Nginx(work, root)
    try:
        print(ng.url, flush=True)
        sys.stdin.read()  # until run.sh closes the pipe
    finally:
        ng.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
