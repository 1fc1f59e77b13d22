package hostcheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// seed000VMHost is seed 000's host after its VFIO step: GPUs with their
// audio functions and the NIC PFs 41:00.0 and 61:00.0 on vfio-pci (the
// second ports stay with the host), the NVIDIA modules gone.
func seed000VMHost(edit func(m *testhost.Machine)) testhost.Machine {
	m := testhost.Seed000()
	passed := []string{"0000:06:00.0", "0000:06:00.1", "0000:21:00.0", "0000:21:00.1", "0000:41:00.0", "0000:61:00.0"}
	for i := range m.PCI {
		if slices.Contains(passed, m.PCI[i].Addr) {
			m.PCI[i].Driver = "vfio-pci"
		}
	}
	m.RDMA = slices.DeleteFunc(m.RDMA, func(r testhost.RDMADev) bool { return slices.Contains(passed, r.PCI) })
	m.Net = slices.DeleteFunc(m.Net, func(n testhost.NetDev) bool { return slices.Contains(passed, n.PCI) })
	m.Modules = slices.DeleteFunc(m.Modules, func(s string) bool { return strings.HasPrefix(s, "nvidia") })
	if edit != nil {
		edit(&m)
	}
	return m
}

func vmHostFindings(t *testing.T, m testhost.Machine) []check.Finding {
	t.Helper()
	var out []check.Finding
	for _, f := range Doctor([]*host.Snapshot{tree(t, m, nil)}, Options{Profile: VMHost}) {
		if strings.HasPrefix(f.Check, "vmhost.") || f.Check == "gpudirect.peermem" || strings.HasPrefix(f.Check, "gpudirect.") {
			out = append(out, f)
		}
	}
	return out
}

func TestVMHostProfile(t *testing.T) {
	// Healthy: every vm-host check passes, ACS/ATS is named as unknown
	// (root-only), and no bare-metal GPUDirect rule runs.
	fs := vmHostFindings(t, seed000VMHost(nil))
	for _, f := range fs {
		if f.Outcome != check.Pass && f.Check != "vmhost.acs" {
			t.Errorf("healthy VM host: %s %s %s: %s", f.Outcome, f.Check, f.Subject, f.Message)
		}
		if strings.HasPrefix(f.Check, "gpudirect.") {
			t.Errorf("bare-metal rule %s ran in the vm-host profile", f.Check)
		}
		if f.Check == "vmhost.acs" && (f.Outcome != check.Unknown || !strings.Contains(f.Message, "keep ACS") || strings.Contains(f.Fix[0], "disable ACS")) {
			t.Errorf("ACS advice on a VM host: %+v", f)
		}
	}
	cases := []struct {
		name    string
		edit    func(m *testhost.Machine)
		id, sub string
		want    string
	}{
		{"NVIDIA driver on the host", func(m *testhost.Machine) { m.Modules = append(m.Modules, "nvidia", "nvidia_uvm") }, "vmhost.nvidia-driver", "kernel", "nvidia, nvidia_uvm"},
		{"GPU still on nvidia", func(m *testhost.Machine) { setDriver(m, "0000:21:00.0", "nvidia") }, "vmhost.vfio", "0000:21:00.0", "GPU on nvidia"},
		{"audio function left in the GPU's group", func(m *testhost.Machine) { setDriver(m, "0000:06:00.1", "snd_hda_intel") }, "vmhost.iommu-group", "0000:06:00.0", "0000:06:00.1 (snd_hda_intel)"},
		{"no hugepages", func(m *testhost.Machine) { m.HugePages1G = 0 }, "vmhost.hugepages", "node 0", "no hugepages reserved on node 0"},
		{"ACS override", func(m *testhost.Machine) { m.Cmdline += " pcie_acs_override=downstream,multifunction" }, "vmhost.acs", "kernel", "pcie_acs_override"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			found := false
			for _, f := range vmHostFindings(t, seed000VMHost(c.edit)) {
				if f.Check == c.id && f.Subject == c.sub && f.Outcome == check.Fail && strings.Contains(f.Message, c.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("want %s fail about %s (%q)", c.id, c.sub, c.want)
			}
		})
	}
	// Seed 000's VM host without its isolcpus/nohz_full: a finding on the
	// host's CPUs (its healthy twin above passes vmhost.isolation).
	noIso := func(m *testhost.Machine) {
		m.Isolated, m.NohzFull = "", ""
		m.Cmdline = strings.NewReplacer("isolcpus=2-29,34-61 ", "", "nohz_full=2-29,34-61 ", "", "rcu_nocbs=2-29,34-61 ", "").Replace(m.Cmdline)
	}
	iso := 0
	for _, f := range vmHostFindings(t, seed000VMHost(noIso)) {
		if f.Check == "vmhost.isolation" {
			iso++
			if f.Subject != "cpus" || f.Outcome != check.Warn || !strings.Contains(f.Message, "4 device(s) passed to VMs, but no host CPU is isolated") {
				t.Errorf("no isolation: %+v", f)
			}
		}
	}
	if iso != 1 {
		t.Errorf("no isolation: %d vmhost.isolation findings", iso)
	}
	// Bare metal on the same host suggests the profile.
	var suggest []check.Finding
	for _, f := range Doctor([]*host.Snapshot{tree(t, seed000VMHost(nil), nil)}, Options{}) {
		if f.Check == "vmhost.profile" {
			suggest = append(suggest, f)
		}
	}
	if len(suggest) != 1 || !strings.Contains(suggest[0].Message, "6 device(s)") {
		t.Errorf("bare-metal doctor on a VM host: %+v", suggest)
	}
}

func setDriver(m *testhost.Machine, addr, driver string) {
	for i := range m.PCI {
		if m.PCI[i].Addr == addr {
			m.PCI[i].Driver = driver
		}
	}
}

// Seed 004's 8×H200 HGX with one GPU gone from the bus: 7 of 8 GPUs on
// a 4-NVSwitch board fail gpu.baseboard, naming the PCIe switch that
// kept its NIC but lost its GPU; the whole board passes.
func TestHGXMissingGPU(t *testing.T) {
	judge := func(m testhost.Machine) check.Finding {
		t.Helper()
		var got []check.Finding
		for _, f := range Doctor([]*host.Snapshot{tree(t, m, nil)}, Options{}) {
			if f.Check == "gpu.baseboard" {
				got = append(got, f)
			}
		}
		if len(got) != 1 {
			t.Fatalf("want one gpu.baseboard finding, got %+v", got)
		}
		return got[0]
	}
	if f := judge(testhost.HGX()); f.Outcome != check.Pass || f.Subject != "baseboard" {
		t.Errorf("whole board: %+v", f)
	}
	m := testhost.HGX()
	m.PCI = slices.DeleteFunc(m.PCI, func(p testhost.PCIFunc) bool { return p.Addr == "0000:13:00.0" })
	f := judge(m)
	if f.Outcome != check.Fail || f.Subject != "baseboard" || !strings.Contains(f.Message, "7 of 8 GPUs on the 4-NVSwitch HGX baseboard") || !strings.Contains(f.Message, "PCIe switch 0000:11:00.0 holds a rail NIC but no GPU") {
		t.Errorf("7 GPUs: %+v", f)
	}
}

// A B300-like board: six ConnectX-8 rails at 800 Gb/s and two ConnectX-7
// NVLink-management ports at 100 Gb/s. The ConnectX-7s all run at one
// rate beside the host's main NICs: a network of their own, no rate
// finding. One ConnectX-8 rail at 400 still warns.
func TestManagementPortsAt100G(t *testing.T) {
	m := testhost.HGX()
	for i := range m.RDMA {
		port := &m.RDMA[i].Ports[0]
		if i < 6 {
			m.RDMA[i].HCAType = "MT4131"
			port.Rate = "800 Gb/sec (4X XDR)"
		} else {
			port.Rate = "100 Gb/sec (4X EDR)"
		}
	}
	for i := range m.PCI {
		for j := range 6 {
			if m.PCI[i].Addr == m.RDMA[j].PCI {
				m.PCI[i].Device = "0x1023"
			}
		}
	}
	rate := func(m testhost.Machine) []check.Finding {
		var out []check.Finding
		for _, f := range Doctor([]*host.Snapshot{tree(t, m, nil)}, Options{}) {
			if strings.HasPrefix(f.Check, "port.rate") && f.Outcome != check.Pass {
				out = append(out, f)
			}
		}
		return out
	}
	if fs := rate(m); len(fs) != 0 {
		t.Errorf("management ports at 100G: %+v", fs)
	}
	m.RDMA[0].Ports[0].Rate = "400 Gb/sec (4X NDR)"
	fs := rate(m)
	if len(fs) == 0 || !slices.ContainsFunc(fs, func(f check.Finding) bool { return f.Subject == "mlx5_0 port 1" }) {
		t.Errorf("a ConnectX-8 rail at 400: %+v", fs)
	}
	for _, f := range fs {
		if f.Subject != "mlx5_0 port 1" {
			t.Errorf("only mlx5_0 is slow: %+v", f)
		}
	}
}

// ACS on a VM host, read from config space: header only (not root) is an
// unknown that says so; ACS off fails; on with Direct Translated P2P passes.
func TestVMHostACSFromConfigSpace(t *testing.T) {
	acs := func(bytes int, ctl uint16) check.Finding {
		t.Helper()
		s := tree(t, seed000VMHost(nil), nil)
		for i := range s.PCIDevices {
			d := &s.PCIDevices[i]
			if host.IsBridgeClass(d.Class) {
				d.ConfigBytes = bytes
				if bytes >= 256 {
					c := ctl
					d.ACSCtl = &c
				}
			}
		}
		for _, f := range Doctor([]*host.Snapshot{s}, Options{Profile: VMHost}) {
			if f.Check == "vmhost.acs" {
				return f
			}
		}
		t.Fatal("no vmhost.acs")
		return check.Finding{}
	}
	if f := acs(64, 0); f.Outcome != check.Unknown || !strings.Contains(f.Message, "not root") {
		t.Errorf("header only: %+v", f)
	}
	if f := acs(4096, 0); f.Outcome != check.Fail || !strings.Contains(f.Message, "ACS is off") {
		t.Errorf("ACS off: %+v", f)
	}
	if f := acs(4096, host.ACSSrcValid|host.ACSReqRedir|host.ACSCmpltRedir|host.ACSDirectTrans); f.Outcome != check.Pass {
		t.Errorf("ACS on, DirectTrans: %+v", f)
	}
}
