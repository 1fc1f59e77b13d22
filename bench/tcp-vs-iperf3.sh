#!/usr/bin/env bash
# Throughput of rdmalab's built-in TCP engine beside iperf3 on the same veth
# pair between two network namespaces this script makes (root needed), in
# one run; prints both and the ratio. Traffic stays inside the namespaces.
#   sudo bench/tcp-vs-iperf3.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
ns=rdlbench$$
tmp=$(mktemp -d)
cleanup() {
  [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null || true
  ip netns del "${ns}a" 2>/dev/null || true
  ip netns del "${ns}b" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
command -v iperf3 >/dev/null || { echo "iperf3 is not installed (Debian: iperf3)"; exit 2; }
go build -o "$tmp/rdmalab" ./cmd/rdmalab

ip netns add "${ns}a"; ip netns add "${ns}b"
ip link add "${ns}x" type veth peer name "${ns}y"
ip link set "${ns}x" netns "${ns}a"; ip link set "${ns}y" netns "${ns}b"
ip -n "${ns}a" addr add 10.99.0.1/24 dev "${ns}x"; ip -n "${ns}b" addr add 10.99.0.2/24 dev "${ns}y"
ip -n "${ns}a" link set "${ns}x" up; ip -n "${ns}b" link set "${ns}y" up
ip -n "${ns}a" link set lo up; ip -n "${ns}b" link set lo up

ip netns exec "${ns}a" timeout 60 iperf3 -s -1 -p 5299 >/dev/null & srv=$!
sleep 0.5
iperf=$(ip netns exec "${ns}b" timeout 60 iperf3 -c 10.99.0.1 -p 5299 -t "$secs" -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)')
wait "$srv" || true; srv=

ip netns exec "${ns}a" timeout 60 "$tmp/rdmalab" bench agent tcp-server --listen 10.99.0.1:5298 --timeout 60s >/dev/null & srv=$!
ours=$(ip netns exec "${ns}b" timeout 60 "$tmp/rdmalab" bench agent tcp-client --connect 10.99.0.1:5298 --seconds "$secs" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gbps"])')
wait "$srv" || true; srv=

python3 - "$ours" "$iperf" <<'PY'
import sys
ours, iperf = float(sys.argv[1]), float(sys.argv[2])
print(f"veth pair: rdmalab tcp engine {ours:.2f} Gb/s, iperf3 {iperf:.2f} Gb/s, ratio {ours/iperf:.2f}")
PY
