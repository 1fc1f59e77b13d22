package fabric

import (
	"reflect"
	"strings"
	"testing"
)

// Descriptions a node may give itself (issue 35): quotes, backslashes,
// iblinkinfo's link syntax, ibnetdiscover's syntax and escapes.
var forgedDescs = map[string]string{
	"{S}":  `a" 1 1[ ] ==(12X 10.0 Gbps Active/ LinkUp)==> 0x248a070300c70103 2 1[ ] "b`,
	"{C1}": `q"uo\te" 9 9[  ] ==( 1X 2.5 Gbps`,
	"{C2}": `"S-0000000000000001"[1] # lid 4 lmc 0 \x1b[8m 4xEDR`,
}

var plainDescs = map[string]string{"{S}": "leaf01", "{C1}": "node01 HCA-1", "{C2}": "node02 HCA-1"}

// forgedLine is the first description on the switch's own line.
var forgedLine = fill(linkInfoLine[2:3][0], forgedDescs)

// linkInfoLine is iblinkinfo --line of a switch and two CAs (as ibsim
// prints it), node01's link degraded to 1X SDR.
var linkInfoLine = []string{
	`0x248a070300c70105 "{C2}"      3    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>  0x7cfe900300a50010      1    2[  ] "{S}" ( )`,
	`0x248a070300c70103 "{C1}"      2    1[  ] ==( 1X           2.5 Gbps Active/  LinkUp)==>  0x7cfe900300a50010      1    1[  ] "{S}" (Could be 4X Could be 25.78125 Gbps)`,
	`0x7cfe900300a50010 "{S}"      1    1[  ] ==( 1X           2.5 Gbps Active/  LinkUp)==>  0x248a070300c70103      2    1[  ] "{C1}" (Could be 4X Could be 25.78125 Gbps)`,
	`0x7cfe900300a50010 "{S}"      1    2[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>  0x248a070300c70105      3    1[  ] "{C2}" ( )`,
	`0x7cfe900300a50010 "{S}"      1    3[  ] ==(                Down/ Polling)==>             [  ] "" ( )`,
}

// linkInfoDefault is the same fabric in iblinkinfo's default form.
var linkInfoDefault = []string{
	`CA: {C2}:`,
	`      0x248a070300c70105      3    1[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       1    2[  ] "{S}" ( )`,
	`CA: {C1}:`,
	`      0x248a070300c70103      2    1[  ] ==( 1X           2.5 Gbps Active/  LinkUp)==>       1    1[  ] "{S}" (Could be 4X Could be 25.78125 Gbps)`,
	`Switch: 0x7cfe900300a50010 {S}:`,
	`           1    1[  ] ==( 1X           2.5 Gbps Active/  LinkUp)==>       2    1[  ] "{C1}" (Could be 4X Could be 25.78125 Gbps)`,
	`           1    2[  ] ==( 4X      25.78125 Gbps Active/  LinkUp)==>       3    1[  ] "{C2}" ( )`,
	`           1    3[  ] ==(                Down/ Polling)==>             [  ] "" ( )`,
}

func fill(s string, descs map[string]string) string {
	for k, v := range descs {
		s = strings.ReplaceAll(s, k, v)
	}
	return s
}

// withoutDescs is a port as far as structure goes.
func withoutDescs(ps []Port) []Port {
	out := make([]Port, len(ps))
	for i, p := range ps {
		p.NodeDesc = ""
		if p.Remote != nil {
			r := *p.Remote
			r.NodeDesc = ""
			p.Remote = &r
		}
		out[i] = p
	}
	return out
}

// Every port reads exactly as with plain descriptions: no description
// moves a width, speed, LID, port or far end, and none stops the parse.
func TestParseIBLinkInfoForgedDescriptions(t *testing.T) {
	for name, lines := range map[string][]string{"line": linkInfoLine, "default": linkInfoDefault} {
		t.Run(name, func(t *testing.T) {
			text := strings.Join(lines, "\n") + "\n"
			plain, badPlain, err := ParseIBLinkInfo(fill(text, plainDescs))
			if err != nil || len(badPlain) > 0 || len(plain) != 5 {
				t.Fatalf("plain: %v %+v %d ports", err, badPlain, len(plain))
			}
			forged, bad, err := ParseIBLinkInfo(fill(text, forgedDescs))
			if err != nil || len(bad) > 0 {
				t.Fatalf("forged: %v %+v", err, bad)
			}
			if !reflect.DeepEqual(withoutDescs(plain), withoutDescs(forged)) {
				t.Errorf("forged descriptions changed the structure:\nplain  %+v\nforged %+v", withoutDescs(plain), withoutDescs(forged))
			}
			// The descriptions are still read, whole, as data.
			for _, p := range forged {
				if p.Remote != nil && p.Remote.PortGUID == 0x7cfe900300a50010 && p.Remote.NodeDesc != forgedDescs["{S}"] {
					t.Errorf("far end description %q, want %q", p.Remote.NodeDesc, forgedDescs["{S}"])
				}
			}
			if p := forged[1]; name == "line" && (p.Width != "1X" || p.Speed != "SDR" || p.NodeDesc != forgedDescs["{C1}"]) {
				t.Errorf("node01's degraded port %+v", p)
			}
		})
	}
}

// A line whose readings nothing confirms is unknown, alone; one the
// other lines decide (the far end missing, but the node's description
// known from its other lines) is read.
func TestParseIBLinkInfoAmbiguousLine(t *testing.T) {
	ps, bad, err := ParseIBLinkInfo(fill(linkInfoLine[2]+"\n", forgedDescs))
	if err != nil || len(ps) != 0 || len(bad) != 1 || bad[0].Line != 1 || !strings.Contains(bad[0].Reason, "link syntax") {
		t.Fatalf("a lone ambiguous line must be unreadable: %v %+v %+v", err, ps, bad)
	}
	// node01's own line is missing: the switch's port 1 line is decided
	// by the switch's description, which its confirmed port 2 line gives.
	text := fill(strings.Join([]string{linkInfoLine[0], linkInfoLine[2], linkInfoLine[3], linkInfoLine[4]}, "\n")+"\n", forgedDescs)
	ps, bad, err = ParseIBLinkInfo(text)
	if err != nil || len(bad) != 0 || len(ps) != 4 {
		t.Fatalf("%v %+v %d ports", err, bad, len(ps))
	}
	if p := ps[1]; p.Num != 1 || p.Width != "1X" || p.Speed != "SDR" || p.Remote == nil || p.Remote.PortGUID != 0x248a070300c70103 {
		t.Errorf("switch port 1: %+v", p)
	}
	if p := ps[3]; p.Num != 3 || p.Remote != nil {
		t.Errorf("switch port 3: %+v", p)
	}
}

// ibnetdiscover's comments carry descriptions: the LIDs and rates are
// read from the end of the line, whatever the description holds.
func TestParseTopologyForgedDescriptions(t *testing.T) {
	const dump = `vendid=0x2c9
devid=0xcb20
switchguid=0x7cfe900300a50010(7cfe900300a50010)
Switch	4 "S-7cfe900300a50010"		# "{S}" base port 0 lid 1 lmc 0
[1]	"H-248a070300c70102"[1](248a070300c70103) 		# "{C1}" lid 2 1xSDR
[2]	"H-248a070300c70104"[1](248a070300c70105) 		# "{C2}" lid 3 4xEDR

vendid=0x2c9
devid=0x1013
caguid=0x248a070300c70102
Ca	1 "H-248a070300c70102"		# "{C1}"
[1](248a070300c70103) 	"S-7cfe900300a50010"[1]		# lid 2 lmc 0 "{S}" lid 1 1xSDR

vendid=0x2c9
devid=0x1013
caguid=0x248a070300c70104
Ca	1 "H-248a070300c70104"		# "{C2}"
[1](248a070300c70105) 	"S-7cfe900300a50010"[2]		# lid 3 lmc 0 "{S}" lid 1 4xEDR
`
	forged := map[string]string{"{S}": `a" lid 9 12xQDR "b`, "{C1}": `q"uo\te" lid 7 lmc 0 "x`, "{C2}": `"S-0000000000000001"[1] # lid 4 lmc 0 4xEDR`}
	plain, err := ParseTopology(fill(dump, plainDescs))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseTopology(fill(dump, forged))
	if err != nil || len(got.Unreadable) > 0 {
		t.Fatalf("%v %+v", err, got.Unreadable)
	}
	if len(got.Nodes) != 3 || len(got.Links) != len(plain.Links) {
		t.Fatalf("%d nodes, %d links", len(got.Nodes), len(got.Links))
	}
	for i, n := range got.Nodes {
		if n.GUID != plain.Nodes[i].GUID || n.LID != plain.Nodes[i].LID || n.Desc != fill([]string{"{S}", "{C1}", "{C2}"}[i], forged) {
			t.Errorf("node %d: %+v, want GUID %s LID %d", i, n, plain.Nodes[i].GUID, plain.Nodes[i].LID)
		}
	}
	byGUID := func(l TopoLink) TopoLink {
		if l.B.GUID < l.A.GUID {
			l.A, l.B = l.B, l.A
		}
		return l
	}
	for i, l := range got.Links {
		l, p := byGUID(l), byGUID(plain.Links[i])
		if l.A.GUID != p.A.GUID || l.B.GUID != p.B.GUID || l.A.Port != p.A.Port || l.B.Port != p.B.Port || l.A.LID != p.A.LID || l.B.LID != p.B.LID || l.Width != p.Width || l.Speed != p.Speed {
			t.Errorf("link %d: %+v, want %+v", i, l, p)
		}
	}
}

// ibqueryerrors' "Link info" tail carries the far end's description: no
// counter is read from it.
func TestParseIBQueryErrorsForgedDescription(t *testing.T) {
	out := `Errors for 0x7cfe900300a50010 "a" [SymbolErrorCounter == 99]"
   GUID 0x7cfe900300a50010 port 1: [LinkDownedCounter == 1] Link info:      1   1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  0x248a070300c70103      2    1[  ] "q [PortRcvErrors == 77] x" ( )
`
	pes, err := ParseIBQueryErrors(out)
	if err != nil || len(pes) != 1 {
		t.Fatalf("%v %+v", err, pes)
	}
	if !reflect.DeepEqual(pes[0].Counters, map[string]uint64{"LinkDownedCounter": 1}) {
		t.Errorf("counters %v: a description's text was read as a counter", pes[0].Counters)
	}
}

// ibnetdiscover -p prints descriptions last, quoted with ' and split by
// " - ": the type, LIDs, ports, GUIDs and rate before them are read
// whatever a description holds; a damaged port line is that port unknown.
func TestIBNetDiscoverPortsForgedDescriptions(t *testing.T) {
	const text = `CA     2  1 0x248a070300c70103 1x SDR - SW     1  1 0x7cfe900300a50010 ( '{C1}' - '{S}' )
SW     1  1 0x7cfe900300a50010 1x SDR - CA     2  1 0x248a070300c70103 ( '{S}' - '{C1}' )
SW     1  2 0x7cfe900300a50010 4x EDR - CA     3  1 0x248a070300c70105 ( '{S}' - '{C2}' )
SW     1  3 0x7cfe900300a50010 4x SDR                                    '{S}'
`
	forged := map[string]string{"{S}": `a' - 'b' ) 4x EDR - SW 9 9 0x1 ( 'c`, "{C1}": `q"uo\te" 9 9[  ] ==( 1X 2.5 Gbps`, "{C2}": `x' )`}
	plain, err := FromIBNetDiscoverPorts(fill(text, plainDescs), "plain")
	if err != nil {
		t.Fatal(err)
	}
	got, err := FromIBNetDiscoverPorts(fill(text, forged)+"SW     1  4 0x7cfe900300a50010 4x\n", "forged")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(withoutDescs(plain.Ports), withoutDescs(got.Ports)) {
		t.Errorf("forged descriptions changed the structure:\nplain  %+v\nforged %+v", withoutDescs(plain.Ports), withoutDescs(got.Ports))
	}
	if len(got.Unreadable) != 1 || got.Unreadable[0].Line != 5 {
		t.Errorf("the damaged line 5 must be unreadable alone: %+v", got.Unreadable)
	}
}

// A node described with a tool's failure words ("failed", "error:",
// "timeout") is data: the output is read, not taken for the tool failing.
func TestFailureWordsInDescriptions(t *testing.T) {
	out := `Errors for 0x7cfe900300a50010 "Query SA failed error: timeout"
   GUID 0x7cfe900300a50010 port 1: [SymbolErrorCounter == 3] Link info:      1   1[  ] ==( 4X 25.78125 Gbps Active/  LinkUp)==>  0x248a070300c70103      2    1[  ] "ibpanic failed" ( )

## Summary: 3 nodes checked, 1 bad nodes found
##          6 ports checked, 1 ports have errors beyond threshold
`
	s, err := FromIBQueryErrors([]byte(out), "saved")
	if err != nil || s.CounterError != "" || len(s.Ports) != 1 || s.Ports[0].Counters["SymbolErrorCounter"] != 3 {
		t.Fatalf("%v %q %+v", err, s.CounterError, s.Ports)
	}
	if _, err := CheckQueryErrors(Output{Stdout: []byte(out)}, nil); err != nil {
		t.Errorf("a description was taken for the tool failing: %v", err)
	}
	// A real failure line still is one.
	if f := ToolFailure(Output{Stdout: []byte(out + "ibwarn: [42] Query SA failed\n")}); f == "" {
		t.Error("a failure line is no longer seen")
	}
}
