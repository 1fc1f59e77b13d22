package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkExits runs each case and checks its exit code and, when given, a string
// its output must hold.
type exitCase struct {
	name string
	args []string
	code int
	says string
}

func checkExits(t *testing.T, cases []exitCase) {
	t.Helper()
	for _, c := range cases {
		out, errOut, code := run(t, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.says) {
			t.Errorf("%s: rdmalab %s: exit %d, want %d saying %q\n%s%s", c.name, strings.Join(c.args, " "), code, c.code, c.says, out, errOut)
		}
		if code == ExitUsage && strings.Count(strings.TrimSpace(errOut), "\n") > 0 && strings.Contains(errOut, "goroutine") {
			t.Errorf("%s: a stack trace for bad input:\n%s", c.name, errOut)
		}
	}
}

func TestExitContractDoctor(t *testing.T) {
	f := verdictFixtures(t)
	checkExits(t, []exitCase{
		{"healthy", []string{"doctor", "--snapshot", f["healthy"]}, ExitOK, "verdict: HEALTHY"},
		{"fault", []string{"doctor", "--snapshot", f["failed"]}, ExitFindings, "port.state"},
		{"bad input", []string{"doctor", "--snapshot", filepath.Join(t.TempDir(), "nope.json")}, ExitUsage, "nope.json"},
		{"bad flag", []string{"doctor", "--snapshot", f["healthy"], "--expect-rate", "fast"}, ExitUsage, "--expect-rate"},
		{"unproven", []string{"doctor", "--snapshot", f["unproven"]}, ExitUnproven, "verdict: UNPROVEN"},
	})
}

// fabric check on the recorded qdr-lab fabric (a DDR link and a counter:
// fault), the same fabric mended (healthy), and mended but with no subnet
// manager answering (unproven).
func TestExitContractFabricCheck(t *testing.T) {
	b, err := os.ReadFile("../../examples/fabric/qdr-lab.json")
	if err != nil {
		t.Fatal(err)
	}
	var fab map[string]any
	if err := json.Unmarshal(b, &fab); err != nil {
		t.Fatal(err)
	}
	for _, p := range fab["ports"].([]any) {
		port := p.(map[string]any)
		if port["speed"] == "DDR" {
			port["speed"], port["lane_gbps"], port["rate_gbps"] = "QDR", 10, 120
			delete(port, "could_be_speed")
		}
		if c, ok := port["counters"].(map[string]any); ok {
			for k := range c {
				if strings.Contains(k, "Error") {
					c[k] = 0
				}
			}
		}
	}
	dir := t.TempDir()
	write := func(name string, v any) string {
		js, _ := json.Marshal(v)
		p := filepath.Join(dir, name)
		os.WriteFile(p, js, 0o644)
		return p
	}
	healthy := write("healthy.json", fab)
	fab["subnet_managers"] = []any{}
	noSM := write("nosm.json", fab)
	checkExits(t, []exitCase{
		{"fault", []string{"fabric", "check", "--fabric", "example:qdr-lab"}, ExitFindings, "fabric.link.speed"},
		{"healthy", []string{"fabric", "check", "--fabric", healthy}, ExitOK, "verdict: HEALTHY"},
		{"bad input", []string{"fabric", "check", "--fabric", filepath.Join(dir, "nope.json")}, ExitUsage, "nope.json"},
		{"bad flag", []string{"fabric", "check", "--fabric", healthy, "--threshold", "SymbolErrorCounter"}, ExitUsage, "--threshold"},
		{"unproven", []string{"fabric", "check", "--fabric", noSM}, ExitUnproven, "fabric.sm"},
	})
}

// benchLogs writes results logs made from the real 6-node TCP loopback
// log: its three nodes node01..node03 as recorded (healthy), with
// node02 → node03 at 0.5 Gb/s, and that plus node03 → node01 at twice the
// rest (the case whose moved median once turned 0.5 Gb/s good). Four
// directions (node01 ↔ node02 left out) is the few-direction case where
// the run's spread grew with it; six the full set. A newer run is the
// same figures with later start times.
func benchLogs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../report/testdata/bench-tcp-loopback/bw.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	dir := t.TempDir()
	out := map[string]string{}
	for _, dirs := range []int{4, 6} {
		for _, variant := range []string{"healthy", "slow", "slow-and-fast", "newer"} {
			var recs []string
			recs = append(recs, strings.Replace(lines[0], `"nodes":6`, `"nodes":3`, 1))
			for _, l := range lines[1:] {
				var r map[string]any
				if err := json.Unmarshal([]byte(l), &r); err != nil {
					t.Fatal(err)
				}
				from, to := r["from"].(string), r["to"].(string)
				if from > "node03" || to > "node03" || (dirs == 4 && (from+to == "node01node02" || from+to == "node02node01")) {
					continue
				}
				switch {
				case variant != "healthy" && variant != "newer" && from == "node02" && to == "node03":
					r["gbps"], r["samples_gbps"] = 0.5, []float64{0.5}
				case variant == "slow-and-fast" && from == "node03" && to == "node01":
					g := 2 * r["gbps"].(float64)
					r["gbps"], r["samples_gbps"] = g, []float64{g}
				}
				if variant == "newer" {
					r["started"] = strings.Replace(r["started"].(string), "2026-11-23", "2026-11-24", 1)
				}
				js, _ := json.Marshal(r)
				recs = append(recs, string(js))
			}
			name := variant + "-" + string(rune('0'+dirs)) + ".jsonl"
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(strings.Join(recs, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out[name] = p
		}
	}
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, []byte(strings.Replace(lines[0], `"nodes":6`, `"nodes":3`, 1)+"\n"), 0o644)
	out["empty"] = empty
	return out
}

// report, and bench's verdict on a recorded results log (report judges it
// with bench.Analyze): the slow direction is found, named, and no other
// direction getting faster turns it good.
func TestExitContractReportAndBench(t *testing.T) {
	f := verdictFixtures(t)
	logs := benchLogs(t)
	cases := []exitCase{
		{"host healthy", []string{"report", f["healthy"]}, ExitOK, "READY"},
		{"host fault", []string{"report", f["failed"]}, ExitFindings, "NOT READY"},
		{"host unproven", []string{"report", f["unproven"]}, ExitUnproven, "UNPROVEN"},
		{"bad input", []string{"report", filepath.Join(t.TempDir(), "nope.json")}, ExitUsage, "nope.json"},
		{"bench bad flag", []string{"bench", "--cluster", filepath.Join(t.TempDir(), "nope.yaml")}, ExitUsage, "nope.yaml"},
		{"bench nothing measured", []string{"report", logs["empty"]}, ExitUnproven, "UNPROVEN"},
	}
	for _, n := range []string{"4", "6"} {
		cases = append(cases,
			exitCase{"bench healthy " + n, []string{"report", logs["healthy-"+n+".jsonl"]}, ExitOK, "READY"},
			exitCase{"bench slow " + n, []string{"report", logs["slow-"+n+".jsonl"]}, ExitFindings, "bench.direction.slow       node02 → node03: 0.50 Gb/s"},
			exitCase{"bench slow, another 2× " + n, []string{"report", logs["slow-and-fast-"+n+".jsonl"]}, ExitFindings, "bench.direction.slow       node02 → node03: 0.50 Gb/s"},
		)
	}
	checkExits(t, cases)
	if out, _, _ := run(t, "report", logs["slow-and-fast-4.jsonl"]); strings.Count(out, "bench.direction.slow") != 1 {
		t.Errorf("only node02 → node03 is slow:\n%s", out)
	}
}

// compare: a newer run with the same figures (0), one direction fallen to
// 0.5 Gb/s (1), a missing file or a results log against a non-run (2),
// a run against itself (3).
func TestExitContractCompare(t *testing.T) {
	logs := benchLogs(t)
	junk := filepath.Join(t.TempDir(), "junk.txt")
	os.WriteFile(junk, []byte("hello\n"), 0o644)
	checkExits(t, []exitCase{
		{"healthy", []string{"compare", logs["healthy-6.jsonl"], logs["newer-6.jsonl"]}, ExitOK, "verdict: HEALTHY"},
		{"fault", []string{"compare", logs["healthy-6.jsonl"], logs["slow-6.jsonl"]}, ExitFindings, "node02 → node03: worse"},
		{"vanished", []string{"compare", logs["healthy-6.jsonl"], logs["newer-4.jsonl"]}, ExitFindings, "compare.missing"},
		{"bad input", []string{"compare", logs["healthy-6.jsonl"], filepath.Join(t.TempDir(), "nope.jsonl")}, ExitUsage, "nope.jsonl"},
		{"not the same kind", []string{"compare", logs["healthy-6.jsonl"], junk}, ExitUsage, "not the same kind"},
		{"self", []string{"compare", logs["healthy-6.jsonl"], logs["healthy-6.jsonl"]}, ExitUnproven, "one run"},
	})
	// The JSON envelope says the same.
	js, _, code := run(t, "compare", "-o", "json", logs["healthy-6.jsonl"], logs["healthy-6.jsonl"])
	if code != ExitUnproven || !bytes.Contains([]byte(js), []byte(`"status": "unproven"`)) {
		t.Errorf("compare -o json on one run: exit %d\n%s", code, js)
	}
}
