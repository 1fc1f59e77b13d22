package fabric

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/portstate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func shared(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testhost.SharedTestdata(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseIBLinkInfoReal(t *testing.T) {
	cases := []struct {
		file                   string
		ports, active, polling int
		first                  Port
	}{
		// xCAT: 2 CAs + an SB7700 EDR switch, 16 of its 18 ports Down/Polling.
		{"ibtools/iblinkinfo/xcat-edr-2node_SB7700_iblinkinfo.txt", 20, 4, 16,
			Port{NodeType: CA, NodeDesc: "n02 HCA-1", Num: 1, PortGUID: 0xec0d9a03003d62be, LID: 4, State: portstate.Active, PhysState: portstate.LinkUp, Width: "4X", Speed: "EDR", LaneGbps: 25.78125, RateGbps: 100}},
		// MQM8700 HDR switch: V100 hosts at EDR lane speed, the SHARP aggregation node at HDR.
		{"ibtools/iblinkinfo/nccl-tests-issue-71_HDR-MQM8700_SHARP-aggnode_iblinkinfo_excerpt.txt", 8, 8, 0,
			Port{NodeType: CA, NodeDesc: "gpu-v100-3 HCA-1", Num: 1, PortGUID: 0xb88303ffff7f61c4, LID: 6, State: portstate.Active, PhysState: portstate.LinkUp, Width: "4X", Speed: "EDR", LaneGbps: 25.78125, RateGbps: 100}},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			ps, bad, err := ParseIBLinkInfo(shared(t, c.file))
			if err != nil || len(bad) > 0 {
				t.Fatal(err, bad)
			}
			active, polling := 0, 0
			for _, p := range ps {
				switch {
				case p.State == portstate.Active:
					active++
				case p.PhysState == portstate.Polling:
					polling++
				}
			}
			if len(ps) != c.ports || active != c.active || polling != c.polling {
				t.Errorf("%d ports (%d active, %d polling), want %d (%d, %d)", len(ps), active, polling, c.ports, c.active, c.polling)
			}
			got := ps[0]
			got.Remote = nil
			if got.NodeDesc != c.first.NodeDesc || got.LID != c.first.LID || got.RateGbps != c.first.RateGbps || got.Speed != c.first.Speed || got.PortGUID != c.first.PortGUID || got.NodeType != c.first.NodeType {
				t.Errorf("first port %+v\nwant %+v", got, c.first)
			}
		})
	}
	// The aggregation node runs HDR; its remote end is switch port 41.
	ps, _, _ := ParseIBLinkInfo(shared(t, "ibtools/iblinkinfo/nccl-tests-issue-71_HDR-MQM8700_SHARP-aggnode_iblinkinfo_excerpt.txt"))
	agg := ps[1]
	if agg.NodeDesc != "Mellanox Technologies Aggregation Node" || agg.Speed != "HDR" || agg.RateGbps != 200 || agg.Remote == nil || agg.Remote.Port != 41 || agg.Remote.LID != 3 {
		t.Errorf("aggregation node: %+v %+v", agg, agg.Remote)
	}
}

func TestParseIBLinkInfoLineMode(t *testing.T) {
	out := `0x000000000010000a "                          Hca4"      6    1[  ] ==( 4X           2.5 Gbps Active/  LinkUp)==>  0x0000000000200001      3    2[  ] "Switch2" (Could be 12X Could be 10.0 Gbps)
0x0000000000200001 "                       Switch2"      3    4[  ] ==(                Down/ Polling)==>             [  ] "" ( )
0x000000000010000a "                          Hca4"      0    1[  ] ==(12X      25.78125 Gbps Initialize/  LinkUp)==>  0x0000000000200000      0    4[  ] "Switch1" ( Could be 53.125 Gbps)
`
	ps, bad, err := ParseIBLinkInfo(out)
	if err != nil || len(ps) != 3 || len(bad) > 0 {
		t.Fatalf("%v %+v %+v", err, ps, bad)
	}
	if p := ps[0]; p.NodeDesc != "Hca4" || p.PortGUID != 0x10000a || p.Width != "4X" || p.Speed != "SDR" || p.CouldBeWidth != "12X" || p.CouldBeSpeed != "QDR" ||
		p.Remote.PortGUID != 0x200001 || p.Remote.LID != 3 || p.Remote.Port != 2 || p.Remote.NodeDesc != "Switch2" {
		t.Errorf("%+v %+v", p, p.Remote)
	}
	if p := ps[1]; p.State != portstate.Down || p.PhysState != portstate.Polling || p.Remote != nil || p.Linked() {
		t.Errorf("down port %+v", p)
	}
	if p := ps[2]; p.State != portstate.Init || p.LID != 0 || p.CouldBeSpeed != "HDR" || p.CouldBeWidth != "" {
		t.Errorf("init port %+v", p)
	}
	ps, bad, err = ParseIBLinkInfo("0x1 \"x\" 1 1[ ] ==( 4X 10.0 Gbps Sideways )==> 2 2[ ] \"y\" ( )\n0x3 \"z\" 1 2[ ] ==( 4X 10.0 Gbps Active/ LinkUp)==> 0x4 2 2[ ] \"y\" ( )\n")
	if err != nil || len(ps) != 1 || ps[0].PortGUID != 3 || len(bad) != 1 || bad[0].Line != 1 || !strings.Contains(bad[0].Reason, "Sideways") {
		t.Errorf("a bad state must make its line alone unreadable, naming it: %v %+v %+v", err, ps, bad)
	}
}

func TestParseTopologyReal(t *testing.T) {
	cases := []struct {
		file         string
		nodes, links int
		a            string
		ap           int
		b            string
		bp           int
		width, speed string
	}{
		// Real Azure HDR fabric, pruned: ids "S-…", descriptions in comments, s=/w=/e= fields.
		{"ibnetdiscover/superbench_topo_aware_ibnetdiscover_FAKED.txt", 18, 18,
			"MF0;rmd70-0101-0908-01ib1-A:MCS8500/L01/U1", 21, "MF0;rmd70-0101-0908-01ib1-A:MCS8500/S01/U1", 1, "4X", "HDR"},
		// NDR QM9700 with split ports, ids redacted to the same string: the
		// per-line descriptions keep the nodes apart. A shell prompt and an elision are skipped.
		{"ibnetdiscover/ndr-qm9700-129port-split-2xNDR_REDACTED_TRUNCATED.txt", 1, 5,
			"MF0;CNTSN-POD229-QM97-IB-02:MQM9700/U1", 1, "tj01-4090-node005 mlx5_2", 1, "2X", "NDR"},
		// ibsim's own dialect: "Hca", no GUIDs, no comments.
		{"ibnetdiscover/ibsim-net-examples/net.2sw2path4hca", 6, 6, "Hca1", 1, "Switch1", 1, "", ""},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			top, err := ParseTopology(shared(t, c.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(top.Nodes) != c.nodes || len(top.Links) != c.links {
				t.Errorf("%d nodes %d links, want %d %d", len(top.Nodes), len(top.Links), c.nodes, c.links)
			}
			found := false
			for _, l := range top.Links {
				a, b := l.A.Node+fmt.Sprint(l.A.Port), l.B.Node+fmt.Sprint(l.B.Port)
				ca, cb := c.a+fmt.Sprint(c.ap), c.b+fmt.Sprint(c.bp)
				if (a == ca && b == cb) || (a == cb && b == ca) {
					found = true
					if l.Width != c.width || l.Speed != c.speed {
						t.Errorf("%v: %s %s, want %s %s", l, l.Width, l.Speed, c.width, c.speed)
					}
				}
			}
			if !found {
				t.Errorf("no link %s ↔ %s in %+v", c.a, c.b, top.Links)
			}
		})
	}
	if _, err := ParseTopology("Switch 8 \"S1\"\n[1] Hca1\n"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a port line without a quoted remote must fail naming line 2, got %v", err)
	}
}

func TestParseIBQueryErrors(t *testing.T) {
	out := `Errors for "Hca2"
   GUID 0x100004 port 1: [SymbolErrorCounter == 12] [PortXmitData == 1872 (7.312KB)]
Errors for 0x200000 "Switch1"
   GUID 0x200000 port ALL: [LinkDownedCounter == 3] [PortRcvErrors == 65535]
   GUID 0x200000 port 3: [LinkDownedCounter == 3] [PortRcvErrors == 65535]
       Link info:      1   3[  ] ==(12X           5.0 Gbps Active/  LinkUp)==>  0x0000000000100007      4    1[  ] "Hca3" ( Could be 10.0 Gbps)

## Summary: 5 nodes checked, 2 bad nodes found
`
	pes, err := ParseIBQueryErrors(out)
	if err != nil || len(pes) != 2 {
		t.Fatalf("%v %+v", err, pes)
	}
	if pes[0].NodeDesc != "Hca2" || pes[0].GUID != 0x100004 || pes[0].Counters["SymbolErrorCounter"] != 12 || pes[0].Counters["PortXmitData"] != 1872 {
		t.Errorf("%+v", pes[0])
	}
	if pes[1].Port != 3 || pes[1].Counters["PortRcvErrors"] != 65535 || pes[1].NodeDesc != "Switch1" {
		t.Errorf("%+v", pes[1])
	}
}

func TestParseSM(t *testing.T) {
	sm, err := ParseSMInfo("sminfo: sm lid 1 sm guid 0x200000, activity count 118 priority 0 state 3 SMINFO_MASTER\n")
	if err != nil || sm.LID != 1 || sm.GUID != 0x200000 || sm.State != "MASTER" || sm.ActCount != 118 {
		t.Errorf("%+v %v", sm, err)
	}
	if _, err := ParseSMInfo("sminfo: iberror: failed: query\n"); err == nil {
		t.Error("an sminfo error line must not parse")
	}
	recs, err := ParseSMInfoRecords(`SMInfoRecord dump:
		RID
		LID...................9
		SMInfo dump:
		GUID..................0x0000000000100009
		SM_Key................0x0000000000000000
		ActCount..............196
		Priority..............5
		SMState...............3
SMInfoRecord dump:
		RID
		LID...................1
		SMInfo dump:
		GUID..................0x0000000000200000
		Priority..............0
		SMState...............2
`)
	if err != nil || len(recs) != 2 || recs[0].State != "MASTER" || recs[0].Priority != 5 || recs[1].State != "STANDBY" || recs[1].LID != 1 {
		t.Errorf("%+v %v", recs, err)
	}
}

func TestParseCabling(t *testing.T) {
	top, err := ParseCabling([]byte("links:\n  - {a: {node: \"gpu017 HCA-1\", port: 1}, b: {node: leaf03, port: 14}}\n"))
	if err != nil || len(top.Links) != 1 || top.Links[0].B != (TopoEnd{Node: "leaf03", Port: 14}) {
		t.Fatalf("%+v %v", top, err)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"links:\n  - {a: {node: x, port: 1}, b: {node: y, port: 1}, colour: red}\n", "unknown field"},
		{"links:\n  - {a: {node: x, port: 0}, b: {node: y, port: 1}}\n", "links[0]"},
		{"links:\n  - {a: {node: x, port: 1}, b: {node: y, port: 1}}\n  - {a: {node: x, port: 1}, b: {node: z, port: 2}}\n", "already cabled in links[0]"},
		{"links:\n  - {a: {node: x, port: one}, b: {node: y, port: 1}}\n", "field links.a.port: got a string, want a whole number"},
		{"links:\n  - {a: {guid: 0x7cfe900300a5f7c0, port: 1}, b: {node: y, port: 1}}\n", "want a GUID in quotes"},
		{"links:\n  - {a: {port: 1}, b: {node: y, port: 1}}\n", "each end needs a node (or guid)"},
	} {
		if _, err := ParseCabling([]byte(bad.yaml)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: got %v, want an error with %q", bad.yaml, err, bad.want)
		}
	}
}

// No lost records: every line with a link arrow (not a block header)
// becomes exactly one port or one Unreadable naming it; a far end is
// present only when the line names one.
func FuzzParseIBLinkInfo(f *testing.F) {
	f.Add(`0x000000000010000a "   Hca4"      6    1[  ] ==( 4X           2.5 Gbps Active/  LinkUp)==>  0x0000000000200001      3    2[  ] "Switch2" (Could be 12X Could be 10.0 Gbps)`)
	f.Add("CA: n02 HCA-1:\n      0xec0d9a03003d62be      4    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       2   17[  ] \"MF0;SB7700\" ( )\n")
	f.Add("Switch: 0x506b4b0300820910 MF0;SB7700:MSB7700/U1:\n           2    1[  ] ==(                Down/ Polling)==>             [  ] \"\" ( )\n")
	f.Add(forgedLine)
	f.Fuzz(func(t *testing.T, s string) {
		ps, bad, err := ParseIBLinkInfo(s)
		if err != nil {
			return
		}
		arrows := 0
		for _, l := range strings.Split(strings.ReplaceAll(s, "\r", "\n"), "\n") {
			trim := strings.TrimSpace(l)
			if strings.Contains(l, "==(") && !strings.HasPrefix(trim, "#") && !strings.HasPrefix(trim, "ibwarn:") && linkHeaderRE().FindStringSubmatch(trim) == nil {
				arrows++
			}
		}
		if len(ps)+len(bad) != arrows {
			t.Fatalf("%d link lines, %d ports and %d unreadable", arrows, len(ps), len(bad))
		}
		for _, u := range bad {
			if !strings.Contains(u.Text, "==(") || u.Reason == "" {
				t.Fatalf("unreadable %+v", u)
			}
		}
		for _, p := range ps {
			if p.RateGbps < 0 || p.RateGbps > 12*200 {
				t.Fatalf("rate %g", p.RateGbps)
			}
		}
	})
}

func FuzzParseTopology(f *testing.F) {
	f.Add("Switch 8 \"Switch1\"\n[1] \"Hca1\"[1] w=8\n\nHca 2 \"Hca1\"\n[1] \"Switch1\"[1]\n")
	f.Add("switchguid=0x1(1)\nSwitch 36 \"S-1\" # \"leaf\" enhanced port 0 lid 5 lmc 0\n[1] \"H-2\"[1](2) # \"h HCA-1\" lid 3 4xEDR\n")
	f.Fuzz(func(t *testing.T, s string) {
		top, err := ParseTopology(s)
		if err != nil {
			return
		}
		for _, l := range top.Links {
			if l.A.Node == "" || l.B.Node == "" {
				t.Fatalf("link with an empty end: %+v", l)
			}
		}
	})
}

// Any text: what ibqueryerrors' parser reads, printed back in the tool's
// format, reads back the same (no port, counter or value invented or
// lost); a refusal names a line the text has, and quotes it. sminfo and
// SMIR parsers likewise name real lines.
func FuzzParseIBQueryErrors(f *testing.F) {
	f.Add("Errors for \"Hca2\"\n   GUID 0x100004 port 1: [SymbolErrorCounter == 12]\n")
	f.Add("Errors for 0x7cfe900300b60030 \"SwitchIB\"\n   GUID 0x7cfe900300b60030 port ALL: [LinkDownedCounter == 3]\n   GUID 0x7cfe900300b60030 port 7: [LinkDownedCounter == 3] [PortRcvErrors == 18446744073709551615]\n")
	f.Add("   GUID 0x1 port 2: [SymbolErrorCounter == 99999999999999999999]\n")
	f.Add("sm lid 1 sm guid 0x2, activity count 9 priority 0 state 3 SMINFO_MASTER\n")
	lineOK := func(t *testing.T, s string, err error) {
		t.Helper()
		var pe *ParseError
		if !errors.As(err, &pe) {
			return
		}
		lines := strings.Split(s, "\n")
		if pe.Line < 1 || pe.Line > len(lines) {
			t.Fatalf("%v: line %d of a %d-line text", err, pe.Line, len(lines))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseIBQueryErrors(s)
		lineOK(t, s, err)
		if err == nil {
			var b strings.Builder
			for _, pe := range got {
				fmt.Fprintf(&b, "Errors for \"%s\"\n   GUID %s port %d:", pe.NodeDesc, pe.GUID, pe.Port)
				for c, v := range pe.Counters {
					fmt.Fprintf(&b, " [%s == %d]", c, v)
				}
				b.WriteString("\n")
			}
			again, err := ParseIBQueryErrors(b.String())
			if err != nil || len(again) != len(got) {
				t.Fatalf("printed back, %d ports read as %d (%v):\n%s", len(got), len(again), err, b.String())
			}
			for i := range got {
				if !strings.ContainsAny(got[i].NodeDesc, "\r\n") && (again[i].NodeDesc != got[i].NodeDesc || again[i].GUID != got[i].GUID || again[i].Port != got[i].Port || !maps.Equal(again[i].Counters, got[i].Counters)) {
					t.Fatalf("port %d: %+v read back as %+v", i, got[i], again[i])
				}
			}
		}
		_, err = ParseSMInfoRecords(s)
		lineOK(t, s, err)
		_, err = ParseSMInfo(s)
		if err == nil && !strings.Contains(s, "SMINFO_") {
			t.Fatalf("an sminfo line without SMINFO_ was read: %q", s)
		}
	})
}
