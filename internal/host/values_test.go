package host

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestParsePCIAddress(t *testing.T) {
	for _, tc := range []struct {
		in, want, short string
		bad             bool
	}{
		{in: "0000:41:00.0", want: "0000:41:00.0", short: "41:00.0"},
		{in: "41:00.1", want: "0000:41:00.1", short: "41:00.1"},
		{in: "0035:05:1f.7", want: "0035:05:1f.7", short: "0035:05:1f.7"},
		{in: "0000:41:00:0", bad: true}, // procfs's PciDeviceLocation.String() form
		{in: "0000:41:20.0", bad: true}, // device > 31
		{in: "0000:41:00.8", bad: true},
		{in: "pci0000:00", bad: true},
		{in: "", bad: true},
	} {
		a, err := ParsePCIAddress(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: parsed as %v, want an error", tc.in, a)
			}
			continue
		}
		if err != nil || a.String() != tc.want || a.Short() != tc.short {
			t.Errorf("%q = %q/%q, %v; want %q/%q", tc.in, a.String(), a.Short(), err, tc.want, tc.short)
		}
	}
}

func TestParseIBRate(t *testing.T) {
	for _, tc := range []struct {
		in    string
		gbps  float64
		width int
		name  string
		bad   bool
	}{
		{in: "100 Gb/sec (4X EDR)", gbps: 100, width: 4, name: "EDR"},
		{in: "2.5 Gb/sec (1X SDR)", gbps: 2.5, width: 1, name: "SDR"},
		{in: "10 Gb/sec (4X)", gbps: 10, width: 4, name: "SDR"}, // old kernels leave SDR unnamed
		{in: "200 Gb/sec (2X NDR)", gbps: 200, width: 2, name: "NDR"},
		{in: "1600 Gb/sec (8X XDR)", gbps: 1600, width: 8, name: "XDR"},
		{in: "56 Gb/sec (4X FDR)\n", gbps: 56, width: 4, name: "FDR"},
		{in: "40 Gb/sec (3X QDR)", bad: true},
		{in: "N/A", bad: true},
		{in: "", bad: true},
	} {
		r, err := ParseIBRate(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: want an error, got %+v", tc.in, r)
			}
			if r.Raw == "" && tc.in != "" {
				t.Errorf("%q: the raw string must be kept even when it does not parse", tc.in)
			}
			continue
		}
		if err != nil || r.Gbps != tc.gbps || r.WidthLanes != tc.width || r.SpeedName != tc.name {
			t.Errorf("%q = %+v, %v", tc.in, r, err)
		}
	}
}

func TestParseNodeType(t *testing.T) {
	s, err := ParseNodeType("1: CA\n")
	if err != nil || s != "CA" {
		t.Errorf("got %q %v", s, err)
	}
	if _, err := ParseNodeType("CA"); err == nil {
		t.Error("want an error without the number")
	}
}

func TestParseGID(t *testing.T) {
	a, err := ParseGID("0000:0000:0000:0000:0000:ffff:0a00:0001")
	if err != nil {
		t.Fatal(err)
	}
	if v4, ok := GIDIPv4(a); !ok || v4.String() != "10.0.0.1" {
		t.Errorf("ipv4 = %v %v", v4, ok)
	}
	if a, err := ParseGID("fe80:0000:0000:0000:526b:4bff:fe43:fe3a"); err != nil || a.String() != "fe80::526b:4bff:fe43:fe3a" {
		t.Errorf("link-local = %v %v", a, err)
	}
	for _, bad := range []string{"10.0.0.1", "fe80::1%eth0", "zz", ""} {
		if _, err := ParseGID(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestParsePCIeSpeed(t *testing.T) {
	for in, want := range map[string]float64{"8.0 GT/s PCIe": 8, "8 GT/s": 8, "2.5 GT/s PCIe": 2.5, "32.0 GT/s PCIe": 32, "Unknown": 0, "": 0} {
		if got, err := ParsePCIeSpeed(in); err != nil || got != want {
			t.Errorf("%q = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParsePCIeSpeed("fast"); err == nil {
		t.Error("want an error")
	}
}

func TestParseCmdline(t *testing.T) {
	ps := ParseCmdline(`BOOT_IMAGE=/vmlinuz ro quiet iommu=pt isolcpus=managed_irq,domain,2-29 foo="a b" hugepages=64`)
	var keys []string
	for _, p := range ps {
		keys = append(keys, p.Key)
	}
	if !slices.Equal(keys, []string{"BOOT_IMAGE", "ro", "quiet", "iommu", "isolcpus", "foo", "hugepages"}) {
		t.Fatalf("keys = %v", keys)
	}
	k := Kernel{Params: ps}
	if v, _ := k.Param("foo"); v != "a b" {
		t.Errorf("quoted value = %q", v)
	}
	if v, _ := k.Param("isolcpus"); v != "managed_irq,domain,2-29" {
		t.Errorf("isolcpus = %q", v)
	}
	if _, ok := k.Param("nohz_full"); ok {
		t.Error("absent key found")
	}
}

func TestParseModules(t *testing.T) {
	mods, errs := ParseModules("nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\nib_core 458752 8 rdma_cm,ib_ipoib,ib_umad, Live 0x0000000000000000\nbroken line\n")
	if len(mods) != 2 || len(errs) != 1 {
		t.Fatalf("mods %+v errs %v", mods, errs)
	}
	if mods[1].Name != "ib_core" || mods[1].RefCount != 8 || !slices.Equal(mods[1].UsedBy, []string{"rdma_cm", "ib_ipoib", "ib_umad"}) {
		t.Errorf("ib_core = %+v", mods[1])
	}
	if !(Kernel{Modules: mods}).HasModule("nvidia-peermem") {
		t.Error("HasModule must treat - and _ alike")
	}
}

func TestParseSizeAndMask(t *testing.T) {
	for in, want := range map[string]int64{"1G": 1 << 30, "2M": 2 << 20, "1048576kB": 1 << 30, "4096": 4096} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("%q = %d %v", in, got, err)
		}
	}
	cpus, err := ParseCPUMask("00000000,00000003,0000ffff")
	if err != nil || !slices.Equal(cpus, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 32, 33}) {
		t.Errorf("mask = %v %v", cpus, err)
	}
}

func FuzzParsePCIAddress(f *testing.F) {
	for _, s := range []string{"0000:41:00.0", "41:00.1", "ffff:ff:1f.7", "0000:41:00:0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParsePCIAddress(s)
		if err != nil {
			return
		}
		b, err := ParsePCIAddress(a.String())
		if err != nil || b != a {
			t.Fatalf("%q -> %q does not round-trip: %v", s, a.String(), err)
		}
		// The text form is the kernel's, read back equal; Compare orders
		// as that text sorts; the zero address is below every address.
		var c PCIAddress
		if txt, _ := a.MarshalText(); c.UnmarshalText(txt) != nil || c != a || string(txt) != a.String() {
			t.Fatalf("%q: text %q reads back as %v", s, txt, c)
		}
		z := MustPCI("0000:00:00.0")
		if got, want := a.Compare(z), strings.Compare(a.String(), z.String()); got != want || (PCIAddress{}).Compare(a) >= 0 {
			t.Fatalf("%q: Compare %d, text order %d", s, got, want)
		}
		if n, err := NewPCIAddress(uint(a.Domain), uint(a.Bus), uint(a.Device), uint(a.Function)); err != nil || n != a {
			t.Fatalf("%q: NewPCIAddress gives %v %v", s, n, err)
		}
	})
}

// An address absent from the model is absent from the JSON (omitzero), as
// an empty string was; "" and old files' forms read back.
func TestPCIAddressJSON(t *testing.T) {
	b, err := json.Marshal(RDMADevice{Name: "mlx5_0", Ports: []RDMAPort{}})
	if err != nil || strings.Contains(string(b), "pci_address") {
		t.Errorf("absent address written: %s %v", b, err)
	}
	var g GPU
	if err := json.Unmarshal([]byte(`{"address":"41:00.0","switch":""}`), &g); err != nil || g.Address != MustPCI("0000:41:00.0") || g.Switch.IsValid() {
		t.Errorf("%+v %v", g, err)
	}
	if err := json.Unmarshal([]byte(`{"address":"41:00"}`), &g); err == nil {
		t.Error("a malformed address was read")
	}
	if b, _ := json.Marshal(g.Switch); string(b) != `""` || (PCIAddress{}).Short() != "" || (PCIAddress{}).Slot() != "" {
		t.Errorf("zero address: %s", b)
	}
}

func FuzzParseIBRate(f *testing.F) {
	for _, s := range []string{"100 Gb/sec (4X EDR)", "10 Gb/sec (4X)", "2.5 Gb/sec (1X SDR)", "N/A (no PMA)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseIBRate(s)
		if err == nil && (r.Gbps < 0 || !validWidth(r.WidthLanes) || r.SpeedName == "") {
			t.Fatalf("%q parsed into an impossible rate %+v", s, r)
		}
	})
}

func FuzzParseGID(f *testing.F) {
	f.Add("fe80:0000:0000:0000:526b:4bff:fe43:fe3a")
	f.Add("0000:0000:0000:0000:0000:ffff:0a00:0001")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseGID(s)
		if err != nil {
			return
		}
		if b, err := ParseGID(a.String()); err != nil || b != a {
			t.Fatalf("%q does not round-trip", s)
		}
	})
}

func FuzzParseCmdline(f *testing.F) {
	f.Add(`ro iommu=pt isolcpus=2-29,34-61 foo="a b c" x=`)
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range ParseCmdline(s) {
			if p.Key == "" && !p.HasValue {
				t.Fatalf("%q gave an empty parameter", s)
			}
		}
	})
}

func FuzzParseModules(f *testing.F) {
	f.Add("ib_core 458752 8 rdma_cm,ib_ipoib, Live 0x0000000000000000\n")
	f.Fuzz(func(t *testing.T, s string) {
		mods, _ := ParseModules(s)
		for _, m := range mods {
			if m.Name == "" || m.SizeBytes < 0 {
				t.Fatalf("%q gave %+v", s, m)
			}
		}
	})
}

func FuzzParseCPUMaskAndPCIeSpeed(f *testing.F) {
	f.Add("00000000,0000ffff", "8.0 GT/s PCIe")
	f.Fuzz(func(t *testing.T, mask, speed string) {
		cpus, err := ParseCPUMask(mask)
		if err == nil && !slices.IsSorted(cpus) {
			t.Fatalf("%q: unsorted %v", mask, cpus)
		}
		if v, err := ParsePCIeSpeed(speed); err == nil && (v < 0 || v > 1024) {
			t.Fatalf("%q = %v", speed, v)
		}
	})
}

func TestPathLevel(t *testing.T) {
	s := &Snapshot{PCIDevices: []PCIDevice{
		{Address: MustPCI("0000:00:01.0"), HostBridge: "pci0000:00", BridgeRole: "root_port", LocalityNUMANode: 0},
		{Address: MustPCI("0000:01:00.0"), HostBridge: "pci0000:00", Parents: []PCIAddress{MustPCI("0000:00:01.0")}, BridgeRole: "switch_upstream", LocalityNUMANode: 0},
		{Address: MustPCI("0000:02:00.0"), HostBridge: "pci0000:00", Parents: []PCIAddress{MustPCI("0000:01:00.0"), MustPCI("0000:00:01.0")}, BridgeRole: "switch_downstream", LocalityNUMANode: 0},
		{Address: MustPCI("0000:02:01.0"), HostBridge: "pci0000:00", Parents: []PCIAddress{MustPCI("0000:01:00.0"), MustPCI("0000:00:01.0")}, BridgeRole: "switch_downstream", LocalityNUMANode: 0},
		{Address: MustPCI("0000:03:00.0"), HostBridge: "pci0000:00", Parents: []PCIAddress{MustPCI("0000:02:00.0"), MustPCI("0000:01:00.0"), MustPCI("0000:00:01.0")}, LocalityNUMANode: 0},
		{Address: MustPCI("0000:04:00.0"), HostBridge: "pci0000:00", Parents: []PCIAddress{MustPCI("0000:02:01.0"), MustPCI("0000:01:00.0"), MustPCI("0000:00:01.0")}, LocalityNUMANode: 0},
		// a second switch stacked below the first
		{Address: MustPCI("0000:05:00.0"), HostBridge: "pci0000:00", Parents: []PCIAddress{MustPCI("0000:04:00.0"), MustPCI("0000:02:01.0"), MustPCI("0000:01:00.0"), MustPCI("0000:00:01.0")}, BridgeRole: "switch_upstream", LocalityNUMANode: 0},
		{Address: MustPCI("0000:06:00.0"), HostBridge: "pci0000:00", Parents: []PCIAddress{MustPCI("0000:05:00.0"), MustPCI("0000:04:00.0"), MustPCI("0000:02:01.0"), MustPCI("0000:01:00.0"), MustPCI("0000:00:01.0")}, BridgeRole: "switch_downstream", LocalityNUMANode: 0},
		{Address: MustPCI("0000:07:00.0"), HostBridge: "pci0000:00", Parents: []PCIAddress{MustPCI("0000:06:00.0"), MustPCI("0000:05:00.0"), MustPCI("0000:04:00.0"), MustPCI("0000:02:01.0"), MustPCI("0000:01:00.0"), MustPCI("0000:00:01.0")}, LocalityNUMANode: 0},
		{Address: MustPCI("0000:00:02.0"), HostBridge: "pci0000:00", BridgeRole: "root_port", LocalityNUMANode: 0},
		{Address: MustPCI("0000:08:00.0"), HostBridge: "pci0000:00", Parents: []PCIAddress{MustPCI("0000:00:02.0")}, LocalityNUMANode: 0},
		{Address: MustPCI("0000:80:00.0"), HostBridge: "pci0000:80", LocalityNUMANode: 0},
		{Address: MustPCI("0000:90:00.0"), HostBridge: "pci0000:90", LocalityNUMANode: 1},
		{Address: MustPCI("0000:a0:00.0"), HostBridge: "pci0000:a0", LocalityNUMANode: -1},
	}}
	br := s.BridgeIndex()
	for _, tc := range []struct{ a, b, want string }{
		{"0000:03:00.0", "0000:04:00.0", LevelPIX},
		{"0000:03:00.0", "0000:07:00.0", LevelPXB},
		{"0000:03:00.0", "0000:08:00.0", LevelPHB},
		{"0000:03:00.0", "0000:80:00.0", LevelNODE},
		{"0000:03:00.0", "0000:90:00.0", LevelSYS},
		{"0000:03:00.0", "0000:a0:00.0", LevelSYSUnknown},
		{"0000:03:00.0", "0000:03:00.0", LevelSelf},
	} {
		if got := PathLevel(s.PCI(MustPCI(tc.a)), s.PCI(MustPCI(tc.b)), br); got != tc.want {
			t.Errorf("%s↔%s = %s, want %s", tc.a, tc.b, got, tc.want)
		}
		if got := PathLevel(s.PCI(MustPCI(tc.b)), s.PCI(MustPCI(tc.a)), br); got != tc.want {
			t.Errorf("%s↔%s (reversed) = %s, want %s", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestGUID(t *testing.T) {
	for _, s := range []string{"0x506b4b0300433a00", "506b:4b03:0043:3a00", "506b4b0300433a00", "0X506B4B0300433A00"} {
		g, err := ParseGUID(s)
		if err != nil || g.String() != "0x506b4b0300433a00" || g.Sysfs() != "506b:4b03:0043:3a00" {
			t.Errorf("ParseGUID(%q) = %v %v", s, g, err)
		}
	}
	for _, bad := range []string{"", "0x", "xyz", "0x1234567890abcdef0", "12:34"} {
		if _, err := ParseGUID(bad); err == nil {
			t.Errorf("ParseGUID(%q) accepted", bad)
		}
	}
}

func FuzzParseGUID(f *testing.F) {
	f.Add("0x506b4b0300433a00")
	f.Add("506b:4b03:0043:3a00")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGUID(s)
		if err != nil {
			return
		}
		// Both printed forms read back as the same GUID.
		for _, back := range []string{g.String(), g.Sysfs()} {
			if h, err := ParseGUID(back); err != nil || h != g {
				t.Fatalf("%q → %v → %q → %v %v", s, g, back, h, err)
			}
		}
	})
}
