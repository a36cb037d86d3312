#!/usr/bin/env bash
# congestion.sh CNNPAR
# Every testbed node runs TCP cubic (testbed.hpp kTcpCongestionControl) even when the host's
# net.ipv4.tcp_allowed_congestion_control does not list it (a fresh boot here lists "reno bbr",
# and a namespace may not then make cubic its default: the write fails with EIO). create adds
# cubic to the allowed list and leaves the host's default alone. The host's list is restored
# on exit. Exits 77 (skipped) when not root or when the kernel has no cubic.
set -u
cnnpar=$(realpath "$1")
[ "$(id -u)" -eq 0 ] || { echo "congestion: skipped, the testbed needs root"; exit 77; }
allowed_file=/proc/sys/net/ipv4/tcp_allowed_congestion_control
grep -qw cubic /proc/sys/net/ipv4/tcp_available_congestion_control || { echo "congestion: skipped, no cubic"; exit 77; }
name=tba-congestion
saved_allowed=$(cat "$allowed_file")
host_default=$(cat /proc/sys/net/ipv4/tcp_congestion_control)
trap 'echo "$saved_allowed" > "$allowed_file"; "$cnnpar" testbed destroy --name "$name" -q' EXIT
fail() { echo "congestion: FAIL: $*"; exit 1; }
without_cubic=$(tr ' ' '\n' <<<"$saved_allowed" | grep -vx cubic | tr '\n' ' ')
[ "$host_default" = cubic ] && { echo "congestion: skipped, the host's default is cubic"; exit 77; }
echo "$without_cubic" > "$allowed_file" || fail "could not set $allowed_file"
grep -qw cubic "$allowed_file" && fail "cubic still allowed after writing '$without_cubic'"
"$cnnpar" testbed create --name "$name" --nodes 2 --bandwidth 1Gbps -q || fail "create with cubic not allowed"
for node in 0 1; do
  got=$(ip netns exec "$name-n$node" cat /proc/sys/net/ipv4/tcp_congestion_control)
  [ "$got" = cubic ] || fail "node $node runs $got, not cubic"
done
grep -qw cubic "$allowed_file" || fail "cubic is not in $allowed_file after create"
[ "$(cat /proc/sys/net/ipv4/tcp_congestion_control)" = "$host_default" ] || fail "the host's default changed"
echo "congestion: ok (allowed was '$without_cubic'; nodes run cubic; host default $host_default kept)"
