package design

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/testhost"
)

func defaultFRR(spines, leaves int) FRRRequest {
	return FRRRequest{Spines: spines, Leaves: leaves, SpineASN: 65000, LeafASNBase: 65001, Loopbacks: "10.0.0.0/24",
		LeafNetworks: "10.1.0.0/16", LeafPrefixLen: 24, SpineName: "spine", LeafName: "leaf", PortPrefix: "swp", HostInterface: "hosts"}
}

// Real FRR accepts every generated config: `vtysh -C -f FILE` exits 0
// (2 with the line on a bad one), for the three Clos sizes.
func TestFRRConfigsAcceptedByVtysh(t *testing.T) {
	testhost.RequireTool(t, "vtysh")
	for _, size := range [][2]int{{2, 4}, {4, 16}, {8, 32}} {
		c, err := PlanFRR(defaultFRR(size[0], size[1]))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := WriteFiles(dir, c.Files); err != nil {
			t.Fatal(err)
		}
		if len(c.Files) != size[0]+size[1] {
			t.Errorf("%d×%d: %d files", size[0], size[1], len(c.Files))
		}
		for _, f := range c.Files {
			out, err := exec.Command("vtysh", "-C", "-f", filepath.Join(dir, f.Name)).CombinedOutput()
			if err != nil {
				t.Errorf("%d×%d: vtysh -C -f %s: %v\n%s", size[0], size[1], f.Name, err, out)
			}
		}
	}
	// The check is real: a broken line is refused.
	bad := filepath.Join(t.TempDir(), "bad.conf")
	os.WriteFile(bad, []byte("router bgp 65001\n neighbor swp1 interface remote-as externalish\n"), 0o644)
	if err := exec.Command("vtysh", "-C", "-f", bad).Run(); err == nil {
		t.Fatal("vtysh -C accepted a broken config: the check proves nothing")
	}
}

// The RFC 7938 plan in the text: every leaf its own AS, the spines one,
// unique router ids and networks, a peer on every fabric port, ECMP over
// all spines on the leaves.
func TestFRRPlan(t *testing.T) {
	c, err := PlanFRR(defaultFRR(8, 32))
	if err != nil {
		t.Fatal(err)
	}
	asns, ids, nets, names := map[uint32]string{}, map[string]string{}, map[string]string{}, map[string]bool{}
	for i, s := range c.Switches {
		conf := string(c.Files[i].Content)
		if names[s.Name] || c.Files[i].Name != s.Name+".conf" {
			t.Errorf("%s: name repeated or file %s", s.Name, c.Files[i].Name)
		}
		names[s.Name] = true
		if prev, ok := ids[s.RouterID.String()]; ok {
			t.Errorf("%s and %s share router id %s", prev, s.Name, s.RouterID)
		}
		ids[s.RouterID.String()] = s.Name
		want := []string{"hostname " + s.Name, fmt.Sprintf("router bgp %d", s.ASN), "bgp router-id " + s.RouterID.String(),
			"neighbor fabric peer-group", "neighbor fabric remote-as external", fmt.Sprintf("network %s/32", s.RouterID)}
		for _, p := range s.Ports {
			want = append(want, fmt.Sprintf("neighbor %s interface peer-group fabric", p.Name), "interface "+p.Name)
		}
		switch s.Role {
		case "spine":
			if s.ASN != 65000 || len(s.Ports) != 32 {
				t.Errorf("%s: AS %d, %d ports", s.Name, s.ASN, len(s.Ports))
			}
		case "leaf":
			if prev, ok := asns[s.ASN]; ok || s.ASN == 65000 {
				t.Errorf("%s shares AS %d with %s", s.Name, s.ASN, prev)
			}
			asns[s.ASN] = s.Name
			if prev, ok := nets[s.Network.String()]; ok {
				t.Errorf("%s and %s share %s", prev, s.Name, s.Network)
			}
			nets[s.Network.String()] = s.Name
			want = append(want, "maximum-paths 8", "network "+s.Network.String(), fmt.Sprintf("ip address %s/24", s.Gateway))
			if len(s.Ports) != 8 {
				t.Errorf("%s: %d ports", s.Name, len(s.Ports))
			}
		}
		for _, w := range want {
			if !strings.Contains(conf, "\n"+w+"\n") && !strings.Contains(conf, "\n "+w+"\n") && !strings.Contains(conf, "\n  "+w+"\n") {
				t.Errorf("%s lacks %q:\n%s", s.Name, w, conf)
			}
		}
	}
	if len(asns) != 32 || len(nets) != 32 {
		t.Errorf("%d leaf ASNs, %d networks", len(asns), len(nets))
	}
	// Leaf port swpJ and spine J's swpI are the two ends of one cable.
	if p := c.Switches[8+4].Ports[2]; p.Name != "swp3" || p.Peer != "spine03" || p.PeerPort != "swp5" {
		t.Errorf("leaf05's third port: %+v", p)
	}
	// Many leaves need the 4-byte private range, and say so.
	if _, err := PlanFRR(func() FRRRequest {
		r := defaultFRR(2, 600)
		r.Loopbacks, r.LeafNetworks = "10.0.0.0/16", "10.128.0.0/9"
		return r
	}()); err == nil || !strings.Contains(err.Error(), "4200000000") {
		t.Errorf("600 leaves from AS 65001: %v", err)
	}
	r := defaultFRR(2, 600)
	r.Loopbacks, r.LeafNetworks, r.LeafASNBase = "10.0.0.0/16", "10.128.0.0/9", 4200000000
	if c, err := PlanFRR(r); err != nil || c.Switches[601].ASN != 4200000599 {
		t.Errorf("600 leaves from AS 4200000000: %v", err)
	}
}

func TestFRRRefuses(t *testing.T) {
	for name, mod := range map[string]func(*FRRRequest){
		"no spines":              func(r *FRRRequest) { r.Spines = 0 },
		"65 spines":              func(r *FRRRequest) { r.Spines = 65 },
		"no leaves":              func(r *FRRRequest) { r.Leaves = 0 },
		"upper-case name":        func(r *FRRRequest) { r.LeafName = "Leaf" },
		"path in name":           func(r *FRRRequest) { r.SpineName = "../etc/spine" },
		"space in name":          func(r *FRRRequest) { r.SpineName = "sp ine" },
		"same names":             func(r *FRRRequest) { r.LeafName = "spine" },
		"long port names":        func(r *FRRRequest) { r.PortPrefix = "averyverylongpor" },
		"host iface is a port":   func(r *FRRRequest) { r.HostInterface = "swp9" },
		"public spine ASN":       func(r *FRRRequest) { r.SpineASN = 3320 },
		"spine ASN among leaves": func(r *FRRRequest) { r.SpineASN = 65002 },
		"public leaf ASN":        func(r *FRRRequest) { r.LeafASNBase = 100 },
		"loopbacks too small":    func(r *FRRRequest) { r.Loopbacks = "10.0.0.0/30" },
		"loopbacks not a net":    func(r *FRRRequest) { r.Loopbacks = "10.0.0.1/24" },
		"loopbacks IPv6":         func(r *FRRRequest) { r.Loopbacks = "fd00::/64" },
		"networks too small":     func(r *FRRRequest) { r.LeafNetworks = "10.1.0.0/23" },
		"overlap":                func(r *FRRRequest) { r.Loopbacks = "10.1.0.0/24" },
		"prefix len /31":         func(r *FRRRequest) { r.LeafPrefixLen = 31 },
	} {
		r := defaultFRR(2, 4)
		mod(&r)
		if _, err := PlanFRR(r); err == nil {
			t.Errorf("%s: accepted", name)
		} else if ie := (*InputError)(nil); !errors.As(err, &ie) {
			t.Errorf("%s: %v is not an *InputError", name, err)
		}
	}
}

// Files land in the directory and nowhere else: a symlink planted at a
// file's name is replaced, not followed; names with a path are refused.
// (userfile.OutDir, which finds an unusable --out before any work, is
// tested in userfile.)
func TestWriteFilesStaysInDir(t *testing.T) {
	dir, outside := t.TempDir(), filepath.Join(t.TempDir(), "victim")
	os.WriteFile(outside, []byte("keep"), 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, "leaf01.conf")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(dir, []File{{Name: "leaf01.conf", Content: []byte("new")}}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "leaf01.conf")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("leaf01.conf is not a regular file: %v %v", fi, err)
	}
	for _, bad := range []string{"../x.conf", "a/b.conf", "", "..", "/etc/x"} {
		if err := WriteFiles(dir, []File{{Name: bad, Content: []byte("x")}}); err == nil {
			t.Errorf("wrote %q", bad)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("stray files in --out: %v", entries)
	}
}

// The generated cabling plan and configs, as golden files (their
// renderings are report's: internal/report/design_test.go).
func TestGolden(t *testing.T) {
	f, _ := PlanFabric(FabricRequest{Hosts: 32, NICsPerNode: 1, Radix: 8, Rate: "4X HDR", Oversubscription: 1})
	y, err := f.CablingYAML()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "cabling-32-radix8.yaml", y)
	c, err := PlanFRR(defaultFRR(2, 4))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range c.Files {
		if f.Name == "leaf01.conf" || f.Name == "spine01.conf" {
			golden(t, "frr-2x4/"+f.Name, f.Content)
		}
	}
}
