#!/usr/bin/python3
"""Times two matrix products right after the previous ones, after sleeping and after spinning.

Usage: OPENBLAS_NUM_THREADS=1 /usr/bin/python3 after_idle.py [N] [GAP_S] [REPEATS]
(N x N float32 matrices, default 500; the pause between, default 0.25 s; default 15 repeats,
the three cases alternated). Prints each case's median, least and largest time.
"""
import statistics
import sys
import time

import numpy as np

n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
gap_s = float(sys.argv[2]) if len(sys.argv) > 2 else 0.25
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 15
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n), dtype=np.float32)  # (N, N)
b = rng.standard_normal((n, n), dtype=np.float32)  # (N, N)
c = np.empty((n, n), dtype=np.float32)             # (N, N)


def two_products_s():
    start = time.perf_counter()
    np.matmul(a, b, out=c)
    np.matmul(c, b, out=a)
    a[:] *= 1e-3  # keeps the values bounded over the repeats
    return time.perf_counter() - start


for _ in range(5):
    two_products_s()
seconds = {"back to back": [], "after sleep": [], "after spin": []}
for _ in range(repeats):
    for case in seconds:
        if case == "after sleep":
            time.sleep(gap_s)
        elif case == "after spin":
            end = time.perf_counter() + gap_s
            while time.perf_counter() < end:
                pass
        seconds[case].append(two_products_s())
for case, values in seconds.items():
    print(f"{case:13s} median {statistics.median(values) * 1e3:7.3f} ms  "
          f"least {min(values) * 1e3:7.3f}  largest {max(values) * 1e3:7.3f}")
