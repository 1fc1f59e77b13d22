package judge

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

const issue71 = "ibtools/iblinkinfo/nccl-tests-issue-71_HDR-MQM8700_SHARP-aggnode_iblinkinfo_excerpt.txt"

// Issue 34: iblinkinfo's "Could be 53.125 Gbps" on four host links
// running EDR is the tool's own word that both ends support HDR; four
// links degraded alike do not confirm each other. The capture as stored
// prints "( )" on every line; the hint is added on the EDR lines (both
// ends' lines, as iblinkinfo prints it), the rest is the real paste.
func TestIBLinkInfoHintOverrulesPeers(t *testing.T) {
	real := string(capture(t, issue71))
	var b strings.Builder
	for _, l := range strings.SplitAfter(real, "\n") {
		if strings.Contains(l, "25.78125 Gbps") {
			l = strings.Replace(l, `" ( )`, `" ( Could be 53.125 Gbps)`, 1)
		}
		b.WriteString(l)
	}
	hinted := b.String()
	if strings.Count(hinted, "Could be") != 7 {
		t.Fatalf("want the hint on 7 lines (3 hosts' own, gpu-v100-2's cut from the paste; 4 switch ports), got %d", strings.Count(hinted, "Could be"))
	}
	r, err := One("iblinkinfo.txt", []byte(hinted), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"MF0;ibswitch254:MQM8700/U1 port 4 ↔ gpu-v100-2 HCA-1 [GUID unknown, lid 5] port 1",
		"gpu-v100-0 HCA-1 port 1 ↔ MF0;ibswitch254:MQM8700/U1 port 1",
		"gpu-v100-1 HCA-1 port 1 ↔ MF0;ibswitch254:MQM8700/U1 port 2",
		"gpu-v100-3 HCA-1 port 1 ↔ MF0;ibswitch254:MQM8700/U1 port 3",
	}
	var got []string
	for _, f := range r.Findings {
		if f.Outcome == check.Pass {
			continue
		}
		if f.Check != "fabric.link.speed" || f.Outcome != check.Fail {
			t.Errorf("unexpected %s %s %s: %s", f.Check, f.Outcome, f.Subject, f.Message)
			continue
		}
		got = append(got, f.Subject)
		if !strings.Contains(f.Message, "runs at 4X EDR (100 Gb/s), should run at 4X HDR (200 Gb/s): both ends support 53.125 Gbps/lane (HDR) per iblinkinfo") {
			t.Errorf("%s: %s", f.Subject, f.Message)
		}
		// The fix names the switch end's LID and port from the input.
		swPort := f.Subject[strings.LastIndex(f.Subject, "MQM8700/U1 port ")+len("MQM8700/U1 port "):]
		swPort, _, _ = strings.Cut(swPort, " ")
		if fx := strings.Join(f.Fix, "; "); !strings.Contains(fx, "ibportstate 3 "+swPort+" ") || strings.Contains(fx, "<") {
			t.Errorf("%s: fix %q, want ibportstate 3 %s", f.Subject, fx, swPort)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("failing links:\n%q\nwant\n%q", got, want)
	}
	if !check.Failed(r.Findings) {
		t.Error("the hinted fabric does not fail")
	}
	// --expect-rate says EDR is intended: nothing below it.
	edr, _ := linkrate.ParseRate("4X EDR")
	r, err = One("iblinkinfo.txt", []byte(hinted), Options{Expect: linkrate.Expect{Rate: edr, Source: "--expect-rate"}})
	if err != nil || check.Failed(r.Findings) || len(notPassing(r.Findings)) != 0 {
		t.Errorf("EDR intended: %v %q", err, notPassing(r.Findings))
	}
	// The healthy twin, the capture as stored: V100 hosts at EDR on an HDR
	// switch with no hint (their cards do EDR), the aggregation node at HDR.
	r, err = One("iblinkinfo.txt", []byte(real), Options{})
	if err != nil || check.Failed(r.Findings) {
		t.Fatalf("%v %q", err, notPassing(r.Findings))
	}
	for _, f := range r.Findings {
		if f.Outcome == check.Fail || f.Outcome == check.Warn {
			t.Errorf("healthy twin: %s %s %s", f.Check, f.Outcome, f.Subject)
		}
	}
}

// Every real fabric capture a fabric parser reads, judged: each finding's
// check, outcome and subject (issue 34: not counts). Unknowns stay where
// the capture holds no basis (an ibsim netlist has no rates; a lone
// switch-to-switch link has no peers and no device ids).
func TestFabricCapturesFindings(t *testing.T) {
	cases := []struct {
		file, format string
		want         []string
	}{
		{"ibtools/ibqueryerrors/ompi-users-2009_ibcheckerrors_legacy_InfiniscaleIII.txt", "ibcheckerrors", []string{
			"fail fabric.port.errors lid 2 (MT47396 Infiniscale-III Mellanox Technologies) port 7 RcvSwRelayErrors",
			"fail fabric.port.errors lid 2 (MT47396 Infiniscale-III Mellanox Technologies) port all RcvSwRelayErrors",
		}},
		{"ibtools/iblinkinfo/xcat-edr-2node_SB7700_iblinkinfo.txt", "iblinkinfo", []string{
			"pass fabric.lid.unassigned ports", "pass fabric.port.state ports", "unknown fabric.link.width links",
		}},
		{issue71, "iblinkinfo", []string{
			"pass fabric.lid.unassigned ports", "pass fabric.link.width links", "pass fabric.port.state ports", "unknown fabric.link.width links",
		}},
		{"ibtools/infiniband_exporter/ibnetdiscover/test.out", "ibnetdiscover -p", []string{"pass fabric.link.width links", "unknown fabric.link.width links"}},
		{"ibtools/infiniband_exporter/ibnetdiscover/test2.out", "ibnetdiscover -p", []string{"unknown fabric.link.width links"}},
		{"ibtools/infiniband_exporter/ibnetdiscover/test3.out", "ibnetdiscover -p", []string{"unknown fabric.link.width links"}},
		{"ibnetdiscover/ndr-qm9700-129port-split-2xNDR_REDACTED_TRUNCATED.txt", "ibnetdiscover", []string{"pass fabric.link.width links"}},
		{"ibnetdiscover/superbench_topo_aware_ibnetdiscover_FAKED.txt", "ibnetdiscover", []string{"pass fabric.link.width links"}},
		{"ibnetdiscover/ibsim-net-examples/net", "ibnetdiscover", []string{"unknown fabric.link.width links"}},
		{"ibnetdiscover/ibsim-net-examples/net.1", "ibnetdiscover", []string{"unknown fabric.link.width links"}},
		{"ibnetdiscover/ibsim-net-examples/net.2sw2path", "ibnetdiscover", []string{"unknown fabric.link.width links"}},
		{"ibnetdiscover/ibsim-net-examples/net.2sw2path4hca", "ibnetdiscover", []string{"unknown fabric.link.width links"}},
		{"ibnetdiscover/ibsim-net-examples/net.2sw2path4hca2port", "ibnetdiscover", []string{"unknown fabric.link.width links"}},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			r, err := One(c.file, capture(t, c.file), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Format != c.format {
				t.Errorf("read as %q, want %q", r.Format, c.format)
			}
			var got []string
			for _, f := range r.Findings {
				got = append(got, string(f.Outcome)+" "+f.Check+" "+f.Subject)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("findings\n%q\nwant\n%q", got, c.want)
			}
		})
	}
	// The fixes name the port from the input: perfquery -R LID PORT, and
	// -a for the node's every port where ibcheckerrors summed them.
	r, err := One("x", []byte(capture(t, cases[0].file)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range r.Findings {
		want := "perfquery -R 2 7"
		if strings.Contains(f.Subject, "port all") {
			want = "perfquery -a -R 2"
		}
		if fx := strings.Join(f.Fix, "; "); !strings.Contains(fx, want) || strings.Contains(fx, "<") {
			t.Errorf("%s: fix %q, want %q", f.Subject, fx, want)
		}
	}
}

// A saved iblinkinfo of a fabric no subnet manager has configured (every
// linked port Initialize, LID 0; ibsim without OpenSM, recorded in
// internal/fabric/testdata's form): fabric.sm fails from the port states
// alone, with the ports' own findings.
func TestIBLinkInfoNoSubnetManager(t *testing.T) {
	const out = `0x248a070300c70105 "node02 HCA-1"      0    1[  ] ==( 4X      25.78125 Gbps Initialize/  LinkUp)==>  0x7cfe900300a50010      0    2[  ] "leaf01" ( )
0x248a070300c70103 "node01 HCA-1"      0    1[  ] ==( 4X      25.78125 Gbps Initialize/  LinkUp)==>  0x7cfe900300a50010      0    1[  ] "leaf01" ( )
0x7cfe900300a50010 "leaf01"      0    1[  ] ==( 4X      25.78125 Gbps Initialize/  LinkUp)==>  0x248a070300c70103      0    1[  ] "node01 HCA-1" ( )
0x7cfe900300a50010 "leaf01"      0    2[  ] ==( 4X      25.78125 Gbps Initialize/  LinkUp)==>  0x248a070300c70105      0    1[  ] "node02 HCA-1" ( )
0x7cfe900300a50010 "leaf01"      0    3[  ] ==(                Down/ Polling)==>             [  ] "" ( )
`
	r, err := One("iblinkinfo.txt", []byte(out), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"fail fabric.lid.unassigned ports", "fail fabric.port.state ports", "fail fabric.sm subnet"}
	var got []string
	for _, f := range r.Findings {
		if f.Outcome == check.Fail {
			got = append(got, string(f.Outcome)+" "+f.Check+" "+f.Subject)
			if f.Check == "fabric.sm" && !strings.Contains(f.Message, "no subnet manager: 4 linked port(s) stuck in INIT") {
				t.Errorf("fabric.sm: %s", f.Message)
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("failures %q, want %q", got, want)
	}
}
