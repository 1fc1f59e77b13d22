package htmlreport

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/benchrun"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/envelope"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/judge"
	"github.com/rdmalab/rdmalab/internal/phy"
	"github.com/rdmalab/rdmalab/internal/phycheck"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/rdmalab/rdmalab/internal/route"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// coverRun runs the real orchestrator's --schedule cover on FatTree(2,4,4)
// (routed by OpenSM, captured from ibsim) over a SIMULATED fleet whose
// node0003 cable carries a tenth of the others' rate, with the given host
// snapshots, and writes its bench document: the file `rdmalab report`
// reads.
func coverRun(t *testing.T, dir, name string, hosts []*host.Snapshot) (string, *bench.Report) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# SIMULATED fleet (bench.SimFleet)\nlink: {layer: TCP, rate: \"100\"}\nlauncher: {type: local}\nnodes:\n")
	for i := 1; i <= 16; i++ {
		fmt.Fprintf(&b, "  - {name: node%04d, data: 10.9.0.%d}\n", i, i)
	}
	file := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	sim := &benchrun.SimFleet{Gbps: 100, Slow: "node0003", SlowShare: 0.1}
	td := filepath.Join("..", "..", "route", "testdata")
	rep, err := benchrun.Run(context.Background(), benchrun.Options{ClusterFile: file, Engine: "tcp", Seconds: 1, Samples: 1, Timeout: time.Minute,
		Results: filepath.Join(dir, name+".jsonl"), Launcher: sim.Launcher(c), Schedule: "cover", Hosts: hosts,
		Fabric: route.Input{FabricFile: filepath.Join(td, "fattree-2x4x4.net"), RoutesFile: filepath.Join(td, "fattree-2x4x4-ftree.opensm-lfts.dump")}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cover == nil || rep.Cover.Fault == nil || len(rep.Cover.Fault.Ends) != 2 {
		t.Fatalf("the cover run named nothing: %+v", rep.Cover)
	}
	var buf bytes.Buffer
	if err := envelope.Write(&buf, envelope.Bench, rep.Findings, rep); err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(dir, name+".json")
	if err := os.WriteFile(doc, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return doc, rep
}

// A cable named by the cover schedule, on the page: node0003's cable is
// slow, and its host end shows its own physical layer read from the
// mlxlink capture placed in that host's tree (CX7 400GbE; lane 0's raw
// errors raised to 993017647): the worst lane warns on lane 0, the BERs
// and link drops pass with their limits and the counters' window, the
// module's readings stand against its own range; the switch end says "no
// PHY evidence". The device name in the snapshot is markup (host data)
// and stays inert. The twin run without snapshots shows both ends without
// PHY evidence and no readings. The page renders in a real browser.
func TestCoverPHYOnTheCable(t *testing.T) {
	dir := t.TempDir()
	bare, _ := coverRun(t, dir, "bare", nil)
	page, v := render(t, bare)
	if len(v.Benches) != 1 || v.Benches[0].Cover == nil || v.Benches[0].Cover.Fault == nil {
		t.Fatalf("no named cable in the view")
	}
	ends := v.Benches[0].Cover.Fault.Ends
	if n := strings.Count(page, "</span> no PHY evidence</summary>"); n != 2 || strings.Contains(page, `<table class="phy">`) {
		t.Errorf("without snapshots: %d ends say no PHY evidence, want both and no readings", n)
	}
	if !strings.Contains(page, `<a href="#cable-phy-0">its own physical layer</a>`) {
		t.Error("the named cable does not point to its ends' physical layer")
	}

	// node0003's snapshot: a real tree, the capture saved where gather
	// and inventory keep PHY outputs.
	snap := phySnapshot(t)
	// The tree's GUIDs are not the simulated fabric's: its first port
	// stands for node0003's CA port, as the run named it.
	ca := ends[0]
	if !strings.HasPrefix(ca.Name, "node0003") {
		ca = ends[1]
	}
	const hostile = `mlx5_<script>alert(1)</script>&"x'`
	snap.Hostname = "node0003"
	snap.RDMADevices[0].Name = hostile
	snap.RDMADevices[0].Ports[0].Port, snap.RDMADevices[0].Ports[0].PortGUID = ca.Port, ca.GUID
	snap.Phy[0].Device = hostile

	doc, rep := coverRun(t, dir, "phy", []*host.Snapshot{snap})
	if len(rep.Cover.Fault.PHY) != 2 {
		t.Fatalf("the bench document carries %d ends' PHY, want 2", len(rep.Cover.Fault.PHY))
	}
	page, _ = render(t, doc)
	if strings.Contains(page, "<script>alert") || !strings.Contains(page, "mlx5_&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("a device name with markup was not escaped in the PHY table")
	}
	sec := page[strings.Index(page, `<h4 id="cable-phy-0">`):]
	sec = sec[:strings.Index(sec, "\n</div>")]
	for _, want := range []string{
		`<td><span class="badge warn">warn</span> <code>phy.lane.errors</code></td><td>worst lane (raw errors)</td><td>lane 0: 993017647 (lanes from 0: 993017647, 15132549, 7368641, 9233545)</td><td data-label="judged against">&lt; 10× the port&#39;s median lane</td><td data-label="counted over">2718.1 min since the counters were last cleared</td>`,
		`<td><span class="badge pass">pass</span> <code>phy.ber.effective</code></td><td>effective BER (after FEC)</td><td>no errors counted (15E-255), 0 errors</td><td data-label="judged against">&lt; 1e-12</td><td data-label="counted over">2718.1 min since the counters were last cleared</td>`,
		`<td>raw BER (before FEC)</td><td>5E-10; worst lane 1: 1E-9</td>`,
		`<td>link drops</td><td>0 link down, 0 recovery</td>`,
		`<td>module temperature</td><td>61 C</td><td data-label="judged against">the module&#39;s own range`,
		`<td>module rx power (worst channel 4)</td><td>2.658 dBm</td>`,
		`<span class="badge warn">warn</span> mlxlink`,
		"</span> no PHY evidence</summary>",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("the named cable's PHY section lacks %s", want)
		}
	}
	if strings.Count(sec, "no PHY evidence</summary>") != 1 || strings.Count(sec, `<table class="phy">`) != 1 {
		t.Errorf("want the host end's readings and the switch end without PHY evidence:\n%s", sec)
	}
	// on the cable itself: the drawing's named line says it on hover
	if !strings.Contains(page, "; PHY: ") || !strings.Contains(page, "WARN phy.lane.errors: lane 0") {
		t.Error("the named cable's line in the drawing does not carry its PHY")
	}

	out := artefacts(t)
	file := filepath.Join(out, "cover-phy.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	chromium := testhost.RequireTool(t, "chromium-headless-shell")
	png := filepath.Join(out, "cover-phy-narrow.png")
	Screenshot(t, chromium, file, png, 390, 2400)
	if inked, colours := pixelStats(decode(t, png)); inked < 0.03 || colours < 50 {
		t.Errorf("the page looks blank at phone width: %.2f%% inked, %d colours", 100*inked, colours)
	}
}

// A fabric finding that names a cable and carries its ends' PHY (the
// evidence lines phycheck attaches: the recorded qdr-lab fabric's lab02
// link, whose port counts symbol errors, with the CX7 mlxlink capture as
// lab02's end and nothing for the switch's) shows them in that link's row
// of the Links table, not only in the findings below.
func TestFabricLinkRowCarriesPHY(t *testing.T) {
	in, err := judge.Load([]string{"example:qdr-lab"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "mlxlink", "yuuki-rdma-exporter_mft-4.34.1_cx7-fw28.47_400GbE-DR4-osfp_module-counters_json_vendor-anonymized.json"))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := phy.Named([]byte(strings.Replace(string(b), `"3017647"`, `"993017647"`, 1)), phy.Dir+"/mlx5_0-1.mlxlink.json", "lab02")
	if err != nil {
		t.Fatal(err)
	}
	ev := phycheck.CableEvidence([]phycheck.End{{Host: "lab02", Device: "mlx5_0", Port: 1, Name: "lab02 HCA-1 port 1"}, {Name: "the switch's port"}}, ps)
	found := false
	for i, f := range in.Findings {
		if strings.HasPrefix(f.Check, "fabric.") && f.Outcome == check.Fail && strings.HasPrefix(f.Subject, "lab02 HCA-1 port 1") {
			in.Findings[i].Evidence = append(in.Findings[i].Evidence, ev...)
			found = true
		}
	}
	if !found {
		t.Fatal("no failing fabric finding on lab02 HCA-1 port 1")
	}
	v := report.NewClusterView(in)
	var buf bytes.Buffer
	if err := Write(&buf, v, Options{}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	links := page[strings.Index(page, "<h4>Links, worst first"):]
	links = links[:strings.Index(links, "</table>")]
	row := ""
	for _, r := range strings.Split(links, "<tr>") {
		if strings.Contains(r, "lab02 HCA-1 port 1") {
			row = r
		}
	}
	if !strings.Contains(row, `<div class="phy-ev"><b>PHY of lab02 HCA-1 port 1 (mlxlink --json)</b>: WARN phy.lane.errors: lane 0`) ||
		!strings.Contains(row, `<div class="phy-ev"><b>PHY of the switch&#39;s port</b>: no PHY evidence`) {
		t.Errorf("the lab02 link's row lacks its ends' PHY:\n%s", row)
	}
}

// phySnapshot is the R730 seed tree's snapshot with the CX7 400GbE mlxlink
// capture saved where gather and inventory keep PHY outputs, lane 0's raw
// errors raised to 993017647 (one bad lane), read by inventory as for any
// node.
func phySnapshot(t *testing.T) *host.Snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), "mlxlink", "yuuki-rdma-exporter_mft-4.34.1_cx7-fw28.47_400GbE-DR4-osfp_module-counters_json_vendor-anonymized.json"))
	if err != nil {
		t.Fatal(err)
	}
	root := testhost.WriteTree(t, testhost.R730())
	snap0, err := inventory.Open(root, inventory.Options{})
	if err != nil || len(snap0.RDMADevices) == 0 {
		t.Fatalf("tree: %v", err)
	}
	dev := snap0.RDMADevices[0].Name
	if err := os.MkdirAll(filepath.Join(root, phy.Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), `"3017647"`, `"993017647"`, 1)
	if err := os.WriteFile(filepath.Join(root, phy.Dir, dev+"-1.mlxlink.json"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := inventory.Open(root, inventory.Options{})
	if err != nil || len(snap.Phy) != 1 {
		t.Fatalf("PHY facts from the tree: %+v %v", snap.Phy, err)
	}
	return snap
}

// A host snapshot given beside a fabric scan puts its saved PHY outputs on
// the links of its ports: the recorded qdr-lab fabric with lab02's
// snapshot (the R730 tree, its first port standing for lab02 HCA-1 port
// 1, the mlxlink capture in its tree) shows lab02's bad lane in that
// link's row; without the snapshot, no link row carries PHY lines.
func TestFabricLinkRowShowsHostPHY(t *testing.T) {
	linkRow := func(page, end string) string {
		t.Helper()
		links := page[strings.Index(page, "<h4>Links, worst first"):]
		links = links[:strings.Index(links, "</table>")]
		for _, r := range strings.Split(links, "<tr>") {
			if strings.Contains(r, end) {
				return r
			}
		}
		t.Fatalf("no link row of %s", end)
		return ""
	}
	page, _ := render(t, "example:qdr-lab")
	if row := linkRow(page, "lab02 HCA-1 port 1"); strings.Contains(row, "phy-ev") {
		t.Errorf("PHY lines without any PHY output: %s", row)
	}
	snap := phySnapshot(t)
	snap.Hostname = "lab02"
	snap.RDMADevices[0].Ports[0].Port, snap.RDMADevices[0].Ports[0].PortGUID = 1, 0x100003
	var buf bytes.Buffer
	if err := snap.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "lab02.json")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	page, _ = render(t, "example:qdr-lab", file)
	if row := linkRow(page, "lab02 HCA-1 port 1"); !strings.Contains(row, `<div class="phy-ev"><b>PHY of lab02 HCA-1 port 1 (mlxlink --json)</b>: WARN phy.lane.errors: lane 0`) {
		t.Errorf("lab02's link row lacks its PHY:\n%s", row)
	}
	if row := linkRow(page, "lab01 HCA-1 port 1"); strings.Contains(row, "phy-ev") {
		t.Errorf("lab02's PHY on lab01's link: %s", row)
	}
}
