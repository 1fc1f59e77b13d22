package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func testCluster(t *testing.T, n int, link string) *cluster.Cluster {
	t.Helper()
	var b strings.Builder
	b.WriteString("launcher: {type: local}\n" + link + "nodes:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - {name: n%d, data: 10.9.0.%d}\n", i, i)
	}
	c, err := cluster.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// recorded builds every direction of a cluster with gbps(from, to) and
// three samples each: the distribution a real run leaves in its log.
func recorded(c *cluster.Cluster, gbps func(from, to string) []float64) []Record {
	var recs []Record
	for _, a := range c.Nodes {
		for _, b := range c.Nodes {
			if a.Name == b.Name {
				continue
			}
			s := gbps(a.Name, b.Name)
			recs = append(recs, Record{From: a.Name, To: b.Name, Engine: "tcp", Test: "bw", SamplesGbps: s, Gbps: Median(s)})
		}
	}
	return recs
}

func findingsOf(rep *Report, outcome check.Outcome) []check.Finding {
	var out []check.Finding
	for _, f := range rep.Findings {
		if f.Outcome == outcome {
			out = append(out, f)
		}
	}
	return out
}

// shaped asserts what every finding owes its reader: a check of the
// catalog, a subject, and on a failure a fix with no empty line.
func shaped(t *testing.T, fs []check.Finding) {
	t.Helper()
	ids := map[string]bool{}
	for _, e := range append(slices.Clone(Catalog), CoverCatalog...) {
		ids[e.ID] = true
	}
	for _, f := range fs {
		if !ids[f.Check] || f.Subject == "" {
			t.Errorf("check %q subject %q: not in the catalog, or about nothing", f.Check, f.Subject)
		}
		if f.Outcome == check.Fail && (len(f.Fix) == 0 || slices.Contains(f.Fix, "")) {
			t.Errorf("%s %s %q fails with fix %q", f.Check, f.Host, f.Subject, f.Fix)
		}
	}
}

func hostsOf(fs []check.Finding) []string {
	var h []string
	for _, f := range fs {
		h = append(h, f.Host+":"+f.Check)
	}
	slices.Sort(h)
	return h
}

// No rate declared: n1 sends at 7% of its peers, n8 receives at 40%;
// each is named with its side, nobody else, and the rest pass.
func TestVerdictNoDeclaredRate(t *testing.T) {
	c := testCluster(t, 8, "")
	recs := recorded(c, func(from, to string) []float64 {
		switch {
		case from == "n1":
			return []float64{6.5, 6.6, 6.8}
		case to == "n8":
			return []float64{38, 40, 41}
		}
		return []float64{94, 95, 96}
	})
	rep := Analyze(c, "tcp", "bw", false, recs, nil, nil)
	shaped(t, rep.Findings)
	if got := hostsOf(findingsOf(rep, check.Fail)); !slices.Equal(got, []string{"n1:bench.node.send", "n8:bench.node.receive"}) {
		t.Errorf("failed: %v\n%+v", got, rep.Findings)
	}
	for _, f := range findingsOf(rep, check.Fail) {
		if want := map[string]string{"n1": "send side", "n8": "receive side"}[f.Host]; f.Subject != want || !strings.Contains(f.Fix[0], "rdmalab doctor on "+f.Host) {
			t.Errorf("%s: subject %q (want %q), fix %q naming the node", f.Host, f.Subject, want, f.Fix)
		}
	}
	var good []string
	for _, f := range findingsOf(rep, check.Pass) {
		if f.Check == "bench.node" && f.Subject == "both sides" {
			good = append(good, f.Host)
		}
	}
	if slices.Sort(good); rep.RateDeclared || !slices.Equal(good, []string{"n2", "n3", "n4", "n5", "n6", "n7"}) {
		t.Errorf("want n2…n7 healthy, judged against peers: %v", good)
	}
	if !strings.Contains(rep.Findings[0].Message+rep.Findings[1].Message, "no rate in the cluster file") {
		t.Errorf("the verdict must say what it was judged against: %s", rep.Findings[0].Message)
	}
	if slices.Contains(rep.Good, "n1") || slices.Contains(rep.Good, "n8") || len(rep.Good) != 6 {
		t.Errorf("known-good partners %v", rep.Good)
	}
}

// A wrong declared rate: 10 Gb/s TCP declared, everyone measures ~30:
// one suspect-rate unknown (nothing was judged against physics: the run
// is unproven), verdicts fall back to the peers, no failure.
func TestVerdictWrongDeclaredRate(t *testing.T) {
	c := testCluster(t, 6, "link: {layer: TCP, rate: \"10\"}\n")
	recs := recorded(c, func(string, string) []float64 { return []float64{29, 30, 31} })
	rep := Analyze(c, "tcp", "bw", false, recs, nil, nil)
	shaped(t, rep.Findings)
	warns := findingsOf(rep, check.Unknown)
	if len(warns) != 1 || warns[0].Check != "bench.link.rate-suspect" || warns[0].Subject != "cluster file link" || !strings.Contains(warns[0].Message, "declared rate is likely wrong") {
		t.Fatalf("%+v", rep.Findings)
	}
	if check.Failed(rep.Findings) {
		t.Errorf("a wrong rate must not fail healthy pairs: %+v", findingsOf(rep, check.Fail))
	}
	// The right rate: healthy; one direction above the ceiling is suspect
	// with perftest's CPU warning as a likely cause.
	c = testCluster(t, 6, "link: {layer: TCP, rate: \"40\"}\n")
	recs = recorded(c, func(from, to string) []float64 {
		if from == "n2" && to == "n3" {
			return []float64{120, 121, 122}
		}
		return []float64{37, 37.5, 38}
	})
	for i := range recs {
		if recs[i].From == "n2" && recs[i].To == "n3" {
			recs[i].Warnings = []string{"Conflicting CPU frequency values detected: 1500.000000 != 3000.000000. CPU Frequency is not max."}
		}
	}
	rep = Analyze(c, "tcp", "bw", false, recs, nil, nil)
	got := hostsOf(findingsOf(rep, check.Warn))
	if !slices.Equal(got, []string{":bench.direction.above-ceiling", "n2, n3:bench.perftest.warning"}) || check.Failed(rep.Findings) {
		t.Errorf("%v\n%+v", got, rep.Findings)
	}
	for _, f := range rep.Findings {
		if f.Check == "bench.perftest.warning" && (len(f.Fix) == 0 || !strings.Contains(f.Fix[0], "cpupower frequency-set -g performance")) {
			t.Errorf("the CPU warning travels with its fix: %+v", f)
		}
	}
	// A declared rate the whole cluster falls short of: one cluster finding.
	c = testCluster(t, 6, "link: {layer: TCP, rate: \"100\"}\n")
	rep = Analyze(c, "tcp", "bw", false, recorded(c, func(string, string) []float64 { return []float64{50} }), nil, nil)
	shaped(t, rep.Findings)
	if got := hostsOf(findingsOf(rep, check.Fail)); !slices.Equal(got, []string{":bench.link.below-ceiling"}) || findingsOf(rep, check.Fail)[0].Subject != "cluster" {
		t.Errorf("%v", got)
	}
}

// Noise: one bad sample out of three does not make a direction bad; a
// PCIe-capped pair is judged against its cap.
func TestVerdictNoiseAndPCIe(t *testing.T) {
	c := testCluster(t, 6, "link: {layer: IB, rate: 4X HDR}\n")
	recs := recorded(c, func(from, to string) []float64 {
		if from == "n4" {
			return []float64{190, 110, 191}
		}
		return []float64{190, 191, 192}
	})
	rep := Analyze(c, "tcp", "bw", false, recs, nil, nil)
	if check.Failed(rep.Findings) {
		t.Errorf("a noisy sample failed: %+v", findingsOf(rep, check.Fail))
	}
	for _, d := range rep.Directions {
		if d.From == "n4" && d.Spread < 0.4 {
			t.Errorf("the spread is kept: %+v", d)
		}
	}
	c = testCluster(t, 6, "link: {layer: IB, rate: 4X HDR}\ndefaults: {pcie_gtps: 8, pcie_width: 16}\n")
	rep = Analyze(c, "tcp", "bw", false, recorded(c, func(string, string) []float64 { return []float64{103} }), nil, nil)
	if check.Failed(rep.Findings) || !strings.Contains(rep.Directions[0].Link, "capped by PCIe") {
		t.Errorf("HDR on Gen3 x16 at 103 Gb/s is healthy: %+v %+v", rep.Directions[0], findingsOf(rep, check.Fail))
	}
}

// Latency: judged against the peers' median, two decimals, p99 separate.
func TestVerdictLatency(t *testing.T) {
	c := testCluster(t, 5, "")
	var recs []Record
	for _, a := range c.Nodes {
		for _, b := range c.Nodes {
			if a.Name != b.Name {
				p50 := 1.60
				if b.Name == "n3" {
					p50 = 4.2
				}
				recs = append(recs, Record{From: a.Name, To: b.Name, Engine: "tcp", Test: "lat", SamplesP50Us: []float64{p50}, P50Us: p50, P99Us: 1.62})
			}
		}
	}
	rep := Analyze(c, "tcp", "lat", true, recs, nil, nil)
	shaped(t, rep.Findings)
	if got := hostsOf(findingsOf(rep, check.Fail)); !slices.Equal(got, []string{"n3:bench.node.receive"}) {
		t.Errorf("%v", got)
	}
	if s := rep.FormatValue(1.6); s != "p50 1.60 µs" {
		t.Errorf("%s", s)
	}
}

// Every saved perftest output in the shared testdata: recognised, judged,
// warnings carried with their fixes; the invalid ones refused.
func TestJudgePerftestFiles(t *testing.T) {
	root := filepath.Join(testhost.SharedTestdata(t), "perftest")
	hdr := linkrate.Link{Layer: linkrate.InfiniBand, RateGbps: 200, Speed: "HDR", MTUBytes: 4096}
	n := 0
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(path)
		rel, _ := filepath.Rel(root, path)
		fs, payload, err := JudgePerftestFile(rel, b, &hdr)
		bad := strings.Contains(rel, "INVALID")
		switch {
		case bad && err == nil:
			t.Errorf("%s: judged a file that is not one run's output", rel)
		case !bad && (err != nil || !SniffPerftest(b) || payload == nil || len(fs) == 0):
			t.Errorf("%s: %v (sniffed %v)", rel, err, SniffPerftest(b))
		}
		shaped(t, fs)
		for _, f := range fs {
			if f.Check == "bench.perftest.warning" && strings.Contains(f.Message, "CPU") && len(f.Fix) == 0 {
				t.Errorf("%s: CPU warning without its fix", rel)
			}
			if !strings.HasPrefix(f.Subject, rel) {
				t.Errorf("%s: %s about %q, not the file's run", rel, f.Check, f.Subject)
			}
		}
		n++
		return nil
	})
	if n < 20 {
		t.Errorf("only %d files", n)
	}
	// The NDR capture judged as NDR: healthy; as HDR: above the ceiling.
	b, _ := os.ReadFile(filepath.Join(root, "cx7-ndr-b2b-perftest25/ib_write_bw.txt"))
	ndr := linkrate.Link{Layer: linkrate.InfiniBand, RateGbps: 400, Speed: "NDR", MTUBytes: 4096}
	bw := func(fs []check.Finding) check.Finding {
		for _, f := range fs {
			if f.Check == "bench.perftest.bandwidth" {
				return f
			}
		}
		return check.Finding{}
	}
	fs, _, _ := JudgePerftestFile("w", b, &ndr)
	if f := bw(fs); f.Outcome != check.Pass || f.Subject != "w" {
		t.Errorf("NDR: %+v", fs)
	}
	fs, _, _ = JudgePerftestFile("w", b, &hdr)
	if f := bw(fs); f.Outcome != check.Warn || !strings.Contains(f.Message, "suspect") {
		t.Errorf("392 Gb/s on HDR must be suspect: %+v", fs)
	}
	lat, _ := os.ReadFile(filepath.Join(root, "azure-hbv3_ib_send_lat_all_server.txt"))
	fs, _, _ = JudgePerftestFile("lat", lat, nil)
	if !strings.Contains(fs[1].Message, "p99 1.62 µs") {
		t.Errorf("latency with two decimals: %+v", fs)
	}
	if SniffPerftest([]byte("hello\n")) {
		t.Error("sniffed plain text")
	}
}

// A resumed run's retests replace the earlier run's: the report never
// shows an old "suspect" retest beside a new one for the same node.
func TestRetestsOfTheLatestPhaseOnly(t *testing.T) {
	c := testCluster(t, 6, "")
	recs := recorded(c, func(from, to string) []float64 {
		if from == "n1" {
			return []float64{9}
		}
		return []float64{95}
	})
	old := Record{From: "n1", To: "n5", Engine: "tcp", Test: "bw", Retest: true, Suspect: "n1", Gbps: 95}
	again := Record{From: "n2", To: "n3", Engine: "tcp", Test: "bw", Gbps: 95}
	fresh := []Record{
		{From: "n1", To: "n6", Engine: "tcp", Test: "bw", Retest: true, Suspect: "n1", Gbps: 9},
		{From: "n1", To: "n4", Engine: "tcp", Test: "bw", Retest: true, Suspect: "n1", Gbps: 9},
	}
	all := append(append(append(recs, old), again), fresh...)
	rep := Analyze(c, "tcp", "bw", false, all, nil, nil)
	if len(rep.Suspects) != 1 || len(rep.Suspects[0].Retests) != 2 || rep.Suspects[0].Confirmed != "yes" {
		t.Errorf("%+v", rep.Suspects)
	}
}

// Noise: on a 4-node run one direction at 86% of its peers whose own three
// samples spread 17% is inside the run's noise: warned, never failed. A
// direction genuinely shaped (40%, tight samples) still fails, named.
func TestVerdictInsideTheRunsNoise(t *testing.T) {
	c := testCluster(t, 4, "")
	recs := recorded(c, func(from, to string) []float64 {
		if from == "n2" && to == "n3" {
			return []float64{80, 86, 96} // median 86, spread 16/86 = 19%
		}
		return []float64{99, 100, 101}
	})
	rep := Analyze(c, "tcp", "bw", false, recs, nil, nil)
	if check.Failed(rep.Findings) {
		t.Errorf("a shortfall inside the run's noise failed: %+v", findingsOf(rep, check.Fail))
	}
	var noisy []string
	for _, f := range findingsOf(rep, check.Warn) {
		if f.Check == "bench.direction.noisy" {
			noisy = append(noisy, f.Subject)
			if !strings.Contains(f.Message, "86% of the peers' median") || !strings.Contains(f.Message, "inside the run's own noise") {
				t.Errorf("%s", f.Message)
			}
		}
	}
	if !slices.Equal(noisy, []string{"n2 → n3"}) {
		t.Errorf("noisy: %v", noisy)
	}
	// The same shortfall with tight samples is outside the noise.
	recs = recorded(c, func(from, to string) []float64 {
		if from == "n2" && to == "n3" {
			return []float64{40, 40.5, 41}
		}
		return []float64{99, 100, 101}
	})
	rep = Analyze(c, "tcp", "bw", false, recs, nil, nil)
	var slow []string
	for _, f := range findingsOf(rep, check.Fail) {
		slow = append(slow, f.Check+" "+f.Subject)
	}
	if !slices.Equal(slow, []string{"bench.direction.slow n2 → n3"}) {
		t.Errorf("shaped direction: %v", slow)
	}
	// Measured again before failing: fine the second time, a warning.
	retest := Record{From: "n2", To: "n3", Engine: "tcp", Test: "bw", Retest: true, SamplesGbps: []float64{99}, Gbps: 99}
	rep = Analyze(c, "tcp", "bw", false, append(recs, retest), nil, nil)
	if check.Failed(rep.Findings) {
		t.Errorf("a direction fine on retest failed: %+v", findingsOf(rep, check.Fail))
	}
	retest.Gbps, retest.SamplesGbps = 41, []float64{41}
	rep = Analyze(c, "tcp", "bw", false, append(recs, retest), nil, nil)
	if f := findingsOf(rep, check.Fail); len(f) != 1 || !strings.Contains(f[0].Message, "measured again it is still bad") {
		t.Errorf("still bad on retest: %+v", f)
	}
	// Measured again just under the threshold, far from the first
	// measurement (seen on a loaded machine's veth: 60%, then 88%): the two
	// differ by more than the retest's shortfall, so nothing is confirmed.
	retest.Gbps, retest.SamplesGbps = 88, []float64{87, 88, 89}
	rep = Analyze(c, "tcp", "bw", false, append(recs, retest), nil, nil)
	if check.Failed(rep.Findings) {
		t.Errorf("a retest inside the two measurements' spread failed: %+v", findingsOf(rep, check.Fail))
	}
	if w := findingsOf(rep, check.Warn); !slices.ContainsFunc(w, func(f check.Finding) bool {
		return f.Check == "bench.direction.slow" && f.Subject == "n2 → n3" && strings.Contains(f.Message, "not confirmed, likely noise") && len(f.Fix) > 0
	}) {
		t.Errorf("a retest inside the noise: want a warning on n2 → n3, got %+v", w)
	}
}

// One perftest latency pair (no peers to compare with) is judged against
// seed 001's table: seed 003's 1.15 µs on QDR is healthy; above 5 µs is
// broken; a run at RoCE MTU 1024 is a finding.
func TestVerdictLatencyAlone(t *testing.T) {
	c := testCluster(t, 2, "link: {layer: IB, rate: 4X QDR}\n")
	lat := func(p50 float64, mtu int) []Record {
		return []Record{
			{From: "n1", To: "n2", Engine: "perftest", Test: "ib_send_lat", SamplesP50Us: []float64{p50}, P50Us: p50, MTUBytes: mtu},
			{From: "n2", To: "n1", Engine: "perftest", Test: "ib_send_lat", SamplesP50Us: []float64{p50}, P50Us: p50, MTUBytes: mtu},
		}
	}
	rep := Analyze(c, "perftest", "ib_send_lat", true, lat(1.15, 4096), nil, nil)
	var got []string
	for _, f := range rep.Findings {
		if f.Check == "bench.link.latency" || f.Check == "bench.perftest.mtu" {
			got = append(got, string(f.Outcome)+" "+f.Check)
		}
	}
	if !slices.Equal(got, []string{"pass bench.perftest.mtu", "pass bench.link.latency"}) || check.Failed(rep.Findings) {
		t.Errorf("1.15 µs on QDR: %v %+v", got, rep.Findings)
	}
	rep = Analyze(c, "perftest", "ib_send_lat", true, lat(6.2, 4096), nil, nil)
	if fs := findingsOf(rep, check.Fail); len(fs) == 0 || !slices.ContainsFunc(fs, func(f check.Finding) bool { return f.Check == "bench.link.latency" }) {
		t.Errorf("6.2 µs must be broken: %+v", rep.Findings)
	}
	c = testCluster(t, 2, "link: {layer: RoCE, rate: 25GbE}\n")
	rep = Analyze(c, "perftest", "ib_send_lat", true, lat(1.41, 1024), nil, nil)
	if ws := findingsOf(rep, check.Warn); len(ws) != 1 || ws[0].Check != "bench.perftest.mtu" || ws[0].Host != "n1, n2" {
		t.Errorf("RoCE at MTU 1024: %+v", rep.Findings)
	}
}
