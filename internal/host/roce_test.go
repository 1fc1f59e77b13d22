package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// captures reads a shared capture by directory and a unique part of its
// name (module tests read ../shared/testdata in place; host cannot import
// testhost, which imports host).
func capture(t testing.TB, dir, part string) ([]byte, string) {
	t.Helper()
	fs, _ := filepath.Glob(filepath.Join("..", "..", "..", "shared", "testdata", dir, "*"+part+"*"))
	if len(fs) != 1 {
		t.Fatalf("%s/*%s*: %d files", dir, part, len(fs))
	}
	b, err := os.ReadFile(fs[0])
	if err != nil {
		t.Fatal(err)
	}
	return b, filepath.Base(fs[0])
}

// qosSummary is what a test compares: each netdev's values, sources left out.
func qosSummary(qs []RoCEQoS) string {
	var parts []string
	for _, q := range qs {
		p := []string{"netdev=" + q.Netdev}
		if q.Device != "" {
			p = append(p, fmt.Sprintf("dev=%s/%d", q.Device, q.Port))
		}
		if q.DCBX != nil {
			p = append(p, "dcbx="+q.DCBX.Value)
		}
		if q.Trust != nil {
			p = append(p, "trust="+q.Trust.Value)
		}
		if q.DSCPPrio != nil {
			var m []string
			for _, d := range []int{0, 16, 24, 26, 40, 48} {
				if pr, ok := q.DSCPPrio.Value[d]; ok {
					m = append(m, fmt.Sprintf("%d:%d", d, pr))
				}
			}
			p = append(p, fmt.Sprintf("dscp(%d)=%s", len(q.DSCPPrio.Value), strings.Join(m, ",")))
		}
		if q.PFC != nil {
			p = append(p, fmt.Sprint("pfc=", q.PFC.Value))
		}
		if q.PrioTC != nil {
			p = append(p, fmt.Sprint("tc=", q.PrioTC.Value))
		}
		if q.ECNNotify != nil {
			p = append(p, fmt.Sprint("np=", q.ECNNotify.Value))
		}
		if q.ECNReact != nil {
			p = append(p, fmt.Sprint("rp=", q.ECNReact.Value))
		}
		if q.CNPDSCP != nil {
			p = append(p, fmt.Sprint("cnp_dscp=", q.CNPDSCP.Value))
		}
		if q.TrafficClass != nil {
			p = append(p, fmt.Sprint("tclass=", q.TrafficClass.Value))
		}
		if q.DefaultRoCETos != nil {
			p = append(p, fmt.Sprint("tos=", q.DefaultRoCETos.Value))
		}
		if q.RoCEMode != nil {
			p = append(p, "mode="+q.RoCEMode.Value)
		}
		if q.Counters != nil {
			var ks []string
			for k, v := range q.Counters.Value {
				if v != 0 {
					ks = append(ks, fmt.Sprintf("%s=%d", k, v))
				}
			}
			slices.Sort(ks)
			p = append(p, "counters:"+strings.Join(ks, ","))
		}
		parts = append(parts, strings.Join(p, " "))
	}
	return strings.Join(parts, " | ")
}

func TestParseQoSCaptures(t *testing.T) {
	for _, tc := range []struct {
		dir, file string
		parse     func([]byte, string) ([]RoCEQoS, error)
		want      string
		source    string // the trust (or PFC) source must name the file and line
	}{
		// A set -x trace with two full outputs: the later one (after --pfc)
		// wins; the tmux "[9/1840]" tag and "+ " lines are skipped; no
		// buffer row; prio 0 and 1 swapped in the tc groups.
		{"mlnx_qos", "set-x-trace", ParseMlnxQos,
			"netdev=eth4 dcbx=OS controlled trust=dscp dscp(64)=0:0,16:2,24:3,26:3,40:5,48:6 pfc=[3] tc=[1 0 2 3 4 5 6 7]", "line 43"},
		{"mlnx_qos", "sn2410", ParseMlnxQos, "netdev=eth4 dcbx=OS controlled trust=dscp dscp(64)=0:0,16:2,24:3,26:3,40:5,48:6", "line 3"},
		// No command line: the interface is unnamed. ETS groups share tc 0.
		{"mlnx_qos", "sn2700", ParseMlnxQos,
			"netdev= dcbx=Firmware controlled trust=dscp dscp(64)=0:0,16:2,24:3,26:3,40:5,48:6 pfc=[3] tc=[0 0 0 3 0 0 6 0]", "line 2"},
		// A query script: PFC on 5, ECN on every priority, CNP DSCP 48,
		// "Global tclass=160", cma_roce_tos 160.
		{"roce-sysfs", "spiderpool", ParseMlnxQos,
			"netdev=eth0 dev=mlx5_0/1 trust=dscp pfc=[5] np=[0 1 2 3 4 5 6 7] rp=[0 1 2 3 4 5 6 7] cnp_dscp=48 tclass=160 tos=160", "line 3"},
		{"dcb", "after-config", ParseDCB, "netdev=ens6 trust=dscp dscp(1)=26:3 pfc=[3]", "line 6"},
		// Before: a script's headers, PFC off everywhere, the author's
		// "(empty …)" line, ethtool's rx/tx_pause.
		{"dcb", "before-config", ParseDCB, "netdev= pfc=[] counters:", "line 3"},
		// The pre-release pg-pfc key, requests/indications as pause counts.
		{"dcb", "pfc-patch", ParseDCB, "netdev=eni1np1 pfc=[1 7] counters:rx_prio1_pause=179,rx_prio7_pause=18,tx_prio1_pause=217,tx_prio7_pause=28", "line 3"},
		{"dcb", "ets-patch", ParseDCB, "netdev=eni1np1 tc=[1 3 5 0 0 0 0 0]", ""},
		// Another vendor's switch (DSA felix): symbolic names CS2/CS3, the
		// set commands' arguments are not readings.
		{"dcb", "dsa-felix", ParseDCB, "netdev=swp3 trust=dscp dscp(2)=16:2,24:5", "line 8"},
		{"dcb", "lldptool", ParseDCB, "netdev=eth1 pfc=[1 3 7]", "line 6"},
		{"roce-sysfs", "storage-target", ParseCMARoCEMode, "netdev=mlxen0 dev=mlx5_0/1 mode=RoCE v2 | netdev=mlxen1 dev=mlx5_1/1 mode=RoCE v2", ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, name := capture(t, tc.dir, tc.file)
			qs, err := tc.parse(b, name)
			if err != nil {
				t.Fatal(err)
			}
			if got := qosSummary(qs); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if tc.source != "" {
				src := ""
				if qs[0].Trust != nil {
					src = qs[0].Trust.Source
				} else if qs[0].PFC != nil {
					src = qs[0].PFC.Source
				}
				if !strings.HasPrefix(src, name+" "+tc.source) {
					t.Errorf("source %q, want %s %s", src, name, tc.source)
				}
			}
		})
	}
}

// Two cma_roce_mode commands and one answer: which device it belongs to
// cannot be told, and the parser says so rather than guessing.
func TestCMARoCEModeAmbiguous(t *testing.T) {
	b, name := capture(t, "roce-sysfs", "two-commands")
	if _, err := ParseCMARoCEMode(b, name); err == nil || !strings.Contains(err.Error(), "answers 2 cma_roce_mode commands") {
		t.Errorf("err = %v", err)
	}
}

func TestParseShowGIDsCaptures(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		// " * " comment prefix, tabs, three RoCE devices.
		{"star-prefixed", "mlx5_0/1 Ethernet [eth05] 4 v2ipv4=3 | mlx5_1/1 Ethernet [eth02] 4 v2ipv4=3 | mlx5_2/1 Ethernet [eth03] 4 v2ipv4=3"},
		// An active RoCE port with link-local GIDs only; an IB port (no netdev).
		{"link-local-only", "mlx5_0/1 Ethernet [ens11f0] 2 v2ipv4=- | mlx5_1/1 ? [] 1 v2ipv4=-"},
		{"sn2700", "mlx5_0/1 Ethernet [mce0] 4 v2ipv4=3 | mlx5_1/1 ? [] 1 v2ipv4=-"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, _ := capture(t, "show_gids", tc.file)
			devs, err := ParseShowGIDs(b)
			if err != nil {
				t.Fatal(err)
			}
			var parts []string
			for _, d := range devs {
				for _, p := range d.Ports {
					ll := p.LinkLayer
					if ll == "" {
						ll = "?"
					}
					v2 := "-"
					for _, g := range p.GIDs {
						if g.Type == GIDTypeRoCEv2 && g.IPv4 != "" {
							v2 = fmt.Sprint(g.Index)
						}
					}
					parts = append(parts, fmt.Sprintf("%s/%d %s %v %d v2ipv4=%s", d.Name, p.Port, ll, p.NetDevs, len(p.GIDs), v2))
				}
			}
			if got := strings.Join(parts, " | "); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestParseEthtoolSCaptures(t *testing.T) {
	for _, tc := range []struct {
		file string
		want map[string]uint64
	}{
		// The poster dropped zero counters: absent, not zero.
		{"kernel-5.15", map[string]uint64{"rx_discards_phy": 58591428329, "tx_global_pause": 5745042, "rx_prio0_discards": 58591314012, "tx_pause_ctrl_phy": 5745055}},
		{"kernel-6.5", map[string]uint64{"rx_discards_phy": 441063206498, "tx_global_pause": 44414017, "rx_buffer_passed_thres_phy": 1192226}},
	} {
		b, _ := capture(t, "ethtool-S", tc.file)
		rs, err := ParseEthtoolS(b)
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s: %d readings, %v", tc.file, len(rs), err)
		}
		for k, v := range tc.want {
			if rs[0].Counters[k] != v {
				t.Errorf("%s: %s = %d, want %d", tc.file, k, rs[0].Counters[k], v)
			}
		}
		if _, ok := rs[0].Counters["rx_prio3_pause"]; ok {
			t.Errorf("%s: rx_prio3_pause is not in the output and must stay absent", tc.file)
		}
		if _, ok := rs[0].Counters["rx0_xdp_drop"]; ok {
			t.Errorf("%s: per-queue counters are not RoCE counters", tc.file)
		}
	}
	// Two readings in one file (before, after) with a duplicated line.
	two := "$ ethtool -S ens1f0\nNIC statistics:\n     rx_prio3_pause: 10\n     rx_prio3_pause: 10\n$ ethtool -S ens1f0\nNIC statistics:\n     rx_prio3_pause: 5000\n"
	rs, err := ParseEthtoolS([]byte(two))
	if err != nil || len(rs) != 2 || rs[0].Netdev != "ens1f0" || rs[0].Counters["rx_prio3_pause"] != 10 || rs[1].Counters["rx_prio3_pause"] != 5000 {
		t.Errorf("%+v %v", rs, err)
	}
}

// Every mlnx_qos capture: nothing not in the text is invented, and
// SetFromSysfs and the mlnx_qos parser agree on MLNX_OFED's qos/ files.
func TestQoSNoDefaults(t *testing.T) {
	b, name := capture(t, "mlnx_qos", "sn2410")
	qs, err := ParseMlnxQos(b, name)
	if err != nil {
		t.Fatal(err)
	}
	if q := qs[0]; q.PFC != nil || q.ECNNotify != nil || q.TrafficClass != nil || q.PrioTC != nil {
		t.Errorf("the excerpt stops before PFC: nothing past the map may be known: %s", qosSummary(qs))
	}
	var q RoCEQoS
	if ok, err := q.SetFromSysfs("/sys/class/infiniband/mlx5_0/tc/1/traffic_class", "", ""); !ok || err != nil || q.TrafficClass.Value != -1 {
		t.Errorf("empty traffic_class: %v %v %+v", ok, err, q.TrafficClass)
	}
	if _, err := q.SetFromSysfs("/sys/class/net/x/qos/trust", "both", ""); err == nil {
		t.Error("trust both accepted")
	}
	if _, err := ParseMlnxQos([]byte("hello"), "x"); !errors.Is(err, ErrNoQoS) {
		t.Errorf("err = %v", err)
	}
}

// dcb -j as iproute2 prints it: prio_pfc an array of booleans, dscp_prio
// pairs with the trailing " " some versions add (the shape quoted on
// netdev, "dcb -j -p app show dev swp1 dscp-prio"), prio_tc numbers.
func TestParseDCBJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"pfc_cap":8,"macsec_bypass":false,"delay":0,"prio_pfc":[false,false,false,true,false,false,false,false]}`: "netdev= pfc=[3]",
		`{"dscp_prio":[[26,3," "],[48,6," "]]}`: "netdev= trust=dscp dscp(2)=26:3,48:6",
		`{"dscp_prio":[["AF31",3]]}`:            "netdev= trust=dscp dscp(1)=26:3",
		`{"prio_tc":[0,0,0,3,0,0,6,0]}`:         "netdev= tc=[0 0 0 3 0 0 6 0]",
	} {
		qs, err := ParseDCB([]byte(in), "dcb -j")
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := qosSummary(qs); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{`{"prio_pfc":[true,true,true,true,true,true,true,true,true]}`, `{"dscp_prio":[[64,3]]}`, `{"dscp_prio":[[26]]}`, `{"prio_tc":{"9":1}}`} {
		if _, err := ParseDCB([]byte(bad), "x"); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestParseDSCP(t *testing.T) {
	for in, want := range map[string]int{"AF31": 26, "af41": 34, "CS6": 48, "EF": 46, "26": 26, "0x1a": 26, "CS0": 0} {
		if got, err := ParseDSCP(in); err != nil || got != want {
			t.Errorf("%s: %d %v", in, got, err)
		}
	}
	for _, in := range []string{"AF44", "CS8", "64", "-1", ""} {
		if _, err := ParseDSCP(in); err == nil {
			t.Errorf("%s accepted", in)
		}
	}
}

// Whatever the input, the parsers return only priorities 0-7, DSCPs 0-63
// and traffic classes -1..255, or an error; a PFC row they accept maps
// back to the flags it was read from.
func FuzzParseMlnxQos(f *testing.F) {
	for _, part := range []string{"set-x-trace", "sn2700", "sn2410"} {
		b, _ := capture(f, "mlnx_qos", part)
		f.Add(b)
	}
	f.Add([]byte("PFC configuration:\n priority 0 1 2 3 4 5 6 7\n enabled 0 0 0 1 0 0 0 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		qs, err := ParseMlnxQos(b, "fuzz")
		if err != nil {
			return
		}
		for _, q := range qs {
			checkQoSRanges(t, q)
		}
	})
}

func FuzzParseDCB(f *testing.F) {
	for _, part := range []string{"after-config", "before-config", "pfc-patch", "ets-patch", "dsa-felix", "lldptool"} {
		b, _ := capture(f, "dcb", part)
		f.Add(b)
	}
	f.Add([]byte(`{"pfc_cap":8,"prio_pfc":{"0":false,"3":true}}`))
	f.Add([]byte(`{"dscp_prio":[[26,3],[48,6]]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		qs, err := ParseDCB(b, "fuzz")
		if err != nil {
			return
		}
		for _, q := range qs {
			checkQoSRanges(t, q)
		}
	})
}

func checkQoSRanges(t *testing.T, q RoCEQoS) {
	t.Helper()
	prios := func(what string, r *Read[[]int]) {
		if r == nil {
			return
		}
		if !slices.IsSorted(r.Value) && what != "prio_tc" {
			t.Errorf("%s not sorted: %v", what, r.Value)
		}
		for _, p := range r.Value {
			if p < -1 || p > 7 || (p == -1 && what != "prio_tc") {
				t.Errorf("%s holds %d", what, p)
			}
		}
	}
	prios("pfc", q.PFC)
	prios("prio_tc", q.PrioTC)
	prios("np", q.ECNNotify)
	prios("rp", q.ECNReact)
	if q.DSCPPrio != nil {
		for d, p := range q.DSCPPrio.Value {
			if d < 0 || d > 63 || p < 0 || p > 7 {
				t.Errorf("dscp %d → %d", d, p)
			}
		}
	}
	if q.TrafficClass != nil && (q.TrafficClass.Value < -1 || q.TrafficClass.Value > 255) {
		t.Errorf("traffic class %d", q.TrafficClass.Value)
	}
	if q.Trust != nil && q.Trust.Value != "pcp" && q.Trust.Value != "dscp" {
		t.Errorf("trust %q", q.Trust.Value)
	}
	for _, r := range []*Read[string]{q.Trust, q.DCBX} {
		if r != nil && r.Source == "" {
			t.Error("a value without its source")
		}
	}
}

// show_gids rows accepted are unique per index and their count agrees
// with n_gids_found; ethtool readings hold only RoCE counters.
func FuzzParseShowGIDs(f *testing.F) {
	for _, part := range []string{"star-prefixed", "link-local-only", "sn2700"} {
		b, _ := capture(f, "show_gids", part)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		devs, err := ParseShowGIDs(b)
		if err != nil {
			return
		}
		for _, d := range devs {
			for _, p := range d.Ports {
				seen := map[int]bool{}
				for _, g := range p.GIDs {
					if seen[g.Index] {
						t.Errorf("%s/%d index %d twice", d.Name, p.Port, g.Index)
					}
					seen[g.Index] = true
					if g.Type != GIDTypeRoCEv2 && g.Type != GIDTypeIBRoCEv1 {
						t.Errorf("type %q", g.Type)
					}
				}
			}
		}
	})
}

func FuzzParseEthtoolS(f *testing.F) {
	b, _ := capture(f, "ethtool-S", "kernel-6.5")
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		rs, err := ParseEthtoolS(b)
		if err != nil {
			return
		}
		for _, r := range rs {
			for k := range r.Counters {
				if !RoCECounter(k) {
					t.Errorf("%s kept", k)
				}
			}
		}
	})
}

// Paste warts of ethtool -S (issue 34): a `| grep pause` without the
// header, and a full output with a comment on every row, are read; the
// real captures still read as before (TestParseEthtoolSCaptures).
func TestParseEthtoolSWarts(t *testing.T) {
	grep := "$ ethtool -S eth03 | grep pause\n     rx_pause_ctrl_phy: 0\n     tx_pause_ctrl_phy: 12\n     rx_prio3_pause: 5\n"
	if !SniffEthtoolS([]byte(grep)) {
		t.Fatal("grep paste not recognised")
	}
	rs, err := ParseEthtoolS([]byte(grep))
	if err != nil || len(rs) != 1 || rs[0].Netdev != "eth03" || rs[0].Counters["tx_pause_ctrl_phy"] != 12 || rs[0].Counters["rx_prio3_pause"] != 5 {
		t.Errorf("%+v %v", rs, err)
	}
	b, _ := capture(t, "ethtool-S", "kernel-6.5")
	var annotated strings.Builder
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, ": ") {
			l += "   # checked " + "by hand"
		}
		annotated.WriteString(l + "\n")
	}
	rs, err = ParseEthtoolS([]byte(annotated.String()))
	if err != nil || len(rs) != 1 || rs[0].Counters["rx_discards_phy"] != 441063206498 || rs[0].Counters["tx_global_pause"] != 44414017 {
		t.Errorf("annotated: %+v %v", rs, err)
	}
}
