#!/usr/bin/env python3
"""Guards that the tables of experiments/RESULTS.md come out of the runners: every row of every
table must appear, character for character, in one of the runners' summaries committed under
experiments/summaries/ (each a copy of a runner's runs/experiments/<runner>/summary.md). A table
made before the runners reported p-values, whose runs are no longer on this machine, is marked by
a line `<!-- legacy table: REASON -->` right above it; it is counted and listed, never checked.

  experiments/check_results.py [RESULTS.md] [SUMMARIES_DIR]
"""
import glob
import os
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


def main():
    results = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "RESULTS.md")
    folder = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "summaries")
    summary_lines = set()
    for path in sorted(glob.glob(os.path.join(folder, "*.md"))):
        with open(path) as f:
            summary_lines.update(line.rstrip("\n") for line in f)
    with open(results) as f:
        found = tables(f.read())
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
