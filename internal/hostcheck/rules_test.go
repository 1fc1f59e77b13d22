package hostcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostfs"
	"github.com/rdmalab/rdmalab/internal/inventory"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func TestMain(m *testing.M) { os.Exit(testhost.Main(m)) }

func snap(t *testing.T, root string, ibOnly bool) *host.Snapshot {
	t.Helper()
	fs, err := hostfs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	if ibOnly {
		fs.Mount("/sys/class/infiniband", root)
	}
	return inventory.Collect(fs, inventory.Options{Now: func() time.Time { return time.Unix(0, 0) }})
}

func tree(t *testing.T, m testhost.Machine, edit func(root string)) *host.Snapshot {
	t.Helper()
	root := testhost.WriteTree(t, m)
	if edit != nil {
		edit(root)
	}
	return snap(t, root, false)
}

func write(t *testing.T, root, p, v string) {
	t.Helper()
	full := filepath.Join(root, p)
	if real, err := filepath.EvalSymlinks(filepath.Dir(full)); err == nil {
		full = filepath.Join(real, filepath.Base(full))
	}
	if err := os.WriteFile(full, []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func outcomes(fs []check.Finding, id string) map[check.Outcome]int {
	m := map[check.Outcome]int{}
	for _, f := range fs {
		if f.Check == id {
			m[f.Outcome]++
		}
	}
	return m
}

func fails(fs []check.Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Outcome == check.Fail {
			out = append(out, f.Check+" "+f.Subject+": "+f.Message)
		}
	}
	return out
}

const mlx0 = "sys/class/infiniband/mlx5_0/ports/1/"

// faults are injected into the seed trees; each must be found by its check.
var faults = []struct {
	name    string
	machine func() testhost.Machine
	edit    func(t *testing.T, root string)
	opt     Options
	want    string
	subject string // the port, device or part the finding names
}{
	{"port down", testhost.Seed000, func(t *testing.T, r string) {
		write(t, r, mlx0+"state", "1: DOWN")
		write(t, r, mlx0+"phys_state", "3: Disabled")
	}, Options{}, "port.state", "mlx5_0 port 1"},
	{"port polling", testhost.HGX, func(t *testing.T, r string) {
		write(t, r, mlx0+"state", "1: DOWN")
		write(t, r, mlx0+"phys_state", "2: Polling")
	}, Options{}, "port.state", "mlx5_0 port 1"},
	{"100G on a 200G-expected port", testhost.HGX, func(t *testing.T, r string) {
		write(t, r, mlx0+"rate", "100 Gb/sec (4X EDR)")
	}, Options{Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 400}, Source: "--expect-rate"}}, "port.rate.below-expected", "mlx5_0 port 1"},
	{"MTU 1500 on RoCE", testhost.Seed000, func(t *testing.T, r string) {
		write(t, r, "sys/class/net/enp65s0f0np0/mtu", "1500")
	}, Options{}, "roce.mtu", "mlx5_0 port 1 (enp65s0f0np0)"},
	{"PCIe x8 on a x16 NIC", testhost.HGX, func(t *testing.T, r string) {
		write(t, r, "sys/bus/pci/devices/0000:14:00.0/current_link_width", "8")
	}, Options{}, "pcie.link.degraded", "0000:14:00.0"},
	{"no SM LID", testhost.R730, func(t *testing.T, r string) {
		write(t, r, mlx0+"sm_lid", "0x0")
	}, Options{}, "ib.sm", "mlx5_0 port 1"},
	{"missing nvidia-peermem", testhost.HGX, func(t *testing.T, r string) {
		b, _ := os.ReadFile(filepath.Join(r, "proc/modules"))
		var keep []string
		for _, l := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(l, "nvidia_peermem ") {
				keep = append(keep, l)
			}
		}
		write(t, r, "proc/modules", strings.Join(keep, "\n"))
	}, Options{}, "gpudirect.peermem", "kernel"},
	{"isolcpus splitting SMT siblings", testhost.Seed000, func(t *testing.T, r string) {
		write(t, r, "sys/devices/system/cpu/isolated", "2-29")
		write(t, r, "sys/devices/system/cpu/nohz_full", "2-29")
	}, Options{}, "cpu.isolation.smt", "cpus"},
	{"InfiniBand where Ethernet was meant", testhost.R730, nil, Options{Expect: linkrate.Expect{Layer: linkrate.RoCE}}, "port.link-layer", "mlx5_0 port 1"},
	{"RoCE without a v2 GID", testhost.Seed000, func(t *testing.T, r string) {
		write(t, r, mlx0+"gid_attrs/types/3", "IB/RoCE v1")
		write(t, r, mlx0+"gid_attrs/types/1", "IB/RoCE v1")
	}, Options{}, "roce.gid.v2", "mlx5_0 port 1"},
	{"memlock limited", testhost.R730, func(t *testing.T, r string) {
		write(t, r, "etc/security/limits.d/99-rdma.conf", "* soft memlock 65536\n* hard memlock 65536")
	}, Options{}, "memlock", "limits"},
	{"no memlock rule at all (the default limit applies)", testhost.R730, func(t *testing.T, r string) {
		write(t, r, "etc/security/limits.d/99-rdma.conf", "# nothing about memlock\n* soft nofile 65536")
	}, Options{}, "memlock", "limits"},
	{"no ib_uverbs", testhost.R730, func(t *testing.T, r string) {
		write(t, r, "proc/modules", "mlx5_core 16384 0 - Live 0x0\nib_umad 16384 0 - Live 0x0")
	}, Options{}, "kernel.modules.rdma", "kernel"},
	{"hugepages not allocated", testhost.Seed000, func(t *testing.T, r string) {
		write(t, r, "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", "12")
	}, Options{}, "hugepages.allocated", "kernel"},
	{"ECN off on every priority", testhost.Seed000, func(t *testing.T, r string) {
		for p := 0; p < 8; p++ {
			for _, role := range []string{"roce_np", "roce_rp"} {
				d := filepath.Join(r, "sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0/net/enp65s0f0np0/ecn", role, "enable")
				os.MkdirAll(d, 0o755)
				os.WriteFile(filepath.Join(d, strconv.Itoa(p)), []byte("0\n"), 0o644)
			}
		}
	}, Options{}, "roce.ecn", "mlx5_0 port 1 (enp65s0f0np0)"},
	{"IPoIB connected mode with a small MTU", testhost.R730, func(t *testing.T, r string) {
		write(t, r, "sys/class/net/ib0/mtu", "2044")
	}, Options{}, "ipoib.mode", "ib0"},
}

// Each injected fault on a seed tree is found with the right check id on
// the right subject, and comes with a message and a fix: every line of it
// said, none a placeholder the snapshot could have filled.
func TestInjectedFaults(t *testing.T) {
	for _, tc := range faults {
		t.Run(tc.name, func(t *testing.T) {
			s := tree(t, tc.machine(), func(root string) {
				if tc.edit != nil {
					tc.edit(t, root)
				}
			})
			fs := Run(s, tc.opt)
			found := false
			for _, f := range fs {
				if f.Check != tc.want || (f.Outcome != check.Fail && f.Outcome != check.Warn) {
					continue
				}
				found = found || f.Subject == tc.subject
				if f.Message == "" || !realFix(f.Fix) {
					t.Errorf("%s %s failed without a message or a real fix: %+v", tc.want, f.Subject, f)
				}
			}
			if !found {
				t.Errorf("%s not raised on %q; failures: %v", tc.want, tc.subject, fails(fs))
			}
		})
	}
}

var placeholder = regexp.MustCompile(`<[a-z][a-z ]*>`)

// realFix reports a fix with at least one line, none empty and none
// naming a placeholder (<dev>, <if>, <conn>) the input could fill.
func realFix(fix []string) bool {
	for _, l := range fix {
		if strings.TrimSpace(l) == "" || placeholder.MatchString(l) {
			return false
		}
	}
	return len(fix) > 0
}

// Every rule has a passing and a failing (or warning) case somewhere.
func TestEveryRuleHasBothCases(t *testing.T) {
	pass := map[string]bool{}
	bad := map[string]bool{}
	record := func(fs []check.Finding) {
		for _, f := range fs {
			switch f.Outcome {
			case check.Pass:
				pass[f.Check] = true
			case check.Fail, check.Warn:
				bad[f.Check] = true
			}
		}
	}
	for _, mk := range testhost.Seeds() {
		record(Run(tree(t, mk(), nil), Options{Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 25}, Layer: linkrate.InfiniBand, Source: "--expect-rate"}}))
	}
	for _, tc := range faults {
		record(Run(tree(t, tc.machine(), func(root string) {
			if tc.edit != nil {
				tc.edit(t, root)
			}
		}), tc.opt))
	}
	for _, tc := range roceFaults {
		record(Run(roceTree(t, tc.edit, tc.ethtool), Options{}))
	}
	record(Run(roceTreeWith(t, testhost.WriteTree(t, testhost.Seed000()), "", seedDevinfo(t, map[string]string{"mlx5_0": "1024 (3)"})), Options{}))
	ofed := testhost.Seed000()
	for i := range ofed.Net {
		ofed.Net[i].ECN = []int{3}
	}
	record(Run(tree(t, ofed, nil), Options{}))
	bad2 := testhost.Seed000()
	bad2.Governor = "powersave"
	bad2.Cmdline = strings.Replace(bad2.Cmdline, "iommu=pt ", "", 1)
	bad2.RDMA[0].Ports[0].Counters = map[string]uint64{"symbol_error": 12}
	record(Run(tree(t, bad2, func(r string) {
		write(t, r, "sys/bus/pci/devices/0000:41:00.0/numa_node", "-1")
		os.Remove(filepath.Join(r, "sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0/local_cpulist"))
		os.Remove(filepath.Join(r, "sys/devices/pci0000:40/0000:40:01.1/0000:41:00.0/local_cpus"))
	}), Options{}))
	hgx7 := testhost.HGX()
	hgx7.PCI = slices.DeleteFunc(hgx7.PCI, func(p testhost.PCIFunc) bool { return p.Addr == "0000:13:00.0" })
	record(Run(tree(t, hgx7, nil), Options{}))
	noIB := testhost.Seed000()
	noIB.RDMA = nil
	record(Run(tree(t, noIB, nil), Options{}))
	noRDMA := testhost.R730()
	noRDMA.RDMA = nil
	noRDMA.PCI = slices.DeleteFunc(noRDMA.PCI, func(f testhost.PCIFunc) bool { return f.Vendor == "0x15b3" })
	noRDMA.Net = noRDMA.Net[1:]
	record(Run(tree(t, noRDMA, nil), Options{Expect: linkrate.Expect{Rate: linkrate.Rate{Gbps: 40}, Source: "--expect-rate"}}))
	for _, r := range Rules {
		if !pass[r.ID] || !bad[r.ID] {
			t.Errorf("%s: pass case %v, failing case %v", r.ID, pass[r.ID], bad[r.ID])
		}
	}
}

func TestFleet(t *testing.T) {
	a := tree(t, testhost.HGX(), nil)
	b := tree(t, testhost.HGX(), nil)
	c := tree(t, testhost.HGX(), func(r string) {
		write(t, r, "sys/class/infiniband/mlx5_3/ports/1/rate", "200 Gb/sec (4X HDR)")
		write(t, r, "proc/sys/kernel/hostname", "hgx-h200-03")
	})
	b.Hostname = "hgx-h200-02"
	hosts := []*host.Snapshot{a, b, c}
	fs := Doctor(hosts, Options{})
	var odd []string
	for _, f := range fs {
		if f.Outcome == check.Fail {
			odd = append(odd, f.Check+"@"+f.Host)
		}
	}
	slices.Sort(odd)
	want := []string{"fleet.rate@hgx-h200-03", "port.rate.below-expected@hgx-h200-03"}
	if !slices.Equal(odd, want) {
		t.Errorf("failures %v, want %v", odd, want)
	}
}

func TestRisingCounters(t *testing.T) {
	before := tree(t, testhost.R730(), nil)
	after := tree(t, testhost.R730(), func(r string) { write(t, r, mlx0+"counters/symbol_error", "37") })
	after.CollectedAt = before.CollectedAt.Add(2 * time.Hour)
	fs := RunDeltas([]*host.Snapshot{after, before})
	if len(fs) != 1 || fs[0].Outcome != check.Fail || !strings.Contains(fs[0].Message, "symbol_error +37 (18.5/h)") {
		t.Fatalf("%+v", fs)
	}
	same := RunDeltas([]*host.Snapshot{before, before})
	if len(same) != 1 || same[0].Outcome != check.Pass {
		t.Fatalf("%+v", same)
	}
	if got := Latest([]*host.Snapshot{before, after}); len(got) != 1 || got[0] != after {
		t.Errorf("Latest = %v", got)
	}
}

// Every fleet rule names the odd host when one host differs in its key,
// and passes when none does.
func TestEveryFleetRule(t *testing.T) {
	base := tree(t, testhost.Seed000(), nil)
	clone := func(name string) *host.Snapshot {
		var c host.Snapshot
		b, _ := json.Marshal(base)
		json.Unmarshal(b, &c)
		c.Hostname = name
		return &c
	}
	mutate := map[string]func(s *host.Snapshot){
		"fleet.firmware":   func(s *host.Snapshot) { s.RDMADevices[0].FWVersion = "14.20.1010" },
		"fleet.rate":       func(s *host.Snapshot) { s.RDMADevices[0].Ports[0].Rate.Raw = "10 Gb/sec (1X QDR)" },
		"fleet.link-layer": func(s *host.Snapshot) { s.RDMADevices[0].Ports[0].LinkLayer = "InfiniBand" },
		"fleet.mtu":        func(s *host.Snapshot) { s.NetDevs[0].MTUBytes = 1500 },
		"fleet.driver":     func(s *host.Snapshot) { s.Kernel.ModuleVersions = map[string]string{"mlx5_core": "24.10-1.1.4"} },
		"fleet.kernel":     func(s *host.Snapshot) { s.Kernel.Release = "6.1.0-28-amd64" },
		"fleet.roce-qos":   func(s *host.Snapshot) { s.RoCE[0].Trust = host.Got("pcp", "/sys/class/net/enp65s0f0np0/qos/trust") },
		// a node that lost a GPU (and so its rail pairing)
		"fleet.gpus": func(s *host.Snapshot) { s.GPUs = s.GPUs[:1] },
		// a NIC card moved to GPU0's root complex: same GPUs, other levels
		"fleet.gpu-nic": func(s *host.Snapshot) {
			g := s.PCI(s.GPUs[0].Address)
			for _, a := range []string{"0000:41:00.0", "0000:41:00.1", "0000:40:01.1"} {
				d := s.PCI(host.MustPCI(a))
				d.HostBridge, d.LocalityNUMANode = g.HostBridge, g.LocalityNUMANode
			}
		},
	}
	for _, k := range FleetRules {
		m, ok := mutate[k.ID]
		if !ok {
			t.Errorf("%s has no test", k.ID)
			continue
		}
		healthy := RunFleet([]*host.Snapshot{clone("a"), clone("b"), clone("c")})
		if o := outcomes(healthy, k.ID); o[check.Pass] != 1 || o[check.Fail] != 0 {
			t.Errorf("%s on identical hosts: %v", k.ID, o)
		}
		odd := clone("c")
		m(odd)
		fs := RunFleet([]*host.Snapshot{clone("a"), clone("b"), odd})
		var named []string
		for _, f := range fs {
			if f.Check == k.ID && f.Outcome == check.Fail {
				named = append(named, f.Host)
			}
		}
		if !slices.Equal(named, []string{"c"}) {
			t.Errorf("%s: failing hosts %v, want [c]", k.ID, named)
		}
	}
}

// A kernel mix declared with --allow-kernels (RHEL 9 and 10 during a
// migration) passes fleet.kernel; a kernel outside the patterns still
// names its host.
func TestFleetKernelMixDeclared(t *testing.T) {
	base := tree(t, testhost.Seed000(), nil) // 5.14.0-570.el9.x86_64
	clone := func(name, kernel string) *host.Snapshot {
		var c host.Snapshot
		b, _ := json.Marshal(base)
		json.Unmarshal(b, &c)
		c.Hostname = name
		if kernel != "" {
			c.Kernel.Release = kernel
		}
		return &c
	}
	hosts := []*host.Snapshot{clone("a", ""), clone("b", ""), clone("c", "6.12.0-55.el10.x86_64")}
	allow := Options{AllowKernels: []string{"*.el9.*", "*.el10.*"}}
	if o := outcomes(RunFleet(hosts, allow), "fleet.kernel"); o[check.Pass] != 1 || o[check.Fail] != 0 {
		t.Errorf("declared mix: %v", o)
	}
	if o := outcomes(RunFleet(hosts), "fleet.kernel"); o[check.Fail] != 1 {
		t.Errorf("undeclared mix: %v", o)
	}
	hosts[2] = clone("c", "6.1.0-28-amd64")
	var named []string
	for _, f := range RunFleet(hosts, allow) {
		if f.Check == "fleet.kernel" && f.Outcome == check.Fail {
			named = append(named, f.Host)
		}
	}
	if !slices.Equal(named, []string{"c"}) {
		t.Errorf("kernel outside the declared mix: %v", named)
	}
}

// --expect-ipoib connected: R730's connected-mode ib0 passes; datagram
// fails naming the interface; ib_ipoib is then required.
func TestExpectIPoIB(t *testing.T) {
	s := tree(t, testhost.R730(), nil)
	opt := Options{ExpectIPoIB: "connected"}
	if o := outcomes(Run(s, opt), "ipoib.mode"); o[check.Fail] != 0 || o[check.Pass] == 0 {
		t.Errorf("connected: %v", o)
	}
	var ib string
	for _, n := range s.NetDevs {
		if n.Type == 32 {
			ib = n.Name
		}
	}
	dg := tree(t, testhost.R730(), func(r string) { write(t, r, "sys/class/net/"+ib+"/mode", "datagram") })
	var subj []string
	for _, f := range Run(dg, opt) {
		if f.Check == "ipoib.mode" && f.Outcome == check.Fail {
			subj = append(subj, f.Subject)
		}
	}
	if !slices.Equal(subj, []string{ib}) {
		t.Errorf("datagram under --expect-ipoib connected: %v", subj)
	}
	if o := outcomes(Run(dg, Options{}), "ipoib.mode"); o[check.Fail] != 0 {
		t.Errorf("datagram without the flag: %v", o)
	}
	noIPoIB := tree(t, testhost.R730(), func(r string) {
		write(t, r, "proc/modules", "mlx5_core 16384 0 - Live 0x0\nib_umad 16384 0 - Live 0x0\nib_uverbs 16384 0 - Live 0x0")
	})
	for _, f := range Run(noIPoIB, opt) {
		if f.Check == "kernel.modules.rdma" && (f.Outcome != check.Fail || !strings.Contains(f.Message, "ib_ipoib")) {
			t.Errorf("ib_ipoib not required: %s %s", f.Outcome, f.Message)
		}
	}
}

// An InfiniBand port Init with its link up: with no SM LID, run an SM;
// with an SM answering, the SM has not configured the port (not "run
// opensm"). R730's mlx5_0 (a physical function).
func TestInitPortWithAndWithoutSM(t *testing.T) {
	for _, c := range []struct{ smLID, msg, fix string }{
		{"0x0", "no subnet manager has configured it", "opensm"},
		{"0x1", "although an SM answers at LID 1", "opensm.log"},
	} {
		s := tree(t, testhost.R730(), func(r string) {
			write(t, r, mlx0+"state", "2: INIT")
			write(t, r, mlx0+"phys_state", "5: LinkUp")
			write(t, r, mlx0+"sm_lid", c.smLID)
		})
		var got *check.Finding
		fs := Run(s, Options{})
		for i := range fs {
			if fs[i].Check == "port.state" && fs[i].Subject == "mlx5_0 port 1" {
				got = &fs[i]
			}
		}
		if got == nil || got.Outcome != check.Fail || !strings.Contains(got.Message, c.msg) || !strings.Contains(strings.Join(got.Fix, " "), c.fix) {
			t.Errorf("sm_lid %s: %+v", c.smLID, got)
		}
	}
}
