"""After `pip install -e .`: `import gattn` reads the clone's python/gattn files (so edits there
apply without reinstalling) and its extension runs a model. Usage: editable_check.py REPO_ROOT
GATTN (the CLI, to make a model)."""
import os
import subprocess
import sys
import tempfile

import numpy as np

import gattn

root, cli = os.path.realpath(sys.argv[1]), sys.argv[2]
package = os.path.join(root, "python", "gattn")
for module in (gattn, gattn.analysis):
    where = os.path.realpath(module.__file__)
    if os.path.dirname(where) != package:
        sys.exit(f"{module.__name__} is imported from {where}, not from {package}")
with tempfile.TemporaryDirectory() as work:
    subprocess.run([cli, "init", "--config", os.path.join(root, "tests", "cli", "tiny_g1_65.json"),
                    "--out", os.path.join(work, "model")], check=True, capture_output=True)
    logits = gattn.load(os.path.join(work, "model")).forward(np.arange(10, dtype=np.int32))
    assert logits.shape == (1, 10, 65) and np.isfinite(logits).all()
extension = os.path.dirname(gattn._gattn.__file__)
for shipped in ("_gattn.pyi", "py.typed"):  # the type stubs, beside the extension
    if not os.path.exists(os.path.join(extension, shipped)):
        sys.exit(f"no {shipped} beside {gattn._gattn.__file__}")
print("editable install: gattn from", package, "and its extension", gattn._gattn.__file__)
