#!/usr/bin/env bash
# The bench orchestrator at fleet scale, against a SIMULATED fleet
# (benchrun.SimFleet: a link model behind the launch fake; no node, process or
# network exists). Each scenario runs in its own process (bench/fleetsim),
# so peak RSS and threads are its own:
#   - a 20,000-node cluster file planned to the first round (default
#     schedule, and circle for contrast): time and peak RSS;
#   - 2,048 simulated nodes with one slow cable (a node's, at half rate):
#     what was named, the rounds used, peak RSS, peak OS threads, CPU per
#     round and the projected wall time at the default --seconds 5
#     --samples 3 on a real fleet (docs/bench.md says how it is projected);
#   - 20,000 simulated nodes, the same, to show nothing runs out.
# Fails when the 20,000-node plan takes over 5 CPU-s or 1 GB (CPU, not wall:
# the suite runs this on a loaded machine, where the wall time doubles), or the 2,048-node
# run names the wrong thing, takes over 1 GB, 200 threads or 15 min.
#   bench/fleet-scale.sh [--quick]     (--quick: skips the 20,000-node run)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/fleetsim
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./bench/fleetsim
echo "SIMULATED fleet: the real orchestrator, schedule and localiser; no real node. $(nproc) cores, $(uname -m), $(go env GOVERSION)"
rows=()
rows+=("$("$bin" -nodes 20000 -first-round)")
rows+=("$("$bin" -nodes 20000 -first-round -schedule circle)")
rows+=("$("$bin" -nodes 2048)")
[ "${1:-}" = --quick ] || rows+=("$("$bin" -nodes 20000)")
printf '%s\n' "${rows[@]}" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
cols = [("nodes", "nodes", "{}"), ("schedule", "schedule", "{}"), ("to round 1", "to_first_round_s", "{:.2f} s"), ("CPU to round 1", "cpu_to_first_round_s", "{:.2f} s"),
        ("RSS at round 1", "rss_first_round_mb", "{:.0f} MB"), ("rounds used", None, None), ("peak RSS", "peak_rss_mb", "{:.0f} MB"),
        ("peak threads", "peak_threads", "{}"), ("CPU/round", "cpu_per_round_s", "{:.2f} s"), ("projected wall", "projected_wall_min", "{:.1f} min"),
        ("slow cable of", "slow", "{}"), ("named", None, None)]
def cell(r, key, fmt, name):
    if name == "rounds used":
        return "plan only" if r["slow"] == "" else "%d + %d retest" % (r["measured_rounds"], r["retest_rounds"])
    if name == "named":
        return ", ".join(r["named"] or ["-"]) if r["slow"] else "-"
    if r["slow"] == "" and name in ("peak threads", "CPU/round", "projected wall", "slow cable of"):
        return "-"
    return fmt.format(r[key])
table = [[c[0] for c in cols]] + [[cell(r, c[1], c[2], c[0]) for c in cols] for r in rows]
w = [max(len(row[i]) for row in table) for i in range(len(cols))]
for row in table:
    print("  ".join(v.ljust(w[i]) for i, v in enumerate(row)))
bad = []
for r in rows:
    if r["slow"] == "" and r["schedule"] == "matching" and (r["cpu_to_first_round_s"] > 5 or r["rss_first_round_mb"] > 1024):
        bad.append("%d nodes to round 1: %.2f CPU-s, %.0f MB" % (r["nodes"], r["cpu_to_first_round_s"], r["rss_first_round_mb"]))
    if r["slow"]:
        want = {r["slow"] + " bench.node.send", r["slow"] + " bench.node.receive"}
        if set(r["named"] or []) != want:
            bad.append("%d nodes: named %s, want %s" % (r["nodes"], r["named"], sorted(want)))
        if r["nodes"] <= 2048 and (r["peak_rss_mb"] > 1024 or r["peak_threads"] > 200 or r["projected_wall_min"] > 15):
            bad.append("%d nodes: %.0f MB, %d threads, %.1f min" % (r["nodes"], r["peak_rss_mb"], r["peak_threads"], r["projected_wall_min"]))
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
'
