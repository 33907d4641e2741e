#!/usr/bin/env python3
"""Writes the man pages tensio(1) and tensio-COMMAND(1) from the --help texts
of a built tensio (tools/helptext.py parses them): the pages cannot drift
from --help, which is their only source.

usage: gen_man.py TENSIO OUTDIR [VERSION]"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import helptext  # noqa: E402

DATE = "2026-11-26"  # of the pages' layout; the version says which tensio


def esc(s):
    """Text for roff: backslashes, leading dots/quotes, hyphens of options."""
    s = s.replace("\\", "\\e")
    s = re.sub(r"(?<![\w])-", r"\\-", s)
    if s.startswith((".", "'")):
        s = "\\&" + s
    return s


def bold_options(s):
    """--long and -x forms in bold within running text (already escaped)."""
    return re.sub(r"((?:\\-){1,2}[A-Za-z0-9][\w\\-]*)", r"\\fB\1\\fR", s)


def synopsis(usage):
    words = usage.split()
    out = []
    for w in words:
        if w.startswith("tensio"):
            out.append("\\fB%s\\fR" % esc(w))
        elif re.fullmatch(r"[a-z]+", w) and len(out) == 1:
            out.append("\\fB%s\\fR" % esc(w))  # the command
        else:
            out.append("\\fI%s\\fR" % esc(w) if w.isupper() else esc(w))
    return " ".join(out)


def page(name, summary, h, version, see_also):
    L = []
    L.append('.TH "%s" "1" "%s" "tensio %s" "tensio manual"' % (name.upper(), DATE, version))
    L.append(".SH NAME")
    L.append("%s \\- %s" % (esc(name), esc(summary)))
    L.append(".SH SYNOPSIS")
    L.append(synopsis(h.usage))
    L.append(".SH DESCRIPTION")
    for i, p in enumerate(h.paragraphs):
        if i:
            L.append(".PP")
        L.append(bold_options(esc(p)))
    for title, body in h.sections:
        if title == "Options":
            L.append(".SH OPTIONS")
            for o in h.options:
                L.append(".TP")
                L.append(bold_options(esc(o.spec)))
                L.append(bold_options(esc(o.text)))
        elif title == "Commands":
            L.append(".SH COMMANDS")
            for cmd, text in h.commands:
                L.append(".TP")
                L.append("\\fBtensio\\-%s\\fR(1)" % esc(cmd))
                L.append(esc(text))
        else:
            text = " ".join(line.strip() for line in body if line.strip())
            if not text:
                continue
            head, sep, rest = text.partition(": ")
            if title == "" and sep and len(head) < 24:
                L.append(".SH %s" % esc(head.upper()))
                L.append(bold_options(esc(rest)))
            else:
                if title:
                    L.append(".SH %s" % esc(title.upper()))
                else:
                    L.append(".PP")
                L.append(bold_options(esc(text)))
    L.append(".SH SEE ALSO")
    L.append(",\n".join("\\fB%s\\fR(1)" % esc(s) for s in see_also))
    L.append(".PP")
    L.append("The project's docs/cli.md describes every command and its \\fB\\-\\-json\\fR "
             "objects.")
    return "\n".join(L) + "\n"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    tensio, outdir = sys.argv[1], sys.argv[2]
    version = sys.argv[3] if len(sys.argv) > 3 else ""
    helps = helptext.all_helps(tensio)
    top = helps[""]
    os.makedirs(outdir, exist_ok=True)
    cmds = [c for c, _ in top.commands]
    pages = {"tensio": page("tensio", "read, write, validate, convert and stream tensor and "
                            "model files", top, version, ["tensio-" + c for c in cmds])}
    for c, summary in top.commands:
        pages["tensio-" + c] = page("tensio-" + c, summary, helps[c], version,
                                    ["tensio"] + ["tensio-" + o for o in cmds if o != c])
    for name, text in pages.items():
        path = os.path.join(outdir, name + ".1")
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
