#!/usr/bin/env python3
"""The outside QA pass's findings D1-D6, D10, D12-D14 (shared/research/qa-findings.md), each
reproduced against a gattn binary: a case passes when gattn refuses or survives what the finding
describes, and fails (exit 1, saying what happened) where the finding still holds.

    qa_findings.py GATTN HF_FIXTURES CASE...      CASE: D1 ... D14, or all

Each case works in its own temporary folder with a tiny model, synthetic token shards and a
Hugging Face fixture folder (tests/fixtures/hf/qwen3_f32, written by transformers)."""
import hashlib
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile

MODEL = {"vocab_size": 32, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
         "intermediate_size": 32, "max_position_embeddings": 64, "gate": {"position": "sdpa"}}


class Finding(Exception):
    """The finding still holds."""


class Case:
    def __init__(self, gattn, fixtures, work):
        self.gattn, self.fixtures, self.work = gattn, fixtures, work

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def run(self, *args, env=None):
        full_env = dict(os.environ, **(env or {}))
        return subprocess.run([self.gattn, *args], capture_output=True, text=True, env=full_env,
                              timeout=300)

    def ok(self, *args, env=None):
        r = self.run(*args, env=env)
        if r.returncode != 0:
            raise RuntimeError(f"gattn {' '.join(args)}: exit {r.returncode}\n{r.stderr}")
        return r

    def refused(self, what, *args, expect="", env=None):
        """gattn must exit 1 with an error containing `expect` (a user error, not a crash)."""
        r = self.run(*args, env=env)
        if r.returncode != 1 or "gattn: error:" not in r.stderr or expect not in r.stderr:
            raise Finding(f"{what}: exit {r.returncode}, expected 1 with an error containing "
                          f"{expect!r}; stderr: {r.stderr.strip()[-400:]}")
        return r

    def model(self, name, seed):
        with open(self.path("model.json"), "w") as f:
            json.dump(MODEL, f)
        self.ok("init", "--config", self.path("model.json"), "--out", self.path(name),
                "--seed", str(seed))
        return self.path(name)

    def data(self):
        if not os.path.exists(self.path("data", "val.bin")):
            self.ok("synthetic", "--out", self.path("data"), "--vocab", "30",
                    "--train-tokens", "20000", "--val-tokens", "4000")
        return self.path("data")

    def loss(self, checkpoint):
        r = self.ok("eval", "--checkpoint", checkpoint, "--data", self.path(self.data(), "val.bin"),
                    "--seq", "32", "--windows", "4")
        return next(line for line in r.stdout.splitlines() if line.startswith("loss"))

    def hf_folder(self, name="hf"):
        shutil.copytree(os.path.join(self.fixtures, "qwen3_f32"), self.path(name))
        return self.path(name)

    def run_config(self, name, **changes):
        run = {"model": MODEL, "data": {"train": self.path(self.data(), "train.bin"),
                                        "val": self.path(self.data(), "val.bin"), "seq_len": 16},
               "batch_size": 2, "steps": 8, "optimizer": {"lr": 0.01},
               "eval": {"every": 0, "windows": 2}, "checkpoint": {"every": 0, "keep": 2},
               "threads": 1, "out": self.path(name)}
        run.update(changes)
        with open(self.path(name + ".json"), "w") as f:
            json.dump(run, f)
        return self.path(name + ".json")


def folder_digest(folder):
    """Names and contents of every file in a folder, or None when it does not exist."""
    if not os.path.isdir(folder):
        return None
    h = hashlib.sha256()
    for root, _, files in sorted(os.walk(folder)):
        for name in sorted(files):
            p = os.path.join(root, name)
            h.update(os.path.relpath(p, folder).encode() + b"\0")
            with open(p, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def has_flag(c, command, flag):
    return flag in c.run(command, "--help").stdout


def d1(c):
    """Re-exporting into a used folder kept the old model (stale index, shards, tokenizer)."""
    first, second = c.model("first", 1), c.model("second", 2)
    shutil.copy(os.path.join(c.fixtures, "..", "tokenizer", "gattn_trained.json"),
                os.path.join(first, "tokenizer.json"))
    common = ["--format", "authors", "--dtype", "f32"]
    c.ok("export", "--checkpoint", first, *common, "--max-shard-bytes", "3000", "--out", c.path("e"))
    c.refused("an export into a used folder without --force", "export", "--checkpoint", second,
              *common, "--out", c.path("e"), expect="not empty")
    c.ok("export", "--checkpoint", second, *common, "--out", c.path("e"), "--force")
    left = sorted(os.listdir(c.path("e")))
    if left != ["config.json", "generation_config.json", "model.safetensors"]:
        raise Finding(f"after --force the folder holds {left}")
    if c.loss(c.path("e")) != c.loss(second):
        raise Finding("the re-exported folder does not load as the new model")


def d2(c):
    """An interrupted export left a loadable mix of two models."""
    old, new = c.model("old", 1), c.model("new", 2)
    common = ["--format", "authors", "--dtype", "f32", "--max-shard-bytes", "3000"]
    force = ["--force"] if has_flag(c, "export", "--force") else []
    c.ok("export", "--checkpoint", old, *common, "--out", c.path("target"))
    c.ok("export", "--checkpoint", new, *common, "--out", c.path("reference"))
    before, after = folder_digest(c.path("target")), folder_digest(c.path("reference"))
    # The same bytes whatever folder they were written in (same tensors, names and metadata).
    for n in range(1, 1000):
        r = c.run("export", "--checkpoint", new, *common, "--out", c.path("target"), *force,
                  env={"GATTN_FAULT_WRITE_ENOSPC": str(n)})
        now = folder_digest(c.path("target"))
        if r.returncode == 0:
            if now != after:
                raise Finding("the export that succeeded did not write the new model")
            break
        if now != before:
            raise Finding(f"a full disk at write {n} left the target neither the old export nor "
                          f"the new one (rc {r.returncode}: {r.stderr.strip()[-200:]})")
    else:
        raise Finding("no export succeeded within 1000 writes")
    print(f"  ENOSPC at each of the {n - 1} writes left the old export whole")
    for point in ["publish_before_rename", "publish_after_rename"]:
        c.ok("export", "--checkpoint", old, *common, "--out", c.path("target"), *force)
        r = c.run("export", "--checkpoint", new, *common, "--out", c.path("target"), *force,
                  env={"GATTN_FAULT_KILL_AT": point})
        now = folder_digest(c.path("target"))
        if r.returncode != -9 or now not in (before, after):
            raise Finding(f"kill at {point}: rc {r.returncode}, target is "
                          f"{'old' if now == before else 'new' if now == after else 'a mix'}")
        print(f"  SIGKILL {point}: the target is the {'old' if now == before else 'new'} export")


def d3(c):
    """export --out equal to its source destroyed the source."""
    source = c.model("ck", 1)
    digest = folder_digest(source)
    os.symlink(source, c.path("alias"))
    for what, out in [("equal", source), ("equal with a slash", source + "/"),
                      ("through a symlink", c.path("alias")), ("inside", c.path("ck", "sub")),
                      ("containing", c.work)]:
        force = ["--force"] if has_flag(c, "export", "--force") else []
        c.refused(f"--out {what} the source", "export", "--checkpoint", source, "--format",
                  "authors", "--out", out, *force, expect=source.rstrip("/"))
        if folder_digest(source) != digest:
            raise Finding(f"--out {what} the source changed the source")


def trained_run(c, name, **changes):
    config = c.run_config(name, **changes)
    c.ok("train", "--config", config, "--stop-at-step", "4")
    return config, c.path(name, "checkpoints", "step_00000004", "state.json")


def edit_json(path, change):
    with open(path) as f:
        j = json.load(f)
    change(j)
    with open(path, "w") as f:
        json.dump(j, f)


def d4(c):
    """A corrupt state.json step read out of bounds or overflowed on --resume."""
    for step in [-3, -2**63]:
        config, state = trained_run(c, f"run{abs(step) % 1000}")
        edit_json(state, lambda j: j.__setitem__("step", step))
        c.refused(f"state.json step {step}", "train", "--config", config, "--resume",
                  expect="state.json")


def d5(c):
    """An out-of-range or fractional step was accepted and the run reported itself complete."""
    for step in [1000, 2**63 - 1, 4.5]:
        config, state = trained_run(c, f"run{len(str(step))}")
        edit_json(state, lambda j: j.__setitem__("step", step))
        c.refused(f"state.json step {step}", "train", "--config", config, "--resume",
                  expect="state.json")
    config = c.run_config("done")
    c.ok("train", "--config", config)
    with open(c.path("done", "summary.json")) as f:
        summary = f.read()
    c.ok("train", "--config", config, "--resume")
    with open(c.path("done", "summary.json")) as f:
        if f.read() != summary:
            raise Finding("resuming a complete run rewrote its summary")


def child_peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def d6(c):
    """An HF config.json made gattn allocate what the files do not hold."""
    folder = c.hf_folder()
    # 2^22 * 32 * 3 floats per layer: 3.2 GB zero-filled before the shape check, as it was.
    edit_json(os.path.join(folder, "config.json"),
              lambda j: j.__setitem__("intermediate_size", 2**22))
    c.refused("intermediate_size 2^22", "eval", "--checkpoint", folder, "--data",
              c.path(c.data(), "val.bin"), "--seq", "32", expect="model.safetensors")
    if child_peak_rss_mb() > 200:
        raise Finding(f"peak RSS {child_peak_rss_mb():.0f} MB before the shape error")
    for size in [2**29, 10**9]:
        edit_json(os.path.join(folder, "config.json"),
                  lambda j: j.__setitem__("hidden_size", size))
        c.refused(f"hidden_size {size}", "eval", "--checkpoint", folder, "--data",
                  c.path(c.data(), "val.bin"), "--seq", "32", expect=folder)
    print(f"  peak RSS of the refusals {child_peak_rss_mb():.0f} MB")


def d10(c):
    """--intervene accepted conflicting or no-op specs and lenient numbers."""
    model = c.model("ck", 1)
    base = ["eval", "--checkpoint", model, "--data", c.path(c.data(), "val.bin"), "--seq", "32",
            "--windows", "2"]
    for specs in [["gate=open", "gate=closed"], ["gate@0=open", "gate@5=closed"],
                  ["layer:1:gate=closed", "gate=open"], ["gate@32=open"],
                  ["gate@1000000=open"], ["gate=constant:1e39"], ["layer:0x1:gate=open"],
                  ["layer:-0:gate=open"], ["gate=constant: 1"]]:
        args = [a for s in specs for a in ("--intervene", s)]
        c.refused(" ".join(specs), *base, *args, expect="--intervene")


def safetensors_parts(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    return data[8:8 + n], data[8 + n:]


def write_safetensors(path, header, body):
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + body)


def d12(c):
    """Safetensors that Hugging Face's library rejects were accepted."""
    src = os.path.join(c.fixtures, "qwen3_f32", "model.safetensors")
    header, body = safetensors_parts(src)
    entries = json.loads(header)
    name = next(k for k in entries if k != "__metadata__")
    shifted = {k: (dict(v, data_offsets=[v["data_offsets"][0] + 64, v["data_offsets"][1] + 64])
                   if k != "__metadata__" else v) for k, v in entries.items()}
    text = json.dumps(entries).encode()
    duplicate = text[:-1] + b", " + json.dumps({name: entries[name]}).encode()[1:]
    cases = [("NUL padding", header + b"\0" * 8, body, "NUL"),
             ("trailing bytes", header, body + b"\0" * 64, "after the last tensor"),
             ("a hole", json.dumps(shifted).encode(), b"\0" * 64 + body, "hole"),
             ("a duplicate key", duplicate, body, "appears twice")]
    for what, h, b, expect in cases:
        folder = c.hf_folder(what.replace(" ", "_"))
        write_safetensors(os.path.join(folder, "model.safetensors"), h, b)
        c.refused(f"a safetensors file with {what}", "eval", "--checkpoint", folder, "--data",
                  c.path(c.data(), "val.bin"), "--seq", "32", expect=expect)
    folder = c.hf_folder("nul_name")
    os.rename(os.path.join(folder, "model.safetensors"), os.path.join(folder, "a.safetensors"))
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {k: "a.safetensors\u0000x" for k in entries
                                  if k != "__metadata__"}}, f)
    c.refused("a weight_map file name with a NUL", "eval", "--checkpoint", folder, "--data",
              c.path(c.data(), "val.bin"), "--seq", "32", expect="weight_map")


def d13(c):
    """Integrity checks could be switched off by small edits."""
    data = c.data()
    shard = c.path("v1.bin")
    with open(os.path.join(data, "val.bin"), "rb") as f:
        raw = bytearray(f.read())
    raw[8:12] = struct.pack("<I", 1)
    with open(shard, "wb") as f:
        f.write(raw)
    model = c.model("ck", 1)
    c.refused("a shard edited to version 1", "eval", "--checkpoint", model, "--data", shard,
              "--seq", "32", expect="re-make this shard")
    header, body = safetensors_parts(os.path.join(model, "model.safetensors"))
    entries = json.loads(header)
    stripped = dict(entries, __metadata__={})
    renamed_key = header.replace(b"gattn.xxh3:", b"gattn.ixh3:", 1)
    for what, h in [("without its checksums", json.dumps(stripped).encode()),
                    ("with a checksum key renamed", renamed_key)]:
        copy = c.path(what.replace(" ", "_"))
        shutil.copytree(model, copy)
        write_safetensors(os.path.join(copy, "model.safetensors"), h, body)
        c.refused(f"a checkpoint {what}", "eval", "--checkpoint", copy, "--data",
                  os.path.join(data, "val.bin"), "--seq", "32", expect="checksum"
                  if what.startswith("without") else "gattn.ixh3")
    config, _ = trained_run(c, "strip")
    weights = c.path("strip", "checkpoints", "step_00000004", "model.safetensors")
    header, body = safetensors_parts(weights)
    body = bytearray(body)
    body[0] ^= 0x01
    write_safetensors(weights, json.dumps(dict(json.loads(header), __metadata__={})).encode(),
                      bytes(body))
    c.refused("resuming from stripped checksums and a flipped weight", "train", "--config",
              config, "--resume", expect="checksum")


def d14(c):
    """User errors printed as internal errors; HF config mistakes misnamed."""
    model = c.model("ck", 1)
    with open(c.path("a_file"), "w") as f:
        f.write("x")
    for what, out in [("a file", c.path("a_file")), ("a path under a file", c.path("a_file", "sub")),
                      ("empty", "")]:
        r = c.refused(f"export --out {what}", "export", "--checkpoint", model, "--format",
                      "authors", "--out", out, expect="--out")
        if "internal error" in r.stderr:
            raise Finding(f"export --out {what}: reported as an internal error")
    folder = c.hf_folder()
    cfg = os.path.join(folder, "config.json")
    edit_json(cfg, lambda j: j.pop("model_type"))
    c.refused("an HF config.json without model_type", "eval", "--checkpoint", folder, "--data",
              c.path(c.data(), "val.bin"), expect="'model_type' is required")
    edit_json(cfg, lambda j: j.update(model_type="qwen3", num_hidden_layers=2**31))
    c.refused("num_hidden_layers 2^31", "eval", "--checkpoint", folder, "--data",
              c.path(c.data(), "val.bin"), expect="2147483648")
    edit_json(cfg, lambda j: j.update(num_hidden_layers=2, rope_theta=5e5))
    c.refused("rope_parameters beside rope_theta", "eval", "--checkpoint", folder, "--data",
              c.path(c.data(), "val.bin"), expect="rope_theta")
    config, _ = trained_run(c, "lr")
    edit_json(config, lambda j: j["optimizer"].__setitem__("lr", 0.02))
    c.refused("resume with another lr", "train", "--config", config, "--resume",
              expect="optimizer/lr: 0.01 -> 0.02")
    r = c.ok("train", "--config", config, "--resume", "--allow-config-change")
    if "optimizer/lr: 0.01 -> 0.02" not in r.stderr:
        raise Finding("--allow-config-change did not print the change")


CASES = {"D1": d1, "D2": d2, "D3": d3, "D4": d4, "D5": d5, "D6": d6, "D10": d10, "D12": d12,
         "D13": d13, "D14": d14}


def main():
    gattn, fixtures, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    if names == ["all"]:
        names = list(CASES)
    failed = 0
    for name in names:
        with tempfile.TemporaryDirectory() as work:
            try:
                CASES[name](Case(os.path.abspath(gattn), os.path.abspath(fixtures), work))
                print(f"{name}: fixed ({CASES[name].__doc__})")
            except Finding as e:
                failed += 1
                print(f"{name}: STILL HOLDS: {e}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
