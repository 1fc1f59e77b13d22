package inventory

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

// Whole processes, as a user runs them: `rdmalab inventory --root TREE`
// beside `lstopo-no-graphics -i TREE --of xml`, alternating, on every hwloc
// capture and seed tree; prints each tree's medians and ratio and the
// median ratio. A measurement, not a pass/fail test:
//
//	RDMALAB_BENCH=1 go test ./internal/inventory -run InventoryVsLstopoProcesses -v -count=1
func TestInventoryVsLstopoProcesses(t *testing.T) {
	if os.Getenv("RDMALAB_BENCH") == "" {
		t.Skip("a benchmark: set RDMALAB_BENCH=1")
	}
	lstopo := testhost.RequireTool(t, "lstopo-no-graphics")
	bin := testhost.Rdmalab(t)
	rounds := 31
	if s := os.Getenv("RDMALAB_BENCH_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	roots := map[string]string{}
	for name, c := range testhost.Captures(t) {
		// As TestAgreesWithHwloc: trees lstopo can read.
		if c.IBClassOnly || strings.HasSuffix(name, "-fixtures") || strings.HasSuffix(name, "-sys") {
			continue
		}
		roots[name] = c.Root
	}
	for name, mk := range testhost.Seeds() {
		roots[name] = testhost.WriteTree(t, mk())
	}
	names := make([]string, 0, len(roots))
	for n := range roots {
		names = append(names, n)
	}
	slices.Sort(names)
	// Wall time, and CPU time (user + system), which a machine shared
	// with other jobs disturbs less.
	run := func(name string, args ...string) (wall, cpu time.Duration) {
		cmd := exec.Command(name, args...)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%.500s", name, args, err, out)
		}
		return time.Since(start), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var ratios, cpuRatios []float64
	for _, name := range names {
		root := roots[name]
		var ours, theirs, oursCPU, theirsCPU []time.Duration
		for range rounds {
			w, c := run(bin, "inventory", "--root", root)
			ours, oursCPU = append(ours, w), append(oursCPU, c)
			w, c = run(lstopo, "-i", root, "--of", "xml")
			theirs, theirsCPU = append(theirs, w), append(theirsCPU, c)
		}
		mo, mt := medianOf(ours), medianOf(theirs)
		co, ct := medianOf(oursCPU), medianOf(theirsCPU)
		r, cr := float64(mo)/float64(mt), float64(co)/float64(ct)
		ratios, cpuRatios = append(ratios, r), append(cpuRatios, cr)
		fmt.Printf("%-44s wall: rdmalab %6.1f ms, lstopo %6.1f ms, ratio %.2f · CPU: %5.1f ms, %5.1f ms, ratio %.2f (%d files, median of %d)\n",
			name, ms(mo), ms(mt), r, ms(co), ms(ct), cr, countFiles(root), rounds)
	}
	slices.Sort(ratios)
	slices.Sort(cpuRatios)
	fmt.Printf("median ratio over %d trees: wall %.2f (min %.2f, max %.2f), CPU %.2f (min %.2f, max %.2f)\n", len(ratios),
		ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], cpuRatios[len(cpuRatios)/2], cpuRatios[0], cpuRatios[len(cpuRatios)-1])
}

func medianOf(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
