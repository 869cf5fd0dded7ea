#!/usr/bin/env python3
"""Every option of every meshplan command that takes a value and is not required shows its
default in --help: CLI11's "TYPE=VALUE", or a description that says "default" (ACTIONS: an
output to write or an input to read, done only when given).

Usage: help_defaults.py MESHPLAN. Exit 1 naming each option without one."""
import re
import subprocess
import sys

COMMANDS = ["plan", "check", "explain", "list", "validate", "calibrate", "serve"]
# Options whose value names something to do or to read, done only when given (no default).
ACTIONS = {"--out", "--report", "--sweep-gpus", "--sweep-seq", "--recipe", "--set", "--fit"}


def entries(text):
    """(option column, description) per option of a CLI11 help text; wrapped lines joined."""
    out = []
    for line in text.splitlines():
        if re.match(r"^  -", line):
            out.append(line.strip())
        elif out and out[-1] is not None and re.match(r"^ {4,}\S", line):
            out[-1] += " " + line.strip()
        elif not line.strip() or not line.startswith(" "):
            out.append(None)
    return [e for e in out if e]


def main():
    exe = sys.argv[1]
    missing = []
    for cmd in COMMANDS:
        text = subprocess.run([exe, cmd, "--help"], capture_output=True, text=True).stdout
        found = entries(text)
        if not found:
            missing.append(f"{cmd}: no options read from --help")
        for e in found:
            # The option column: name, then TYPE, TYPE:{choices} or TYPE:TYPE in [lo - hi], then
            # " ..." for a list, then "=DEFAULT" when CLI11 shows one.
            m = re.match(r"^((?:-\w, ?)?--[\w-]+)(?: ([A-Z]+)(?![a-z])(?::(?:\{[^}]*\}|[A-Z]+ in \[[^\]]*\]|[A-Z]+))?"
                         r"(?: \.\.\.)?(=\S+)?)?", e)
            if not m or m.group(2) is None:
                continue  # a flag: off unless given
            rest = e[m.end():]
            if "REQUIRED" in rest.split("  ")[0] or "REQUIRED" in rest[:12]:
                continue
            if m.group(3) or "default" in rest.lower() or "required" in rest.lower():
                continue
            if m.group(1).split(",")[-1].strip() in ACTIONS:
                continue
            missing.append(f"{cmd} {m.group(1)}: no default shown ({e[:100]})")
    for x in missing:
        print(x)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
