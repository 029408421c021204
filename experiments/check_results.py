#!/usr/bin/env python3
"""Guards that the tables of experiments/RESULTS.md come out of the runners: every row of every
table must appear, character for character, in one of the runners' summaries committed under
experiments/summaries/ (each a copy of a runner's runs/experiments/<runner>/summary.md). A table
made before the runners reported p-values, whose runs are no longer on this machine, is marked by
a line `<!-- legacy table: REASON -->` right above it; it is counted and listed, never checked.
A block between `<!-- summary: experiments/summaries/NAME.md -->` and `<!-- end summary -->` is
that summary included whole (its title left out, its headings one level down): the check fails
when a block differs from its summary, and `--update` rewrites every block from its summary.

  experiments/check_results.py [--update] [RESULTS.md] [SUMMARIES_DIR]
"""
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def tables(text):
    """[(line number, legacy reason or None, [rows])] of the markdown tables in TEXT."""
    out, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|"):
            start = i
            while i < len(lines) and lines[i].startswith("|"):
                i += 1
            above = lines[start - 1].strip() if start > 0 else ""
            legacy = above[len("<!-- legacy table:"):-3].strip() if above.startswith("<!-- legacy table:") else None
            out.append((start + 1, legacy, lines[start:i]))
        i += 1
    return out


BLOCK = re.compile(r"(<!-- summary: experiments/summaries/([\w.-]+\.md) -->\n)(.*?)(<!-- end summary -->)", re.S)


def included(folder, name):
    """The text a summary block holds: SUMMARIES_DIR/NAME without its title, headings demoted."""
    with open(os.path.join(folder, name)) as f:
        lines = f.read().rstrip("\n").split("\n")
    body = [("#" + line) if line.startswith("#") else line for line in lines[1:]]
    return f"The runner's summary (experiments/summaries/{name}):\n" + "\n".join(body) + "\n"


def summary_blocks(text, folder):
    """(TEXT with every summary block rewritten from its summary, [names of stale blocks])."""
    stale = []

    def one(m):
        want = included(folder, m.group(2))
        if m.group(3) != want:
            stale.append(m.group(2))
        return m.group(1) + want + m.group(4)
    return BLOCK.sub(one, text), stale


def main():
    args = [x for x in sys.argv[1:] if x != "--update"]
    update = len(args) != len(sys.argv) - 1
    results = args[0] if args else os.path.join(HERE, "RESULTS.md")
    folder = args[1] if len(args) > 1 else os.path.join(HERE, "summaries")
    with open(results) as f:
        text = f.read()
    text, stale = summary_blocks(text, folder)
    if update and stale:
        with open(results + ".partial", "w") as f:
            f.write(text)
        os.replace(results + ".partial", results)
        print(f"updated {len(stale)} summary blocks: {', '.join(stale)}")
    elif stale:
        sys.exit(f"{results}: summary blocks differ from their summaries ({', '.join(stale)}); "
                 f"run experiments/check_results.py --update")
    summary_lines = set()
    for path in sorted(glob.glob(os.path.join(folder, "*.md"))):
        with open(path) as f:
            summary_lines.update(line.rstrip("\n") for line in f)
    found = tables(text)
    checked, legacy, bad = 0, [], []
    for line, reason, rows in found:
        if reason is not None:
            legacy.append(f"line {line}: {reason}")
            continue
        missing = [r for r in rows if r not in summary_lines]
        if missing:
            bad.append(f"{results} line {line}: {len(missing)} of {len(rows)} rows are in no summary, e.g. {missing[0][:100]}")
        checked += 1
    if bad:
        sys.exit("\n".join(bad))
    print(f"results: {checked} tables found in the summaries, {len(legacy)} legacy tables")
    for item in legacy:
        print("  legacy " + item)


if __name__ == "__main__":
    main()
