#!/usr/bin/env python3
"""Tabulates scripts/bpt_orderings.sh's traces: per combination and engine (analytic, simgrid,
real) the medians over repeats of time per epoch and T_SGWU (the components epoch_s and
sync_wait_s, analysis/components.hpp) and of the iteration time, all from cnnpar compare --json,
then checks the orderings and the prediction errors."""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1]
combos = ["idpa_sgwu", "udpa_sgwu", "idpa_agwu", "udpa_agwu"]
engines = ["analytic", "simgrid", "real"]


values = {}  # (combo, engine, quantity) -> [values over repeats]
for combo in combos:
    for real_file in sorted(glob.glob(os.path.join(out, combo + "_r*.real.json"))):
        stem = real_file[: -len(".real.json")]
        # cnnpar compare --json: each prediction beside the measurement
        for engine, compare_file in (("analytic", f"{stem}.compare-analytic.json"), ("simgrid", f"{stem}.compare-simgrid.json")):
            compare = json.load(open(compare_file))
            metrics = {m["name"]: m for m in compare["metrics"]}
            sides = [("predicted", engine)] + ([("measured", "real")] if engine == "analytic" else [])
            for side, who in sides:
                for quantity in ("epoch_s", "sync_wait_s"):
                    values.setdefault((combo, who, quantity), []).append(compare["components"][side][quantity])
                values.setdefault((combo, who, "iteration_s"), []).append(metrics["iteration_s"][side])

med = {k: statistics.median(v) for k, v in values.items()}
print("| combination | engine | time per epoch s | T_SGWU s | time per iteration s |")
print("|---|---|---:|---:|---:|")
for combo in combos:
    for engine in engines:
        row = [med.get((combo, engine, q)) for q in ("epoch_s", "sync_wait_s", "iteration_s")]
        print(f"| {combo} | {engine} | " + " | ".join("-" if v is None else f"{v:.4f}" for v in row) + " |")
print()
for engine in engines:
    checks = []
    for update in ("sgwu", "agwu"):
        for q in ("epoch_s", "sync_wait_s"):
            a, b = med.get((f"idpa_{update}", engine, q)), med.get((f"udpa_{update}", engine, q))
            if a is not None and b is not None:
                checks.append(f"IDPA < UDPA ({update}, {q}): {'yes' if a < b else 'NO'} ({a:.4f} vs {b:.4f})")
    for partition in ("idpa", "udpa"):
        a, b = med.get((f"{partition}_agwu", engine, "iteration_s")), med.get((f"{partition}_sgwu", engine, "iteration_s"))
        if a is not None and b is not None:
            checks.append(f"AGWU < SGWU ({partition}, iteration_s): {'yes' if a < b else 'NO'} ({a:.4f} vs {b:.4f})")
    print(f"**{engine}**: " + "; ".join(checks))
    print()
for engine in ("analytic", "simgrid"):
    errors = []
    for combo in combos:
        p, m = med.get((combo, engine, "epoch_s")), med.get((combo, "real", "epoch_s"))
        if p and m:
            errors.append(f"{combo} {100 * (p / m - 1):+.1f} %")
    print(f"{engine} time per epoch against measured: " + ", ".join(errors))
