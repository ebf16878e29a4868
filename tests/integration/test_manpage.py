#!/usr/bin/env python3
"""docs/herdless.1 and `herdless -h` list the same flags and -o options.

`herdless -h` is written from the option table (daemon/option_table.cc, one row a flag or -o
key), so this compares the man page with the table through what the built daemon prints.

From `herdless -h`: every line that begins with a flag ("-p, --port=<num>", "-D <char>",
"-W  --disable-watch") names a flag; every line "   - key:" names an -o option; the first
word after "default:" is that entry's default. From the man page: the tag line after each
.TP is an entry; a tag that begins with "-" names a flag, a tag in the EXTENDED OPTIONS
section names an -o option (key or key=<value>). -vv and -vvv count as -v. A difference
fails with the option, the side it is missing from and what to add; so does a default of
-h that the man page's entry does not mention, and any warning of groff.
"""

import os
import re
import shutil
import subprocess

import harness
from harness import HERDLESS_BIN, REPO

MAN_PAGE = os.path.join(REPO, "docs", "herdless.1")

FLAG_LINE = re.compile(r"^(-[A-Za-z0-9])(?:,?\s+--([a-z][a-z0-9-]*))?")
LONG_ONLY_LINE = re.compile(r"^--([a-z][a-z0-9-]*)")
SUBOPTION_LINE = re.compile(r"^\s+- ([a-z_][a-z0-9_]*):")
SUBOPTION_TAG = re.compile(r"^([a-z_][a-z0-9_]*)(?:=|$)")
DEFAULT = re.compile(r"default:\s*([^\s,;)]+)")


def option_name(short, long):
    return short + (" (--%s)" % long if long else "")


def parse_help(text):
    """{name: (display name, the entry's text)} for flags and -o options of `herdless -h`."""
    flags, subopts = {}, {}
    current = None
    for line in text.splitlines()[1:]:  # the first line is the version
        m = FLAG_LINE.match(line)
        if m:
            short = "-v" if re.match(r"^-v+\b", line) else m.group(1)
            current = flags.setdefault(short, [option_name(short, m.group(2)), ""])
            current[1] += line + "\n"
            continue
        m = LONG_ONLY_LINE.match(line)
        if m:
            name = "--" + m.group(1)
            current = flags.setdefault(name, [name, ""])
            current[1] += line + "\n"
            continue
        m = SUBOPTION_LINE.match(line)
        if m:
            current = subopts.setdefault(m.group(1), [m.group(1), ""])
            current[1] += line + "\n"
            continue
        if line.startswith(" ") and current is not None and not line.lstrip().startswith("memcached"):
            current[1] += line + "\n"
        else:
            current = None
    return flags, subopts


def unroff(text):
    """A roff line's text without font escapes, quotes and macro names."""
    text = re.sub(r"^\.(B|I|BR|RB|IR|RI|BI|IB)\s+", "", text)
    text = text.replace("\\-", "-").replace("\\(bu", "*").replace("\\&", "")
    text = re.sub(r"\\f[BIRP]", "", text)
    return text.replace('"', "").strip()


def parse_man(text):
    """{name: (display name, the entry's text)} for flags and -o options of the man page."""
    flags, subopts = {}, {}
    section = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(".SH"):
            section = unroff(line[3:]).upper()
        if line.strip() == ".TP" and i + 1 < len(lines):
            tag = unroff(lines[i + 1])
            body = []
            j = i + 2
            while j < len(lines) and not re.match(r"^\.(TP|SH|SS|PP)\b", lines[j]):
                body.append(unroff(lines[j]))
                j += 1
            entry_text = tag + "\n" + " ".join(body)
            m = FLAG_LINE.match(tag)
            if m:
                short = "-v" if re.match(r"^-v+\b", tag) else m.group(1)
                entry = flags.setdefault(short, [option_name(short, m.group(2)), ""])
                entry[1] += entry_text + "\n"
            elif LONG_ONLY_LINE.match(tag):
                name = "--" + LONG_ONLY_LINE.match(tag).group(1)
                flags.setdefault(name, [name, ""])[1] += entry_text + "\n"
            elif section == "EXTENDED OPTIONS" and SUBOPTION_TAG.match(tag):
                key = SUBOPTION_TAG.match(tag).group(1)
                subopts.setdefault(key, [key, ""])[1] += entry_text + "\n"
            i = j
            continue
        i += 1
    return flags, subopts


def help_tag(entry_text):
    """The roff tag for an -h entry: its option column ("-p, --port=<num>", "key")."""
    line = entry_text.splitlines()[0]
    m = re.match(r"^\s*(?:- )?(-[A-Za-z0-9](?:,?\s+--[^\s:]+)?(?: <[^>]+>)?|--\S+|[a-z_][a-z0-9_]*)",
                 line)
    return (m.group(1) if m else line.strip()).replace("-", "\\-")


def compare(r, kind, from_help, from_man):
    for name in sorted(set(from_help) - set(from_man)):
        r.check(False, "%s %s is printed by `herdless -h` but missing from docs/herdless.1" %
                (kind, from_help[name][0]),
                "  add an entry for it (see the comment at the top of docs/herdless.1):\n"
                "  .TP\n  .B %s\n  <what it does; its default>" % help_tag(from_help[name][1]))
    for name in sorted(set(from_man) - set(from_help)):
        r.check(False, "%s %s is in docs/herdless.1 but `herdless -h` does not print it" %
                (kind, from_man[name][0]),
                "  add its row to daemon/option_table.cc, or remove the man page entry")
    for name in sorted(set(from_help) & set(from_man)):
        r.check(True, "%s %s in both" % (kind, name))
        h_name, h_text = from_help[name]
        m_name, m_text = from_man[name]
        if "--" in h_name and "--" in m_name:
            r.equal(m_name, h_name, "%s: the man page names the long form as -h does" % name)
        for default in DEFAULT.findall(h_text):
            r.check(default in m_text,
                    "%s: `herdless -h` says default %s, docs/herdless.1 does not mention %s"
                    % (h_name, default, default),
                    "  man page entry:\n" + m_text)


def body(r):
    help_run = subprocess.run([HERDLESS_BIN, "-h"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=harness.TIMEOUT)
    r.equal(help_run.returncode, 0, "herdless -h exits 0")
    help_flags, help_subopts = parse_help(help_run.stdout.decode())
    with open(MAN_PAGE, encoding="utf-8") as f:
        man_text = f.read()
    man_flags, man_subopts = parse_man(man_text)
    harness.log("herdless -h: %d flags, %d -o options; docs/herdless.1: %d flags, %d -o options"
                % (len(help_flags), len(help_subopts), len(man_flags), len(man_subopts)))
    # A parser that found nothing would make the comparison vacuous.
    r.check(len(help_flags) >= 20 and len(help_subopts) >= 5, "-h parsed",
            help_run.stdout.decode())
    r.check(len(man_flags) >= 20 and len(man_subopts) >= 5, "man page parsed")
    compare(r, "flag", help_flags, man_flags)
    compare(r, "-o option", help_subopts, man_subopts)

    # The page renders without a single groff warning.
    if shutil.which("groff"):
        run = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", MAN_PAGE],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        r.check(run.returncode == 0 and not run.stderr,
                "groff -man -ww renders docs/herdless.1 without warnings",
                run.stderr.decode(errors="replace"))
        for section in ("NAME", "SYNOPSIS", "OPTIONS", "EXTENDED OPTIONS", "SIGNALS", "FILES",
                        "EXIT STATUS", "DIFFERENCES FROM MEMCACHED"):
            r.check(re.search(r"^\.SH \"?%s\"?$" % section, man_text, re.M) is not None,
                    "the man page has a %s section" % section)
    else:
        r.check(False, "groff is installed (Debian package groff-base, in scripts/lib.sh DEPS)")


if __name__ == "__main__":
    harness.run("test_manpage", body)
