package hostcheck

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// notPassing tallies the findings that are not pass, as "outcome check".
func notPassing(fs []check.Finding) map[string]int {
	m := map[string]int{}
	for _, f := range fs {
		if f.Outcome != check.Pass {
			m[string(f.Outcome)+" "+f.Check]++
		}
	}
	return m
}

func open(t *testing.T, root string) *host.Snapshot {
	t.Helper()
	s, err := inventory.Open(root, inventory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// doctor on every real capture under shared/testdata/sysfs gives exactly
// these non-passing findings; each line says why that is the truth of the
// capture. A capture added to shared/testdata must be added here.
func TestDoctorOnEveryCapture(t *testing.T) {
	want := map[string]map[string]int{
		// ConnectX-3 on FDR, ib0 in connected mode at MTU 2044; a
		// gather has no /proc/modules or limits; one NIC's PCIe link files
		// are absent.
		"32em64t-2n8c+dax+nvme+mic+dimms": {"warn ipoib.mode": 1, "unknown kernel.modules.rdma": 1, "unknown memlock": 1, "unknown pcie.link.degraded": 1},
		// Two ConnectX-4 (0x020700) on mlx5_core and no
		// /sys/class/infiniband at all: mlx5_ib is not loaded, no RDMA.
		"32intel64-2p8co2t+8ve": {"fail rdma.driver": 2},
		// The edited locality tree: qib0 (class 0x0c06) and ib0 at MTU 2044
		// in connected mode.
		"fakepcilocalities": {"warn ipoib.mode": 1, "unknown kernel.modules.rdma": 1, "unknown memlock": 1, "unknown pcie.link.degraded": 1},
		// ghw snapshots of hosts with no RDMA NIC: one clear finding.
		"linux-amd64-8581cf3a529e5d8b97ea876eade2f60d": {"warn rdma.present": 1},
		"linux-amd64-accel-nvidia":                     {"warn rdma.present": 1, "unknown pcie.link.degraded": 1},
		// node_exporter's fixture: i40iw0 counters all "N/A (no PMA)"
		// (unknown, never zero), mlx4_0 port 1 has 5 xmit discards, no
		// lid/sm_lid files, powersave governor.
		"node_exporter-sys": {"warn cpu.governor": 1, "warn port.errors": 1, "unknown port.errors": 1, "unknown ib.sm": 3, "unknown kernel.modules.rdma": 1, "unknown memlock": 1},
		// POWER9 with GPUs as NUMA nodes and no RDMA NIC; PCIe link files
		// absent in the gather.
		"nvidiagpunumanodes": {"warn rdma.present": 1, "unknown pcie.link.degraded": 6},
		// procfs' fixture: mlx5_0 with retransmission counters, no lid
		// files, powersave; its odd phys_state "4: ACTIVE" is still Active.
		"procfs-fixtures": {"warn cpu.governor": 1, "warn port.errors": 1, "unknown ib.sm": 4, "unknown kernel.modules.rdma": 1, "unknown memlock": 1},
		// gpud's H100 /sys/class/infiniband alone: every port carries
		// (saturated) receive and overrun errors, no lid files, the RoCE
		// bond's GID table was not copied.
		"sys-class-infiniband-h100.0": {"warn port.errors": 9, "unknown ib.sm": 8, "unknown kernel.modules.rdma": 1, "unknown memlock": 1, "unknown roce.gid.v2": 1},
	}
	caps := testhost.Captures(t)
	for name, c := range caps {
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("no expectation for capture %s: add one", name)
			}
			fs := Doctor([]*host.Snapshot{open(t, c.Root)}, Options{})
			got := notPassing(fs)
			if fmt.Sprint(got) != fmt.Sprint(w) {
				t.Errorf("non-passing findings\n got %v\nwant %v", got, w)
				for _, f := range fs {
					if f.Outcome != check.Pass {
						t.Logf("%s %s %s: %s", f.Outcome, f.Check, f.Subject, f.Message)
					}
				}
			}
			for _, f := range fs {
				if f.Check == "port.errors" && f.Outcome == check.Pass && strings.Contains(f.Message, "zero") {
					for _, e := range f.Evidence {
						if e.Value == "not readable" {
							t.Errorf("%s called zero with an unreadable counter", f.Subject)
						}
					}
				}
			}
		})
	}
	if len(caps) != len(want) {
		t.Errorf("%d captures, %d expectations", len(caps), len(want))
	}
}

// The seed machines are healthy. The HGX host fails and warns nothing:
// what it cannot prove from a snapshot is ACS on its PCIe switches and ATS
// on its NICs (root-only config space), one unknown each. The other two say
// only what is true of their layout.
func TestHealthySeeds(t *testing.T) {
	want := map[string]map[string]int{
		"hgx-h200": {"unknown gpudirect.acs": 1, "unknown gpudirect.ats": 1},
		// GPUs on NUMA nodes 0-1, NICs on 2-3 (as the article builds it):
		// GPUDirect crosses host bridges (so NCCL will not use it).
		// sysfs does not show a RoCE port's active_mtu (ibv_devinfo -v
		// does), so whether each port carries its netdev MTU is unknown.
		"seed000-epyc": {"unknown roce.mtu.path": 4, "warn gpudirect.gpu-class": 2, "warn gpudirect.path": 2},
		// The T4 sits on the other socket; the EDR MCX455A runs at QDR on
		// the lab's QDR switch (seeds 002/003).
		"r730-qdr": {"warn gpudirect.path": 1, "warn port.rate.below-nic-max": 1},
	}
	for name, mk := range testhost.Seeds() {
		fs := Doctor([]*host.Snapshot{tree(t, mk(), nil)}, Options{})
		if got := notPassing(fs); fmt.Sprint(got) != fmt.Sprint(want[name]) {
			t.Errorf("%s: %v, want %v", name, got, want[name])
		}
	}
}

// ConnectX on mlx5_core with no RDMA device (mlx5_ib not loaded) fails,
// with the fix, also when a rate is expected, and --nhc prints it.
func TestMissingMlx5IBFails(t *testing.T) {
	m := testhost.Seed000()
	m.RDMA = nil
	m.Modules = slices.DeleteFunc(m.Modules, func(s string) bool { return s == "mlx5_ib" || s == "ib_uverbs" || s == "ib_umad" })
	s := tree(t, m, nil)
	for _, opt := range []Options{{}, {Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 25}, Source: "--expect-rate"}}} {
		fs := Doctor([]*host.Snapshot{s}, opt)
		if got := outcomes(fs, "rdma.driver"); got[check.Fail] != 4 {
			t.Fatalf("rdma.driver = %v, want 4 failures (one per ConnectX function)", got)
		}
		if !check.Failed(fs) {
			t.Error("exit code would be 0")
		}
		for _, f := range fs {
			if f.Check == "rdma.driver" && (!strings.Contains(f.Message, "mlx5_ib: not loaded") || !strings.Contains(strings.Join(f.Fix, "\n"), "modprobe mlx5_ib") || !strings.Contains(strings.Join(f.Fix, "\n"), "OFED")) {
				t.Errorf("%+v", f)
			}
		}
	}
	// The real capture shows the same: two ConnectX-4 on mlx5_core, no
	// /sys/class/infiniband.
	c := testhost.Captures(t)["32intel64-2p8co2t+8ve"]
	if got := outcomes(Doctor([]*host.Snapshot{open(t, c.Root)}, Options{Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 100}, Source: "--expect-rate"}}), "rdma.driver"); got[check.Fail] != 2 {
		t.Errorf("capture: rdma.driver = %v", got)
	}
}

// A host with no RDMA device at all is one clear finding: a warning, and a
// failure when any --expect-* asks for RDMA or --nhc runs (RequireRDMA);
// report's TestNHCLines checks the line --nhc prints for it.
func TestNoRDMADeviceAtAll(t *testing.T) {
	s := open(t, testhost.Captures(t)["linux-amd64-8581cf3a529e5d8b97ea876eade2f60d"].Root)
	for _, tc := range []struct {
		opt  Options
		want check.Outcome
	}{
		{Options{}, check.Warn},
		{Options{Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 200}, Source: "--expect-rate"}}, check.Fail},
		{Options{ExpectPorts: []string{"mlx5_0"}}, check.Fail},
		{Options{RequireRDMA: true}, check.Fail},
	} {
		fs := Doctor([]*host.Snapshot{s}, tc.opt)
		if len(fs) != 1 || fs[0].Check != "rdma.present" || fs[0].Outcome != tc.want {
			t.Errorf("%+v: %+v", tc.opt, fs)
		}
	}
}

// A counter that cannot be read makes port.errors unknown, never "zero".
func TestUnreadableCounterIsUnknown(t *testing.T) {
	s := tree(t, testhost.R730(), func(r string) { write(t, r, mlx0+"counters/symbol_error", "N/A (no PMA)") })
	fs := Run(s, Options{})
	o := outcomes(fs, "port.errors")
	if o[check.Unknown] != 1 || o[check.Pass] != 0 {
		t.Fatalf("port.errors = %v", o)
	}
	for _, f := range fs {
		if f.Check == "port.errors" && !strings.Contains(f.Message, "symbol_error") {
			t.Errorf("unknown without naming the counter: %s", f.Message)
		}
	}
	// A non-zero counter still warns though another is unreadable.
	s = tree(t, testhost.R730(), func(r string) {
		write(t, r, mlx0+"counters/symbol_error", "N/A (no PMA)")
		write(t, r, mlx0+"counters/link_downed", "3")
	})
	if o := outcomes(Run(s, Options{}), "port.errors"); o[check.Warn] != 1 {
		t.Errorf("port.errors = %v", o)
	}
}

// unusedPort takes mlx5_1 (the second port of the first dual-port card)
// down as a port nobody cabled: Polling, no traffic since boot, no address.
func unusedPort(t *testing.T) *host.Snapshot {
	const p = "sys/class/infiniband/mlx5_1/ports/1/"
	return tree(t, testhost.Seed000(), func(r string) {
		write(t, r, p+"state", "1: DOWN")
		write(t, r, p+"phys_state", "2: Polling")
		for _, c := range []string{"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets", "unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets"} {
			write(t, r, p+"counters/"+c, "0")
		}
		for _, g := range []string{"2", "3"} {
			write(t, r, p+"gids/"+g, "0000:0000:0000:0000:0000:0000:0000:0000")
		}
	})
}

// A healthy dual-port card with one port uncabled on purpose passes; the
// same port fails when --expect-ports names it.
func TestUnusedPortIsNotAFailure(t *testing.T) {
	s := unusedPort(t)
	// What the healthy seed000 reports (its three active RoCE ports'
	// active_mtu unread: no ibv_devinfo in a sysfs tree).
	healthy := fmt.Sprint(map[string]int{"unknown roce.mtu.path": 3, "warn gpudirect.gpu-class": 2, "warn gpudirect.path": 2})
	fs := Doctor([]*host.Snapshot{s}, Options{})
	if got := notPassing(fs); fmt.Sprint(got) != healthy {
		t.Errorf("uncabled spare port: %v", got)
	}
	for _, f := range fs {
		if f.Check == "port.state" && f.Subject == "mlx5_1 port 1" && !strings.Contains(f.Message, "unused") {
			t.Errorf("%s", f.Message)
		}
	}
	fs = Doctor([]*host.Snapshot{s}, Options{ExpectPorts: []string{"mlx5_0/1", "mlx5_1/1"}})
	if o := outcomes(fs, "port.state"); o[check.Fail] != 1 {
		t.Errorf("listed in --expect-ports: %v", o)
	}
	fs = Doctor([]*host.Snapshot{s}, Options{ExpectPorts: []string{"mlx5_0"}})
	if got := notPassing(fs); fmt.Sprint(got) != healthy {
		t.Errorf("not listed: %v", got)
	}
	// A port that carried traffic, then was set down by hand and lost its
	// address, is unused too; the same port still up at the admin level
	// but without carrier is a fault (the cable).
	m := testhost.Seed000()
	m.RDMA[1].Ports[0].State, m.RDMA[1].Ports[0].Phys = "1: DOWN", "3: Disabled"
	m.RDMA[1].Ports[0].GIDs = m.RDMA[1].Ports[0].GIDs[:2]
	m.Net[1].AdminDown, m.Net[1].OperState = true, "down"
	if got := notPassing(Doctor([]*host.Snapshot{tree(t, m, nil)}, Options{})); fmt.Sprint(got) != healthy {
		t.Errorf("admin-down spare: %v", got)
	}
	m.Net[1].AdminDown = false
	if o := outcomes(Doctor([]*host.Snapshot{tree(t, m, nil)}, Options{}), "port.state"); o[check.Fail] != 1 {
		t.Errorf("admin-up, no carrier, carried data: %v", o)
	}
}

// "Below NIC max" only when the part's maximum is known: the README's
// healthy RoCE lab (MCX4121A-ACAT, 25G board of a 50G family) is quiet; an
// unknown board below the family's best is unknown; a known board below
// its own maximum warns.
func TestBelowNICMaxNeedsTheBoard(t *testing.T) {
	fs := Run(tree(t, testhost.Seed000(), nil), Options{})
	if o := outcomes(fs, "port.rate.below-nic-max"); o[check.Pass] != 4 || len(o) != 1 {
		t.Errorf("seed000: %v", o)
	}
	for _, f := range fs {
		if f.Check == "port.rate.below-nic-max" && !slices.ContainsFunc(f.Evidence, func(e check.Evidence) bool { return e.Source == "board_id MT_2420110034" }) {
			t.Errorf("evidence does not name the board: %+v", f.Evidence)
		}
	}
	unknownBoard := tree(t, testhost.Seed000(), func(r string) { write(t, r, "sys/class/infiniband/mlx5_0/board_id", "MT_0000000999") })
	if o := outcomes(Run(unknownBoard, Options{}), "port.rate.below-nic-max"); o[check.Unknown] != 1 || o[check.Warn] != 0 {
		t.Errorf("unknown board: %v", o)
	}
	slow := tree(t, testhost.Seed000(), func(r string) { write(t, r, mlx0+"rate", "10 Gb/sec (1X QDR)") })
	if o := outcomes(Run(slow, Options{}), "port.rate.below-nic-max"); o[check.Warn] != 1 {
		t.Errorf("25G board at 10G: %v", o)
	}
	// A family whose best the port reaches needs no board (HGX, NDR).
	if o := outcomes(Run(tree(t, testhost.HGX(), nil), Options{}), "port.rate.below-nic-max"); o[check.Pass] != 8 {
		t.Errorf("hgx: %v", o)
	}
}

func clone(t *testing.T, s *host.Snapshot, name string) *host.Snapshot {
	t.Helper()
	var c host.Snapshot
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	c.Hostname = name
	return &c
}

// Fleet rules need a real majority, compare firmware within one NIC model,
// and cite where the expected value came from.
func TestFleetNeedsARealMajority(t *testing.T) {
	base := tree(t, testhost.HGX(), nil)
	slow := func(name string) *host.Snapshot {
		c := clone(t, base, name)
		c.RDMADevices[3].Ports[0].Rate = host.IBRate{Raw: "200 Gb/sec (4X HDR)", Gbps: 200}
		c.RDMADevices[3].Ports[0].RateGbps = 200
		return c
	}
	// Two hosts that differ: the fleet names nobody, one warning; only
	// b's own majority (7 of its 8 ConnectX-7 ports) fails its slow port.
	fs := Doctor([]*host.Snapshot{clone(t, base, "a"), slow("b")}, Options{})
	if f := fails(fs); len(f) != 1 || !strings.Contains(f[0], "mlx5_3 port 1") || !strings.Contains(f[0], "host majority: 7 of 8") {
		t.Errorf("two hosts: %v", f)
	}
	if o := outcomes(fs, "fleet.rate"); o[check.Warn] != 1 {
		t.Errorf("two hosts fleet.rate = %v", o)
	}
	// Three of four: the odd host fails, and the evidence says whose majority.
	fs = Doctor([]*host.Snapshot{clone(t, base, "a"), clone(t, base, "b"), clone(t, base, "c"), slow("d")}, Options{})
	var odd []string
	for _, f := range fs {
		if f.Outcome == check.Fail {
			odd = append(odd, f.Check+"@"+f.Host)
		}
		for _, e := range f.Evidence {
			if strings.Contains(e.Source, "--expect-rate") {
				t.Errorf("cites --expect-rate that was not given: %+v", f)
			}
		}
		// Every host's ports mostly run at 400: that is the fleet's rate.
		if f.Check == "port.rate.below-expected" && f.Outcome == check.Fail && !strings.Contains(f.Message, "fleet majority: 4 of 4 hosts") {
			t.Errorf("%s", f.Message)
		}
	}
	slices.Sort(odd)
	if want := []string{"fleet.rate@d", "port.rate.below-expected@d"}; !slices.Equal(odd, want) {
		t.Errorf("failures %v, want %v", odd, want)
	}
	// Two against two: no fleet rule names a host (fleet.rate warns), but
	// the slow port is still below the rate every host mostly runs at.
	fs = Doctor([]*host.Snapshot{clone(t, base, "a"), clone(t, base, "b"), slow("c"), slow("d")}, Options{})
	odd = nil
	for _, f := range fs {
		if f.Outcome == check.Fail {
			odd = append(odd, f.Check+"@"+f.Host)
		}
	}
	slices.Sort(odd)
	if want := []string{"port.rate.below-expected@c", "port.rate.below-expected@d"}; !slices.Equal(odd, want) {
		t.Errorf("2 vs 2: failures %v, want %v", odd, want)
	}
	if o := outcomes(fs, "fleet.rate"); o[check.Warn] != 1 {
		t.Errorf("2 vs 2 fleet.rate = %v", o)
	}
	// Firmware differs between NIC models by nature: a host with another
	// model's firmware is not the odd one.
	seed := tree(t, testhost.Seed000(), nil)
	fs = RunFleet([]*host.Snapshot{clone(t, base, "a"), clone(t, base, "b"), clone(t, base, "c"), clone(t, seed, "roce1")})
	if o := outcomes(fs, "fleet.firmware"); o[check.Fail] != 0 || o[check.Pass] != 2 {
		t.Errorf("firmware across models: %v", fs)
	}
}
