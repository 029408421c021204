#!/usr/bin/env python3
"""Puts finished runs' result rows, kept in the repository, back into a runner's folder, so the
runner skips them and trains only the runs still missing.

A session's run folders (runs/) do not outlive the machine; the rows of its finished runs are
copied into experiments/rows/NAME.jsonl before the session ends: one JSON line per run, the row
the runner wrote into OUT/runs/VARIANT-sSEED/result.json, with the run folder's other JSON files
(run.json, analysis.json, a runner's own analyses: a few KB each) under "files", and where it came
from. The runners' summaries are computed from these files alone (checkpoints are not kept), so a
restored run counts exactly as the run that wrote it. Files already present in OUT are left as
they are.

  experiments/restore_rows.py ROWS.jsonl OUT         # restore into OUT
  experiments/restore_rows.py --save OUT ROWS.jsonl  # OUT's finished rows -> ROWS.jsonl (atomic)
"""
import argparse
import glob
import json
import os
import sys


def run_folder(out, row):
    """OUT/runs/VARIANT-sSEED, or OUT/final/runs/... for a row saved with its subfolder."""
    return os.path.join(out, row.get("subfolder", ""), "runs", f"{row['variant']}-s{row['seed']}")


def restore(rows_path, out):
    restored = kept = 0
    with open(rows_path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    for row in rows:
        folder = run_folder(out, row)
        if os.path.exists(os.path.join(folder, "result.json")):
            kept += 1
            continue
        os.makedirs(folder, exist_ok=True)
        files = dict(row.get("files", {}))
        files["result.json"] = {k: v for k, v in row.items() if k not in ("subfolder", "origin", "files")}
        for name in sorted(files, key=lambda n: n == "result.json"):  # result.json last: the mark
            path = os.path.join(folder, name)
            if not os.path.exists(path):
                with open(path + ".partial", "w") as f:
                    json.dump(files[name], f, indent=2)
                os.replace(path + ".partial", path)
        restored += 1
    print(f"{rows_path}: {restored} rows restored into {out}, {kept} already there")


def save(out, rows_path, origin):
    lines = []
    for path in sorted(glob.glob(os.path.join(out, "**", "runs", "*", "result.json"), recursive=True)):
        with open(path) as f:
            row = json.load(f)
        folder = os.path.dirname(path)
        sub = os.path.relpath(os.path.dirname(os.path.dirname(folder)), out)
        if sub != ".":
            row["subfolder"] = sub
        row["files"] = {}
        for extra in sorted(glob.glob(os.path.join(folder, "*.json"))):
            if os.path.basename(extra) != "result.json":
                with open(extra) as f:
                    row["files"][os.path.basename(extra)] = json.load(f)
        row["origin"] = origin
        lines.append(json.dumps(row, sort_keys=True))
    with open(rows_path + ".partial", "w") as f:
        f.write("".join(line + "\n" for line in lines))
    os.replace(rows_path + ".partial", rows_path)
    print(f"{out}: {len(lines)} finished rows saved to {rows_path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--save", action="store_true", help="save OUT's rows into ROWS instead")
    ap.add_argument("--origin", default="", help="with --save: where the rows came from (binary, date)")
    ap.add_argument("paths", nargs=2)
    a = ap.parse_args()
    if a.save:
        save(a.paths[0], a.paths[1], a.origin)
    elif os.path.exists(a.paths[0]):
        restore(a.paths[0], a.paths[1])
    else:
        sys.exit(f"{a.paths[0]}: no such rows file")


if __name__ == "__main__":
    main()
