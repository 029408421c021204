#!/usr/bin/env python3
"""Guards that the tables of experiments/RESULTS.md come out of the runners: every row of every
table must appear, character for character, in one of the runners' summaries committed under
experiments/summaries/ (each a copy of a runner's runs/experiments/<runner>/summary.md); no
table is exempt.
A block between `<!-- summary: experiments/summaries/NAME.md -->` and `<!-- end summary -->` is
that summary included whole (its title left out, its headings one level down): the check fails
when a block differs from its summary, and `--update` rewrites every block from its summary.
A table under `<!-- synthesis: REASON -->` (the claims table: prose quoting the summaries) is
checked by its numbers: every decimal number beyond a row's first cell must be the rounding of a
number in the summaries of the sections the row cites (§N), or of any summary where it cites none.

  experiments/check_results.py [--update] [RESULTS.md] [SUMMARIES_DIR] | --self-check
"""
import decimal
import glob
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def tables(text):
    """[(line number, synthesis?, [rows])] of the markdown tables in TEXT: synthesis where a
    marker line `<!-- synthesis: REASON -->` sits right above it."""
    out, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|"):
            start = i
            while i < len(lines) and lines[i].startswith("|"):
                i += 1
            above = lines[start - 1].strip() if start > 0 else ""
            out.append((start + 1, above.startswith("<!-- synthesis"), lines[start:i]))
        i += 1
    return out


DECIMAL = re.compile(r"\d+\.\d+")


def summary_values(texts):
    """{(decimals, value)}: every decimal number of TEXTS (signs dropped), rounded to 1-6 places."""
    values = set()
    for text in texts:
        for token in DECIMAL.findall(text.replace(",", "")):
            for d in range(1, 7):  # as printed, rounded half up or half to even
                for rounding in (decimal.ROUND_HALF_UP, decimal.ROUND_HALF_EVEN):
                    values.add((d, float(decimal.Decimal(token).quantize(decimal.Decimal(1).scaleb(-d), rounding))))
    return values


SECTION = re.compile(r"^## (\d+)\.(.*)$", re.M)
RUNNER = re.compile(r"\(`(\w+)\.py`\)")
CITE = re.compile(r"§(\d+)")


def section_summaries(text):
    """{section number: [names of the summaries its blocks include, and its runner's (the
    `NAME.py` of its heading: NAME.md)]}."""
    starts = [(m.start(), m.group(1), RUNNER.search(m.group(2))) for m in SECTION.finditer(text)]
    starts = [(a, n, r and r.group(1)) for a, n, r in starts] + [(len(text), None, None)]
    return {n: list(dict.fromkeys([m.group(2) for m in BLOCK.finditer(text, a, b)] + ([f"{runner}.md"] if runner else [])))
            for (a, n, runner), (b, _, _) in zip(starts, starts[1:])}


def lookup(summaries):
    """VALUES_OF(names): summary_values of those summaries ({name: text}), of all for None."""
    every = summary_values(summaries.values())
    return lambda names: every if names is None else summary_values(summaries[n] for n in names if n in summaries)


def unquoted_numbers(rows, values_of, cited):
    """The decimal numbers in ROWS (beyond each row's first cell, which states the claim) that
    are not the rounding of a number in the summaries of the sections the row cites (§N), or of
    any summary where it cites none (a cited section without summaries quotes nothing).
    VALUES_OF is lookup()'s, CITED section_summaries()'."""
    missing = []
    for row in rows[2:]:
        sections = CITE.findall(row)
        values = values_of([name for n in sections for name in cited.get(n, [])] if sections else None)
        for cell in row.strip("|").split("|")[1:]:
            for token in DECIMAL.findall(cell.replace(",", "")):
                d = len(token.split(".")[1])
                if d > 6 or (d, float(token)) not in values:
                    missing.append(token)
    return missing


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


def problems(text, summaries):
    """([messages], number of tables checked): the tables of TEXT whose rows (or, for the
    synthesis table, whose numbers) are in none of SUMMARIES ({name: text})."""
    summary_lines = {line for summary in summaries.values() for line in summary.split("\n")}
    values_of = lookup(summaries)
    cited = section_summaries(text)
    bad, found = [], tables(text)
    for line, synthesis, rows in found:
        if synthesis:
            missing = unquoted_numbers(rows, values_of, cited)
            if missing:
                bad.append(f"line {line}: the synthesis table quotes {len(missing)} numbers that are in "
                           f"no summary: {', '.join(missing)}")
        else:
            missing = [r for r in rows if r not in summary_lines]
            if missing:
                bad.append(f"line {line}: {len(missing)} of {len(rows)} rows are in no summary, e.g. {missing[0][:100]}")
    return bad, len(found)


def self_check():
    """A synthesis row passes on numbers its cited section's summary holds, fails on others; a table
    row in no summary fails, whatever marker sits above it."""
    text = ("## 1. A (`a.py`)\n<!-- summary: experiments/summaries/a.md -->\n<!-- end summary -->\n## 2. B\n"
            "<!-- summary: experiments/summaries/b.md -->\n<!-- end summary -->\n")
    summaries = {"a.md": "| x | 0.1234 | -7.80 |", "b.md": "| y | 0.5 |", "c.md": "| z | 0.25 |"}
    values_of = lookup(summaries)
    cited = section_summaries(text)
    rows = ["| claim | result |", "|---|---|"]
    assert unquoted_numbers(rows + ["| c 0.9 | 0.123, t 7.8 (§1) |"], values_of, cited) == []
    assert unquoted_numbers(rows + ["| c | 0.5 (§1) |"], values_of, cited) == ["0.5"]
    assert unquoted_numbers(rows + ["| c | 0.5, 0.12 |"], values_of, cited) == []
    assert cited["1"] == ["a.md"] and cited["2"] == ["b.md"]
    assert problems("| x | 0.1234 | -7.80 |\n", summaries) == ([], 1)
    assert problems("<!-- legacy table: old -->\n| x | 0.1235 | -7.80 |\n", summaries)[0] == [
        "line 2: 1 of 1 rows are in no summary, e.g. | x | 0.1235 | -7.80 |"]
    print("check_results: synthesis check checked")


def main():
    if sys.argv[1:] == ["--self-check"]:
        return self_check()
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
    summaries = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.md"))):
        with open(path) as f:
            summaries[os.path.basename(path)] = f.read()
    bad, checked = problems(text, summaries)
    if bad:
        sys.exit("\n".join(f"{results} {b}" for b in bad))
    print(f"results: {checked} tables found in the summaries")


if __name__ == "__main__":
    main()
