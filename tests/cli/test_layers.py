#!/usr/bin/python3
"""The CLI's layers hold (docs/architecture.md, "tools/").

  test_layers.py SOURCE_DIR

A command (tools/cmd_NAME.c) may call the shared layers (cli_util.c,
source.c: the kinds of source, output.c: where output goes, shard_*.c,
lmdb_cmds.c, stream_common.c, ...) but never a function defined in another
command's file: a command that needs what another does gets it from a layer
both use. Reads the sources: every non-static function defined at the start
of a line, and every call of one, by name. Also checks that tools/ uses the
public API only (no include of the library's src/)."""
import os
import re
import sys

src = os.path.join(sys.argv[1], "tools")
defined = {}  # function -> the file defining it
texts = {}
for name in sorted(os.listdir(src)):
    if not name.endswith(".c"):
        continue
    with open(os.path.join(src, name)) as f:
        text = f.read()
    texts[name] = text
    for m in re.finditer(r"^(?!static)[A-Za-z_][\w \t\*]*?\b(cli_\w+)\([^;{]*\)\s*\{", text, re.M):
        defined[m.group(1)] = name

bad = []
for name, text in texts.items():
    if re.search(r'#include\s+"(\.\./)?src/|#include\s+"(core|graph|formats)/', text):
        bad.append("%s includes the library's internals" % name)
    if not name.startswith("cmd_"):
        continue
    for fn, where in defined.items():
        if where != name and where.startswith("cmd_") and re.search(r"\b%s\(" % fn, text):
            bad.append("%s calls %s, defined in the command %s" % (name, fn, where))
if len(defined) < 50:
    bad.append("only %d functions found: the pattern no longer matches the sources"
               % len(defined))
for b in bad:
    print("FAIL:", b)
if bad:
    sys.exit(1)
print("ok: %d files, %d functions; no command calls another" % (len(texts), len(defined)))
