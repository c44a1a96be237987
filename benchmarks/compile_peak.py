#!/usr/bin/env python3
"""What compiling a module costs in memory, the peak of the script form (`python3 mcpstudio.py`).

    python3 benchmarks/compile_peak.py [--python PATH ...] [--sections] [FILE ...]

For each file (default: mcpstudio.py) and each Python (default: this one): the parser's
tokens (what `tokenize` yields but NL and COMMENT, as the C tokenizer hands them over),
the traced peak of `compile(source)` (tracemalloc) and the peak RSS of a process that
only compiles it (ru_maxrss). The peak is the parse: its memo entries and AST nodes grow
with the tokens, and CPython's parser keeps its tokens in an array that doubles (every
slot allocated: 48 bytes and a pointer each on 64-bit 3.11, 56 and a pointer from 3.12), so
the peak steps up by 7.3 MB (8.4 MB) as a file passes 131,072 tokens (2^17). `--sections` adds the tokens under
each of the module's section banners.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tokenize

TRACED = """import sys, tracemalloc
source = open(sys.argv[1], encoding="utf-8").read()
tracemalloc.start()
compile(source, sys.argv[1], "exec")
print(tracemalloc.get_traced_memory()[1])
"""
RSS = """import resource, sys
compile(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1], "exec")
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def parser_tokens(source):
    """Each token the parser sees, as (line, type)."""
    skipped = (tokenize.NL, tokenize.COMMENT)
    return [(token.start[0], token.type) for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type not in skipped]


def sections(source, tokens):
    """(first line, title, tokens) of each part under a `# ---` / `# Title` / `# ---` banner."""
    lines = source.split("\n")
    starts = [(i + 1, lines[i + 1][2:42]) for i in range(len(lines) - 2)
              if lines[i].startswith("# ---") and lines[i + 2].startswith("# ---")]
    counts = [0] * len(starts)
    at = 0
    for line, _ in tokens:
        while at + 1 < len(starts) and starts[at + 1][0] <= line:
            at += 1
        counts[at] += 1
    return [(line, title, count) for (line, title), count in zip(starts, counts)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", default=["mcpstudio.py"])
    parser.add_argument("--python", action="append", help="a Python to compile with (repeatable; default: this one)")
    parser.add_argument("--sections", action="store_true", help="also the tokens of each section")
    args = parser.parse_args()
    for path in args.files:
        with open(path, encoding="utf-8") as file:
            source = file.read()
        tokens = parser_tokens(source)
        slots = 1 << len(tokens).bit_length()
        print("%s: %d parser tokens (token array of %d slots; %+d tokens to the next step at %d)"
              % (path, len(tokens), slots, (slots >> 1) - len(tokens), slots >> 1))
        for python in args.python or [sys.executable]:
            traced, rss = (int(subprocess.run([python, "-c", probe, path], stdout=subprocess.PIPE, check=True,
                                              text=True).stdout) for probe in (TRACED, RSS))
            print("  %-40s traced peak %6.2f MB, %4.0f B a token; peak RSS %6.2f MiB"
                  % (python, traced / 1e6, traced / len(tokens), rss / 1024))
        if args.sections:
            for line, title, count in sections(source, tokens):
                print("  %6d tokens  line %5d  %s" % (count, line, title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
