"""The CLI's --help texts, parsed: the one source of the man pages
(gen_man.py) and the shell completions (gen_completion.py), so that neither
can drift from what `tensio COMMAND --help` says.

A help text is: "Usage: tensio CMD ...", paragraphs, then sections ("Options:",
"Commands:", ...) whose entries are indented lines. An option entry starts
with "-" after two spaces: its spec ("-t, --to FMT") and, after two or more
spaces or on the indented lines that follow, its description."""

import re
import subprocess


class Option:
    def __init__(self, spec, text):
        self.spec = spec          # "-t, --to FMT" (several forms: "--a N, --b N")
        self.text = text          # the description, one paragraph
        self.names = re.findall(r"(?<![\w-])(--?[A-Za-z0-9][\w-]*)", spec)
        # the argument of the first form ("FMT"), or None for a flag
        m = re.match(r"\s*(?:-\w,\s*)?--?[\w-]+(?:[ =](\S+))?", spec)
        arg = m.group(1).rstrip(",") if m and m.group(1) else None
        self.arg = arg if arg and not arg.startswith("-") else None
        form = r"--?[A-Za-z0-9][\w-]*(?:[ =][A-Z][A-Z0-9_]*(?:=[A-Z][A-Z0-9_]*)?)?"
        if not re.fullmatch(r"%s(?:, %s)*" % (form, form), spec):
            raise ValueError("--help: option %r: its description must start after two "
                             "spaces or on the next line" % spec)


class Help:
    def __init__(self, text):
        self.text = text
        self.usage = ""
        self.paragraphs = []      # the description, before the first section
        self.sections = []        # [(title, [lines])] in order, "Options:" included
        self.options = []         # [Option]
        self.commands = []        # [(name, summary)] for the top-level help
        self._parse(text)

    def _parse(self, text):
        lines = text.rstrip("\n").split("\n")
        i = 0
        if lines and lines[0].startswith("Usage: "):
            self.usage = lines[0][len("Usage: "):].strip()
            i = 1
        para = []
        section = None
        for line in lines[i:]:
            if section is None:
                if re.match(r"^[A-Z][\w ]*:$", line):
                    if para:
                        self.paragraphs.append(" ".join(para))
                        para = []
                    section = (line[:-1], [])
                    self.sections.append(section)
                elif line.strip():
                    para.append(line.strip())
                elif para:
                    self.paragraphs.append(" ".join(para))
                    para = []
                continue
            if re.match(r"^[A-Z][\w ]*:$", line):
                section = (line[:-1], [])
                self.sections.append(section)
            elif not line.startswith(" ") and line.strip():
                # a paragraph after a section (e.g. "Exit status: ..."): its own section
                section = ("", [line])
                self.sections.append(section)
            else:
                section[1].append(line)
        if para:
            self.paragraphs.append(" ".join(para))
        for title, body in self.sections:
            if title == "Options":
                self.options = _entries(body, Option)
            elif title == "Commands":
                self.commands = [(o.spec, o.text) for o in _entries(body, _Plain)]


class _Plain:
    def __init__(self, spec, text):
        self.spec, self.text = spec, text


def _entries(body, kind):
    """Entries of a section body: a line indented by at most 6 spaces starts
    one ("  -t, --to FMT  text", "      --from FMT  text", "  ls  summary"),
    its spec ending at the first run of two spaces; deeper lines continue its
    description."""
    out = []
    for line in body:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent <= 6:
            spec, _, text = line.strip().partition("  ")
            out.append([spec.strip(), [text.strip()] if text.strip() else []])
        elif out:
            out[-1][1].append(line.strip())
    return [kind(spec, " ".join(text)) for spec, text in out]


def help_of(tensio, *cmd):
    """The parsed --help of `tensio [CMD]` (run with LC_ALL=C)."""
    r = subprocess.run([tensio, *cmd, "--help"], capture_output=True, text=True,
                       env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}, check=True)
    return Help(r.stdout)


def all_helps(tensio):
    """{"": the top-level Help, command: its Help} for every listed command."""
    top = help_of(tensio)
    helps = {"": top}
    for name, _ in top.commands:
        helps[name] = help_of(tensio, name)
    return helps
