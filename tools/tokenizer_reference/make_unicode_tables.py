#!/usr/bin/env python3
"""Writes src/tokenizer/unicode_tables.cpp: what gattn needs to see Unicode as HF `tokenizers` does.

1. Every general category (L, Lu, ..., M, Mn, ..., N, P, S, Z, C and their subcategories) as HF's
   regex engine (Oniguruma, built into `tokenizers` 0.23.3) sees it: Unicode 16.0, from PyPI's
   `unicodedata2==16.0.0` (the Unicode Character Database of that version). The script first
   checks that HF's classes equal Unicode 16.0's, code point for code point. PCRE2 10.42 (Debian
   12's) has Unicode 14.0 tables (Python's own `unicodedata` here: 14.0.0), so a class is written
   as the code points 16.0 adds to PCRE2's property, or, where 16.0 also removed members (C, Cn:
   newly assigned; Mn: U+1171E became Mc), as the whole 16.0 class.
2. Code points whose normalisation behaviour is newer than Unicode 9.0: HF's NFC (the
   unicode-normalization-alignments crate) predates them, so it treats them as unassigned. These
   are the code points assigned after 9.0 that have a combining class, a canonical decomposition,
   or appear in one (unicode-data's UnicodeData.txt and DerivedAge.txt).
The script checks both claims against HF before writing.

  tools/tokenizer_reference/.venv/bin/python tools/tokenizer_reference/make_unicode_tables.py
"""
import shutil
import subprocess
import unicodedata
from pathlib import Path

import unicodedata2
from tokenizers import Regex, normalizers, pre_tokenizers

from common import ROOT

UNICODE = Path("/usr/share/unicode")
NFC_UNICODE_VERSION = (9, 0)
PCRE2_UNICODE_VERSION = "14.0.0"
ONIGURUMA_UNICODE_VERSION = "16.0.0"
OUT = ROOT / "src" / "tokenizer" / "unicode_tables.cpp"
EXPECTED = ROOT / "tests" / "fixtures" / "tokenizer" / "unicode_classes.txt"
CATEGORIES = ["C", "Cc", "Cf", "Cn", "Co", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn",
              "N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk",
              "Sm", "So", "Z", "Zl", "Zp", "Zs"]


def version(text):
    return tuple(int(x) for x in text.split("."))


def read_ages():
    ages = {}
    for line in open(UNICODE / "DerivedAge.txt"):
        line = line.split("#")[0].strip()
        if not line:
            continue
        cps, v = (x.strip() for x in line.split(";"))
        a, _, b = cps.partition("..")
        for cp in range(int(a, 16), int(b or a, 16) + 1):
            ages[cp] = version(v)
    return ages


def read_unicode_data():
    category, ccc, decomposition = {}, {}, {}
    lines = [line.split(";") for line in open(UNICODE / "UnicodeData.txt")]
    for i, f in enumerate(lines):
        cp = int(f[0], 16)
        span = [cp]
        if f[1].endswith("First>"):
            span = range(cp, int(lines[i + 1][0], 16) + 1)
        for c in span:
            category[c], ccc[c] = f[2], int(f[3])
        if f[5] and not f[5].startswith("<"):
            decomposition[cp] = [int(x, 16) for x in f[5].split()]
    return category, ccc, decomposition


def ranges(codepoints):
    out = []
    for c in sorted(codepoints):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def onig_class(pattern, cps, text):
    """The code points HF's regex engine puts in the class `pattern`."""
    split = pre_tokenizers.Split(Regex(f"[^{pattern}]"), behavior="removed")
    members = set()
    for piece, (a, b) in split.pre_tokenize_str(text):
        assert b - a == len(piece)
        members.update(cps[a:b])
    return members


def cpp_table(name, comment, rows):
    body = "".join(f"    {{0x{a:X}, 0x{b:X}}},\n" for a, b in rows)
    return f"// {comment}\nconst CodepointRange {name}[] = {{\n{body}}};\n"


def category_members(database, cps):
    members = {cls: set() for cls in CATEGORIES}
    for cp in cps:
        category = database.category(chr(cp))
        members[category].add(cp)
        members[category[0]].add(cp)
    return members


def main():
    assert unicodedata2.unidata_version == ONIGURUMA_UNICODE_VERSION, unicodedata2.unidata_version
    assert unicodedata.unidata_version == PCRE2_UNICODE_VERSION, unicodedata.unidata_version
    ages = read_ages()
    category, ccc, decomposition = read_unicode_data()
    cps = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    text = "".join(map(chr, cps))
    new, old = category_members(unicodedata2, cps), category_members(unicodedata, cps)
    classes = []  # (name, complete, ranges)
    for cls in CATEGORIES:
        onig = onig_class(rf"\p{{{cls}}}", cps, text)
        assert onig == new[cls], f"HF's \\p{{{cls}}} is not Unicode {ONIGURUMA_UNICODE_VERSION}'s"
        removed = old[cls] - new[cls]
        classes.append((cls, bool(removed), ranges(new[cls] if removed else new[cls] - old[cls])))
    # Surrogates are no text: they never reach the regex (invalid UTF-8 never matches).
    EXPECTED.write_text(
        f"# Unicode {ONIGURUMA_UNICODE_VERSION} general categories (unicodedata2), as HF tokenizers' "
        "regex engine sees them; written by\n# tools/tokenizer_reference/make_unicode_tables.py. "
        "One class per line: name, then inclusive hex ranges.\n" +
        "".join(f"{cls} " + " ".join(f"{a:X}-{b:X}" for a, b in ranges(new[cls])) + "\n"
                for cls in CATEGORIES))

    in_mappings = {c for d in decomposition.values() for c in d}
    newer = {cp for cp, age in ages.items() if age > NFC_UNICODE_VERSION and
             (ccc.get(cp, 0) or cp in decomposition or cp in in_mappings)}
    # HF leaves every such character alone: a mark newer than 9.0 is not reordered after "a",
    # and the parts of a newer composite do not compose.
    nfc = normalizers.NFC()
    for cp in sorted(newer):
        if ccc.get(cp, 0) > 1:
            assert nfc.normalize_str("a" + chr(cp) + "\u0334") == "a" + chr(cp) + "\u0334", hex(cp)
        if cp in decomposition:
            parts = "".join(map(chr, decomposition[cp]))
            assert nfc.normalize_str(parts) == parts, hex(cp)

    body = "".join(cpp_table(f"k{name}", (f"Unicode {ONIGURUMA_UNICODE_VERSION}'s \\p{{{name}}}" if complete
                                         else f"What Unicode {ONIGURUMA_UNICODE_VERSION} adds to PCRE2's \\p{{{name}}}") + ".",
                                 rows) + "\n" for name, complete, rows in classes if rows)
    entries = "".join(f"    {{\"{name}\", {'true' if complete else 'false'}, {f'k{name}' if rows else '{}'}}},\n"
                      for name, complete, rows in classes)
    OUT.write_text(
        "// Generated by tools/tokenizer_reference/make_unicode_tables.py; do not edit.\n"
        "#include \"tokenizer/unicode_tables.h\"\n\n#include <algorithm>\n\nnamespace gattn::unicode_tables {\n\n"
        "namespace {\n" + body.replace("const CodepointRange", "constexpr CodepointRange") +
        "}  // namespace\n\n" +
        cpp_table("kNormalizationAfterUnicode9",
                  "Code points newer than Unicode 9.0 that take part in normalisation.",
                  ranges(newer)) +
        "\nconst PropertyClass kPropertyClasses[] = {\n" + entries + "};\n\n"
        "const std::span<const PropertyClass> property_classes = kPropertyClasses;\n"
        "const std::span<const CodepointRange> normalization_after_unicode9 =\n"
        "    kNormalizationAfterUnicode9;\n\n"
        "const PropertyClass* find_property_class(std::string_view name) {\n"
        "  for (const PropertyClass& c : property_classes)\n"
        "    if (c.name == name) return &c;\n"
        "  return nullptr;\n"
        "}\n\n"
        "bool contains(std::span<const CodepointRange> ranges, uint32_t cp) {\n"
        "  const auto after = std::upper_bound(ranges.begin(), ranges.end(), cp,\n"
        "                                      [](uint32_t c, const CodepointRange& r) { return c < r.first; });\n"
        "  return after != ranges.begin() && cp <= std::prev(after)->last;\n"
        "}\n\n}  // namespace gattn::unicode_tables\n")
    if shutil.which("clang-format"):  # the repository's style (.clang-format)
        subprocess.run(["clang-format", "-i", str(OUT)], check=True)
    print(f"wrote {OUT}: {len(classes)} classes, "
          f"{sum(len(rows) for _, _, rows in classes)} class ranges, "
          f"{len(ranges(newer))} normalisation ranges; and {EXPECTED}")


if __name__ == "__main__":
    main()
