package plan

import (
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/testhost"
)

// node is any element of the topology file, kept generic so the test
// sees exactly what NCCL's XML reader would.
type node struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []node     `xml:",any"`
}

func (n node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// The guest topology file of every VM is well-formed XML in NCCL's
// topology vocabulary (system > cpu > pci [> pci]), names every GPU and
// NIC at its guest bus id, and NCCL's nearest NIC for each GPU in it (same
// bridge, then same cpu, then across) is the NIC the plan paired it with.
func TestNCCLTopology(t *testing.T) {
	xmllint := testhost.RequireTool(t, "xmllint")
	dir := testhost.TempDir(t)
	allowed := map[string][]string{"system": {"version"}, "cpu": {"numaid", "affinity", "arch", "vendor"}, "pci": {"busid", "class", "link_speed", "link_width"}}
	for _, c := range []struct {
		host string
		req  Request
	}{
		{"seed000-epyc", Request{VMs: 2}},
		{"hgx-h200", Request{VMs: 1, MemoryBytes: 64 << 30}},
		{"hgx-h200", Request{VMs: 2, MemoryBytes: 64 << 30}},
		{"hgx-h200", Request{VMs: 4, MemoryBytes: 64 << 30}},
		{"hgx-h200", Request{VMs: 8, MemoryBytes: 64 << 30}},
	} {
		p := mustPlan(t, load(t, c.host), c.req)
		for _, vm := range p.VMs {
			name := fmt.Sprintf("%s-%d-%s", c.host, len(p.VMs), vm.Name)
			x, err := NCCLTopology(p, vm)
			if err != nil {
				t.Fatal(err)
			}
			f := filepath.Join(dir, name+".xml")
			if err := os.WriteFile(f, []byte(x), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(xmllint, "--noout", f).CombinedOutput(); err != nil {
				t.Fatalf("%s: xmllint: %v\n%s", name, err, out)
			}
			var sys node
			if err := xml.Unmarshal([]byte(x), &sys); err != nil {
				t.Fatal(err)
			}
			// Where each device is: cpu index and parent bridge.
			type place struct{ cpu, bridge string }
			where := map[string]place{}
			var walk func(n node, cpu, parent string)
			walk = func(n node, cpu, parent string) {
				for _, a := range n.Attrs {
					if !slices.Contains(allowed[n.XMLName.Local], a.Name.Local) {
						t.Errorf("%s: <%s %s> is not NCCL topology vocabulary", name, n.XMLName.Local, a.Name.Local)
					}
				}
				switch n.XMLName.Local {
				case "cpu":
					cpu = n.attr("numaid")
				case "pci":
					if n.attr("class") != "0x060400" {
						where[n.attr("busid")] = place{cpu, parent}
					}
					parent = n.attr("busid")
				}
				for _, ch := range n.Children {
					walk(ch, cpu, parent)
				}
			}
			walk(sys, "", "")
			l, _ := guestLayout(vm)
			guest := map[host.PCIAddress]string{}
			for _, g := range l.devices {
				guest[g.dev.Address] = fmt.Sprintf("0000:%02x:00.%x", g.guestBus, g.host.Function)
			}
			var nics []string
			for _, d := range vm.Devices {
				if d.Role == "nic" {
					nics = append(nics, guest[d.Address])
				}
				if (d.Role == "gpu" || d.Role == "nic") && where[guest[d.Address]] == (place{}) {
					t.Errorf("%s: %s %s (guest %s) is not in the topology", name, d.Role, d.Address, guest[d.Address])
				}
			}
			rank := func(g, n place) int {
				switch {
				case g.bridge == n.bridge:
					return 0 // PIX
				case g.cpu == n.cpu:
					return 1 // PHB
				}
				return 2 // SYS
			}
			for _, pr := range vm.Pairs {
				if !pr.NIC.IsValid() {
					continue
				}
				gp := where[guest[pr.GPU]]
				best := 3
				var nearest []string
				for _, n := range nics {
					r := rank(gp, where[n])
					if r < best {
						best, nearest = r, nil
					}
					if r == best {
						nearest = append(nearest, n)
					}
				}
				want := guest[pr.NIC]
				if !slices.Contains(nearest, want) || (pr.Level == "PIX" && len(nearest) != 1) {
					t.Errorf("%s: GPU %s (guest %s): nearest NICs in the topology %v, plan pairs it with %s (guest %s, %s)",
						name, pr.GPU, guest[pr.GPU], nearest, pr.NIC, want, pr.Level)
				}
			}
			if !strings.HasPrefix(x, "<system version=\"1\">") {
				t.Errorf("%s: %s", name, x[:40])
			}
		}
	}
}
