package fabric

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/host"
)

func testdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// linkKeys is every link as "A ↔ B" by GUID and port.
func linkKeys(s *Snapshot) []string {
	var out []string
	for _, l := range s.Links() {
		out = append(out, l.A.Key().String()+" ↔ "+l.B.Key().String())
	}
	slices.Sort(out)
	return out
}

// The version-1 example as it was committed still loads, with its far
// ends resolved to node GUIDs.
func TestLoadVersion1(t *testing.T) {
	f, err := os.Open("testdata/qdr-lab-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if s.SchemaVersion != SchemaVersion || len(s.Links()) != 3 || !s.Has(IBQueryErrors) || !s.Has(SMInfo) {
		t.Fatalf("v1: schema %d, %d links, read %v", s.SchemaVersion, len(s.Links()), s.Read)
	}
	want := []string{
		"0x0000000000100000 port 1 ↔ 0x0000000000200000 port 1",
		"0x0000000000100002 port 1 ↔ 0x0000000000200000 port 2",
		"0x0000000000100004 port 1 ↔ 0x0000000000200000 port 3",
	}
	if got := linkKeys(s); !slices.Equal(got, want) {
		t.Errorf("links %v, want %v", got, want)
	}
}

func TestDecodeKinds(t *testing.T) {
	v1 := testdata(t, "qdr-lab-v1.json")
	s, err := Decode(strings.NewReader(v1))
	if err != nil {
		t.Fatal(err)
	}
	var env bytes.Buffer
	if err := envelope.Write(&env, envelope.FabricSnapshot, nil, s); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(&env)
	if err != nil || !slices.Equal(linkKeys(back), linkKeys(s)) {
		t.Fatalf("envelope round trip: %v", err)
	}
	var hostEnv bytes.Buffer
	_ = envelope.Write(&hostEnv, envelope.HostSnapshot, nil, map[string]any{"schema_version": 1, "hostname": "n1"})
	for name, c := range map[string]struct{ doc, want string }{
		"host envelope":  {hostEnv.String(), "this is a host-snapshot document (rdmalab inventory), not a fabric snapshot"},
		"bare host":      {`{"schema_version": 1, "hostname": "n1", "rdma": []}`, "this is a host snapshot (rdmalab inventory), not a fabric snapshot"},
		"not json":       {"Switch 8 \"x\"\n", "not a fabric snapshot"},
		"future version": {`{"schema_version": 9, "ports": []}`, "schema_version 9"},
	} {
		_, err := Decode(strings.NewReader(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// ibnetdiscover from ibsim on an EDR netlist where the two switches share a
// description and the three HCAs are all "HCA-1": identity by GUID, CA LIDs
// from the port comments, vendor and device ids per node.
func TestParseTopologyIdentity(t *testing.T) {
	top, err := ParseTopology(testdata(t, "edr-ibsim/ibnetdiscover.out"))
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Nodes) != 5 || len(top.Links) != 4 {
		t.Fatalf("%d nodes %d links, want 5 and 4", len(top.Nodes), len(top.Links))
	}
	s := FromTopology(top, "test")
	sw := s.Node(0x7cfe900300a5f7c0)
	ca := s.Node(0x248a0703008a1b40)
	if sw == nil || sw.Type != Switch || sw.LID != 12 || sw.DeviceID != "0xcb20" || sw.VendorID != "0x2c9" || ca == nil || ca.DeviceID != "0x1013" {
		t.Fatalf("nodes: %+v %+v", sw, ca)
	}
	lids := map[host.GUID]int{}
	for _, p := range s.Ports {
		if p.NodeType == CA {
			lids[p.NodeGUID] = p.LID
		}
	}
	if lids[0x248a0703008a1b40] != 16 || lids[0x248a0703008a1b20] != 14 || lids[0x248a0703008a1b30] != 15 {
		t.Errorf("CA LIDs from the port comments: %v", lids)
	}
	names := s.Names()
	for _, l := range s.Links() {
		if l.A.NodeType == Switch && l.B.NodeType == Switch {
			if got := names.Link(l); got != "SwitchIB Mellanox Technologies [0x7cfe900300a5f7c0 lid 12] port 11 ↔ SwitchIB Mellanox Technologies [0x7cfe900300a5f7d0 lid 13] port 11" {
				t.Errorf("switch link named %q", got)
			}
		}
		if l.A.NodeGUID == 0x248a0703008a1b40 && (l.A.Speed != "DDR" || l.A.RateGbps != 20) {
			t.Errorf("the DDR link reads %s %s", l.A.Width, l.A.Speed)
		}
	}
	if got := names.Node(0x248a0703008a1b40); got != "HCA-1 [0x248a0703008a1b40 lid 16]" {
		t.Errorf("CA named %q", got)
	}
}

// iblinkinfo's default mode prints no GUID for the far end: links pair by
// LID and port, and come out the same as --line mode's.
func TestIBLinkInfoModesPairAlike(t *testing.T) {
	def, err := FromIBLinkInfo(testdata(t, "edr-ibsim/iblinkinfo.out"), "default")
	if err != nil {
		t.Fatal(err)
	}
	line, err := FromIBLinkInfo(testdata(t, "edr-ibsim/iblinkinfo-line.out"), "line")
	if err != nil {
		t.Fatal(err)
	}
	if len(def.Ports) != 75 || len(def.Links()) != 4 {
		t.Fatalf("default mode: %d ports %d links", len(def.Ports), len(def.Links()))
	}
	if a, b := linkKeys(def), linkKeys(line); !slices.Equal(a, b) {
		t.Errorf("default mode pairs\n%v\n--line pairs\n%v", a, b)
	}
	for _, l := range def.Links() {
		if l.B.Remote == nil || l.A.Remote == nil {
			t.Errorf("%v: a far end made up instead of paired", l.A.Key())
		}
	}
}

func replayEDR(t *testing.T) Replay {
	return Replay{
		"ibnetdiscover": {Stdout: testdata(t, "edr-ibsim/ibnetdiscover.out")},
		"iblinkinfo":    {Stdout: testdata(t, "edr-ibsim/iblinkinfo-line.out")},
		"ibqueryerrors": {Stdout: testdata(t, "edr-ibsim/ibqueryerrors.out"), Exit: 1},
		"sminfo":        {Stdout: testdata(t, "edr-ibsim/sminfo.out")},
		"saquery":       {Stdout: testdata(t, "edr-ibsim/saquery-smir.out")},
	}
}

// A scan over captured output, no simulator: nodes typed by ibnetdiscover,
// CA ports joined to their node GUIDs, counters on the right port.
func TestScanReplay(t *testing.T) {
	s, err := Scan(context.Background(), replayEDR(t), ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Nodes) != 5 || len(s.Links()) != 4 || len(s.SMs) != 1 || s.CounterError != "" || len(s.Errors) != 0 {
		t.Fatalf("%d nodes %d links %d SMs, counters %q, errors %v", len(s.Nodes), len(s.Links()), len(s.SMs), s.CounterError, s.Errors)
	}
	for _, p := range s.Ports {
		if p.PortGUID == 0x248a0703008a1b31 {
			if p.NodeGUID != 0x248a0703008a1b30 || p.NodeType != CA || p.Counters["SymbolErrorCounter"] != 50 {
				t.Errorf("HCA port: %+v", p)
			}
		}
	}
}

// With no SM, ibqueryerrors prints to stderr and exits 0: the counters are
// unknown, not zero.
func TestScanCountersUnknown(t *testing.T) {
	r := replayEDR(t)
	r["ibqueryerrors"] = Captured{Stderr: testdata(t, "edr-ibsim/ibqueryerrors-nosm.err")}
	s, err := Scan(context.Background(), r, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.CounterError == "" {
		t.Error("ibqueryerrors with no output and exit 0 was taken as no errors")
	}
	r["ibqueryerrors"] = Captured{Stdout: "## Summary: 5 nodes checked\n", Stderr: "ibwarn: [1] Query SA failed\n"}
	if s, _ := Scan(context.Background(), r, ScanOptions{}); s == nil || !strings.Contains(s.CounterError, "Query SA failed") {
		t.Errorf("Query SA failed with exit 0: %+v", s)
	}
}

// A tool that forks a child holding its output pipe is killed with the
// child when the timeout hits, and Run returns on time.
func TestExecTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\nsleep 30 &\necho started\nsleep 30\n"
	if err := os.WriteFile(filepath.Join(dir, "ibnetdiscover"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	start := time.Now()
	_, err := Scan(context.Background(), Exec{Timeout: 500 * time.Millisecond}, ScanOptions{})
	took := time.Since(start)
	var te *ToolError
	if !errors.As(err, &te) || te.TimedOut == 0 {
		t.Fatalf("want a timeout, got %v", err)
	}
	if took > 3*time.Second {
		t.Errorf("returned after %s; the timeout was 500ms", took)
	}
	if !strings.Contains(err.Error(), "timed out after 500ms") {
		t.Errorf("message %q", err)
	}
}

// A scan's countdown for --interval is bounded by the context.
func TestScanIntervalProgress(t *testing.T) {
	var progress bytes.Buffer
	s, err := Scan(context.Background(), replayEDR(t), ScanOptions{Interval: 1100 * time.Millisecond, Progress: &progress})
	if err != nil || s.IntervalSeconds < 1 {
		t.Fatalf("%v %+v", err, s)
	}
	for _, want := range []string{"discovering", "second counter sample in", "done"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Scan(ctx, replayEDR(t), ScanOptions{Interval: time.Hour}); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("interval wait not bounded by the context: %v after %s", err, time.Since(start))
	}
}

// The complete examples in docs/ load.
func TestDocExamples(t *testing.T) {
	block := func(path, lang string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(b), "```"+lang+"\n")
		body, _, ok2 := strings.Cut(rest, "```")
		if !ok || !ok2 {
			t.Fatalf("%s: no ```%s block", path, lang)
		}
		return body
	}
	s, err := Decode(strings.NewReader(block("../../docs/fabric-snapshot.md", "json")))
	if err != nil {
		t.Fatal(err)
	}
	if l := s.Links(); len(l) != 1 || l[0].A.Counters["SymbolErrorCounter"] != 3 || l[0].B.NodeGUID != 0x7cfe900300a5f7c0 {
		t.Errorf("snapshot example: %+v", l)
	}
	top, err := ParseCabling([]byte(block("../../docs/cabling.md", "yaml")))
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Links) != 4 || top.Links[2].B.GUID != 0x7cfe900300a5f7c0 || top.Links[0].A.Node != "gpu017 HCA-1" {
		t.Errorf("cabling example: %+v", top.Links)
	}
}
