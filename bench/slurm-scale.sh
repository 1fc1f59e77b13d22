#!/usr/bin/env bash
# The default schedule over a REAL Slurm cluster on this machine (root):
# munged, slurmctld and one slurmd per node (slurmd -N, as in
# ../shared/docs/SLURM-ONE-MACHINE.md), each slurmd started inside its own
# network namespace with its own address (NodeAddr), so every job step it
# runs (rdmalab's servers and clients) sends and receives through that
# node's veth on one bridge. Every node's link is shaped to 100 Mbit/s, one
# node's to 25 Mbit/s. Inside `salloc -N N` it runs `rdmalab bench` on a
# cluster file with `launcher: {type: srun}` (every end one srun step pinned
# to its node), tcp engine, 1 s × 1 sample, the default --timeout, no
# fabric, the default schedule, and prints the
# rounds used against N−1, what was named (it must be the shaped node, both
# sides, and nothing else), the wall time, the job steps Slurm ran, and the
# orchestrator's peak threads (sampled from /proc) and peak RSS
# (/usr/bin/time). Exit 0 when the shaped node alone is named, 1 otherwise.
# Everything it starts is stopped by PID on exit (also on Ctrl-C); the
# namespaces, links and its directory are removed.
# With KEEP, the run's progress, results, report and Slurm logs are copied
# there before everything is removed.
#   sudo bench/slurm-scale.sh [nodes [KEEP]]      nodes: default 64
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-64}
keep=${2:-}
if ! [[ $n =~ ^[0-9]+$ ]] || (( n < 2 || n > 250 )); then
  echo "nodes: want 2 to 250, got '$n'" >&2; exit 2
fi
[ "$(id -u)" = 0 ] || { echo "needs root (network namespaces, munged, slurmd)" >&2; exit 2; }
for t in ip tc nsenter munged slurmctld slurmd salloc srun sinfo scontrol runuser python3 bc /usr/bin/time; do
  command -v "$t" >/dev/null || { echo "$t is not installed (Debian: iproute2, slurmctld, slurmd, slurm-client, munge, time)" >&2; exit 2; }
done
[ -r /etc/munge/munge.key ] || { echo "/etc/munge/munge.key is missing (Debian's munge package makes it)" >&2; exit 2; }

# A /24 of 10.213.0.0/16 no interface here uses (the Go tests pick theirs
# the same way, so both can run at once).
used=$(ip -o -4 addr show 2>/dev/null | awk '{print $4}' | sed -n 's/^10\.213\.\([0-9]*\)\..*/\1/p' | sort -u)
x=$(( ($$ % 250) + 1 )); for _ in $(seq 250); do grep -qx "$x" <<<"$used" || break; x=$(( x % 250 + 1 )); done
net=10.213.$x
id=rs$(( $$ % 100000 ))
br=${id}br
work=$(mktemp -d /tmp/rdmalab-slurm-scale.XXXXXX)
chmod 755 "$work"
conf=$work/slurm.conf
export SLURM_CONF=$conf
ns=(); veths=(); job=; sampler=

stop_pidfile() { # $1: pid file of a daemon this script started
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 0
  [[ $pid =~ ^[0-9]+$ ]] && (( pid > 1 )) && kill "$pid" 2>/dev/null || true
  echo "$pid"
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
  if [ -n "$job" ] && kill -0 "$job" 2>/dev/null; then
    # rdmalab first (it ends its own sruns on SIGTERM), then salloc,
    # which ends the allocation
    local tp k
    tp=$(cat "$work/time.pid" 2>/dev/null || true)
    if [ -n "$tp" ]; then
      for k in $(cat "/proc/$tp/task/$tp/children" 2>/dev/null); do kill -TERM "$k" 2>/dev/null || true; done
      for _ in $(seq 100); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
    fi
    kill -TERM "$job" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$job" 2>/dev/null || true
  fi
  if (( rc != 0 )) && [ -d "$work/log" ]; then
    echo "--- tail of slurmctld.log"; tail -n 15 "$work/log/slurmctld.log" 2>/dev/null || true
    echo "--- tail of slurmd-node1.log"; tail -n 15 "$work/log/slurmd-node1.log" 2>/dev/null || true
  fi >&2
  if [ -n "$keep" ] && [ -d "$work" ]; then
    mkdir -p "$keep" && cp -r "$work"/{log,progress.txt,out.json,results.jsonl,slurm.conf,cluster.yaml} "$keep"/ 2>/dev/null || true
  fi
  # slurmd first, then slurmctld, then munged: by the PIDs they wrote
  local pids=() p
  for i in $(seq "$n"); do p=$(stop_pidfile "$work/slurmd-node$i.pid"); [ -n "$p" ] && pids+=("$p"); done
  p=$(stop_pidfile "$work/slurmctld.pid"); [ -n "$p" ] && pids+=("$p")
  p=$(stop_pidfile "$work/munge/pid"); [ -n "$p" ] && pids+=("$p")
  for p in "${pids[@]}"; do
    for _ in $(seq 100); do [ -e "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  # whatever still runs in a namespace this script made is this script's
  for s in "${ns[@]}"; do
    for p in $(ip netns pids "$s" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
    ip netns del "$s" 2>/dev/null || true
  done
  for v in "${veths[@]}"; do ip link del "$v" 2>/dev/null || true; done
  ip link del "$br" 2>/dev/null || true
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== $n Slurm nodes, each slurmd in its own network namespace on bridge $br ($net.0/24); $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
go build -o "$work/rdmalab" ./cmd/rdmalab

# The network: a bridge at .254 (slurmctld and srun reach the nodes through
# it), node i at .i behind its veth pair, shaped with tbf both ways as
# testhost.NetCluster.Shape does: the inner end's egress is what the node
# sends, the bridge end's egress what it receives.
slow=$(( n / 2 + 1 ))
shape() { # $1 node index, $2 rate
  local i=$1 tbf=(root tbf rate "$2" burst 1mb latency 50ms)
  tc qdisc replace dev "${id}v$i" "${tbf[@]}"
  ip netns exec "${id}-$i" tc qdisc replace dev "${id}w$i" "${tbf[@]}"
}
ip link add "$br" type bridge
ip addr add "$net.254/24" dev "$br"
ip link set "$br" up
for i in $(seq "$n"); do
  s=${id}-$i
  ip netns add "$s"; ns+=("$s")
  ip link add "${id}v$i" type veth peer name "${id}w$i"; veths+=("${id}v$i")
  ip link set "${id}w$i" netns "$s"
  ip link set "${id}v$i" master "$br" up
  ip -n "$s" addr add "$net.$i/24" dev "${id}w$i"
  ip -n "$s" link set "${id}w$i" up
  ip -n "$s" link set lo up
  if (( i == slow )); then shape "$i" 25mbit; else shape "$i" 100mbit; fi
done

# munged with its own socket (a file: reachable from every namespace)
mkdir -p "$work"/{munge,state,spool,log}
chown munge:munge "$work/munge"
runuser -u munge -- munged --socket="$work/munge/sock" --pid-file="$work/munge/pid" --log-file="$work/munge/log" \
  --seed-file="$work/munge/seed" --key-file=/etc/munge/munge.key

# slurmctld's port: one free in this namespace; slurmd's may be the same in
# every node's namespace.
ctlport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
{
  cat <<EOF
ClusterName=scale
SlurmctldHost=localhost($net.254)
SlurmctldPort=$ctlport
SlurmdPort=6818
AuthType=auth/munge
AuthInfo=socket=$work/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool/%n
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd-%n.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
EOF
  for i in $(seq "$n"); do
    echo "NodeName=node$i NodeHostname=localhost NodeAddr=$net.$i CPUs=1 RealMemory=500 State=UNKNOWN"
  done
  echo "PartitionName=scale Nodes=node[1-$n] Default=YES MaxTime=INFINITE State=UP"
} >"$conf"
slurmctld -f "$conf"
t0=$(date +%s.%N)
for i in $(seq "$n"); do
  # slurmd in node i's network namespace (nsenter: only the network;
  # ip netns exec would also mount a fresh /sys without /sys/fs/cgroup,
  # which slurmd needs): every step it starts is there too.
  mkdir -p "$work/spool/node$i"
  nsenter --net="/run/netns/${id}-$i" slurmd -f "$conf" -N "node$i"
done
up=0
for _ in $(seq 240); do
  states=$(sinfo -h -N -o %T 2>/dev/null || true)
  if [ "$(wc -w <<<"$states")" = "$n" ] && ! grep -qE '^(unk|down)|\*$' <<<"$states"; then up=1; break; fi
  sleep 0.5
done
(( up )) || { echo "the $n nodes did not all register within 120 s:"; sinfo -N 2>&1 | head -20; exit 1; } >&2
printf '%d slurmd registered and idle in %.1f s\n' "$n" "$(echo "$(date +%s.%N) - $t0" | bc -l)"

# The cluster file: the Slurm node names, each one's data address in its
# namespace, launched with srun.
{
  echo "nodes:"
  for i in $(seq "$n"); do echo "  - {name: node$i, data: $net.$i}"; done
  echo "link: {layer: TCP}"
  echo "launcher: {type: srun, rdmalab: $work/rdmalab, base_port: 25400}"
} >"$work/cluster.yaml"

# The run: inside an allocation of every node; the orchestrator's threads
# are sampled from /proc every 50 ms, its peak RSS is /usr/bin/time's.
echo "salloc -N $n rdmalab bench --cluster cluster.yaml --engine tcp --seconds 1 --samples 1 (slow: node$slow)"
start=$(date +%s.%N)
salloc -N "$n" --quiet --time=30 sh -c 'echo $$ >"$1/time.pid"; shift; exec "$@"' sh "$work" \
  /usr/bin/time -f 'rdmalab-time %M KB %e s %U user %S sys' -o "$work/time.txt" \
  "$work/rdmalab" bench --cluster "$work/cluster.yaml" --engine tcp --seconds 1 --samples 1 \
  --results "$work/results.jsonl" -o json >"$work/out.json" 2>"$work/progress.txt" &
job=$!
(
  peak=0
  while :; do
    tp=$(cat "$work/time.pid" 2>/dev/null || true)
    if [ -n "$tp" ]; then
      for k in $(cat "/proc/$tp/task/$tp/children" 2>/dev/null); do
        th=$(awk '/^Threads:/ {print $2}' "/proc/$k/status" 2>/dev/null || true)
        if [ -n "$th" ] && (( th > peak )); then peak=$th; echo "$peak" >"$work/threads"; fi
      done
    fi
    sleep 0.05
  done
) &
sampler=$!
rc=0; wait "$job" || rc=$?
job=
wall=$(echo "$(date +%s.%N) - $start" | bc -l)
kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true; sampler=
# job steps slurmctld created, and the tasks they launched on the nodes
steps=$(cat "$work"/log/slurmd-node*.log | grep -o 'launch task StepId=[0-9.]*' | sort -u | wc -l)
tasks=$(cat "$work"/log/slurmd-node*.log | grep -c 'launch task StepId=' || true)
# What Slurm's daemons spent: slurmctld's CPU, and the slurmds' (clock
# ticks, fields 14-17 of stat); the step daemons are not counted: slurmd
# double-forks them, nobody here waits for them.
cpu_of() { # pid files...
  local f p t=0
  for f in "$@"; do
    p=$(cat "$f" 2>/dev/null) || continue
    t=$(( t + $(awk '{print $14 + $15 + $16 + $17}' "/proc/$p/stat" 2>/dev/null || echo 0) ))
  done
  echo "scale=1; $t / $(getconf CLK_TCK)" | bc -l
}
ctlcpu=$(cpu_of "$work/slurmctld.pid")
dcpu=$(cpu_of "$work"/slurmd-node*.pid)

python3 - "$n" "$slow" "$rc" "$wall" "$(cat "$work/threads" 2>/dev/null || echo 0)" "$steps" \
  "$work/out.json" "$work/progress.txt" "$work/time.txt" "$(cut -d' ' -f1-3 /proc/loadavg)" "$ctlcpu" "$dcpu" "$tasks" <<'PY'
import json, re, sys
n, slow, rc, wall, threads, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
out, progress, timef, load = open(sys.argv[7]).read(), open(sys.argv[8]).read(), open(sys.argv[9]).read(), sys.argv[10]
ctlcpu, dcpu, tasks = sys.argv[11], sys.argv[12], int(sys.argv[13])
named, rounds, schedule = set(), None, "?"
try:
    doc = json.loads(out)
    payload = doc.get("payload") or {}
    rounds = payload.get("rounds")
    for f in doc.get("findings") or []:
        if f.get("outcome") in ("fail", "warn", "unknown") and f.get("check") != "bench.direction.noisy":
            named.add("%s %s" % (f.get("host") or f.get("subject"), f.get("check")))
except ValueError:
    print("the run printed no JSON report:\n" + out[-2000:] + progress[-3000:])
m = re.search(r"^schedule (.*)$", progress, re.M)
if m:
    schedule = m.group(1)
mem = re.search(r"rdmalab-time (\d+) KB ([\d.]+) s ([\d.]+) user ([\d.]+) sys", timef)
print("schedule:", schedule)
if rounds:
    print("rounds used: %d of the %s schedule + %d retest (all pairs, N−1: %d)" % (rounds["measured"], rounds["schedule"], rounds["retest"], n - 1))
print("named:", ", ".join(sorted(named)) or "nothing", "(shaped: node%d)" % slow)
print("exit %d, wall %.1f s (rdmalab itself %s s, %s s user + %s s sys, its sruns included); %d job steps, %d tasks on the nodes" %
      (rc, wall, mem.group(2) if mem else "?", mem.group(3) if mem else "?", mem.group(4) if mem else "?", steps, tasks))
print("Slurm's daemons' CPU: slurmctld %s s, the %d slurmd %s s (their step daemons not counted)" % (ctlcpu, n, dcpu))
print("orchestrator: peak threads %d, peak RSS %.1f MB; load average at the end %s" % (threads, int(mem.group(1)) / 1024 if mem else 0, load))
want = {"node%d bench.node.send" % slow, "node%d bench.node.receive" % slow}
bad = []
if named != want:
    bad.append("named %s, want %s" % (sorted(named), sorted(want)))
if rc != 1:
    bad.append("rdmalab bench exited %d, want 1 (a slow node found)" % rc)
if not rounds or (n > 16 and rounds["measured"] >= n - 1): # up to 16 nodes the default is all pairs
    bad.append("rounds used %s, want far fewer than %d" % (rounds, n - 1))
for b in bad:
    print("FAIL:", b)
if bad:
    print("--- progress (tail)\n" + progress[-4000:])
sys.exit(1 if bad else 0)
PY
