"""Runs a tensio command on every processor and pinned to one, where
tools/ahead.c starts no worker threads (ls --hash, stats, diff), and
requires the same exit status, stdout and stderr: a worker's result handed
to the wrong row, or figures that depend on the split, fail it."""

import os
import subprocess


def pinned_equal(tensio, *args):
    """The run on every processor (a CompletedProcess, bytes)."""
    cpu = min(os.sched_getaffinity(0))
    many = subprocess.run([tensio, *args], capture_output=True, timeout=300)
    one = subprocess.run([tensio, *args], capture_output=True, timeout=300,
                         preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    assert (many.returncode, many.stdout, many.stderr) == \
        (one.returncode, one.stdout, one.stderr), (args, many, one)
    return many
