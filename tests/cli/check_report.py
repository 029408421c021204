#!/usr/bin/env python3
"""Checks a rendered report (the DOM Chromium built from it) against its JSON: every plotted
element's value is the JSON's value at its data-key, every bar's height is that value on its
plot's scale, and every per-head value of each analysis in the JSON is plotted.
Usage: check_report.py DOM_HTML JSON [ROOT ...]
ROOTs are JSON pointers of the analyses inside JSON (gattn compare's: /baseline/analysis
/candidate/analysis); without any, JSON is one analysis (gattn analyze's), every attention map
of which must be plotted. Under ROOTs, at least one map of each must be."""
import json
import sys
from html.parser import HTMLParser


class Plotted(HTMLParser):
    def __init__(self):
        super().__init__()
        self.elements, self.plot = [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "data-y-max" in a:
            self.plot = (a["id"], float(a["data-y-max"]), float(a["data-plot-height"]))
        elif tag == "svg":
            self.plot = None
        if "data-key" in a:
            self.elements.append((tag, a, self.plot))


def at(doc, key):
    for part in key.split("/")[1:]:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return float(doc)


def unplotted(analysis, root, keys, every_map):
    """The keys of ANALYSIS (at pointer ROOT) that should be plotted and are not."""
    want = []
    for l, layer in enumerate(analysis["layers"]):
        want += [f"{root}/layers/{l}/first_token_attention/{h}" for h in range(len(layer["first_token_attention"]))]
        want.append(f"{root}/layers/{l}/max_abs_hidden")
        if "gate" in layer and "mean_score" in layer["gate"]:
            want += [f"{root}/layers/{l}/gate/mean_score/{h}" for h in range(len(layer["gate"]["mean_score"]))]
        for field in ("mean_gate", "fraction_gate_below_0.1", "mean_decay", "mean_beta"):  # Gated DeltaNet
            per_head = layer.get("delta_net", {}).get(field, [])
            want += [f"{root}/layers/{l}/delta_net/{field}/{h}" for h in range(len(per_head))]
    missing = [k for k in want if k not in keys]
    maps = [f"{root}/attention_maps/{i}/probabilities/{len(m['probabilities']) - 1}/{len(m['probabilities']) - 1}"
            for i, m in enumerate(analysis["attention_maps"])]
    if every_map:
        missing += [f"attention map {m}" for m in maps if m not in keys]
    elif maps and not any(m in keys for m in maps):
        missing.append(f"any attention map of {root}")
    return missing


def main():
    dom, analysis = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
    p = Plotted()
    p.feed(dom)
    if not p.elements:
        sys.exit("no plotted elements in the rendered report")
    keys = set()
    for tag, a, plot in p.elements:
        want, shown = at(analysis, a["data-key"]), float(a["data-value"])
        if abs(want - shown) > 1e-12 * max(1.0, abs(want)):
            sys.exit(f"{a['data-key']}: plotted {shown}, the JSON has {want}")
        if tag == "rect" and plot is not None:
            _, y_max, height = plot
            expected = min(max(want, 0.0), y_max) / y_max * height
            if abs(float(a["height"]) - expected) > 2e-3:
                sys.exit(f"{a['data-key']}: bar height {a['height']}, expected {expected:.3f}")
        keys.add(a["data-key"])
    missing = []
    for root in sys.argv[3:] or [""]:
        one = analysis
        for part in root.split("/")[1:]:
            one = one[part]
        missing += unplotted(one, root, keys, every_map=len(sys.argv) == 3)
    if missing:
        sys.exit("not plotted: " + ", ".join(missing[:10]))
    print(f"report: {len(p.elements)} plotted values match the JSON")


main()
