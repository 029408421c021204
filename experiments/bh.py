#!/usr/bin/env python3
"""Multiplicity across the whole document (issue 30; the audit's M4): every paired test printed
in the committed summaries (experiments/summaries/*.md: each table with a `p` column, one test
per row), Benjamini–Hochberg over all of them (false discovery rate 0.05), and for each test
whether it survives. A p printed as 0.0000 (below 0.00005) or "< 0.0001" enters as that bound,
which can only make its q larger. Holm within each table stays the verdict rule; this says which
verdicts would also survive a document-wide correction.

  experiments/bh.py [SUMMARIES_DIR] [--out FILE]   (prints the summary; --out also writes it)
"""
import argparse
import glob
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def p_value(cell):
    cell = cell.strip()
    if cell.startswith("<"):
        return float(cell[1:].strip())
    if cell in ("", "–", "-"):
        return None
    p = float(cell)
    return 0.00005 if p == 0 else p


def tests_of(path):
    """[(summary name, table title, row label, p)] of every row of every table with a p column."""
    out, title, columns = [], "", None
    name = os.path.basename(path)
    for line in open(path, encoding="utf-8").read().splitlines():
        if not line.startswith("|"):
            columns = None
            if line.strip():
                title = line.strip()
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if columns is None:
            columns = cells
            continue
        if set(line.replace("|", "").strip()) <= set("-: ") or "p" not in columns:
            continue
        p = p_value(cells[columns.index("p")])
        if p is not None:
            out.append((name, title.split(":")[0], cells[0], p))
    return out


def benjamini_hochberg(ps):
    """q values in the order given."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    q = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, ps[i] * m / rank)
        q[i] = running
    return q


def self_check():
    # Known values: p = (0.01, 0.04, 0.03, 0.005) -> q = (0.02, 0.04, 0.04, 0.02).
    q = benjamini_hochberg([0.01, 0.04, 0.03, 0.005])
    assert all(abs(a - b) < 1e-12 for a, b in zip(q, [0.02, 0.04, 0.04, 0.02])), q
    return "bh: Benjamini–Hochberg checked"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("summaries", nargs="?", default=os.path.join(HERE, "summaries"))
    ap.add_argument("--out")
    ap.add_argument("--self-check", action="store_true")
    a = ap.parse_args()
    if a.self_check:
        print(self_check())
        return
    tests = [t for path in sorted(glob.glob(os.path.join(a.summaries, "*.md")))
             if os.path.basename(path) != "bh.md" for t in tests_of(path)]
    q = benjamini_hochberg([t[3] for t in tests])
    survive = sum(x < 0.05 for x in q)
    text = (f"# bh: Benjamini–Hochberg over every paired test of the summaries\n\n"
            f"{len(tests)} tests with a p value in {len({t[0] for t in tests})} summaries; "
            f"{survive} survive at a false discovery rate of 0.05.\n\n"
            "| summary | table | test | p | BH q | survives |\n|---|---|---|---|---|---|\n")
    for (name, title, label, p), x in zip(tests, q):
        shown = "< 0.0001" if p < 0.0001 else f"{p:.4f}"
        text += f"| {name} | {title} | {label} | {shown} | {x:.4f} | {'yes' if x < 0.05 else 'no'} |\n"
    print(text, end="")
    if a.out:
        with open(a.out + ".partial", "w") as f:
            f.write(text)
        os.replace(a.out + ".partial", a.out)


if __name__ == "__main__":
    main()
