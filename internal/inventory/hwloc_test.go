package inventory

import (
	"encoding/xml"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
	"k8s.io/utils/cpuset"
)

// hwlocObject is the part of hwloc's XML export this test compares.
type hwlocObject struct {
	Type     string        `xml:"type,attr"`
	OSIndex  int           `xml:"os_index,attr"`
	CPUSet   string        `xml:"cpuset,attr"`
	NodeSet  string        `xml:"nodeset,attr"`
	BusID    string        `xml:"pci_busid,attr"`
	Children []hwlocObject `xml:"object"`
}

type hwlocTopology struct {
	Objects []hwlocObject `xml:"object"`
}

// hwlocView is what both tools must agree on.
type hwlocView struct {
	nodes   map[int]string // NUMA node -> cpulist
	cores   int
	pus     int
	pciNUMA map[string]int // bus id -> NUMA node, -1 when not on exactly one
	// fromKernel marks devices whose node is the kernel's own numa_node.
	fromKernel map[string]bool
}

// parseMask reads hwloc's "0x0000ffff,0xffffffff" bitmaps.
func parseMask(s string) []int {
	if s == "" {
		return nil
	}
	hex := ""
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimPrefix(part, "0x")
		hex += fmt.Sprintf("%08s", part)
	}
	n, ok := new(big.Int).SetString(hex, 16)
	if !ok {
		return nil
	}
	var out []int
	for i := 0; i < n.BitLen(); i++ {
		if n.Bit(i) == 1 {
			out = append(out, i)
		}
	}
	return out
}

func readHwloc(t *testing.T, data []byte) hwlocView {
	t.Helper()
	var topo hwlocTopology
	if err := xml.Unmarshal(data, &topo); err != nil {
		t.Fatalf("hwloc xml: %v", err)
	}
	v := hwlocView{nodes: map[int]string{}, pciNUMA: map[string]int{}}
	var walk func(o hwlocObject, nodeset string)
	walk = func(o hwlocObject, nodeset string) {
		if o.NodeSet != "" {
			nodeset = o.NodeSet
		}
		switch o.Type {
		case "NUMANode":
			v.nodes[o.OSIndex] = cpuset.New(parseMask(o.CPUSet)...).String()
		case "Core":
			v.cores++
		case "PU":
			v.pus++
		case "PCIDev", "Bridge":
			if o.BusID != "" {
				n := parseMask(nodeset)
				v.pciNUMA[o.BusID] = -1
				if len(n) == 1 {
					v.pciNUMA[o.BusID] = n[0]
				}
			}
		}
		for _, c := range o.Children {
			walk(c, nodeset)
		}
	}
	for _, o := range topo.Objects {
		walk(o, "")
	}
	return v
}

func ourView(s *host.Snapshot) hwlocView {
	v := hwlocView{nodes: map[int]string{}, pciNUMA: map[string]int{}, fromKernel: map[string]bool{}}
	for _, n := range s.NUMANodes {
		if n.GPUMemoryOf == "" { // hwloc hides GPU-memory nodes too
			v.nodes[n.ID] = n.CPUs
		}
	}
	cores := map[[2]int]bool{}
	for _, c := range s.CPUs {
		if c.Online {
			v.pus++
			cores[[2]int{c.Package, c.Core}] = true
		}
	}
	v.cores = len(cores)
	for _, d := range s.PCIDevices {
		v.pciNUMA[d.Address.String()] = d.LocalityNUMANode
		v.fromKernel[d.Address.String()] = d.LocalitySource == "numa_node"
	}
	return v
}

func lstopo(t *testing.T, bin, root string) []byte {
	t.Helper()
	cmd := exec.Command(bin, "-i", root, "--of", "xml", "--filter", "io:all", "-")
	cmd.Env = append(os.Environ(), "HWLOC_COMPONENTS=linux,-x86", "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lstopo -i %s: %v", root, err)
	}
	return out
}

func compareViews(t *testing.T, ours, theirs hwlocView) {
	t.Helper()
	if fmt.Sprint(ours.nodes) != fmt.Sprint(theirs.nodes) {
		t.Errorf("NUMA nodes: rdmalab %v, hwloc %v", ours.nodes, theirs.nodes)
	}
	if ours.pus != theirs.pus {
		t.Errorf("PUs: rdmalab %d, hwloc %d", ours.pus, theirs.pus)
	}
	if ours.cores != theirs.cores {
		t.Errorf("cores: rdmalab %d, hwloc %d", ours.cores, theirs.cores)
	}
	var addrs []string
	for a := range theirs.pciNUMA {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	compared, kernelOverHwloc := 0, 0
	for _, a := range addrs {
		got, ok := ours.pciNUMA[a]
		if !ok {
			t.Errorf("PCI %s: hwloc sees it, rdmalab does not", a)
			continue
		}
		compared++
		if theirs.pciNUMA[a] == -1 && ours.fromKernel[a] {
			// hwloc places a whole hierarchy by its host bridge and puts it
			// under the machine when the bridge spans nodes; the kernel's
			// per-function numa_node, which NCCL and nvidia-smi use, wins.
			kernelOverHwloc++
			continue
		}
		if got != theirs.pciNUMA[a] {
			t.Errorf("PCI %s NUMA node: rdmalab %d, hwloc %d", a, got, theirs.pciNUMA[a])
		}
	}
	t.Logf("agreed on %d NUMA nodes, %d cores, %d PUs, %d PCI devices (%d placed by the kernel's numa_node where hwloc says only 'the machine')", len(ours.nodes), ours.cores, ours.pus, compared, kernelOverHwloc)
}

// TestAgreesWithHwloc runs the real lstopo on the same trees and compares
// NUMA nodes, cores, PUs and the NUMA node of every PCI device.
func TestAgreesWithHwloc(t *testing.T) {
	bin := testhost.RequireTool(t, "lstopo-no-graphics")
	roots := map[string]string{}
	for name, c := range testhost.Captures(t) {
		// The procfs/node_exporter fixtures are hand-assembled and lack the
		// CPU topology hwloc needs (it fails or reads this machine instead);
		// the gpud capture is /sys/class/infiniband alone.
		if c.IBClassOnly || strings.HasSuffix(name, "-fixtures") || strings.HasSuffix(name, "-sys") {
			continue
		}
		roots[name] = c.Root
	}
	for name, mk := range testhost.Seeds() {
		roots[name] = testhost.WriteTree(t, mk())
	}
	for name, root := range roots {
		t.Run(name, func(t *testing.T) {
			s := collect(t, testhost.Capture{Root: root})
			compareViews(t, ourView(s), readHwloc(t, lstopo(t, bin, root)))
		})
	}
}

// hwloc's own expected output sits beside its tarballs: agree with it too.
func TestAgreesWithHwlocExpectedXML(t *testing.T) {
	n := 0
	for name, c := range testhost.Captures(t) {
		if c.HwlocXML == "" {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(c.HwlocXML)
			if err != nil {
				t.Fatal(err)
			}
			compareViews(t, ourView(collect(t, c)), readHwloc(t, data))
		})
	}
	if n == 0 {
		t.Fatal("no hwloc expected XML found beside the tarballs")
	}
}

// BenchmarkInventoryVsLstopo times inventory and lstopo on the largest
// capture in one run and reports the ratio (below 1 means rdmalab is faster).
func BenchmarkInventoryVsLstopo(b *testing.B) {
	bin := testhost.RequireTool(b, "lstopo-no-graphics")
	var largest testhost.Capture
	most := 0
	for _, c := range testhost.Captures(b) {
		if c.IBClassOnly {
			continue
		}
		if n := countFiles(c.Root); n > most {
			most, largest = n, c
		}
	}
	var oursNs, theirsNs int64
	for b.Loop() {
		start := time.Now()
		collect(b, largest)
		mid := time.Now()
		cmd := exec.Command(bin, "-i", largest.Root, "--of", "xml", "--filter", "io:all", "-")
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		oursNs += mid.Sub(start).Nanoseconds()
		theirsNs += time.Now().Sub(mid).Nanoseconds()
	}
	b.ReportMetric(float64(oursNs)/float64(b.N)/1e6, "rdmalab-ms/op")
	b.ReportMetric(float64(theirsNs)/float64(b.N)/1e6, "lstopo-ms/op")
	b.ReportMetric(float64(oursNs)/float64(theirsNs), "ratio")
	b.Logf("%s (%d files): rdmalab inventory %.1f ms, lstopo %.1f ms, ratio %.2f", largest.Name, most, float64(oursNs)/float64(b.N)/1e6, float64(theirsNs)/float64(b.N)/1e6, float64(oursNs)/float64(theirsNs))
}
