#!/usr/bin/env python3
"""Lists the Swift functions (func, init, deinit, subscript) longer than a limit, longest first.

usage: scripts/long-functions.py [FOLDER_OR_FILE ...] [--over N] [--fail-over M]
  FOLDER_OR_FILE  where to look (default: Sources)
  --over N        list functions longer than N lines (default 80: where a function should be split)
  --fail-over M   exit 1 when any function is longer than M lines (e.g. 100, the hard limit)

A function's length runs from its declaration line to the closing brace at the declaration's
indentation, comments and blank lines included: what a reader has to hold in view."""
import os
import re
import signal
import sys

DECLARATION = re.compile(
    r'^(\s*)(?:@\w+(?:\([^)]*\))?\s+)*'
    r'(?:(?:public|private|fileprivate|internal|package|static|class|final|override|mutating|nonisolated|'
    r'convenience|required|@discardableResult)\s+)*(func\s+[^\s(<]+|init[?!]?|deinit|subscript)\b')


def swift_files(paths):
    for path in paths:
        if os.path.isfile(path):
            yield path
        for folder, subfolders, names in os.walk(path):
            subfolders[:] = sorted(d for d in subfolders if not d.startswith('.'))
            yield from (os.path.join(folder, n) for n in sorted(names) if n.endswith('.swift'))


def functions(path):
    """(length, line, name) of every function in one file whose body has a closing brace."""
    lines = open(path, encoding='utf-8', errors='replace').read().split('\n')
    for i, line in enumerate(lines):
        match = DECLARATION.match(line)
        if not match:
            continue
        indent, j = match.group(1), i
        while j < len(lines) and '{' not in lines[j]:
            j += 1
        if j >= len(lines) or (j == i and lines[j].rstrip().endswith('}')):
            continue  # a protocol requirement or a one-line body
        k = j + 1
        while k < len(lines) and not (lines[k].startswith(indent + '}')
                                      and (len(lines[k]) == len(indent) or not lines[k][len(indent)].isspace())):
            k += 1
        if k < len(lines):
            yield k - i + 1, i + 1, match.group(2)


def main(argv):
    over, fail_over, paths = 80, None, []
    while argv:
        arg = argv.pop(0)
        if arg in ('--over', '--fail-over') and argv:
            value = int(argv.pop(0))
            over, fail_over = (value, fail_over) if arg == '--over' else (over, value)
        elif arg in ('-h', '--help'):
            print(__doc__)
            return 0
        else:
            paths.append(arg)
    found = sorted(((n, p, line, name) for p in swift_files(paths or ['Sources']) for n, line, name in functions(p)),
                   key=lambda f: (-f[0], f[1], f[2]))
    for n, path, line, name in (f for f in found if f[0] > over):
        print(f'{n:4d} {path}:{line} {name}')
    too_long = [f for f in found if fail_over is not None and f[0] > fail_over]
    if too_long:
        print(f'long-functions: {len(too_long)} function(s) over {fail_over} lines', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    sys.exit(main(sys.argv[1:]))
