#!/usr/bin/env bash
# Throughput of rdmalab's built-in TCP engine beside iperf3, like for like
# (one stream, the same write size: 1 MiB, the engine's, iperf3 -l 1M; the
# same duration), samples of the two alternating (ABBA: iperf3 first on odd
# samples, rdmalab first on even), on
#   lo:   the loopback of a network namespace this script makes, and
#   veth: a veth pair between two network namespaces it makes.
# Every sample is printed as it is measured (with the sender's and the
# receiver's context switches and CPU time per GB when perf is installed:
# on a loaded machine the CPU a GB costs says more than the rate), then per
# place both medians, each side's spread ((max-min)/median), the ratio of the
# medians (rdmalab / iperf3) and the range of the ratios of adjacent
# samples. Root is needed (namespaces); traffic never leaves them; the
# namespaces and processes are removed on exit, Ctrl-C included.
#   sudo bench/tcp-vs-iperf3.sh [seconds] [samples] [both|lo|veth]
# RDMALAB=path uses that rdmalab binary instead of building this tree's (to
# compare two versions of the engine against the same iperf3).
# NICE=-10 runs both tools at that niceness (equally), to keep a loaded
# machine's other work from deciding the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-3}
runs=${2:-5}
where=${3:-both}
nice=${NICE:-0}
case $where in both) places="lo veth" ;; lo | veth) places=$where ;; *)
  echo "third argument: both, lo or veth, not $where" >&2
  exit 2
  ;;
esac
[ "$(id -u)" = 0 ] || { echo "root is needed to make network namespaces (sudo $0 $*)" >&2; exit 2; }
command -v iperf3 >/dev/null || { echo "iperf3 is not installed (Debian: iperf3)" >&2; exit 2; }
ns=rdlbench$$
tmp=$(mktemp -d)
pids=()
cleanup() {
  # everything still running in our namespaces is ours (background jobs
  # ignore Ctrl-C, and perf does not pass a kill on to what it counts)
  for n in "${ns}a" "${ns}b"; do
    ip netns pids "$n" 2>/dev/null | xargs -r kill 2>/dev/null || true
  done
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  ip netns del "${ns}a" 2>/dev/null || true
  ip netns del "${ns}b" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if [ -n "${RDMALAB:-}" ]; then
  cp "$RDMALAB" "$tmp/rdmalab"
else
  go build -o "$tmp/rdmalab" ./cmd/rdmalab
fi

ip netns add "${ns}a"
ip netns add "${ns}b"
ip link add "${ns}x" type veth peer name "${ns}y"
ip link set "${ns}x" netns "${ns}a"
ip link set "${ns}y" netns "${ns}b"
ip -n "${ns}a" addr add 10.99.0.1/24 dev "${ns}x"
ip -n "${ns}b" addr add 10.99.0.2/24 dev "${ns}y"
ip -n "${ns}a" link set "${ns}x" up
ip -n "${ns}b" link set "${ns}y" up
ip -n "${ns}a" link set lo up
ip -n "${ns}b" link set lo up

# measure NAME NS CMD...: runs CMD in NS at the chosen niceness, counting its
# context switches into $tmp/NAME.cs when perf is there.
measure() {
  local name=$1 n=$2
  shift 2
  if command -v perf >/dev/null; then
    ip netns exec "$n" nice -n "$nice" perf stat -x, -e context-switches,task-clock -o "$tmp/$name.cs" -- "$@"
  else
    ip netns exec "$n" nice -n "$nice" "$@"
  fi
}
# counts NAME: "context-switches task-clock-ms" from perf, or "- -"
counts() {
  if [ -f "$tmp/$1.cs" ]; then
    awk -F, '/context-switches/ {c = $1} /task-clock/ {t = $1} END {print c, t}' "$tmp/$1.cs"
  else
    echo - -
  fi
}
listening() { # NS PORT: wait for a listener
  for _ in $(seq 100); do
    ip netns exec "$1" ss -Hltn "sport = :$2" | grep -q . && return 0
    sleep 0.05
  done
  echo "nothing listens on port $2 after 5 s" >&2
  return 1
}
# Each prints "Gb/s bytes".
iperf_once() { # SRVADDR CLIENTNS
  rm -f "$tmp"/srv.cs "$tmp"/cli.cs
  measure srv "${ns}a" timeout 120 iperf3 -s -1 -p 5299 >/dev/null &
  pids+=($!)
  listening "${ns}a" 5299
  measure cli "$2" timeout 120 iperf3 -c "$1" -p 5299 -l 1M -t "$secs" -J >"$tmp/iperf.json"
  wait "${pids[-1]}" || true
  python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]["sum_received"]; print(e["bits_per_second"]/1e9, e["bytes"])' "$tmp/iperf.json"
}
ours_once() { # SRVADDR CLIENTNS
  rm -f "$tmp"/srv.cs "$tmp"/cli.cs
  measure srv "${ns}a" timeout 120 "$tmp/rdmalab" bench agent tcp-server --listen "$1:5298" --timeout 120s >/dev/null &
  pids+=($!)
  listening "${ns}a" 5298
  measure cli "$2" timeout 120 "$tmp/rdmalab" bench agent tcp-client --connect "$1:5298" --seconds "$secs" >"$tmp/ours.json"
  wait "${pids[-1]}" || true
  python3 -c 'import json,sys; e=json.load(open(sys.argv[1])); print(e["gbps"], e["bytes"])' "$tmp/ours.json"
}
sample() { # WHO PLACE I SRVADDR CLIENTNS: one sample, printed, appended to $tmp/PLACE.WHO
  local who=$1 place=$2 i=$3 g b
  read -r g b < <("${who}_once" "$4" "$5") || true
  [ -n "${b:-}" ] || { echo "$place sample $i of $who failed" >&2; exit 1; }
  # Gb/s, then per GB: sender's and receiver's context switches and CPU ms
  python3 - "$g" "$b" $(counts cli) $(counts srv) >>"$tmp/$place.$who" <<'PY'
import sys
g, b = float(sys.argv[1]), float(sys.argv[2]) / 1e9
per = lambda v: "-" if v == "-" else f"{float(v) / b:.0f}"
print(g, *(per(v) for v in sys.argv[3:7]))
PY
  read -r g scs scpu rcs rcpu < <(tail -1 "$tmp/$place.$who")
  printf '%-5s sample %2d  %-8s %6.2f Gb/s   per GB: sender %5s context switches %4s CPU ms, receiver %5s, %4s\n' \
    "$place" "$i" "$([ "$who" = ours ] && echo rdmalab || echo iperf3)" "$g" "$scs" "$scpu" "$rcs" "$rcpu"
}

echo "rdmalab tcp engine vs iperf3 -l 1M: $secs s a sample, $runs samples each, nice $nice; $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
for place in $places; do
  if [ "$place" = lo ]; then addr=127.0.0.1 cli="${ns}a"; else addr=10.99.0.1 cli="${ns}b"; fi
  for i in $(seq "$runs"); do
    if ((i % 2)); then
      sample iperf "$place" "$i" "$addr" "$cli"
      sample ours "$place" "$i" "$addr" "$cli"
    else
      sample ours "$place" "$i" "$addr" "$cli"
      sample iperf "$place" "$i" "$addr" "$cli"
    fi
  done
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"

python3 - "$tmp" $places <<'PY'
import statistics, sys
tmp, places = sys.argv[1], sys.argv[2:]
name = {"lo": "loopback", "veth": "veth pair"}
def load(p, who):
    return [l.split() for l in open(f"{tmp}/{p}.{who}")]
def med(rows, k):
    v = [float(r[k]) for r in rows if r[k] != "-"]
    return f"{statistics.median(v):.0f}" if v else "-"
for p in places:
    o, i = load(p, "ours"), load(p, "iperf")
    ours, ipf = [float(r[0]) for r in o], [float(r[0]) for r in i]
    mo, mi = statistics.median(ours), statistics.median(ipf)
    spread = lambda v, m: (max(v) - min(v)) / m * 100
    pairs = sorted(a / b for a, b in zip(ours, ipf))
    print(f"{name[p]}: rdmalab median {mo:.2f} Gb/s (spread {spread(ours, mo):.0f}%), "
          f"iperf3 median {mi:.2f} Gb/s (spread {spread(ipf, mi):.0f}%): "
          f"ratio {mo / mi:.2f} (adjacent samples {pairs[0]:.2f}-{pairs[-1]:.2f})")
    for who, rows in (("rdmalab", o), ("iperf3", i)):
        print(f"  {who:8s} median per GB: sender {med(rows, 1)} context switches, {med(rows, 2)} CPU ms; "
              f"receiver {med(rows, 3)}, {med(rows, 4)} CPU ms")
PY
