#!/usr/bin/env python3
"""Lists every place a test reaches into another suite for a helper.

A helper that two suites share lives in a home named for what it is: a file in the test target
(Tests/<Target>Tests/Support/) or, when several test targets use it, Sources/StoreTestSupport.
This check finds `SomethingTests.member` (or `SomethingTests().member`) written in a file other
than the one that declares `struct SomethingTests`, and any other type declared at the top of a
test file outside a Support/ folder that another file names; it prints each suite.member (or
type), how often and in which files, then the total. Comments count too: name a test in words,
not as Suite.member.

usage: suite-reach.py [--help]   (from anywhere: it reads the Tests/ folder beside scripts/)

Exit status: 0 when no test reaches into another suite, 1 when any does (the list says where),
2 when given arguments.
"""
import collections
import glob
import os
import re
import sys


def reaches(root):
    files = glob.glob(os.path.join(root, "Tests", "**", "*.swift"), recursive=True)
    texts = {p: open(p, encoding="utf-8").read() for p in files}
    defs = {}
    for path, text in texts.items():
        for m in re.finditer(r"struct (\w+Tests)\b", text):
            defs[m.group(1)] = path
    uses = collections.defaultdict(list)
    for path, text in texts.items():
        for m in re.finditer(r"\b(\w+Tests)(?:\(\))?\.(\w+)", text):
            if defs.get(m.group(1)) != path:
                uses[(m.group(1), m.group(2))].append(path)
    # A helper type declared beside a suite (or in a loose file) and named in another file.
    helpers = {}
    for path, text in texts.items():
        if os.sep + "Support" + os.sep in path:
            continue
        for m in re.finditer(r"^(?:final |public )?(?:struct|enum|class) (\w+)", text, re.M):
            if not m.group(1).endswith("Tests"):
                helpers.setdefault(m.group(1), path)
    for name, home in helpers.items():
        pattern = re.compile(r"\b" + re.escape(name) + r"\b")
        for path, text in texts.items():
            if path != home and pattern.search(text):
                uses[(name, "(declared in " + os.path.basename(home) + ")")].append(path)
    return uses


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0
    if argv:
        print(f"suite-reach.py takes no arguments (given: {' '.join(argv)}); see --help", file=sys.stderr)
        return 2
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    uses = reaches(root)
    for (suite, member), paths in sorted(uses.items()):
        names = sorted(set(os.path.basename(p) for p in paths))
        print(f"{suite}.{member} {len(paths)} {' '.join(names)}")
    total = sum(map(len, uses.values()))
    print("total", total)
    return 1 if total > 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
