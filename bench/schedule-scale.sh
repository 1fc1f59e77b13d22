#!/usr/bin/env bash
# The cover schedule's cost at 1,024 and 4,096 HCAs: reading OpenSM-style
# forwarding tables, joining them with the cabling, every path and the
# cover, each size in its own process; prints time and peak RSS and fails
# when 4,096 HCAs take more than 2 s of CPU or 300 MB (docs/schedule.md).
#   bench/schedule-scale.sh [sizes]        e.g. bench/schedule-scale.sh 4096
set -euo pipefail
cd "$(dirname "$0")/.."
RDMALAB_SCHEDULE_SCALE=${1:-1024,4096} go test ./internal/schedule -run 'TestScheduleScale$' -v -count 1 |
  grep -E 'HCAs|--- |^(ok|FAIL)'
