package slurm

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rdmalab/rdmalab/internal/check"
)

// Recorded from Debian's Slurm 22.05 (the cluster the integration test runs).
const idleLine = `NodeName=node2 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=0.52 AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=localhost Version=22.05.8 OS=Linux 6.1.0 #1 SMP RealMemory=500 AllocMem=0 FreeMem=22000 Sockets=1 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=lab BootTime=2026-11-23T01:00:00 SlurmdStartTime=2026-11-23T01:44:10 LastBusyTime=2026-11-23T01:44:10 CfgTRES=cpu=1,mem=500M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s`
const drainedLine = `NodeName=node4 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A Partitions=lab CfgTRES=cpu=1,mem=500M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s Reason=admin: bad DIMM B2 [root@2026-11-23T01:50:02]`

func TestParseNode(t *testing.T) {
	n, err := ParseNode(idleLine)
	if err != nil || n.Name != "node2" || n.State != "IDLE" || n.Reason != "" || n.Drained() {
		t.Errorf("idle: %+v %v", n, err)
	}
	n, err = ParseNode(drainedLine)
	if err != nil || n.State != "IDLE+DRAIN" || n.Reason != "admin: bad DIMM B2" || !n.Drained() || n.OursToResume() {
		t.Errorf("admin drain: %+v %v", n, err)
	}
	if _, err := ParseNode("Node node9 not found"); err == nil {
		t.Error("an unknown node parsed")
	}
}

func TestDecide(t *testing.T) {
	fail := []check.Finding{{Check: "port.rate.below-expected", Outcome: check.Fail, Subject: "mlx5_0 port 1", Message: "runs at 10 Gb/s, expected 40"}}
	ours := Node{Name: "n", State: "IDLE+DRAIN", Reason: "rdmalab: port.state mlx5_0 port 1: Down"}
	admin := Node{Name: "n", State: "IDLE+DRAIN", Reason: "admin: bad DIMM"}
	other := Node{Name: "n", State: "DRAIN", Reason: "NHC: check_hw_ib: No IB port"}
	idle := Node{Name: "n", State: "IDLE"}
	for _, c := range []struct {
		name    string
		node    Node
		failing []check.Finding
		timeout string
		want    Action
		reason  string
	}{
		{"healthy idle", idle, nil, "", Keep, ""},
		{"failing idle: drain naming the check", idle, fail, "", DrainNode, "rdmalab: port.rate.below-expected mlx5_0 port 1: runs at 10 Gb/s, expected 40"},
		{"healthy, drained by us: resume", ours, nil, "", ResumeNode, ""},
		{"healthy, drained by an admin: left drained", admin, nil, "", Keep, ""},
		{"healthy, drained by NHC: left drained", other, nil, "", Keep, ""},
		{"failing, drained by an admin: their reason stands", admin, fail, "", Keep, ""},
		{"failing for another reason than our drain: reason updated", ours, fail, "", DrainNode, "rdmalab: port.rate.below-expected"},
		{"timed out: drain naming the check", idle, nil, "port.errors", DrainNode, "rdmalab: health check timed out in port.errors"},
	} {
		d := Decide(c.node, c.failing, c.timeout)
		if d.Action != c.want || !strings.HasPrefix(d.Reason, c.reason) || (d.Action == DrainNode && !strings.HasPrefix(d.Reason, ReasonPrefix)) {
			t.Errorf("%s: %+v, want %s %q", c.name, d, c.want, c.reason)
		}
	}
	long := make([]check.Finding, 3)
	for i := range long {
		long[i] = check.Finding{Check: "x", Outcome: check.Fail, Subject: "s", Message: strings.Repeat("m", 300)}
	}
	if d := Decide(idle, long, ""); len(d.Reason) > maxReason+2 {
		t.Errorf("reason of %d bytes", len(d.Reason))
	}
	// A device name from the node holding a newline, ESC and CR stays one
	// line, escaped, and a cut never splits a character.
	hostile := []check.Finding{{Check: "port.state", Outcome: check.Fail, Subject: "mlx5_0\r\nREASON=forged\x1b[8m port 1", Message: strings.Repeat("é", 150)}}
	d := Decide(idle, hostile, "")
	if strings.ContainsAny(d.Reason, "\r\n\x1b") || !strings.Contains(d.Reason, `mlx5_0\r\nREASON=forged\x1b[8m port 1`) || !utf8.ValidString(d.Reason) || len(d.Reason) > maxReason {
		t.Errorf("hostile reason: %q", d.Reason)
	}
}

func TestExpandNodeList(t *testing.T) {
	for in, want := range map[string]string{
		"node[1-4]":                  "node1 node2 node3 node4",
		"gpu[01-03,07],login":        "gpu01 gpu02 gpu03 gpu07 login",
		"rack[1-2]-n[1-2]":           "rack1-n1 rack1-n2 rack2-n1 rack2-n2",
		"a":                          "a",
		"cn[098-101]":                "cn098 cn099 cn100 cn101",
		"node1,node[3-4],node[7,9]x": "node1 node3 node4 node7x node9x",
	} {
		got, err := ExpandNodeList(in)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("ExpandNodeList(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a,,b", "n[1-", "n[3-1]", "n]", "n[a-b]", "n[1-9999999]"} {
		if got, err := ExpandNodeList(bad); err == nil {
			t.Errorf("ExpandNodeList(%q) = %v, want an error", bad, got)
		}
	}
}

func FuzzExpandNodeList(f *testing.F) {
	for _, s := range []string{"node[1-4]", "gpu[01-03,07],login", "rack[1-2]-n[1-2]", "x[0-0]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := ExpandNodeList(s)
		if err != nil {
			return
		}
		// Every name is non-empty and bracket-free, and a list of plain
		// names joined by commas expands to itself.
		for _, n := range names {
			if n == "" || strings.ContainsAny(n, "[],") {
				t.Fatalf("%q expanded to name %q", s, n)
			}
		}
		again, err := ExpandNodeList(strings.Join(names, ","))
		if err != nil || strings.Join(again, ",") != strings.Join(names, ",") {
			t.Fatalf("%q: re-expanding its names gave %v, %v", s, again, err)
		}
	})
}
