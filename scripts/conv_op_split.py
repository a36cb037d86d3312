#!/usr/bin/env python3
"""Per trace (predicted or measured), the seconds per measured iteration of the conv layers'
forward and weight-gradient ops by kernel (im2col, gemm), their backward data, and the median
iteration: the split reports/bpt-cnn-inner-dag compares.

    scripts/conv_op_split.py NETWORK.json TRACE.json...
"""
import json
import statistics
import sys

if len(sys.argv) < 3:
    sys.exit(__doc__)
conv = {i for i, layer in enumerate(json.load(open(sys.argv[1]))["layers"]) if layer["type"] == "conv"}
for path in sys.argv[2:]:
    trace = json.load(open(path))
    ops = trace["ranks"][0]
    marks = [m["time"] for m in ops["marks"]]
    first_measured = max(trace["warmup_iterations"], 1)
    iterations = [marks[i] - marks[i - 1] for i in range(first_measured, len(marks))]
    start = marks[first_measured - 1]
    seconds = {}
    for op in ops["compute"]:
        if op["layer"] not in conv or op["start"] < start:
            continue
        part = op["phase"] if op["phase"] == "backward_data" else op["kernel"].split(" ")[0]
        seconds[part] = seconds.get(part, 0.0) + (op["end"] - op["start"]) / len(iterations)
    parts = ", ".join(f"{part} {s:.4f}" for part, s in sorted(seconds.items()))
    print(f"{path}: iteration {statistics.median(iterations):.4f} s; conv per iteration: {parts}")
