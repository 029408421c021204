#!/usr/bin/env python3
"""Checks a rendered analysis report (the DOM Chromium built from it) against the analysis JSON:
every plotted element's value is the JSON's value at its data-key, every bar's height is that
value on its plot's scale, and every per-head value of the JSON is plotted.
Usage: check_report.py DOM_HTML ANALYSIS_JSON"""
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
    for l, layer in enumerate(analysis["layers"]):
        for h in range(len(layer["first_token_attention"])):
            missing += [k for k in [f"/layers/{l}/first_token_attention/{h}"] if k not in keys]
        missing += [k for k in [f"/layers/{l}/max_abs_hidden"] if k not in keys]
        if "gate" in layer and "mean_score" in layer["gate"]:
            missing += [f"/layers/{l}/gate/mean_score/{h}" for h in range(len(layer["gate"]["mean_score"]))
                        if f"/layers/{l}/gate/mean_score/{h}" not in keys]
    for i, m in enumerate(analysis["attention_maps"]):
        n = len(m["probabilities"])
        if f"/attention_maps/{i}/probabilities/{n - 1}/{n - 1}" not in keys:
            missing.append(f"attention map {i}")
    if missing:
        sys.exit("not plotted: " + ", ".join(missing[:10]))
    print(f"report: {len(p.elements)} plotted values match the JSON")


main()
