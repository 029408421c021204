#!/usr/bin/env python3
"""Runner 1, core: the paper's Table 1 rows 1-3, 5 and 10 at the quick-start scale, on the default
corpus: the baseline, the two parameter-matched baselines (more kv heads, more q heads), G1
elementwise and G1 headwise, >= 3 seeds, paired (same seed: same initial values of the shared
tensors, same data order). Resumable: rerun the same command to continue after an interruption.

  experiments/core.py [--seeds 3] [--threads 0] [--out runs/experiments/core]

Needs the default corpus, tokenizer and shards (scripts/quickstart.sh makes them), or --data.
"""
import os

import runner
import stats

TRAINING_LOSS_STEPS = [50, 100, 200]
VARIANTS = [
    {"name": "baseline", "gate": {"position": "none"}},
    # Table 1 row 2 doubles the kv heads; 3 q heads allow 1 or 3 kv heads, so 3 (+196,608 params).
    {"name": "more_kv_heads", "gate": {"position": "none"}, "model": {"num_key_value_heads": 3}},
    # Row 3 adds the q heads whose q and o weights match G1's added parameters: 1.5 heads here, so
    # 2 (+196,608 params, against G1's +147,456).
    {"name": "more_q_heads", "gate": {"position": "none"}, "model": {"num_attention_heads": 5}},
    {"name": "g1_elementwise", "gate": {"position": "sdpa"}},
    {"name": "g1_headwise", "gate": {"position": "sdpa", "granularity": "headwise"}},
]


def main():
    a = runner.arguments(__doc__, default_seeds=3)
    out = a.out or os.path.join(runner.ROOT, "runs", "experiments", "core" + ("_smoke" if a.smoke else ""))
    base = runner.quickstart_run()
    base["eval"] = {"every": base["steps"], "windows": 0}  # the whole validation split, once
    base["checkpoint"] = {"every": 100, "keep": 1}
    if a.data:
        runner.use_data(base, a.data)
    variants = VARIANTS
    if a.smoke:
        variants, a.seeds = [VARIANTS[0], VARIANTS[3]], 1
        runner.toy_budget(base)
    rows = runner.run_grid(a, base, variants, out, ["--sequences", "4" if a.smoke else "64"])
    text = (runner.summary_table(rows, variants, a.seeds, "baseline") + "\n" +
            stats.paired_table("M-Act", runner.paired_against(rows, variants, a.seeds, "baseline", "m_act"), 2) +
            "\nVal loss per seed:\n\n" + runner.per_seed_table(rows, variants, a.seeds, "val_loss", "{:.4f}") +
            "\nM-Act per seed:\n\n" + runner.per_seed_table(rows, variants, a.seeds, "m_act", "{:.2f}") +
            "\nTraining loss (the step's batch) when the gap opens:\n\n" +
            runner.training_loss_table(out, variants, a.seeds, TRAINING_LOSS_STEPS))
    runner.write_summary(out, "core: Table 1 rows 1-3, 5 and 10 on the default corpus", text)


if __name__ == "__main__":
    main()
