#!/usr/bin/env python3
"""Guards that every number of experiments/RESULTS.md comes out of the runners: every row of
every table must appear, character for character, in one of the runners' summaries committed under
experiments/summaries/ (each a copy of a runner's runs/experiments/<runner>/summary.md); no table is
exempt.
A block between `<!-- summary: experiments/summaries/NAME.md -->` and `<!-- end summary -->` is
that summary included whole (its title left out, its headings one level down): the check fails
when a block differs from its summary, and `--update` rewrites every block from its summary.
Every other number is checked where it stands: in a table under `<!-- synthesis: REASON -->` (the
claims table) every number beyond a row's first cell (the claim, quoting the paper), and in the
prose every number outside a marked quote of the paper (`[paper: ...]`) - decimals, and integers
with thousands separators, with their sign - must be printed exactly so in the summaries of the
sections the row cites (§N), and for prose also of its own section. A code span holding numbers
(`NAME = 0.3`) must appear verbatim in those summaries or in the code of its section's runner,
runner.py, stats.py or a runner the paragraph names. Quoting as printed (no rounding) is what makes
the check discriminate: a number whose shape is crowded (5% or more of the random numbers so shaped,
other than the row's own, are printed there) must stand on a summary line with an anchor - a number
of the same row of a shape not crowded - and is refused otherwise. The false-acceptance share of
random numbers in [0, 1) with 2-4 decimals, the audit's measure (it found 70-99% for the former
rounding rule), must stay below 5% for every row and paragraph, or the check fails.

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


NUMBER = re.compile(r"[-−+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+)")
MAX_FALSE_ACCEPTANCE = 0.05


def numbers(text):
    """The numbers of TEXT as printed, signs normalised to '-' (decimals, and integers with
    thousands separators)."""
    return [t.replace("−", "-") for t in NUMBER.findall(text)]


INTEGER = re.compile(r"(?<![\d.,])[-−+]?\d{4,}(?![\d.,]\d)")


def grouped(token):
    """An integer of 4 or more digits as prose prints it: 3000 -> 3,000."""
    sign = token[0] if token[0] in "-+" else ""
    return sign + f"{int(token.lstrip('-+')):,}"


def signed_forms(token):
    """TOKEN and, for an unsigned positive, '+TOKEN' (and the reverse)."""
    if token[0] not in "-+":
        return [token, "+" + token]
    return [token, token[1:]] if token[0] == "+" else [token]


def summary_values(texts):
    """{number as printed, sign included; unsigned positives also as '+x'; integers of 4 or more
    digits printed without separators also as prose prints them (3000 as 3,000)}."""
    values = set()
    for text in texts:
        tokens = numbers(text) + [grouped(t.replace("−", "-")) for t in INTEGER.findall(text)]
        for token in tokens:
            values.update(signed_forms(token))
    return values


def shape(token):
    """(sign, integer digits (0 for a leading 0), decimals) of a number as printed."""
    sign = token[0] if token[0] in "-+" else ""
    whole, _, fraction = token.lstrip("-+").replace(",", "").partition(".")
    return sign, 0 if whole == "0" else len(whole), len(fraction)


def false_acceptance(values, like, own=()):
    """The share of random numbers shaped like LIKE (sign, integer digits, decimals: e.g. 0.xxx,
    or -dd.dd) that VALUES would accept wrongly: those VALUES print, less the row's OWN numbers (a
    random number equal to the one the row quotes is right, not falsely accepted)."""
    sign, digits, decimals = shape(like)
    space = 10 ** decimals * (1 if digits == 0 else 9 * 10 ** (digits - 1))
    grouped = "," in like
    same = {v for v in values if shape(v) == (sign, digits, decimals) and ("," in v) == grouped}
    return len(same - set(own)) / space


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


class Sources:
    """The numbers some summaries print (summary_values), whole and line by line."""

    def __init__(self, texts):
        self.lines = [v for text in texts for v in map(summary_values, [[x] for x in text.split("\n")]) if v]
        self.values = set().union(*self.lines)


def lookup(summaries):
    """SOURCES_OF(names): the Sources of those summaries ({name: text}), built once per set."""
    memo = {}

    def sources_of(names):
        key = tuple(sorted(set(n for n in names if n in summaries)))
        if key not in memo:
            memo[key] = Sources(summaries[n] for n in key)
        return memo[key]
    return sources_of


def crowded(values, like, own=()):
    return false_acceptance(values, like, own) >= MAX_FALSE_ACCEPTANCE


def pools(quoted, sources):
    """POOL(like): what a number shaped like LIKE, in a row quoting QUOTED, is matched against: every
    number of SOURCES where that shape is not crowded (random wrong numbers so shaped pass with
    probability MAX_FALSE_ACCEPTANCE or more); else only the numbers on the source lines that
    also print an anchor: a number of the row, of a shape not crowded, that the sources print."""
    anchors = {t for t in quoted if t in sources.values and not crowded(sources.values, t, quoted)}
    anchored = set().union(*[v for v in sources.lines if v & anchors])
    return lambda like: anchored if crowded(sources.values, like, quoted) else sources.values


def judge(quoted, sources):
    """([the numbers of QUOTED that SOURCES do not print so, or print only among too many of their
    shape], {decimals 1-4: the share of random numbers 0.x so shaped the row would accept
    wrongly}): the audit's measure, a shape still crowded after anchoring accepting none."""
    pool = pools(quoted, sources)
    missing = []
    for token in quoted:
        values = pool(token)
        if token not in values:
            missing.append(token)
        elif crowded(values, token, quoted):
            share = false_acceptance(values, token, quoted)
            missing.append(f"{token} (crowded: {share:.0%} of random numbers so shaped pass there)")
    rates = {}
    for d in range(1, 5):
        like = "0." + "0" * d
        share = false_acceptance(pool(like), like, quoted)
        rates[d] = share if share < MAX_FALSE_ACCEPTANCE else 0.0
    return missing, rates


def synthesis_rows(rows, cited):
    """[(row number, numbers quoted, names of the summaries it cites)] of a synthesis table: the
    numbers beyond each row's first cell (the claim, quoting the paper) against the summaries of
    the sections the row cites (§N); a row citing none is checked against nothing."""
    out = []
    for i, row in enumerate(rows[2:], 1):
        names = [name for n in CITE.findall(row) for name in cited.get(n, [])]
        out.append((f"row {i}", [t for cell in row.strip("|").split("|")[1:] for t in numbers(cell)], names))
    return out


def unquoted_numbers(rows, sources_of, cited):
    """The numbers of a synthesis table's ROWS that judge() refuses."""
    return [t for _, quoted, names in synthesis_rows(rows, cited) for t in judge(quoted, sources_of(names))[0]]


PAPER_QUOTE = re.compile(r"\[paper: [^\]]*\]")
ITEM = re.compile(r"^\s*(?:[-*] |\d+\. |#)")


def prose_paragraphs(text):
    """[(line number, section, paragraph)] of TEXT outside tables, summary blocks, code and HTML
    comments: paragraphs end at blank lines, headings and list items (each its own paragraph)."""
    body = BLOCK.sub(lambda m: m.group(1) + "\n" * m.group(3).count("\n") + m.group(4), text)
    out, section, current, fenced = [], None, [], False

    def flush():
        if current:
            out.append((current[0][0], section, " ".join(line for _, line in current)))
            current.clear()
    for i, line in enumerate(body.split("\n"), 1):
        heading = SECTION.match(line)
        section = heading.group(1) if heading else section
        if line.startswith("```"):
            fenced = not fenced
        if fenced or line.startswith(("```", "|", "<!--")) or not line.strip() or ITEM.match(line):
            flush()
        if not (fenced or line.startswith(("```", "|", "<!--")) or not line.strip()):
            current.append((i, line))
    flush()
    return out


CODE_SPAN = re.compile(r"`([^`]*)`")
SHARED_CODE = ["runner.py", "stats.py"]


def code_quotes(para, files):
    """(PARA without its code spans, [spans holding numbers that are in none of FILES ({name:
    text}: the summaries it cites and the runners' code)]): a span quoting code or a summary
    verbatim is checked by that match, whole."""
    bad = [span for span in CODE_SPAN.findall(para) if numbers(span) and not any(span in f for f in files.values())]
    return CODE_SPAN.sub("", para), bad


def prose_rows(text, cited, code=None, summaries=None):
    """[(where, numbers quoted, summaries, code spans found nowhere)] of the prose: each paragraph's
    numbers outside marked quotes of the paper ([paper: ...]) and outside code spans against the
    summaries of its section and of those it cites. A code span holding numbers must appear verbatim
    in those summaries or in the code (CODE, {name: text}) of the section's runner, of runner.py,
    stats.py, or of a runner the paragraph names (`NAME.py`)."""
    code, rows = code or {}, []
    runners = {n: RUNNER.search(m.group(2)) for m in SECTION.finditer(text) for n in [m.group(1)]}
    for line, section, para in prose_paragraphs(text):
        names = cited.get(section, []) + [name for n in CITE.findall(para) for name in cited.get(n, [])]
        runner = runners.get(section)
        files = [f"{runner.group(1)}.py"] if runner else []
        files += SHARED_CODE + re.findall(r"(\w+\.py)", para)
        quotable = {f: code[f] for f in files if f in code} | {n: (summaries or {}).get(n, "") for n in names}
        plain, bad = code_quotes(PAPER_QUOTE.sub("", para), quotable)
        rows.append((f"line {line}", numbers(plain), names, bad))
    return rows


BLOCK = re.compile(r"(<!-- summary: experiments/summaries/((?:history/)?[\w.-]+\.md) -->\n)(.*?)(<!-- end summary -->)", re.S)


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


def checked_rows(text, cited, code=None, summaries=None):
    """[(where, numbers quoted, summaries, code spans found nowhere)]: every synthesis row and every
    prose paragraph."""
    rows = [(f"line {line} {where}", quoted, names, []) for line, synthesis, table in tables(text) if synthesis
            for where, quoted, names in synthesis_rows(table, cited)]
    return rows + prose_rows(text, cited, code, summaries)


def problems(text, summaries, code=None):
    """([messages], number of tables checked, number of rows and paragraphs checked): the tables of
    TEXT whose rows are in none of SUMMARIES ({name: text}), and the synthesis rows and prose
    paragraphs quoting numbers judge() refuses or code spans (CODE: {runner file name: text})
    found nowhere."""
    summary_lines = {line for summary in summaries.values() for line in summary.split("\n")}
    sources_of, cited = lookup(summaries), section_summaries(text)
    bad, found = [], tables(text)
    for line, synthesis, rows in found:
        missing = [] if synthesis else [r for r in rows if r not in summary_lines]
        if missing:
            bad.append(f"line {line}: {len(missing)} of {len(rows)} rows are in no summary, e.g. {missing[0][:100]}")
    prose = checked_rows(text, cited, code, summaries)
    for where, quoted, names, spans in prose:
        missing = judge(quoted, sources_of(names))[0]
        if missing:
            bad.append(f"{where}: {len(missing)} numbers not printed so in {', '.join(names) or 'no summary'}: "
                       f"{', '.join(missing)}")
        bad += [f"{where}: code span `{span}` is in neither the code nor the summaries it may quote" for span in spans]
    return bad, len(found), len(prose)


def audit_rates(text, summaries):
    """{decimals: the largest share over the synthesis rows and prose paragraphs} of random numbers
    0.x with 1-4 decimals that the check would accept wrongly in a row: the audit's measure (it
    found 70-99% for 2 decimals under the former rounding rule)."""
    sources_of = lookup(summaries)
    worst = {d: 0.0 for d in range(1, 5)}
    for _, quoted, names, _ in checked_rows(text, section_summaries(text)):
        for d, share in judge(quoted, sources_of(names))[1].items():
            worst[d] = max(worst[d], share)
    return worst


def self_check():
    """A synthesis row or a paragraph passes on numbers its section's (or cited sections')
    summaries print so, fails on others, on crowded shapes unless anchored on a source line, and on
    code spans found nowhere; marked quotes of the paper are exempt; a table row in no summary
    fails, whatever marker sits above it."""
    text = ("## 1. A (`a.py`)\n<!-- summary: experiments/summaries/a.md -->\n<!-- end summary -->\n## 2. B\n"
            "<!-- summary: experiments/summaries/b.md -->\n<!-- end summary -->\n")
    summaries = {"a.md": "| x | 0.1234 | -7.80 | 1,513 | 3000 |", "b.md": "| y | 0.5 | 0.07 |\n| z | 0.6 | 0.08 |",
                 "c.md": "| z | 0.25 |"}
    sources_of = lookup(summaries)
    cited = section_summaries(text)
    rows = ["| claim | result |", "|---|---|"]
    assert unquoted_numbers(rows + ["| c 0.9 | 0.1234, t −7.80, 1,513, 3,000 (§1) |"], sources_of, cited) == []
    assert unquoted_numbers(rows + ["| c | 0.123 (§1) |"], sources_of, cited) == ["0.123"]  # rounded
    assert unquoted_numbers(rows + ["| c | 7.80, 1,512 (§1) |"], sources_of, cited) == ["7.80", "1,512"]
    assert unquoted_numbers(rows + ["| c | 0.5 (§1) |"], sources_of, cited) == ["0.5"]
    assert unquoted_numbers(rows + ["| c | 0.1234 |"], sources_of, cited) == ["0.1234"]  # cites nothing
    assert unquoted_numbers(rows + ["| c | 0.5 (§2) |"], sources_of, cited) == ["0.5"]  # 0.6 would pass too
    assert unquoted_numbers(rows + ["| c | 0.5, 0.07 (§2) |"], sources_of, cited) == []  # anchored by 0.07
    assert unquoted_numbers(rows + ["| c | 0.5, 0.08 (§2) |"], sources_of, cited) == ["0.5"]  # not on 0.08's line
    assert cited["1"] == ["a.md"] and cited["2"] == ["b.md"]
    prose = text.replace("## 2.", "G1 gains 0.1234 nats [paper: 0.045], t −7.80 (`G2_HEAD = 0.3`, `x = 0.9`).\n"
                         "\n- 0.5, 0.07 (§2)\n## 2.")
    code = {"a.py": "G2_HEAD = 0.3\n"}
    assert problems(prose, summaries, code)[0] == [
        "line 4: code span `x = 0.9` is in neither the code nor the summaries it may quote"]
    assert problems(prose.replace("0.1234 nats", "0.1235 nats"), summaries, code)[0][0] == (
        "line 4: 1 numbers not printed so in a.md: 0.1235")
    assert problems("| x | 0.1234 | -7.80 | 1,513 | 3000 |\n", summaries) == ([], 1, 0)
    assert problems("<!-- legacy table: old -->\n| x | 0.1235 | -7.80 |\n", summaries)[0] == [
        "line 2: 1 of 1 rows are in no summary, e.g. | x | 0.1235 | -7.80 |"]
    print("check_results: synthesis and prose checks checked")


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
    # history/: superseded runs a section keeps beside its current summary (bh.py leaves them out)
    for path in sorted(glob.glob(os.path.join(folder, "*.md")) + glob.glob(os.path.join(folder, "history", "*.md"))):
        with open(path) as f:
            summaries[os.path.relpath(path, folder)] = f.read()
    code = {}
    for path in glob.glob(os.path.join(HERE, "*.py")):
        with open(path) as f:
            code[os.path.basename(path)] = f.read()
    bad, checked, paragraphs = problems(text, summaries, code)
    if bad:
        sys.exit("\n".join(f"{results} {b}" for b in bad) + f"\n{len(bad)} problems")
    print(f"results: {checked} tables found in the summaries; every number of {paragraphs} synthesis rows and "
          f"paragraphs printed so in the summaries they cite")
    rates = audit_rates(text, summaries)
    print("synthesis rows and prose: random numbers in [0, 1) the check accepts, the worst row: " +
          ", ".join(f"{d} decimals {r:.1%}" for d, r in rates.items()))
    if any(r >= MAX_FALSE_ACCEPTANCE for d, r in rates.items() if d >= 2):
        sys.exit(f"{results}: a row accepts {MAX_FALSE_ACCEPTANCE:.0%} or more of random numbers")


if __name__ == "__main__":
    main()
