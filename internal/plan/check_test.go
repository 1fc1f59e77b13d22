package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/examples"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

func seedDomains(t *testing.T) (vm00, vm01 string) {
	t.Helper()
	p := mustPlan(t, load(t, "seed000-epyc"), Request{VMs: 2})
	a, err := DomainXML(p, p.VMs[0])
	if err != nil {
		t.Fatal(err)
	}
	b, err := DomainXML(p, p.VMs[1])
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

func judge(t *testing.T, xmls ...string) []check.Finding {
	t.Helper()
	var doms []hostcheck.VMDomain
	for i, x := range xmls {
		d, err := ParseDomain(string(rune('a'+i))+".xml", []byte(x))
		if err != nil {
			t.Fatal(err)
		}
		doms = append(doms, d)
	}
	return notPassing(hostcheck.JudgeDomains(load(t, "seed000-epyc"), doms))
}

// notPassing drops the passes plan check counts (a clean domain is
// proven): the tests hold the findings.
func notPassing(fs []check.Finding) []check.Finding {
	var out []check.Finding
	for _, f := range fs {
		if f.Outcome != check.Pass {
			out = append(out, f)
		}
	}
	return out
}

// Seed 000's own layout passes; moving vm00's vCPUs to node 1, or its
// memory to node 1, gives exactly one finding naming the VM, the CPUs or
// nodes, and the devices' nodes.
func TestCheckSeed000(t *testing.T) {
	vm00, vm01 := seedDomains(t)
	if fs := judge(t, vm00, vm01); len(fs) != 0 {
		t.Fatalf("the plan's own domains: %+v", fs)
	}
	// Node 1's CPUs are 8-15,40-47: move vCPU pins 2→8, 34→40, ... onto them.
	moved := vm00
	for i, c := range []string{"2", "34", "3", "35", "4", "36", "5", "37", "6", "38", "7", "39", "16", "48", "17", "49", "18", "50", "19", "51", "20", "52", "21", "53"} {
		to := []string{"8", "40", "9", "41", "10", "42", "11", "43", "12", "44", "13", "45", "14", "46", "15", "47"}[i%16]
		moved = strings.Replace(moved, "cpuset=\""+c+"\"", "cpuset=\""+to+"\"", 1)
	}
	for _, c := range []struct {
		name, xml, id string
		want          []string
	}{
		{"vCPUs on node 1", moved, "vm.vcpu.numa", []string{"node 1", "8-15", "0000:06:00.0 node 0", "0000:41:00.0 node 2"}},
		{"memory on node 1", strings.NewReplacer(`nodeset="0,2"`, `nodeset="1"`, `cellid="0" mode="strict" nodeset="0"`, `cellid="0" mode="strict" nodeset="1"`,
			`cellid="1" mode="strict" nodeset="2"`, `cellid="1" mode="strict" nodeset="1"`).Replace(vm00), "vm.memory.numa", []string{"memory on node 1", "devices are on node 0+2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.xml == vm00 {
				t.Fatal("edit did not change the domain")
			}
			fs := judge(t, c.xml)
			if len(fs) != 1 || fs[0].Check != c.id || fs[0].Subject != "vm00" {
				t.Fatalf("want one %s about vm00, got %+v", c.id, fs)
			}
			for _, w := range c.want {
				if !strings.Contains(fs[0].Message, w) {
					t.Errorf("%q lacks %q", fs[0].Message, w)
				}
			}
		})
	}
	// Without vcpupin every vCPU floats.
	var unpinned []string
	for _, l := range strings.Split(vm00, "\n") {
		if !strings.Contains(l, "<vcpupin") {
			unpinned = append(unpinned, l)
		}
	}
	if fs := judge(t, strings.Join(unpinned, "\n")); len(fs) != 1 || fs[0].Check != "vm.vcpu.pinned" || !strings.Contains(fs[0].Message, "28 of 28 vCPUs") {
		t.Errorf("unpinned vm00: %+v", fs)
	}
	// Judged together with vm01, the moved vCPUs also share vm01's CPUs.
	fs := judge(t, moved, vm01)
	if len(fs) != 2 || fs[0].Check != "vm.cpu.shared" || fs[0].Subject != "vm00 + vm01" {
		t.Errorf("moved vm00 with vm01: %+v", fs)
	}
}

// Seed 000's domains on its host without isolcpus/nohz_full: the pinned
// vCPUs share their cores with the host's own work (seed 000's contention
// test: TCP −67%, p99.9 +45%), one finding per VM naming the CPUs; with
// the seed's isolation, none.
func TestCheckSeed000WithoutIsolation(t *testing.T) {
	vm00, vm01 := seedDomains(t)
	var doms []hostcheck.VMDomain
	for i, x := range []string{vm00, vm01} {
		d, err := ParseDomain(string(rune('a'+i))+".xml", []byte(x))
		if err != nil {
			t.Fatal(err)
		}
		doms = append(doms, d)
	}
	s := load(t, "seed000-epyc")
	s.Kernel.Isolation = host.CPUIsolation{}
	fs := notPassing(hostcheck.JudgeDomains(s, doms))
	if len(fs) != 2 {
		t.Fatalf("want vm.vcpu.isolated for vm00 and vm01, got %+v", fs)
	}
	for i, f := range fs {
		if f.Check != "vm.vcpu.isolated" || f.Outcome != check.Fail || f.Subject != []string{"vm00", "vm01"}[i] ||
			!strings.Contains(f.Message, "the host isolates no CPU") || !strings.Contains(f.Fix[0], "isolcpus=") {
			t.Errorf("%+v", f)
		}
	}
}

// The real domain XMLs in ../shared/testdata/libvirt: what is a domain is
// judged (against seed 000's host, which is not theirs: their devices are
// not on it), what is not is refused with one line naming the file.
func TestCheckRealDomains(t *testing.T) {
	dir := filepath.Join(testhost.SharedTestdata(t), "libvirt")
	cases := []struct {
		file   string
		name   string
		refuse string
		want   map[string]string // check id → subject
		hostPC []string
	}{
		{file: "insights-core-qemu_xml-sample_05-s00c06h0_vcpupin-emulatorpin_numatune-memnode-2cells_sriov-vf-interface-hostdev_docstring-indented.xml.txt",
			name: "05-s00c06h0",
			// vCPUs 1-4 and emulator 1-4 overlap; memory 0-1 with no device
			// known on this host; two VFs this host lacks; vCPU 1 on a CPU
			// seed 000's host keeps for housekeeping.
			want: map[string]string{"vm.vcpu.isolated": "05-s00c06h0", "vm.emulator.isolated": "05-s00c06h0", "vm.hugepages": "05-s00c06h0", "vm.device.local": "05-s00c06h0"}},
		{file: "sotigr-kvm-notes_brive-fedora-vm_q35_vcpupin-smt-pairs_emulatorpin-iothreadpin_3-pci-hostdev-gpu-audio-usb_no-numatune.xml.txt",
			name:   "brive",
			want:   map[string]string{"vm.vcpu.isolated": "brive", "vm.memory.numa": "brive", "vm.hugepages": "brive", "vm.device.local": "brive", "vm.emulator.isolated": "brive"},
			hostPC: []string{"0000:25:00.0", "0000:25:00.1", "0000:2a:00.3"}},
		{file: "openstack-nova-libvirt-numa-testing-doc_virsh-dumpxml-instance-00000003_vcpupin-emulatorpin-numatune_author-elided_rst-indented_excerpt.txt",
			name: "instance-00000003",
			want: map[string]string{"vm.vcpu.isolated": "instance-00000003", "vm.emulator.isolated": "instance-00000003", "vm.hugepages": "instance-00000003"}},
		{file: "rhel-ai-kvm-guide_virsh-dumpxml-xq_4-gpu-hostdev-source-vs-guest-address.txt", refuse: "no libvirt <domain> XML"},
		{file: "leonardo-hpc-notes_lrdn4293_numactl-hardware_8-nodes-SNC4-2socket_distances-12-21.txt", refuse: "no libvirt <domain> XML"},
	}
	s := load(t, "seed000-epyc")
	for _, c := range cases {
		t.Run(c.file[:20], func(t *testing.T) {
			path := filepath.Join(dir, c.file)
			if _, err := os.Stat(path); err != nil {
				t.Fatal(err)
			}
			fs, err := Check(s, []string{path})
			fs = notPassing(fs)
			if c.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), c.refuse) || !strings.Contains(err.Error(), c.file) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("want a one-line refusal naming the file, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d, _ := ReadDomain(path)
			if d.Name != c.name {
				t.Errorf("name %q, want %q", d.Name, c.name)
			}
			for _, a := range c.hostPC {
				if !strings.Contains(host.JoinPCI(d.HostPCI, " "), a) {
					t.Errorf("hostdevs %v lack %s", d.HostPCI, a)
				}
			}
			got := map[string]string{}
			for _, f := range fs {
				got[f.Check] = f.Subject
				// plan check prints real fixes: every line said, naming
				// the domain or its devices, no placeholder for what the
				// domain and the host already tell.
				fix := strings.Join(f.Fix, "\n")
				if len(f.Fix) == 0 || slices.Contains(f.Fix, "") || !strings.Contains(fix, c.name) && !strings.Contains(fix, "isolcpus=") ||
					strings.Contains(fix, "virsh emulatorpin VM ") || strings.Contains(fix, "NODES") || strings.Contains(fix, "HOUSEKEEPING") {
					t.Errorf("%s %s: fix %q", f.Check, f.Subject, f.Fix)
				}
			}
			for id, subj := range c.want {
				if got[id] != subj {
					t.Errorf("want %s about %s; findings %+v", id, subj, fs)
				}
			}
			for id := range got {
				if _, ok := c.want[id]; !ok {
					t.Errorf("unexpected %s: %+v", id, fs)
				}
			}
		})
	}
}

// Whatever a file holds, ParseDomain returns a named domain or one line
// naming the file; it never panics.
func FuzzParseDomain(f *testing.F) {
	vm00, _ := seedDomainsF(f)
	f.Add([]byte(vm00))
	f.Add([]byte("  $ virsh dumpxml x\n  ...\n  <vcpu>2</vcpu>\n"))
	f.Add([]byte("<domain><name>a</name><vcpu cpuset='0-3'>4</vcpu></domain>"))
	if entries, err := os.ReadDir(filepath.Join("..", "..", "..", "shared", "testdata", "libvirt")); err == nil {
		for _, e := range entries {
			if b, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "testdata", "libvirt", e.Name())); err == nil {
				f.Add(b)
			}
		}
	}
	host, err := examples.Load("seed000-epyc")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDomain("in.xml", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "in.xml: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: want one line naming the file", err)
			}
			return
		}
		if d.Name == "" || d.VCPUPins == nil {
			t.Fatalf("parsed domain without a name: %+v", d)
		}
		hostcheck.JudgeDomains(host, []hostcheck.VMDomain{d})
	})
}

func seedDomainsF(f *testing.F) (string, string) {
	s, err := examples.Load("seed000-epyc")
	if err != nil {
		f.Fatal(err)
	}
	p, err := Make(s, Request{VMs: 2})
	if err != nil {
		f.Fatal(err)
	}
	a, _ := DomainXML(p, p.VMs[0])
	b, _ := DomainXML(p, p.VMs[1])
	return a, b
}
