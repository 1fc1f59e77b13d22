#!/usr/bin/env bash
# Throughput of rdmalab's built-in TCP engine beside iperf3 on the same veth
# pair between two network namespaces this script makes (root needed), like
# for like: one stream, the same write size (1 MiB, the engine's; iperf3 -l 1M),
# the same duration, RUNS alternating runs of each; prints every sample, both
# medians and the ratio. Traffic stays inside the namespaces.
# With "lo" as third argument both ends run on the loopback of one
# namespace instead (where the engine used to reach 0.75–0.79× iperf3).
#   sudo bench/tcp-vs-iperf3.sh [seconds] [runs] [veth|lo]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
runs=${2:-5}
where=${3:-veth}
ns=rdlbench$$
srvaddr=10.99.0.1; cli="${ns}b"
if [ "$where" = lo ]; then srvaddr=127.0.0.1; cli="${ns}a"; fi
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

iperf_once() {
  ip netns exec "${ns}a" timeout 60 iperf3 -s -1 -p 5299 >/dev/null & srv=$!
  sleep 0.5
  ip netns exec "$cli" timeout 60 iperf3 -c "$srvaddr" -p 5299 -l 1M -t "$secs" -J | python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9)'
  wait "$srv" || true; srv=
}
ours_once() {
  ip netns exec "${ns}a" timeout 60 "$tmp/rdmalab" bench agent tcp-server --listen "$srvaddr:5298" --timeout 60s >/dev/null & srv=$!
  ip netns exec "$cli" timeout 60 "$tmp/rdmalab" bench agent tcp-client --connect "$srvaddr:5298" --seconds "$secs" | python3 -c 'import json,sys; print(json.load(sys.stdin)["gbps"])'
  wait "$srv" || true; srv=
}
iperf=(); ours=()
for i in $(seq "$runs"); do
  if (( i % 2 )); then iperf+=("$(iperf_once)"); ours+=("$(ours_once)"); else ours+=("$(ours_once)"); iperf+=("$(iperf_once)"); fi
done

python3 - "$where" "${#ours[@]}" "${ours[@]}" "${iperf[@]}" <<'PY'
import statistics, sys
where = {"lo": "loopback", "veth": "veth pair"}[sys.argv[1]]
n = int(sys.argv[2]); v = [float(x) for x in sys.argv[3:]]
ours, iperf = v[:n], v[n:]
print("rdmalab tcp engine Gb/s:", " ".join(f"{x:.2f}" for x in ours))
print("iperf3 -l 1M Gb/s:      ", " ".join(f"{x:.2f}" for x in iperf))
mo, mi = statistics.median(ours), statistics.median(iperf)
print(f"{where}, {n} alternating runs each: medians rdmalab {mo:.2f} Gb/s, iperf3 {mi:.2f} Gb/s, ratio {mo/mi:.2f}")
PY
