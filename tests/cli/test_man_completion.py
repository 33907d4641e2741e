#!/usr/bin/env python3
"""The generated man pages and shell completions (tools/gen_man.py,
tools/gen_completion.py, built into BUILD/share by CMake):

- every command has a page; each page renders (groff) with NAME, SYNOPSIS
  (the --help usage line), DESCRIPTION and OPTIONS, and every option of the
  command's --help appears in it as an entry of its own;
- the --help parser takes every option line (none merged into another);
- the bash completion, run in bash on partial command lines, completes
  commands, options, format names after --to/--from/--format, and file
  names filtered by the formats' extensions;
- the zsh completion parses (zsh -n).

usage: test_man_completion.py TENSIO GENDIR"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import helptext  # noqa: E402

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what)


def render(page):
    r = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", "-rLL=200n", page],
                       capture_output=True, text=True, env={"LC_ALL": "C.UTF-8",
                                                            "PATH": "/usr/bin:/bin"})
    check(r.returncode == 0 and not r.stderr.strip(), "%s: groff: %s" % (page, r.stderr[:300]))
    return r.stdout.replace("\u2010", "-").replace("\u2212", "-")


def test_help_parser(helps):
    for cmd, h in helps.items():
        lines = [ln for ln in h.text.split("\n")
                 if re.match(r"^ {2,6}-", ln)]
        check(len(lines) == len(h.options),
              "tensio %s --help: %d option lines, %d parsed" % (cmd, len(lines), len(h.options)))
        check(h.usage.startswith("tensio"), "tensio %s --help: no usage line" % cmd)


def test_man(helps, mandir):
    top = helps[""]
    names = ["tensio"] + ["tensio-" + c for c, _ in top.commands]
    for name in names:
        cmd = "" if name == "tensio" else name[len("tensio-"):]
        page = os.path.join(mandir, name + ".1")
        check(os.path.isfile(page), "no man page %s" % page)
        if not os.path.isfile(page):
            continue
        text = render(page)
        for sec in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "SEE ALSO"):
            check(re.search(r"^%s$" % sec, text, re.M) is not None, "%s: no %s" % (name, sec))
        h = helps[cmd]
        check(" ".join(h.usage.split()) in " ".join(text.split()),
              "%s: the synopsis is not the usage line %r" % (name, h.usage))
        lines = [ln.strip() for ln in text.split("\n")]
        for o in h.options:
            # a tag line of its own, or (a short tag) followed by its text
            check(any(ln == o.spec or ln.startswith(o.spec + "  ") or
                      ln.startswith(o.spec + " " + o.text.split()[0]) for ln in lines),
                  "%s: option %r is not an entry of the page" % (name, o.spec))
            words = o.text.split()[:4]
            check(" ".join(words) in " ".join(text.split()),
                  "%s: the description of %s is missing" % (name, o.spec))
        if cmd == "":
            for c, _ in top.commands:
                check("tensio-%s(1)" % c in text, "tensio(1) does not list tensio-%s(1)" % c)


BASH_DRIVER = r'''
source "$1"
shift
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
_tensio tensio "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
'''


def complete(script, words, cwd):
    r = subprocess.run(["bash", "-c", BASH_DRIVER, "bash", script] + words,
                       capture_output=True, text=True, cwd=cwd)
    check(r.returncode == 0 and not r.stderr, "bash completion of %r: %s" % (words, r.stderr))
    return sorted(x for x in r.stdout.split("\n") if x)


def test_bash(helps, script):
    tmp = tempfile.mkdtemp(prefix="tio-comp-")
    try:
        for f in ("a.ten", "b.onnx", "c.txt", "d.safetensors", "notes"):
            open(os.path.join(tmp, f), "w").close()
        os.mkdir(os.path.join(tmp, "sub"))
        cases = [
            (["tensio", "con"], ["convert"]),
            (["tensio", ""], sorted([c for c, _ in helps[""].commands] + ["help"])),
            (["tensio", "--v"], ["--version"]),
            (["tensio", "help", "re"], ["recv"]),
            (["tensio", "convert", "--t"], ["--to"]),
            (["tensio", "convert", "--to", "r"], ["rten"]),
            (["tensio", "ls", "-f", "s"], ["safetensors"]),
            (["tensio", "recv", "--format", "t"], ["tenbin", "tflite", "tmfile", "torch"]),
            (["tensio", "convert", "--no-"], ["--no-fuse", "--no-progress", "--no-sync"]),
            (["tensio", "ls", ""], ["a.ten", "b.onnx", "d.safetensors", "sub/"]),
            (["tensio", "convert", "--to", "npy", "a"], ["a.ten"]),
            (["tensio", "convert", "--opset", ""], []),  # a number: nothing offered
        ]
        for words, want in cases:
            got = complete(script, words, tmp)
            check(got == want, "bash: %r completed to %r, expected %r" % (words, got, want))
        # every option of every command is offered after "-"
        for cmd, h in helps.items():
            if not cmd:
                continue
            got = set(complete(script, ["tensio", cmd, "-"], tmp))
            want = {n for o in h.options for n in o.names}
            check(got == want, "bash: options of %s: %r, expected %r" % (cmd, got, want))
    finally:
        shutil.rmtree(tmp)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    tensio, gen = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    helps = helptext.all_helps(tensio)
    test_help_parser(helps)
    test_man(helps, os.path.join(gen, "man", "man1"))
    test_bash(helps, os.path.join(gen, "completion", "tensio"))
    zsh = shutil.which("zsh")
    check(zsh is not None, "zsh is not installed (scripts/install-deps.sh installs it)")
    if zsh:
        r = subprocess.run([zsh, "-n", os.path.join(gen, "completion", "_tensio")],
                           capture_output=True, text=True)
        check(r.returncode == 0, "zsh -n _tensio: %s" % r.stderr)
    print("man pages: %d, commands: %d, failures: %d" %
          (len(helps), len(helps) - 1, len(FAILS)))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
