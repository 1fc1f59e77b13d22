package plan

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
	"k8s.io/utils/cpuset"
)

var update = flag.Bool("update", false, "rewrite golden files")

func load(t *testing.T, name string) *host.Snapshot {
	t.Helper()
	s, err := examples.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustPlan(t *testing.T, s *host.Snapshot, req Request) *Plan {
	t.Helper()
	p, err := Make(s, req)
	if err != nil {
		t.Fatalf("Make(%+v): %v", req, err)
	}
	return p
}

func addrs(vm VM, role string) []string {
	var out []string
	for _, d := range vm.Devices {
		if d.Role == role {
			out = append(out, d.Address.String())
		}
	}
	return out
}

func cellCPUs(vm VM) []string {
	var out []string
	for _, c := range vm.Cells {
		out = append(out, fmt.Sprintf("%d:%s", c.HostNode, c.HostCPUs))
	}
	return out
}

// Seed 000's table: vm00 = GPU 06:00.0 + NIC 41:00.0 on nodes 0+2 with
// CPUs 2-7,34-39 and 16-23,48-55; vm01 = GPU 21:00.0 + NIC 61:00.0 on nodes
// 1+3 with 8-15,40-47 and 24-29,56-61; the host keeps 0-1,32-33 and
// 30-31,62-63; 28 vCPUs and 32 GiB of 1 GiB pages each; isolcpus=2-29,34-61,
// hugepages=64.
func TestSeed000MatchesArticle(t *testing.T) {
	p := mustPlan(t, load(t, "seed000-epyc"), Request{VMs: 2})
	want := []struct {
		gpu, nic string
		nodes    []int
		cells    []string
		emulator string
	}{
		{"0000:06:00.0", "0000:41:00.0", []int{0, 2}, []string{"0:2-7,34-39", "2:16-23,48-55"}, "0-1,32-33"},
		{"0000:21:00.0", "0000:61:00.0", []int{1, 3}, []string{"1:8-15,40-47", "3:24-29,56-61"}, "30-31,62-63"},
	}
	if len(p.VMs) != 2 {
		t.Fatalf("%d VMs, want 2", len(p.VMs))
	}
	for i, w := range want {
		vm := p.VMs[i]
		if g := addrs(vm, "gpu"); !slices.Equal(g, []string{w.gpu}) {
			t.Errorf("%s GPUs = %v, want %s", vm.Name, g, w.gpu)
		}
		if len(vm.Pairs) != 1 || vm.Pairs[0].NIC.String() != w.nic || vm.Pairs[0].Level != host.LevelSYS {
			t.Errorf("%s pairs = %+v, want %s ↔ %s SYS", vm.Name, vm.Pairs, w.gpu, w.nic)
		}
		if !slices.Equal(vm.NUMANodes, w.nodes) || !slices.Equal(cellCPUs(vm), w.cells) {
			t.Errorf("%s nodes %v cells %v, want %v %v", vm.Name, vm.NUMANodes, cellCPUs(vm), w.nodes, w.cells)
		}
		if vm.VCPUs != 28 || vm.Threads != 2 || vm.MemoryBytes != 32<<30 || vm.EmulatorCPUs != w.emulator {
			t.Errorf("%s: %d vCPUs, threads %d, %d bytes, emulator %s", vm.Name, vm.VCPUs, vm.Threads, vm.MemoryBytes, vm.EmulatorCPUs)
		}
		// The audio function shares the GPU's IOMMU group, so it comes along.
		if f := addrs(vm, "function"); len(f) != 1 || !strings.HasSuffix(f[0], ":00.1") {
			t.Errorf("%s functions = %v, want the GPU's audio function", vm.Name, f)
		}
	}
	if p.HousekeepingCPUs != "0-1,30-33,62-63" || p.IsolatedCPUs != "2-29,34-61" || p.UnusedCPUs != "" {
		t.Errorf("housekeeping %s isolated %s unused %s", p.HousekeepingCPUs, p.IsolatedCPUs, p.UnusedCPUs)
	}
	for _, a := range []string{"iommu=pt", "isolcpus=managed_irq,domain,2-29,34-61", "nohz_full=2-29,34-61", "rcu_nocbs=2-29,34-61", "default_hugepagesz=1G", "hugepagesz=1G", "hugepages=64"} {
		if !slices.Contains(p.KernelArgs, a) {
			t.Errorf("kernel args %v lack %s", p.KernelArgs, a)
		}
	}
	sys := 0
	for _, n := range p.Notes {
		if n.Check == "plan.pair.sys" {
			sys++
		}
	}
	if sys != 2 {
		t.Errorf("want a SYS warning per VM, notes: %+v", p.Notes)
	}
}

func TestHGX(t *testing.T) {
	s := load(t, "hgx-h200")
	switchOf := func(a string) string { return s.PCI(host.MustPCI(a)).Switch.String() }
	t.Run("two half VMs", func(t *testing.T) {
		p := mustPlan(t, s, Request{VMs: 2})
		for i, vm := range p.VMs {
			if !slices.Equal(vm.NUMANodes, []int{i}) || len(addrs(vm, "gpu")) != 4 || len(addrs(vm, "nic")) != 4 {
				t.Errorf("%s: nodes %v, GPUs %v, NICs %v; want socket %d's 4 GPUs and 4 NICs", vm.Name, vm.NUMANodes, addrs(vm, "gpu"), addrs(vm, "nic"), i)
			}
			for _, pr := range vm.Pairs {
				if pr.Level != host.LevelPIX || switchOf(pr.GPU.String()) != switchOf(pr.NIC.String()) {
					t.Errorf("%s: %s ↔ %s is %s, want the switch-local NIC (PIX)", vm.Name, pr.GPU, pr.NIC, pr.Level)
				}
			}
			if vm.VCPUs != 92 || vm.Sockets != 1 || vm.CoresPerSkt != 46 {
				t.Errorf("%s: %d vCPUs %d×%d, want 92 on 46 cores", vm.Name, vm.VCPUs, vm.Sockets, vm.CoresPerSkt)
			}
		}
	})
	t.Run("eight one-GPU VMs", func(t *testing.T) {
		p := mustPlan(t, s, Request{VMs: 8, MemoryBytes: 100 << 30})
		switches := map[string]int{}
		for _, vm := range p.VMs {
			g, n := addrs(vm, "gpu"), addrs(vm, "nic")
			if len(g) != 1 || len(n) != 1 || switchOf(g[0]) != switchOf(n[0]) || vm.Pairs[0].Level != host.LevelPIX {
				t.Errorf("%s: GPU %v NIC %v, want one pair under one switch", vm.Name, g, n)
				continue
			}
			switches[switchOf(g[0])]++
			if len(vm.Cells) != 1 || vm.Cells[0].HostNode != s.PCI(host.MustPCI(g[0])).LocalityNUMANode {
				t.Errorf("%s: cells %+v, want one on its GPU's node", vm.Name, vm.Cells)
			}
		}
		for sw, n := range switches {
			if n != 1 {
				t.Errorf("switch %s has %d VMs, want 1 (one GPU+NIC pair per switch)", sw, n)
			}
		}
		if len(switches) != 8 {
			t.Errorf("VMs use %d switches, want 8", len(switches))
		}
	})
}

// Seed 004's HGX: 2, 4 and 8 VMs each take one Fabric Manager partition
// and the storage under their switches (S0-S5 with G0-G3); one VM takes
// every GPU and the NVSwitches (full passthrough); a VM across partitions
// says it cannot follow them; --keep-storage keeps the drives home.
func TestHGXPartitions(t *testing.T) {
	s := load(t, "hgx-h200")
	b := s.Baseboard
	if b == nil || len(b.NVSwitches) != 4 || len(b.GPUs) != 8 || len(b.Partitions) != 15 {
		t.Fatalf("baseboard %+v", b)
	}
	for _, c := range []struct {
		vms, firstID, storage0 int
	}{{2, 1, 6}, {4, 3, 4}, {8, 7, 2}} {
		p := mustPlan(t, s, Request{VMs: c.vms, MemoryBytes: 64 << 30})
		if p.Fabric == nil || p.Fabric.Mode != "shared-nvswitch" {
			t.Fatalf("%d VMs: fabric %+v", c.vms, p.Fabric)
		}
		for i, vm := range p.VMs {
			if vm.Partition == nil || vm.Partition.ID != c.firstID+i || host.JoinPCI(vm.Partition.GPUs, " ") != strings.Join(addrs(vm, "gpu"), " ") {
				t.Errorf("%d VMs: %s partition %+v, GPUs %v", c.vms, vm.Name, vm.Partition, addrs(vm, "gpu"))
			}
			if len(addrs(vm, "nvswitch")) != 0 {
				t.Errorf("%s takes NVSwitches in shared mode", vm.Name)
			}
		}
		if st := addrs(p.VMs[0], "storage"); len(st) != c.storage0 {
			t.Errorf("%d VMs: vm00 storage %v, want %d drives", c.vms, st, c.storage0)
		}
		checklist := Checklist(p)
		for _, w := range []string{"FABRIC_MODE=1", fmt.Sprintf("`fmpm -a %d`", c.firstID), "then `virsh start vm00`"} {
			if !strings.Contains(checklist, w) {
				t.Errorf("%d VMs: checklist lacks %q", c.vms, w)
			}
		}
	}
	one := mustPlan(t, s, Request{VMs: 1, MemoryBytes: 64 << 30})
	if one.Fabric.Mode != "full-passthrough" || len(addrs(one.VMs[0], "nvswitch")) != 4 || len(addrs(one.VMs[0], "storage")) != 10 {
		t.Errorf("one VM: fabric %+v, devices %+v", one.Fabric, one.VMs[0].Devices)
	}
	keep := mustPlan(t, s, Request{VMs: 2, MemoryBytes: 64 << 30, KeepStorage: true})
	if st := addrs(keep.VMs[0], "storage"); len(st) != 0 {
		t.Errorf("--keep-storage passed %v", st)
	}
	cross := mustPlan(t, s, Request{Groups: [][]string{{"13:00.0", "93:00.0"}}, MemoryBytes: 64 << 30})
	found := false
	for _, n := range cross.Notes {
		if n.Check == "plan.nvswitch.partition" && n.Subject == "vm00" && strings.Contains(n.Message, "0000:13:00.0, 0000:93:00.0") {
			found = true
		}
	}
	if !found || cross.VMs[0].Partition != nil {
		t.Errorf("a VM across partitions should say so: %+v", cross.Notes)
	}
}

// Every refusal names the reason with its check id and offers a nearest
// request that plans.
func TestRefusals(t *testing.T) {
	seed := load(t, "seed000-epyc")
	hgx := load(t, "hgx-h200")
	busReset := load(t, "seed000-epyc")
	// 61:00.0 under the bridge of 41:00.0, which can only bus-reset: one unit.
	busReset.PCI(host.MustPCI("0000:41:00.0")).ResetMethod = "bus"
	busReset.PCI(host.MustPCI("0000:61:00.0")).Parents = slices.Clone(busReset.PCI(host.MustPCI("0000:41:00.0")).Parents)
	cases := []struct {
		name  string
		s     *host.Snapshot
		req   Request
		check string
		near  func(Request) bool
	}{
		{"vms do not divide pairs", seed, Request{VMs: 3}, "plan.vms", func(r Request) bool { return r.VMs == 2 }},
		{"too many vcpus", seed, Request{VMs: 2, VCPUs: 40}, "plan.cpus", func(r Request) bool { return r.VCPUs == 28 }},
		{"half a core", seed, Request{VMs: 2, VCPUs: 27}, "plan.cpus.whole-cores", func(r Request) bool { return r.VCPUs == 26 }},
		{"memory does not fit", seed, Request{VMs: 2, MemoryBytes: 200 << 30}, "plan.memory", func(r Request) bool { return r.MemoryBytes == 120<<30 }},
		{"single node policy", seed, Request{VMs: 2, Policy: SingleNUMANode}, "plan.policy", func(r Request) bool { return r.Policy == Restricted }},
		{"restricted across sockets", hgx, Request{VMs: 1, Policy: Restricted}, "plan.policy", func(r Request) bool { return r.Policy == BestEffort }},
		{"IOMMU group split", seed, Request{Groups: [][]string{{"06:00.0", "41:00.0"}, {"06:00.1"}}}, "plan.iommu.split",
			func(r Request) bool { return len(r.Groups) == 1 && len(r.Groups[0]) == 3 }},
		{"bus reset drags a neighbour", busReset, Request{VMs: 2}, "plan.iommu.split", func(r Request) bool { return r.VMs == 1 }},
		{"no cores left", seed, Request{VMs: 2, HousekeepingCores: 32}, "plan.cpus.housekeeping", func(r Request) bool { return r.HousekeepingCores == 8 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Make(c.s, c.req)
			var ref *Refusal
			if !errors.As(err, &ref) {
				t.Fatalf("want a refusal, got %v", err)
			}
			if ref.Reasons[0].Check != c.check {
				t.Errorf("check %s, want %s: %s", ref.Reasons[0].Check, c.check, ref.Error())
			}
			if ref.Nearest == nil || !c.near(*ref.Nearest) {
				t.Fatalf("nearest %+v is not the expected one (%s)", ref.Nearest, ref.Error())
			}
			p, ref2, err := MakeOrNearest(c.s, c.req)
			if err != nil || p == nil || ref2 == nil {
				t.Fatalf("MakeOrNearest: plan %v refusal %v err %v", p != nil, ref2, err)
			}
			checkInvariants(t, c.s, p)
		})
	}
}

func TestGroupsExplicit(t *testing.T) {
	s := load(t, "seed000-epyc")
	p := mustPlan(t, s, Request{Groups: [][]string{{"06:00.0", "61:00.0"}}, VCPUs: 8, MemoryBytes: 8 << 30})
	vm := p.VMs[0]
	if !slices.Equal(vm.NUMANodes, []int{0, 3}) || vm.VCPUs != 8 || vm.MemoryBytes != 8<<30 {
		t.Fatalf("vm %+v", vm)
	}
	if len(vm.Cells) != 2 || vm.Cells[0].Cores != 2 || vm.Cells[1].Cores != 2 || vm.Sockets != 2 || vm.CoresPerSkt != 2 {
		t.Errorf("8 vCPUs over 2 nodes should be 2 cores per cell, 2 sockets: %+v", vm.Cells)
	}
	checkInvariants(t, s, p)
}

// checkInvariants are the properties every plan keeps: no host CPU given
// twice or to a VM and the host; guest sibling vCPUs on one host core;
// vCPUs on the VM's own nodes; emulator threads off every vCPU; hugepages
// adding up and fitting their node.
func checkInvariants(t *testing.T, s *host.Snapshot, p *Plan) {
	t.Helper()
	sib := map[int]string{}
	node := map[int]int{}
	for _, c := range s.CPUs {
		sib[c.ID], node[c.ID] = c.Siblings, c.NUMANode
	}
	owner := map[int]string{}
	hk := mustCPUSet(p.HousekeepingCPUs)
	for _, c := range hk.List() {
		owner[c] = "host"
	}
	var all []int
	for _, vm := range p.VMs {
		if len(vm.Pins) != vm.VCPUs || vm.Sockets*vm.CoresPerSkt*vm.Threads != vm.VCPUs {
			t.Errorf("%s: %d pins, %d vCPUs, topology %d×%d×%d", vm.Name, len(vm.Pins), vm.VCPUs, vm.Sockets, vm.CoresPerSkt, vm.Threads)
		}
		for i, c := range vm.Pins {
			if o, ok := owner[c]; ok {
				t.Errorf("CPU %d given to %s and %s", c, o, vm.Name)
			}
			owner[c] = vm.Name
			if !slices.Contains(vm.NUMANodes, node[c]) {
				t.Errorf("%s vCPU %d on CPU %d of node %d, not one of its nodes %v", vm.Name, i, c, node[c], vm.NUMANodes)
			}
			if vm.Threads == 2 && i%2 == 1 && sib[c] != sib[vm.Pins[i-1]] {
				t.Errorf("%s vCPUs %d,%d on CPUs %d,%d which are not SMT siblings", vm.Name, i-1, i, vm.Pins[i-1], c)
			}
		}
		all = append(all, vm.Pins...)
		var cellMem int64
		for _, c := range vm.Cells {
			cellMem += c.MemoryBytes
		}
		if cellMem != vm.MemoryBytes || vm.MemoryBytes%p.Request.PageSizeBytes != 0 {
			t.Errorf("%s: cells hold %d bytes of %d", vm.Name, cellMem, vm.MemoryBytes)
		}
	}
	for _, vm := range p.VMs {
		if mustCPUSet(vm.EmulatorCPUs).Intersection(cpuset.New(all...)).Size() > 0 && p.Request.HousekeepingCores > 0 {
			t.Errorf("%s emulator CPUs %s overlap vCPUs", vm.Name, vm.EmulatorCPUs)
		}
	}
	if got := cpuset.New(all...).String(); got != p.IsolatedCPUs {
		t.Errorf("isolated %s, vCPUs on %s", p.IsolatedCPUs, got)
	}
	for _, np := range p.HugePages {
		var need int64
		for _, vm := range p.VMs {
			for _, c := range vm.Cells {
				if c.HostNode == np.Node {
					need += c.MemoryBytes / np.PageSizeBytes
				}
			}
		}
		if need != np.Pages || (np.CapacityBytes >= 0 && np.Pages*np.PageSizeBytes > np.CapacityBytes) {
			t.Errorf("node %d: %d pages planned, cells need %d, capacity %d", np.Node, np.Pages, need, np.CapacityBytes)
		}
	}
}

// Property test: random requests on every example host either plan with
// all invariants kept or are refused with a nearest request that plans.
func TestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range examples.Names() {
		s := load(t, name)
		for i := range 150 {
			req := Request{
				VMs:               1 + rng.IntN(9),
				VCPUs:             rng.IntN(4) * 2 * rng.IntN(12),
				HousekeepingCores: rng.IntN(9),
				PageSizeBytes:     []int64{2 << 20, 1 << 30}[rng.IntN(2)],
				Policy:            Policies[rng.IntN(len(Policies))],
			}
			if rng.IntN(2) == 0 {
				req.MemoryBytes = int64(1+rng.IntN(600)) << 30
			}
			p, ref, err := MakeOrNearest(s, req)
			if err != nil {
				var r *Refusal
				if errors.As(err, &r) && r.Nearest == nil {
					continue // refused with nothing nearer: allowed
				}
				t.Fatalf("%s #%d %+v: %v", name, i, req, err)
			}
			if ref != nil && len(ref.Reasons) == 0 {
				t.Errorf("%s #%d: refusal without a reason", name, i)
			}
			checkInvariants(t, s, p)
			if t.Failed() {
				t.Fatalf("%s #%d request %+v", name, i, req)
			}
		}
	}
}

// Every generated domain is valid libvirt XML (virt-xml-validate, RNG
// schema) and is accepted by libvirt itself (the test driver's define).
func TestDomainsValidate(t *testing.T) {
	validate := testhost.RequireTool(t, "virt-xml-validate")
	virsh := testhost.RequireTool(t, "virsh")
	dir := testhost.TempDir(t)
	for _, c := range []struct {
		host string
		req  Request
	}{
		{"seed000-epyc", Request{VMs: 2}},
		{"hgx-h200", Request{VMs: 1, MemoryBytes: 64 << 30}}, // full passthrough: 18 root ports on cell 0
		{"hgx-h200", Request{VMs: 2}},
		{"hgx-h200", Request{VMs: 4, MemoryBytes: 64 << 30}},
		{"hgx-h200", Request{VMs: 8, MemoryBytes: 100 << 30, PageSizeBytes: 2 << 20}},
		{"r730-qdr", Request{VMs: 1, VCPUs: 8}},
	} {
		p := mustPlan(t, load(t, c.host), c.req)
		for _, vm := range p.VMs {
			x, err := DomainXML(p, vm)
			if err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(dir, fmt.Sprintf("%s-%d-%s.xml", c.host, len(p.VMs), vm.Name))
			if err := os.WriteFile(f, []byte(x), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(validate, f, "domain").CombinedOutput(); err != nil {
				t.Errorf("virt-xml-validate %s: %v\n%s", f, err, out)
			}
			if out, err := exec.Command(virsh, "-c", "test:///default", "define", f).CombinedOutput(); err != nil || !bytes.Contains(out, []byte("defined")) {
				t.Errorf("virsh define %s: %v\n%s", f, err, out)
			}
		}
	}
}

// The emitted files for seed 000 are golden: a change to any of them is a
// change users will see.
func TestFilesGolden(t *testing.T) {
	p := mustPlan(t, load(t, "seed000-epyc"), Request{VMs: 2})
	files, err := Files(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		golden := filepath.Join("testdata", "seed000", f.Name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(f.Content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test ./internal/plan -update)", err)
		}
		if string(want) != f.Content {
			t.Errorf("%s differs from %s; if intended, go test ./internal/plan -update\n%s", f.Name, golden, f.Content)
		}
	}
	dir := testhost.TempDir(t)
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(files) {
		t.Errorf("wrote %d files, want %d (no leftover .tmp)", len(entries), len(files))
	}
}

func mustCPUSet(s string) cpuset.CPUSet {
	c, err := cpuset.Parse(s)
	if err != nil {
		panic(err)
	}
	return c
}

// Issue 12: nothing is ever written outside the output directory.
func TestWriteStaysInside(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o1")
	for _, name := range []string{"../evil.xml", "../../evil00.xml", "sub/x.xml", "..", "."} {
		if err := Write(out, []File{{Name: name, Content: "x", Mode: 0o644}}); err == nil {
			t.Errorf("Write accepted %q", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "evil.xml")); err == nil {
		t.Error("wrote outside --out")
	}
	if err := Write(filepath.Join(dir, "no", "such", "parent"), nil); err == nil {
		t.Error("Write created a missing parent chain")
	}
	for _, bad := range []Request{{VMs: 0}, {VMs: 1, HousekeepingCores: 0}, {VMs: 1, HousekeepingCores: 4, PageSizeBytes: 1 << 30, Policy: BestEffort, NamePrefix: "../x"}} {
		if bad.Validate() == nil {
			t.Errorf("Validate accepted %+v", bad)
		}
	}
}

// Seed 004: the hypervisor's boot drive cannot be shared. On the HGX,
// storage under a VM's switches goes with it, except the controller of
// the disk / is on: kept home with a note naming it. Without a boot disk
// in the snapshot the planner says it could not check.
func TestHGXKeepsTheBootDisk(t *testing.T) {
	s := load(t, "hgx-h200")
	base := mustPlan(t, s, Request{VMs: 2, MemoryBytes: 64 << 30})
	st := addrs(base.VMs[0], "storage")
	if len(st) == 0 {
		t.Fatal("vm00 takes no storage")
	}
	if !slices.ContainsFunc(base.Notes, func(f check.Finding) bool {
		return f.Check == "plan.storage.boot" && f.Outcome == check.Unknown && strings.Contains(f.Message, "does not say which disk / is on")
	}) {
		t.Errorf("no boot disk in the snapshot: notes %+v", base.Notes)
	}
	boot := host.MustPCI(st[0])
	s.BootDisk = &host.BootDisk{Mount: "/", Device: "/dev/nvme0n1p2", Disk: "nvme0n1", PCI: boot, Source: "/proc/mounts"}
	p := mustPlan(t, s, Request{VMs: 2, MemoryBytes: 64 << 30})
	for _, vm := range p.VMs {
		if slices.Contains(addrs(vm, "storage"), boot.String()) {
			t.Errorf("%s takes the boot disk's controller %s", vm.Name, boot)
		}
	}
	if got := addrs(p.VMs[0], "storage"); len(got) != len(st)-1 {
		t.Errorf("vm00 storage %v, want %d drives", got, len(st)-1)
	}
	if !slices.ContainsFunc(p.Notes, func(f check.Finding) bool {
		return f.Check == "plan.storage.boot" && f.Subject == boot.String() && f.Outcome == check.Warn && strings.Contains(f.Message, "holds the disk the hypervisor boots from (nvme0n1 on /)")
	}) {
		t.Errorf("notes %+v", p.Notes)
	}
}
