#!/usr/bin/env bash
# shaping.sh CNNPAR CNNPAR_RUN
# A 2-node testbed at 100 Mbit/s really shapes: 2 ranks of cnnpar-run (dp on veeriah-cifar10,
# sleep compute) over it, and the largest allreduce (fc1's gradients, 750,600 FP32 values =
# 3,002,400 bytes) takes the time the shaped rate allows. Exits 77 (skipped) when not root.
#
# Expected time. At P = 2 an allreduce of n bytes moves n bytes each way over a rank's link
# (ring: (P-1)/P * n in reduce-scatter plus as much in allgather; MPICH's reduce-scatter +
# allgather the same), both directions at once, so
#     T_c ~= n / B_eff + small terms,
#     B_eff = R * 1448 / 1514 = 0.956 R:
# tbf counts whole Ethernet frames (1500-byte MTU + 14-byte header) and TCP carries 1448 bytes
# of each (20 IP + 20 TCP + 12 timestamp bytes), the 0.956 measured in FINDINGS.md.
# R = 12.5e6 B/s: n / B_eff = 3,002,400 / 11,954,000 = 0.2512 s.
# Tolerance: a full tbf bucket lets the first burst (256 KiB) through unshaped, so T_c may be
# as low as (n - burst) / B_eff = 0.2292 s (3 % below that for clock and timer granularity);
# above, 10 % for the reduction, the rank's polling interval and TCP's recovery from tbf drops.
set -u
cnnpar=$(realpath "$1"); cnnpar_run=$(realpath "$2")
[ "$(id -u)" -eq 0 ] || { echo "shaping: skipped, the testbed needs root"; exit 77; }
name=tba-shape
work=$(mktemp -d); trap 'rm -rf "$work"; "$cnnpar" testbed destroy --name "$name" -q' EXIT

# Every node's TCP congestion control is pinned to cubic, whatever the host's (bbr here, whose
# two-way transfers through tbf stall; testbed/testbed.hpp kTcpCongestionControl), and no node
# restarts slow start after idle (kTcpSlowStartAfterIdle), whatever the host does.
host_restart=$(cat /proc/sys/net/ipv4/tcp_slow_start_after_idle)
"$cnnpar" testbed create --name "$name" --nodes 2 --bandwidth 100Mbps -q || { echo "shaping: FAIL: create"; exit 1; }
[ "$(cat /proc/sys/net/ipv4/tcp_slow_start_after_idle)" = "$host_restart" ] ||
  { echo "shaping: FAIL: the host's tcp_slow_start_after_idle changed"; exit 1; }
for node in 0 1; do
  cc=$(ip netns exec "$name-n$node" cat /proc/sys/net/ipv4/tcp_congestion_control)
  [ "$cc" = cubic ] || { echo "shaping: FAIL: node $node runs TCP $cc, not cubic (host: $(cat /proc/sys/net/ipv4/tcp_congestion_control))"; exit 1; }
  restart=$(ip netns exec "$name-n$node" cat /proc/sys/net/ipv4/tcp_slow_start_after_idle)
  [ "$restart" = 0 ] || { echo "shaping: FAIL: node $node has tcp_slow_start_after_idle $restart, not 0"; exit 1; }
done
"$cnnpar" testbed status --name "$name" | grep -q "TCP cubic without slow start after idle" ||
  { echo "shaping: FAIL: status does not say TCP cubic without slow start after idle"; exit 1; }
"$cnnpar" testbed destroy --name "$name" -q

"$cnnpar" testbed run --name "$name" --nodes 2 --bandwidth 100Mbps -q -- \
  "$cnnpar_run" --network veeriah-cifar10 --strategy dp --batch 16 --iterations 4 --warmup 1 --compute sleep \
  --trace "$work/trace.json" || { echo "shaping: FAIL: the run failed"; exit 1; }

python3 - "$work/trace.json" <<'EOF'
import json, statistics, sys
trace = json.load(open(sys.argv[1]))
rate_Bps = 12.5e6               # 100 Mbit/s
b_eff = rate_Bps * 1448 / 1514  # TCP payload per Ethernet frame counted by tbf
burst_bytes = 256 * 1024
hosts = trace["metadata"].get("hosts", [])
assert len(set(hosts)) == 2, f"the ranks did not run on two hosts: {hosts}"
warmup = trace["warmup_iterations"]
largest = max(c["bytes"] for r in trace["ranks"] for c in r["collectives"])
assert largest == 3002400, f"largest collective {largest} bytes, expected fc1's 3,002,400"
times = [c["comm_end"] - c["comm_start"] for r in trace["ranks"] for c in r["collectives"]
         if c["bytes"] == largest and c["iteration"] >= warmup]
t_c = statistics.median(times)
low, high = (largest - burst_bytes) / b_eff * 0.97, largest / b_eff * 1.10
print(f"shaping: fc1 allreduce {largest} B: T_c median {t_c:.4f} s over {len(times)} records "
      f"(expected n/B_eff = {largest / b_eff:.4f} s, accepted {low:.4f} .. {high:.4f} s); "
      f"effective {largest / t_c * 8 / 1e6:.1f} Mbit/s")
sys.exit(0 if low <= t_c <= high else 1)
EOF
