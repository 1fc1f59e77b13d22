#!/usr/bin/env bash
# The default schedule over REAL sshd in network namespaces (root): N hosts
# at 100 Mbit/s, one shaped to 25 Mbit/s; prints the wall time, the rounds
# of the schedule against N−1, the orchestrator's peak threads and RSS, and
# fails unless exactly the slow host is named (both sides).
#   sudo bench/netns-scale.sh [hosts]      default 64; the suite runs 32
set -euo pipefail
cd "$(dirname "$0")/.."
RDMALAB_NETNS_HOSTS=${1:-64} go test ./internal/bench -run 'TestDefaultScheduleNamesSlowLinkInNamespaces$' -v -count 1 -timeout 30m |
  grep -E 'netns_scale_test|--- |^(ok|FAIL)' | cut -c1-400
