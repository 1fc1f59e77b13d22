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
// nodes (launch, slurmrun, benchrun, ncclrun), nor do bench, nccl and
// slurm, which hold what the runners leave; and the format registry,
// which only reads, imports no rule package.
func TestJudgingRunsNothing(t *testing.T) {
	const module = "github.com/rdmalab/rdmalab/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../../...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	imports := map[string][]string{}
	std := map[string][]string{} // the standard library's packages each imports
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || !strings.HasPrefix(f[0], module) {
			continue
		}
		for _, im := range f[1:] {
			if !strings.Contains(im, ".") {
				std[strings.TrimPrefix(f[0], module)] = append(std[strings.TrimPrefix(f[0], module)], im)
			}
			if strings.HasPrefix(im, module) {
				imports[strings.TrimPrefix(f[0], module)] = append(imports[strings.TrimPrefix(f[0], module)], strings.TrimPrefix(im, module))
			}
		}
	}
	// runs are the packages that run things on nodes; the packages that
	// hold what they leave (bench, nccl, slurm) run nothing themselves.
	runs := map[string]bool{"internal/launch": true, "internal/slurmrun": true, "internal/benchrun": true, "internal/ncclrun": true}
	for pkg := range runs {
		if _, ok := imports[pkg]; !ok {
			t.Errorf("%s: not in go list's packages (renamed? update runs)", pkg)
		}
	}
	// path is a way from `from` to a package that runs things.
	var path func(from string, seen map[string]bool) []string
	path = func(from string, seen map[string]bool) []string {
		for _, to := range imports[from] {
			if runs[to] {
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
	// what the runners leave is read and judged by packages that start no
	// process of their own
	for _, pkg := range []string{"internal/bench", "internal/nccl", "internal/slurm"} {
		if slices.Contains(std[pkg], "os/exec") {
			t.Errorf("%s imports os/exec: running belongs in its runner package", pkg)
		}
		if p := path(pkg, map[string]bool{}); p != nil {
			t.Errorf("%s reaches %s: %s", pkg, p[len(p)-1], strings.Join(p, " → "))
		}
	}
	rulePkgs := []string{"internal/hostcheck", "internal/fabriccheck", "internal/gpudirect", "internal/rules", "internal/judge", "internal/phycheck"}
	for _, im := range imports["internal/formats"] {
		if slices.Contains(rulePkgs, im) {
			t.Errorf("the format registry imports %s, a rule package: readers only read", im)
		}
	}
}
