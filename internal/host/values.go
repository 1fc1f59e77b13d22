package host

import (
	"cmp"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// PCIAddress is a PCI function address in the kernel's form, 0000:41:00.0.
// The zero value is invalid: no address (its text is "", and a model
// field tagged omitzero leaves it out). It is comparable, so it keys maps.
type PCIAddress struct {
	Domain   uint16
	Bus      uint8
	Device   uint8 // 0..31
	Function uint8 // 0..7
	valid    bool
}

// ParsePCIAddress parses "DDDD:BB:DD.F", or "BB:DD.F" with domain 0 (the
// form lspci and the seed articles print).
func ParsePCIAddress(s string) (PCIAddress, error) {
	var a PCIAddress
	rest := s
	parts := strings.Split(s, ":")
	switch len(parts) {
	case 3:
		d, err := strconv.ParseUint(parts[0], 16, 16)
		if err != nil || len(parts[0]) != 4 {
			return a, fmt.Errorf("pci address %q: bad domain", s)
		}
		a.Domain = uint16(d)
		rest = parts[1] + ":" + parts[2]
	case 2:
	default:
		return a, fmt.Errorf("pci address %q: want DDDD:BB:DD.F", s)
	}
	bus, devfn, ok := strings.Cut(rest, ":")
	if !ok || len(bus) != 2 {
		return a, fmt.Errorf("pci address %q: bad bus", s)
	}
	b, err := strconv.ParseUint(bus, 16, 8)
	if err != nil {
		return a, fmt.Errorf("pci address %q: bad bus", s)
	}
	dev, fn, ok := strings.Cut(devfn, ".")
	if !ok || len(dev) != 2 || len(fn) != 1 {
		return a, fmt.Errorf("pci address %q: want DD.F after the bus", s)
	}
	d, err := strconv.ParseUint(dev, 16, 8)
	if err != nil || d > 31 {
		return a, fmt.Errorf("pci address %q: bad device", s)
	}
	f, err := strconv.ParseUint(fn, 16, 8)
	if err != nil || f > 7 {
		return a, fmt.Errorf("pci address %q: bad function", s)
	}
	a.Bus, a.Device, a.Function, a.valid = uint8(b), uint8(d), uint8(f), true
	return a, nil
}

// NewPCIAddress is the address of domain, bus, device and function as
// numbers (libvirt's XML holds them so); device above 31 or function
// above 7 is an error.
func NewPCIAddress(domain, bus, device, function uint) (PCIAddress, error) {
	if domain > 0xffff || bus > 0xff || device > 31 || function > 7 {
		return PCIAddress{}, fmt.Errorf("pci address %x:%x:%x.%x: out of range", domain, bus, device, function)
	}
	return PCIAddress{Domain: uint16(domain), Bus: uint8(bus), Device: uint8(device), Function: uint8(function), valid: true}, nil
}

// MustPCI is ParsePCIAddress for addresses written in code (tests, the
// seed machines); it panics on a malformed one.
func MustPCI(s string) PCIAddress {
	a, err := ParsePCIAddress(s)
	if err != nil {
		panic(err)
	}
	return a
}

// IsValid reports whether a was parsed.
func (a PCIAddress) IsValid() bool { return a.valid }

// String prints the kernel's form, 0000:41:00.0.
func (a PCIAddress) String() string {
	if !a.valid {
		return ""
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", a.Domain, a.Bus, a.Device, a.Function)
}

// Short prints the lspci form without domain 0, 41:00.0.
func (a PCIAddress) Short() string {
	if a.Domain != 0 || !a.valid {
		return a.String()
	}
	return a.String()[5:]
}

// Slot is the address without the function: functions of one slot are
// one device. The zero address has no slot ("").
func (a PCIAddress) Slot() string {
	s := a.String()
	if s == "" {
		return ""
	}
	return s[:len(s)-2]
}

// JoinPCI joins the addresses' kernel forms with sep, as strings.Join.
func JoinPCI(as []PCIAddress, sep string) string {
	ss := make([]string, len(as))
	for i, a := range as {
		ss[i] = a.String()
	}
	return strings.Join(ss, sep)
}

// Compare orders addresses as their kernel form sorts (domain, bus,
// device, function), the zero address first.
func (a PCIAddress) Compare(b PCIAddress) int {
	key := func(x PCIAddress) uint64 {
		if !x.valid {
			return 0
		}
		return 1<<40 | uint64(x.Domain)<<24 | uint64(x.Bus)<<16 | uint64(x.Device)<<8 | uint64(x.Function)
	}
	return cmp.Compare(key(a), key(b))
}

// MarshalText writes String: "" for the zero address.
func (a PCIAddress) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads what ParsePCIAddress does; "" is the zero address.
func (a *PCIAddress) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*a = PCIAddress{}
		return nil
	}
	v, err := ParsePCIAddress(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// IBRate is a parsed /sys/class/infiniband/<dev>/ports/<n>/rate string.
type IBRate struct {
	Raw        string  `json:"raw"`
	Gbps       float64 `json:"gbps"`
	WidthLanes int     `json:"width_lanes"` // 1, 2, 4, 8, 12
	SpeedName  string  `json:"speed_name"`  // SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR; "" on old kernels for SDR
}

var rateRE = lazyre.New(`^(\d+(?:\.\d+)?) Gb/sec \((\d+)X(?: ([A-Za-z0-9]+))?\)$`)

// ParseIBRate parses "100 Gb/sec (4X EDR)". Old kernels print SDR without a
// name ("10 Gb/sec (4X)"); that is read as SDR.
func ParseIBRate(s string) (IBRate, error) {
	s = strings.TrimSpace(s)
	m := rateRE().FindStringSubmatch(s)
	if m == nil {
		return IBRate{Raw: s}, fmt.Errorf("rate %q: want like %q", s, "100 Gb/sec (4X EDR)")
	}
	g, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return IBRate{Raw: s}, fmt.Errorf("rate %q: %w", s, err)
	}
	w, err := strconv.Atoi(m[2])
	if err != nil || !validWidth(w) {
		return IBRate{Raw: s}, fmt.Errorf("rate %q: width %sX is not an InfiniBand width", s, m[2])
	}
	name := m[3]
	if name == "" {
		name = "SDR"
	}
	return IBRate{Raw: s, Gbps: g, WidthLanes: w, SpeedName: name}, nil
}

func validWidth(w int) bool { return w == 1 || w == 2 || w == 4 || w == 8 || w == 12 }

// Width prints the lane count the way ibstat does ("4X").
func (r IBRate) Width() string {
	if r.WidthLanes == 0 {
		return ""
	}
	return strconv.Itoa(r.WidthLanes) + "X"
}

// ParseNodeType reads sysfs's node_type, "1: CA", into its name (port
// states, printed alike, are portstate's).
func ParseNodeType(s string) (string, error) {
	s = strings.TrimSpace(s)
	num, name, ok := strings.Cut(s, ":")
	if !ok {
		return "", fmt.Errorf("node type %q: want like %q", s, "1: CA")
	}
	if _, err := strconv.Atoi(strings.TrimSpace(num)); err != nil {
		return "", fmt.Errorf("node type %q: %w", s, err)
	}
	return strings.TrimSpace(name), nil
}

// GIDType is the type of a GID table entry (gid_attrs/types/<i>).
const (
	GIDTypeIBRoCEv1 = "IB/RoCE v1"
	GIDTypeRoCEv2   = "RoCE v2"
)

// ParseGID parses a GID as sysfs prints it (8 groups of 4 hex digits) or in
// any IPv6 notation, and returns it in canonical IPv6 form.
func ParseGID(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || !a.Is6() || a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("gid %q: not a 128-bit address", s)
	}
	return a, nil
}

// GIDIPv4 returns the IPv4 address an IPv4-mapped RoCE GID carries.
func GIDIPv4(a netip.Addr) (netip.Addr, bool) {
	if a.Is4In6() {
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}

// ParsePCIeSpeed parses current_link_speed/max_link_speed: "8.0 GT/s PCIe",
// "8 GT/s" (kernel <= 5.6), "Unknown". It returns GT/s, 0 when unknown.
func ParsePCIeSpeed(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "unknown") {
		return 0, nil
	}
	num, rest, ok := strings.Cut(s, " ")
	if !ok || !strings.HasPrefix(rest, "GT/s") {
		return 0, fmt.Errorf("pcie speed %q: want like %q", s, "16.0 GT/s PCIe")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || v > 1024 {
		return 0, fmt.Errorf("pcie speed %q: bad number", s)
	}
	return v, nil
}

// KernelParam is one word of /proc/cmdline.
type KernelParam struct {
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
	// HasValue distinguishes "quiet" from "foo=".
	HasValue bool `json:"has_value,omitempty"`
}

// ParseCmdline splits a kernel command line into parameters, honouring
// double quotes the way the kernel's next_arg() does.
func ParseCmdline(s string) []KernelParam {
	var out []KernelParam
	var cur strings.Builder
	inQuote := false
	flush := func() {
		w := cur.String()
		cur.Reset()
		if w == "" {
			return
		}
		k, v, has := strings.Cut(w, "=")
		out = append(out, KernelParam{Key: k, Value: strings.ReplaceAll(v, `"`, ""), HasValue: has})
	}
	for _, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
			cur.WriteRune(r)
		case !inQuote && (r == ' ' || r == '\t' || r == '\n'):
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}

// Module is one line of /proc/modules.
type Module struct {
	Name      string   `json:"name"`
	SizeBytes int64    `json:"size_bytes"`
	RefCount  int      `json:"refcount"` // -1 when the kernel prints "-"
	UsedBy    []string `json:"used_by,omitempty"`
	State     string   `json:"state"` // Live, Loading, Unloading
}

// ParseModules parses /proc/modules. Malformed lines are returned as errors
// alongside the modules that did parse.
func ParseModules(s string) ([]Module, []error) {
	var mods []Module
	var errs []error
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			errs = append(errs, fmt.Errorf("/proc/modules line %d %q: want name size refcount deps state", i+1, line))
			continue
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("/proc/modules line %d: size %q: %w", i+1, f[1], err))
			continue
		}
		ref := -1
		if f[2] != "-" {
			if ref, err = strconv.Atoi(f[2]); err != nil {
				errs = append(errs, fmt.Errorf("/proc/modules line %d: refcount %q: %w", i+1, f[2], err))
				continue
			}
		}
		var deps []string
		for _, d := range strings.Split(f[3], ",") {
			if d != "" && d != "-" {
				deps = append(deps, d)
			}
		}
		mods = append(mods, Module{Name: f[0], SizeBytes: size, RefCount: ref, UsedBy: deps, State: f[4]})
	}
	return mods, errs
}

// ParseSize parses kernel size words: "1G", "2M", "1048576kB", "4096".
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	low := strings.ToLower(s)
	for _, suf := range []struct {
		s string
		m int64
	}{{"kb", 1 << 10}, {"k", 1 << 10}, {"mb", 1 << 20}, {"m", 1 << 20}, {"gb", 1 << 30}, {"g", 1 << 30}, {"tb", 1 << 40}, {"t", 1 << 40}} {
		if strings.HasSuffix(low, suf.s) {
			mult = suf.m
			s = s[:len(s)-len(suf.s)]
			break
		}
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: want a number with an optional K/M/G suffix", s)
	}
	return v * mult, nil
}

// ParseCPUMask parses the kernel's CPU bitmap ("00000000,0000ffff": 32-bit
// hex words, most significant first) into CPU ids.
func ParseCPUMask(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	words := strings.Split(s, ",")
	var cpus []int
	for i := len(words) - 1; i >= 0; i-- {
		w := strings.TrimPrefix(words[i], "0x")
		if len(w) == 0 || len(w) > 8 {
			return nil, fmt.Errorf("cpu mask %q: want 32-bit hex words joined by commas", s)
		}
		v, err := strconv.ParseUint(w, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("cpu mask %q: %w", s, err)
		}
		base := (len(words) - 1 - i) * 32
		for b := 0; b < 32; b++ {
			if v&(1<<b) != 0 {
				cpus = append(cpus, base+b)
			}
		}
	}
	return cpus, nil
}
