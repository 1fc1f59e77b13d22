#!/usr/bin/env bash
# Cover schedule and localisation on ibsim fat trees of 128, 512 and 1,024
# HCAs routed by OpenSM (ftree, updn, minhop, sssp): coverable, covered and
# uncoverable links, rounds, scheduling time, the circle method's rounds,
# and one injected fault at a time named (see docs/schedule.md). Needs
# ibsim-utils, libumad2sim0 and opensm; takes several minutes.
#   bench/schedule-ibsim.sh [sizes]        e.g. bench/schedule-ibsim.sh 1024
#   RDMALAB_SCHEDULE_ALL_FAULTS=1 bench/schedule-ibsim.sh   # every fault, not a sample
set -euo pipefail
cd "$(dirname "$0")/.."
RDMALAB_SCHEDULE_SIZES=${1:-128,512,1024} go test ./internal/schedule -run IBSim -v -count 1 -timeout 90m |
  grep -E 'HCAs|uncoverable|--- |^(ok|FAIL)'
