package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/route"
)

// Every cable of FatTree(2,4,4) routed by OpenSM ftree (captured from
// ibsim), slowed one at a time in a simulated run where a direction is slow
// exactly when its route crosses the cable: the cover rounds plus at most
// MaxFollowUps rounds name it, a cable between switches as a link by both
// ends and a host's cable as that node, and nothing else fails.
func TestCoverJudgesEveryCable(t *testing.T) {
	c, cp := smallCover(t)
	f := cp.f
	for l := range f.Links {
		if l > f.Reverse(l) {
			continue // one cable, both directions
		}
		rep, _ := simulateCover(c, cp, []int{l, f.Reverse(l)})
		var failed []string
		for _, fd := range rep.Findings {
			if fd.Outcome == check.Fail {
				failed = append(failed, fd.Check+" "+cmpOr(fd.Host, fd.Subject))
			}
		}
		ends := []string{f.PortName(f.Links[l].From), f.PortName(f.Links[l].To)}
		slices.Sort(ends)
		want := "bench.cover.link " + ends[0] + " ↔ " + ends[1]
		if f.HostLink(l) {
			for i, ca := range f.CAs {
				if ca.Key == f.Links[l].From || ca.Key == f.Links[l].To {
					want = "bench.cover.node " + c.Nodes[cp.caNode[i]].Name
				}
			}
		}
		if len(failed) != 1 || failed[0] != want || rep.Cover.Confidence != "high" {
			t.Errorf("%s: named %v (%s, confidence %s), want [%s]", f.LinkName(l), failed, rep.Cover.State, rep.Cover.Confidence, want)
		}
	}
}

// smallCover is FatTree(2,4,4) routed by OpenSM ftree (captured from
// ibsim) as a 16-node cluster, and its cover plan.
func smallCover(t *testing.T) (*cluster.Cluster, *coverPlan) {
	t.Helper()
	td := filepath.Join("..", "route", "testdata")
	in := route.Input{FabricFile: filepath.Join(td, "fattree-2x4x4.net"), RoutesFile: filepath.Join(td, "fattree-2x4x4-ftree.opensm-lfts.dump")}
	var b strings.Builder
	b.WriteString("launcher: {type: local}\nnodes:\n")
	for i := 1; i <= 16; i++ {
		fmt.Fprintf(&b, "  - {name: node%04d, data: 10.9.0.%d}\n", i, i)
	}
	c, err := cluster.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := planCover(context.Background(), in, c)
	if err != nil {
		t.Fatal(err)
	}
	return c, cp
}

// simulateCover runs the cover rounds and the localiser's follow-ups on
// paper: a direction is 10 Gb/s when its route crosses the fault's links,
// else 100. It returns the judged report and the records.
func simulateCover(c *cluster.Cluster, cp *coverPlan, fault []int) (*Report, []Record) {
	var recs []Record
	measure := func(round int, pairs []Pair) {
		for _, p := range pairs {
			for _, d := range [][2]int{{p.A, p.B}, {p.B, p.A}} {
				gbps := 100.0
				if crossesAny(cp.p.Path(cp.nodeCA[d[0]], cp.nodeCA[d[1]]), fault) {
					gbps = 10
				}
				recs = append(recs, Record{From: c.Nodes[d[0]].Name, To: c.Nodes[d[1]].Name, Engine: "tcp", Test: "bw", Round: round, Gbps: gbps, SamplesGbps: []float64{gbps}})
			}
		}
	}
	for i, r := range cp.rounds {
		measure(i+1, r)
	}
	for i := range MaxFollowUps {
		rep := Analyze(c, "tcp", "bw", false, recs, nil, nil)
		next := cp.locator(c, recs, rep).NextRound()
		if len(next) == 0 {
			break
		}
		measure(len(cp.rounds)+i+1, cp.pairs(next))
	}
	rep := Analyze(c, "tcp", "bw", false, recs, nil, nil)
	cp.judgeCover(c, rep, recs)
	return rep, recs
}

// RDMALAB_WRITE_COVER_FIXTURE=DIR writes the bench document of the cable
// leaf02 ↔ spine01 slowed, simulated as above: the report's fixture
// (internal/report/testdata/bench-cover).
func TestWriteCoverFixture(t *testing.T) {
	dir := os.Getenv("RDMALAB_WRITE_COVER_FIXTURE")
	if dir == "" {
		t.Skip("RDMALAB_WRITE_COVER_FIXTURE=DIR writes the report's cover fixture")
	}
	c, cp := smallCover(t)
	var fault []int
	for l, link := range cp.f.Links {
		if cp.f.PortName(link.From) == "leaf02 port 5" {
			fault = []int{l, cp.f.Reverse(l)}
		}
	}
	if cp.f.PortName(cp.f.Links[fault[0]].To) != "spine01 port 2" {
		t.Fatalf("leaf02 port 5 goes to %s", cp.f.PortName(cp.f.Links[fault[0]].To))
	}
	rep, _ := simulateCover(c, cp, fault)
	rep.Cover.Source = "fattree-2x4x4.net; routes fattree-2x4x4-ftree.opensm-lfts.dump"
	var buf bytes.Buffer
	if err := envelope.Write(&buf, envelope.Bench, rep.Findings, rep); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cover.json"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every check judgeCover reports through is in CoverCatalog, and every
// entry of CoverCatalog is reported.
func TestCoverCatalog(t *testing.T) {
	src, err := os.ReadFile("cover.go")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]check.Entry{"CheckCover": CheckCover, "CheckCoverLink": CheckCoverLink, "CheckCoverNode": CheckCoverNode, "CheckCoverInconclusive": CheckCoverInconclusive}
	if len(byName) != len(CoverCatalog) {
		t.Fatalf("CoverCatalog has %d entries, the test knows %d", len(CoverCatalog), len(byName))
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`\b(Check[A-Za-z]*)\.Reporter\(`).FindAllStringSubmatch(string(src), -1) {
		e, ok := byName[m[1]]
		if !ok {
			t.Errorf("cover.go reports through %s, which is not in CoverCatalog", m[1])
			continue
		}
		seen[e.ID] = true
	}
	for _, e := range CoverCatalog {
		if !seen[e.ID] {
			t.Errorf("CoverCatalog lists %s, which nothing emits", e.ID)
		}
	}
}

// When the fabric was read live, the named cable's counter deltas over the
// run join its evidence: rising SymbolErrorCounter is a second witness.
func TestCoverCounterEvidence(t *testing.T) {
	c, cp := smallCover(t)
	f := cp.f
	var fault []int
	for l, link := range f.Links {
		if f.PortName(link.From) == "leaf02 port 5" {
			fault = []int{l, f.Reverse(l)}
		}
	}
	leaf, spine := f.Links[fault[0]].From, f.Links[fault[0]].To
	scan := func(symbols uint64) *fabric.Snapshot {
		return &fabric.Snapshot{Ports: []fabric.Port{
			{NodeGUID: leaf.GUID, NodeDesc: "leaf02", Num: leaf.Port, Counters: map[string]uint64{"SymbolErrorCounter": symbols, "PortXmitDiscards": 3}},
			{NodeGUID: spine.GUID, NodeDesc: "spine01", Num: spine.Port},
		}}
	}
	cp.before, cp.after = scan(10), scan(47)
	rep, _ := simulateCover(c, cp, fault)
	var fd *check.Finding
	for i := range rep.Findings {
		if rep.Findings[i].Check == "bench.cover.link" {
			fd = &rep.Findings[i]
		}
	}
	if fd == nil || !strings.Contains(fd.Message, "its error counters rose during the run") {
		t.Fatalf("no corroborated link finding: %+v", fd)
	}
	var got []string
	for _, e := range fd.Evidence {
		if strings.HasPrefix(e.What, "counters of ") {
			got = append(got, e.What+": "+e.Value)
		}
	}
	want := []string{"counters of leaf02 port 5 over the run: SymbolErrorCounter +37", "counters of spine01 port 2 over the run: no error or discard counter rose"}
	if !slices.Equal(got, want) {
		t.Errorf("counter evidence %q, want %q", got, want)
	}
	// a port the scans do not list is unknown, never clean
	ev, rose := counterEvidence(&fabric.Snapshot{}, scan(1), rep.Cover.Fault.Ends)
	if rose || len(ev) != 2 || !strings.Contains(ev[0].Value, "unknown") {
		t.Errorf("missing ports: %+v, rose %v", ev, rose)
	}
	// counters a scan could not read are unknown, never "none rose"
	noSM := scan(47)
	noSM.CounterError = "ibqueryerrors printed no summary: the counters are unknown"
	ev, rose = counterEvidence(scan(10), noSM, rep.Cover.Fault.Ends)
	if rose || len(ev) != 1 || !strings.HasPrefix(ev[0].Value, "unknown: ibqueryerrors printed no summary") {
		t.Errorf("unreadable counters: %+v, rose %v", ev, rose)
	}
}

// A fabric whose CA ports are not the cluster's nodes is refused naming
// them (the flags that contradict --schedule cover: benchrun's
// TestCoverFlagRefusals).
func TestCoverRefusals(t *testing.T) {
	td := filepath.Join("..", "route", "testdata")
	in := route.Input{FabricFile: filepath.Join(td, "fattree-2x4x4.net"), RoutesFile: filepath.Join(td, "fattree-2x4x4-ftree.opensm-lfts.dump")}
	c, err := cluster.Parse([]byte("launcher: {type: local}\nnodes:\n  - {name: node0001, data: 10.9.0.1}\n  - {name: gpu01, data: 10.9.0.2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = planCover(context.Background(), in, c)
	if err == nil || !strings.Contains(err.Error(), `CA ports "node0002" (host node0002)`) || !strings.Contains(err.Error(), "and 10 more") {
		t.Errorf("unmapped CAs: %v", err)
	}
}

// planCover reads the fabric from files and plans the cover rounds, as
// the runner does (internal/benchrun).
func planCover(ctx context.Context, in route.Input, c *cluster.Cluster) (*coverPlan, error) {
	f, src, err := route.Load(ctx, in)
	if err != nil {
		return nil, err
	}
	return newCoverPlan(f, src, c)
}
