package inventory

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostfs"
	"github.com/rdmalab/rdmalab/internal/portstate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

var fixedNow = func() time.Time { return time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC) }

func collect(t testing.TB, c testhost.Capture) *host.Snapshot {
	t.Helper()
	fs, err := hostfs.New(c.Root)
	if err != nil {
		t.Fatal(err)
	}
	if c.IBClassOnly {
		if err := fs.Mount("/sys/class/infiniband", c.Root); err != nil {
			t.Fatal(err)
		}
	}
	return Collect(fs, Options{Now: fixedNow})
}

// seedTree writes a seed machine (optionally changed) and collects it.
func seedTree(t testing.TB, m testhost.Machine) *host.Snapshot {
	t.Helper()
	return collect(t, testhost.Capture{Root: testhost.WriteTree(t, m)})
}

func port(t *testing.T, s *host.Snapshot, dev string, n int) host.RDMAPort {
	t.Helper()
	d := s.RDMA(dev)
	if d == nil {
		t.Fatalf("no RDMA device %s", dev)
	}
	for _, p := range d.Ports {
		if p.Port == n {
			return p
		}
	}
	t.Fatalf("%s has no port %d", dev, n)
	return host.RDMAPort{}
}

func TestCapturesConcreteValues(t *testing.T) {
	caps := testhost.Captures(t)
	tests := []struct {
		capture string
		check   func(t *testing.T, s *host.Snapshot)
	}{
		{"32em64t-2n8c+dax+nvme+mic+dimms", func(t *testing.T, s *host.Snapshot) {
			if len(s.NUMANodes) != 2 || s.NUMANodes[0].CPUs != "0-7" || s.NUMANodes[1].CPUs != "8-15" {
				t.Errorf("numa = %+v", s.NUMANodes)
			}
			p := port(t, s, "mlx4_0", 1)
			if p.State != portstate.Active || p.PhysState != portstate.LinkUp || p.RateGbps != 56 || p.Rate.WidthLanes != 4 || p.Rate.SpeedName != "FDR" || p.LinkLayer != "InfiniBand" {
				t.Errorf("mlx4_0/1 = %+v", p)
			}
			if p.LID == nil || *p.LID != 932 || p.SMLID == nil || *p.SMLID != 1 {
				t.Errorf("lid/sm_lid = %v/%v, want 932/1", p.LID, p.SMLID)
			}
			if !slices.Equal(p.NetDevs, []string{"ib0"}) || len(p.Counters) != 17 {
				t.Errorf("netdevs %v counters %d", p.NetDevs, len(p.Counters))
			}
			d := s.RDMA("mlx4_0")
			if d.FWVersion != "2.11.500" || d.PCIAddress.String() != "0000:82:00.0" || d.NUMANode != 1 {
				t.Errorf("mlx4_0 = fw %q pci %q numa %d", d.FWVersion, d.PCIAddress, d.NUMANode)
			}
			if ib := s.NetDev("ib0"); ib == nil || ib.Type != 32 || ib.IPoIBMode != "connected" || ib.MTUBytes != 2044 || ib.RDMADevice != "mlx4_0" {
				t.Errorf("ib0 = %+v", ib)
			}
			// numa_node is -1 for the NVMe at 00:02.0; local_cpulist 0-3 puts it on node 0.
			if d := s.PCI(host.MustPCI("0000:00:02.0")); d == nil || d.NUMANode != -1 || d.LocalityNUMANode != 0 || d.LocalitySource != "local_cpulist" {
				t.Errorf("00:02.0 locality = %+v", d)
			}
		}},
		{"32intel64-2p8co2t+8ve", func(t *testing.T, s *host.Snapshot) {
			if len(s.CPUs) != 32 || s.CPUs[0].Siblings != "0,16" {
				t.Errorf("cpus %d, cpu0 siblings %q", len(s.CPUs), s.CPUs[0].Siblings)
			}
			up := 0
			for _, d := range s.PCIDevices {
				if d.BridgeRole == "switch_upstream" {
					up++
				}
			}
			if up != 2 {
				t.Errorf("PCIe switches = %d, want 2 (the Vector Engines sit behind them)", up)
			}
		}},
		{"linux-amd64-accel-nvidia", func(t *testing.T, s *host.Snapshot) {
			if len(s.GPUs) != 1 {
				t.Fatalf("gpus = %+v", s.GPUs)
			}
			g := s.GPUs[0]
			if g.Address.String() != "0000:06:00.0" || g.Device != "0x15f8" || g.Name != "Tesla P100" || g.NUMANode != 0 {
				t.Errorf("gpu = %+v", g)
			}
			d := s.PCI(g.Address)
			if d.NUMANode != -1 || d.LocalitySource != "single_node" || !slices.Contains(d.Parents, host.MustPCI("0000:00:01.5")) {
				t.Errorf("P100 pci = numa %d source %s parents %v", d.NUMANode, d.LocalitySource, d.Parents)
			}
		}},
		{"linux-amd64-8581cf3a529e5d8b97ea876eade2f60d", func(t *testing.T, s *host.Snapshot) {
			if len(s.NUMANodes) != 2 || len(s.PCIDevices) != 82 || len(s.CPUs) != 24 {
				t.Errorf("nodes %d pci %d cpus %d", len(s.NUMANodes), len(s.PCIDevices), len(s.CPUs))
			}
		}},
		{"nvidiagpunumanodes", func(t *testing.T, s *host.Snapshot) {
			var ids []int
			for _, n := range s.NUMANodes {
				ids = append(ids, n.ID)
			}
			if !slices.Equal(ids, []int{0, 8, 250, 251, 252, 253, 254, 255}) {
				t.Errorf("numa ids = %v", ids)
			}
			if s.NUMANodes[2].CPUs != "" || s.NUMANodes[2].GPUMemoryOf == "" {
				t.Errorf("node 250 = %+v, want a CPU-less GPU memory node", s.NUMANodes[2])
			}
			if len(s.GPUs) != 6 || s.GPUs[0].Vendor != host.VendorNVIDIA {
				t.Errorf("gpus = %+v, want the 6 V100s the NVIDIA driver lists", s.GPUs)
			}
		}},
		{"sys-class-infiniband-h100.0", func(t *testing.T, s *host.Snapshot) {
			if len(s.RDMADevices) != 9 {
				t.Fatalf("rdma = %d", len(s.RDMADevices))
			}
			if s.RDMADevices[0].Name != "mlx5_0" || s.RDMADevices[8].Name != "mlx5_bond_0" {
				t.Errorf("order %s..%s", s.RDMADevices[0].Name, s.RDMADevices[8].Name)
			}
			p := port(t, s, "mlx5_0", 1)
			if p.RateGbps != 400 || p.Rate.SpeedName != "NDR" || s.RDMA("mlx5_0").FWVersion != "28.41.1000" || p.HWCounters == nil {
				t.Errorf("mlx5_0/1 = %+v", p)
			}
			if p.LID != nil {
				t.Errorf("lid = %d; the capture has no lid file, so it must stay unknown", *p.LID)
			}
			b := port(t, s, "mlx5_bond_0", 1)
			if b.LinkLayer != "Ethernet" || b.Rate.WidthLanes != 2 || b.RateGbps != 200 {
				t.Errorf("bond = %+v", b)
			}
		}},
		{"node_exporter-sys", func(t *testing.T, s *host.Snapshot) {
			// i40iw reads "N/A (no PMA)" for every counter: node_exporter's
			// all-or-nothing parse fails here; the port must still be read.
			p := port(t, s, "i40iw0", 1)
			if p.State != portstate.Active || p.Rate.SpeedName != "SDR" || p.RateGbps != 10 || len(p.Unavailable) < 10 {
				t.Errorf("i40iw0/1 = %+v", p)
			}
			if q := port(t, s, "mlx4_0", 2); q.RateGbps != 40 {
				t.Errorf("mlx4_0/2 = %+v", q)
			}
		}},
		{"procfs-fixtures", func(t *testing.T, s *host.Snapshot) {
			if p := port(t, s, "hfi1_0", 1); p.RateGbps != 100 || p.Rate.SpeedName != "EDR" {
				t.Errorf("hfi1_0/1 = %+v", p)
			}
			// The fixture's phys_state reads "4: ACTIVE", a logical state:
			// no physical state, so unknown and said so, never a guess.
			if p := port(t, s, "mlx5_0", 1); p.PhysState.Known() || p.State != portstate.Active || len(p.HWCounters) == 0 {
				t.Errorf("mlx5_0/1 = %+v", p)
			}
			if !slices.ContainsFunc(s.Errors, func(e host.CollectError) bool {
				return strings.HasSuffix(e.Path, "mlx5_0/ports/1/phys_state") && strings.Contains(e.Error, `"4: ACTIVE"`)
			}) {
				t.Errorf("no error for mlx5_0/1's phys_state: %+v", s.Errors)
			}
			// eth0 carries MLNX_OFED's ecn/ tree: priorities 2 and 5 are off.
			if n := s.NetDev("eth0"); n == nil || n.ECN == nil || slices.Contains(n.ECN.NotificationPoint, 2) || !slices.Contains(n.ECN.NotificationPoint, 3) {
				t.Errorf("eth0 ecn = %+v", n)
			}
		}},
		{"fakepcilocalities", func(t *testing.T, s *host.Snapshot) {
			d := s.RDMA("qib0")
			if d == nil || d.PCIAddress.String() != "0000:43:00.0" {
				t.Fatalf("qib0 = %+v", d)
			}
			if p := port(t, s, "qib0", 1); !slices.Equal(p.NetDevs, []string{"ib0"}) {
				t.Errorf("qib0 netdevs %v", p.NetDevs)
			}
		}},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		c, ok := caps[tc.capture]
		if !ok {
			t.Errorf("capture %s missing from shared/testdata", tc.capture)
			continue
		}
		seen[tc.capture] = true
		t.Run(tc.capture, func(t *testing.T) { tc.check(t, collect(t, c)) })
	}
	for name := range caps {
		if !seen[name] {
			t.Errorf("capture %s has no table test", name)
		}
	}
}

// Every capture parses without a single read error: captures are real
// hosts, and an error here means a parser is wrong, not the host. The one
// exception is procfs's synthetic fixture, whose phys_state holds a
// logical state ("4: ACTIVE"): that file is wrong, and saying so is right.
func TestCapturesHaveNoReadErrors(t *testing.T) {
	for name, c := range testhost.Captures(t) {
		s := collect(t, c)
		for _, e := range s.Errors {
			if name == "procfs-fixtures" && strings.HasSuffix(e.Path, "/mlx5_0/ports/1/phys_state") {
				continue
			}
			t.Errorf("%s: %s %s: %s", name, e.Subject, e.Path, e.Error)
		}
	}
}

func TestSeedTrees(t *testing.T) {
	t.Run("seed000", func(t *testing.T) {
		s := seedTree(t, testhost.Seed000())
		if len(s.NUMANodes) != 4 || s.NUMANodes[2].CPUs != "16-23,48-55" {
			t.Errorf("numa = %+v", s.NUMANodes)
		}
		if s.CPUs[2].Siblings != "2,34" || s.Kernel.Isolation.Isolated != "2-29,34-61" {
			t.Errorf("cpu2 siblings %q isolated %q", s.CPUs[2].Siblings, s.Kernel.Isolation.Isolated)
		}
		want := map[string]int{"0000:06:00.0": 0, "0000:21:00.0": 1, "0000:41:00.0": 2, "0000:61:00.0": 3}
		for a, n := range want {
			if d := s.PCI(host.MustPCI(a)); d == nil || d.LocalityNUMANode != n {
				t.Errorf("%s numa = %+v, want %d", a, d, n)
			}
		}
		if got := s.AffinityOf(host.MustPCI("0000:06:00.0"), "mlx5_0"); got != host.LevelSYS {
			t.Errorf("GPU0↔mlx5_0 = %s, want SYS", got)
		}
		p := port(t, s, "mlx5_0", 1)
		if p.LinkLayer != "Ethernet" || p.RateGbps != 25 || len(p.GIDs) != 4 || p.GIDs[3].Type != host.GIDTypeRoCEv2 || p.GIDs[3].IPv4 != "10.0.0.1" {
			t.Errorf("mlx5_0/1 = %+v", p)
		}
		if nd := s.NetDev("enp65s0f0np0"); nd == nil || nd.MTUBytes != 4200 || nd.RDMADevice != "mlx5_0" {
			t.Errorf("netdev = %+v", nd)
		}
		k := s.Kernel
		if !k.IOMMU.Passthrough || k.GPUDirect.PeerMem != "nvidia_peermem" || k.DefaultHugePageBytes != 1<<30 || len(k.HugetlbfsMounts) != 1 {
			t.Errorf("kernel = %+v", k)
		}
		if len(k.Memlock.Rules) != 2 || k.Memlock.Rules[0].Value != "unlimited" {
			t.Errorf("memlock = %+v", k.Memlock)
		}
	})
	t.Run("r730", func(t *testing.T) {
		s := seedTree(t, testhost.R730())
		if len(s.GPUs) != 1 || s.GPUs[0].Name != "Tesla T4" {
			t.Errorf("gpus = %+v (the BMC's Matrox VGA is not a GPU)", s.GPUs)
		}
		p := port(t, s, "mlx5_0", 1)
		if p.Rate.Raw != "40 Gb/sec (4X QDR)" || *p.LID != 2 || *p.SMLID != 1 {
			t.Errorf("port = %+v", p)
		}
		if ib := s.NetDev("ib0"); ib.IPoIBMode != "connected" || ib.MTUBytes != 65520 {
			t.Errorf("ib0 = %+v", ib)
		}
	})
	t.Run("hgx", func(t *testing.T) {
		s := seedTree(t, testhost.HGX())
		if len(s.GPUs) != 8 || len(s.RDMADevices) != 8 {
			t.Fatalf("gpus %d rdma %d", len(s.GPUs), len(s.RDMADevices))
		}
		pix := 0
		for _, a := range s.Affinity {
			if a.Level == host.LevelPIX {
				pix++
			}
		}
		if pix != 8 { // 8 switches × 1 GPU × 1 NIC (seed 004's guide)
			t.Errorf("PIX pairs = %d, want 8", pix)
		}
		if got := s.AffinityOf(host.MustPCI("0000:13:00.0"), "mlx5_2"); got != host.LevelNODE {
			t.Errorf("G0↔N2 = %s, want NODE (seed 004: common root complex)", got)
		}
		// The NVSwitches (10de:22a3, class 0680 as on a real HGX H100) make
		// a baseboard with Fabric Manager's 15 default partitions.
		if b := s.Baseboard; b == nil || b.Name != "HGX H200 SXM 8-GPU" || len(b.NVSwitches) != 4 || len(b.Partitions) != 15 ||
			host.JoinPCI(b.Partitions[1].GPUs, " ") != "0000:13:00.0 0000:23:00.0 0000:33:00.0 0000:43:00.0" {
			t.Errorf("baseboard %+v", b)
		}
		if got := s.AffinityOf(host.MustPCI("0000:23:00.0"), "mlx5_4"); got != host.LevelSYS {
			t.Errorf("G1↔N4 = %s, want SYS", got)
		}
	})
}

// One unreadable or odd device never blanks the rest.
func TestBrokenDeviceIsRecordedNotFatal(t *testing.T) {
	dir := testhost.WriteTree(t, testhost.Seed000())
	// ConnectX-7 in some modes and MANA return EINVAL on reads; a garbage
	// rate and a directory where a file should be stand in for that here.
	rate := filepath.Join(dir, "sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0/infiniband/mlx5_0/ports/1/rate")
	if err := os.WriteFile(rate, []byte("fast\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "sys/devices/pci0000:60/0000:60:01.1/0000:61:00.1/infiniband/mlx5_3/ports/1/state")
	os.Remove(state)
	os.Mkdir(state, 0o755)
	s := collect(t, testhost.Capture{Root: dir})
	if len(s.RDMADevices) != 4 {
		t.Fatalf("rdma devices = %d, want all 4", len(s.RDMADevices))
	}
	if p := port(t, s, "mlx5_1", 1); p.State != portstate.Active || p.RateGbps != 25 {
		t.Errorf("healthy neighbour damaged: %+v", p)
	}
	var subjects []string
	for _, e := range s.Errors {
		subjects = append(subjects, e.Subject)
	}
	if !slices.Contains(subjects, "mlx5_0 port 1") || !slices.Contains(subjects, "mlx5_3 port 1") {
		t.Errorf("errors = %+v", s.Errors)
	}
	if p := port(t, s, "mlx5_0", 1); p.Rate.Raw != "fast" || p.State != portstate.Active {
		t.Errorf("mlx5_0/1 keeps the raw rate and the rest: %+v", p)
	}
}
