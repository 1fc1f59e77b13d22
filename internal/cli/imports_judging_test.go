package cli

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Reading below judging, running beside it (issue 37), on the import
// graph: what judges saved outputs and renders them (judge, compare,
// intake, report, the format registry) reaches nothing that runs things on
// nodes (launch, slurm, the runners), and the format registry, which only
// reads, imports no rule package.
func TestJudgingRunsNothing(t *testing.T) {
	const module = "github.com/rdmalab/rdmalab/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../../...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		for _, im := range f[1:] {
			if strings.HasPrefix(im, module) {
				imports[strings.TrimPrefix(f[0], module)] = append(imports[strings.TrimPrefix(f[0], module)], strings.TrimPrefix(im, module))
			}
		}
	}
	// pending are the ways in that remain until their move lands, each
	// with the move that ends it; the test fails on any other, and on a
	// pending one that is gone (delete its line).
	pending := map[string]string{
		"internal/bench":                 "bench still holds its runner (Runner, engines over launch and slurm): issue 37 moves it to a runner package",
		"internal/nccl":                  "nccl still runs nccl-tests through launch: issue 37 moves the runner out",
		"internal/report→internal/slurm": "report/slurm.go renders slurm.HealthResult, the health check's own type",
		"internal/rules→internal/slurm":  "rules lists slurm's catalog (slurm.Catalog sits beside the scontrol runner)",
	}
	used := map[string]bool{}
	// reaches: pkg runs things, or imports what does.
	var reaches func(pkg string, seen map[string]bool) bool
	reaches = func(pkg string, seen map[string]bool) bool {
		if pkg == "internal/launch" || pkg == "internal/slurm" {
			return true
		}
		for _, to := range imports[pkg] {
			if !seen[to] {
				seen[to] = true
				if reaches(to, seen) {
					return true
				}
			}
		}
		return false
	}
	// path is a way from `from` to a package that runs things, not
	// through a pending package or edge (those it marks used).
	var path func(from string, seen map[string]bool) []string
	path = func(from string, seen map[string]bool) []string {
		for _, to := range imports[from] {
			if _, ok := pending[from+"→"+to]; ok {
				used[from+"→"+to] = true
				continue
			}
			if _, ok := pending[to]; ok {
				used[to] = used[to] || reaches(to, map[string]bool{})
				continue
			}
			if to == "internal/launch" || to == "internal/slurm" {
				return []string{from, to}
			}
			if seen[to] {
				continue
			}
			seen[to] = true
			if p := path(to, seen); p != nil {
				return append([]string{from}, p...)
			}
		}
		return nil
	}
	for _, root := range []string{"internal/judge", "internal/compare", "internal/intake", "internal/report", "internal/report/htmlreport", "internal/formats"} {
		if _, ok := imports[root]; !ok {
			t.Errorf("%s: not in go list's packages", root)
			continue
		}
		if p := path(root, map[string]bool{}); p != nil {
			t.Errorf("%s reaches %s: %s", root, p[len(p)-1], strings.Join(p, " → "))
		}
	}
	for k, why := range pending {
		if !used[k] {
			t.Errorf("pending %q is no longer a way in: delete it (%s)", k, why)
		}
	}
	rulePkgs := []string{"internal/hostcheck", "internal/fabriccheck", "internal/gpudirect", "internal/rules", "internal/judge", "internal/phycheck"}
	for _, im := range imports["internal/formats"] {
		if slices.Contains(rulePkgs, im) {
			t.Errorf("the format registry imports %s, a rule package: readers only read", im)
		}
	}
}
