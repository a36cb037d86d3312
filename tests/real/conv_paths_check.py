"""Checks the conv paths a trace's options record: conv_paths_check.py TRACE EXPECTED, where
EXPECTED is "im2col" (no "conv" key), the comma-separated conv layers that ran direct, or
"any-of:LAYERS" (a timed choice: im2col or any of those layers, sorted, each direct or
NAME:PATH)."""
import json
import sys

trace_file, expected = sys.argv[1], sys.argv[2]
with open(trace_file) as f:
    options = json.load(f)["metadata"]["options"]
recorded = options.get("conv")
if expected == "im2col":
    ok = recorded is None
elif expected.startswith("any-of:"):
    # A timed choice names each layer that leaves im2col, "NAME" (direct) or "NAME:PATH".
    allowed = expected[len("any-of:"):].split(",")
    names = [entry.split(":")[0] for entry in recorded or []]
    paths = [entry.split(":")[1] for entry in recorded or [] if ":" in entry]
    ok = recorded is None or (names == sorted(names) and 0 < len(names) and set(names) <= set(allowed)
                              and set(paths) <= {"direct", "winograd"})
else:
    ok = recorded == expected.split(",")
print(f"{trace_file}: options.conv = {json.dumps(recorded)}, expected {expected}")
sys.exit(0 if ok else 1)
