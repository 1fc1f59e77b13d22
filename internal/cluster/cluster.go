// Package cluster reads the bench cluster file: the nodes, how to reach
// them, what their links can carry and the thresholds verdicts use. It
// validates strictly, in one pass (linear in the file), and every error
// names the file, the line and the field in plain words.
package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/userfile"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/linkrate"
	"go.yaml.in/yaml/v2"
)

// Cluster is the cluster file.
type Cluster struct {
	Nodes      []Node     `json:"nodes" yaml:"nodes"`
	Defaults   Node       `json:"defaults" yaml:"defaults"`
	Link       LinkSpec   `json:"link" yaml:"link"`
	Launcher   Launch     `json:"launcher" yaml:"launcher"`
	Thresholds Thresholds `json:"thresholds" yaml:"thresholds"`
	// expect replaces Link's expectation (WithExpect), nil for the file's.
	expect *linkrate.Expect
}

// Node is one host of the cluster.
type Node struct {
	Name string `json:"name" yaml:"name"`
	// SSH is where the launcher reaches the node ([user@]host); it defaults
	// to Data. SSHPort defaults to 22.
	SSH     string `json:"ssh,omitempty" yaml:"ssh,omitempty"`
	SSHPort int    `json:"ssh_port,omitempty" yaml:"ssh_port,omitempty"`
	// Data is the data-plane address the benchmark traffic goes to.
	Data     string `json:"data,omitempty" yaml:"data,omitempty"`
	Device   string `json:"device,omitempty" yaml:"device,omitempty"` // mlx5_0
	Port     int    `json:"port,omitempty" yaml:"port,omitempty"`
	GIDIndex *int   `json:"gid_index,omitempty" yaml:"gid_index,omitempty"`
	// Class groups nodes whose links are alike (one NIC model and rate):
	// each pair is compared with the median of its own class pair.
	Class string `json:"class,omitempty" yaml:"class,omitempty"`
	// PCIeGTps and PCIeWidth describe the NIC's PCIe link, when known: a
	// pair's ceiling is capped by the slower end's usable PCIe bandwidth.
	PCIeGTps  float64 `json:"pcie_gtps,omitempty" yaml:"pcie_gtps,omitempty"`
	PCIeWidth int     `json:"pcie_width,omitempty" yaml:"pcie_width,omitempty"`
	// CUDAGPU is the GPU bench --use-cuda puts the buffers in: the one
	// nearest the node's device ('rdmalab nccl env' lists each GPU's rail).
	CUDAGPU int `json:"cuda_gpu,omitempty" yaml:"cuda_gpu,omitempty"`
}

// LinkSpec is what the cluster file says a link can carry.
type LinkSpec struct {
	// Layer: InfiniBand (IB), RoCE (Ethernet) or TCP; as the flags: none
	// is RoCE for a GbE rate, else computed as InfiniBand.
	Layer string `json:"layer,omitempty" yaml:"layer,omitempty"`
	// Rate in the one rate syntax: "200", "4X HDR", "25GbE". RateGbps is
	// the older numeric spelling; give one of them, or none to judge only
	// against the cluster's own distribution.
	Rate     string  `json:"rate,omitempty" yaml:"rate,omitempty"`
	RateGbps float64 `json:"rate_gbps,omitempty" yaml:"rate_gbps,omitempty"`
	MTUBytes int     `json:"mtu_bytes,omitempty" yaml:"mtu_bytes,omitempty"`
	// PCIeGbps caps every pair (usable PCIe bandwidth of the NIC slots).
	PCIeGbps float64 `json:"pcie_gbps,omitempty" yaml:"pcie_gbps,omitempty"`
}

// Launch says how commands reach the nodes.
type Launch struct {
	Type string `json:"type" yaml:"type"` // ssh (default), local, or srun (inside a Slurm allocation)
	// Options are extra ssh options, e.g. ["-i", "/path/key"].
	Options []string `json:"ssh_options,omitempty" yaml:"ssh_options,omitempty"`
	// KnownHosts is the known_hosts file host keys are checked against
	// (strictly); empty uses ssh's default.
	KnownHosts string `json:"known_hosts,omitempty" yaml:"known_hosts,omitempty"`
	// Rdmalab is the rdmalab binary on the nodes (for the tcp engine).
	Rdmalab  string `json:"rdmalab,omitempty" yaml:"rdmalab,omitempty"`
	BasePort int    `json:"base_port,omitempty" yaml:"base_port,omitempty"`
}

// Thresholds split results into verdicts.
type Thresholds struct {
	// Against what the link can carry (when a rate is declared): at or
	// above Healthy is healthy, below Degraded is broken.
	Healthy  float64 `json:"healthy,omitempty" yaml:"healthy,omitempty"`
	Degraded float64 `json:"degraded,omitempty" yaml:"degraded,omitempty"`
	// Against the cluster's own median of the same link class: bandwidth
	// below Bandwidth × median, latency above Latency × median are bad.
	// ClusterKit uses 93% of the best and 2.1× the best; the median is the
	// reference here because one pair above the link's ceiling (a wrong
	// rate, a measurement artefact) would otherwise fail every other pair.
	Bandwidth float64 `json:"bandwidth,omitempty" yaml:"bandwidth,omitempty"`
	Latency   float64 `json:"latency,omitempty" yaml:"latency,omitempty"`
	// AboveCeiling: a measurement above this share of the link's ceiling
	// is impossible, so the declared rate or the measurement is suspect.
	AboveCeiling float64 `json:"above_ceiling,omitempty" yaml:"above_ceiling,omitempty"`
	// Spread: samples of one direction further apart than this share of
	// their median make the direction noisy (reported, judged by median).
	Spread float64 `json:"spread,omitempty" yaml:"spread,omitempty"`
}

// DefaultThresholds are calibrated on seed 001's table of expected numbers
// on a clean fabric: its lowest low end is 4X NDR's 370 Gb/s, 93% of what
// the link carries at MTU 4096 (397.5 Gb/s), so healthy starts at 93%
// (every row's range is healthy: a test quotes them); "20% under those
// numbers … the fabric is wrong" puts broken below 0.8 × 93% ≈ 75%.
// Then 90% of the peers' median, 2.1× latency as ClusterKit, 5% above the
// ceiling, 20% spread.
var DefaultThresholds = Thresholds{Healthy: 0.93, Degraded: 0.75, Bandwidth: 0.90, Latency: 2.1, AboveCeiling: 1.05, Spread: 0.20}

// DefaultBasePort is where fresh ports start when the file names none.
const DefaultBasePort = 18515

// Error is a cluster file error at a line (0 when no line applies).
type Error struct {
	File string
	Line int
	Msg  string
	at   func(*lines) int // finds Line once an error happened
}

func byKey(key string) func(*lines) int { return func(ix *lines) int { return ix.first(key) } }

func byValue(key, v string, n int) func(*lines) int {
	return func(ix *lines) int { return ix.nth(key, v, n) }
}

func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// Validate checks a cluster built in code (from a Slurm allocation) as a
// cluster file is checked, and fills its defaults.
func (c *Cluster) Validate() error {
	if e := c.validate(); e != nil {
		return e
	}
	return nil
}

// Load reads and checks a cluster file.
func Load(path string) (*Cluster, error) {
	b, err := userfile.ReadFile(path, userfile.ClusterFile)
	if err != nil {
		return nil, fmt.Errorf("cluster file %w", err)
	}
	c, err := Parse(b)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.File = path
		}
		return nil, err
	}
	return c, nil
}

// Fingerprint identifies what a results file was measured on: the nodes
// (names, addresses, devices, ports) in a canonical order, so reformatting
// the file or reordering nodes keeps it and changing a node does not.
func (c *Cluster) Fingerprint() string {
	h := sha256.New()
	names := make([]string, 0, len(c.Nodes))
	by := map[string]Node{}
	for _, n := range c.Nodes {
		names = append(names, n.Name)
		by[n.Name] = n
	}
	slices.Sort(names)
	for _, name := range names {
		n := by[name]
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\n", n.Name, n.Data, n.Device, n.Port)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Index maps node names to their position.
func (c *Cluster) Index() map[string]int {
	m := make(map[string]int, len(c.Nodes))
	for i, n := range c.Nodes {
		m[n.Name] = i
	}
	return m
}

// LinkFor is what the path between nodes a and b can carry: the expected
// link, capped by the slower NIC's PCIe link when known. RateGbps is 0 when
// no rate was declared.
func (c *Cluster) LinkFor(a, b Node) linkrate.Link {
	l := c.Resolved()
	for _, n := range []Node{a, b} {
		if n.PCIeGTps > 0 && n.PCIeWidth > 0 {
			p := linkrate.PCIeUsableGbps(n.PCIeGTps, n.PCIeWidth)
			if l.PCIeGbps == 0 || p < l.PCIeGbps {
				l.PCIeGbps = p
			}
		}
	}
	return l
}

// Expect is what the file declares, as linkrate's one expectation type,
// resolved by linkrate.NewExpect with the flags' defaults (a GbE rate
// without a layer is RoCE; no layer computes as InfiniBand; no MTU is the
// layer's default). The file was validated, so it parses; rate_gbps is
// the older numeric spelling of rate.
func (s LinkSpec) Expect() linkrate.Expect {
	e, _ := linkrate.NewExpect(s.Rate, s.Layer, s.MTUBytes, "cluster file")
	if s.Rate == "" && s.RateGbps > 0 {
		e.Rate = linkrate.Rate{Gbps: s.RateGbps}
	}
	return e
}

// Expect is the link the cluster is judged against: the file's link
// section, or what WithExpect put in its place.
func (c *Cluster) Expect() linkrate.Expect {
	if c.expect != nil {
		return *c.expect
	}
	return c.Link.Expect()
}

// WithExpect is a copy of the cluster judged against e (flags overriding
// the file): a new value, the file's link section left as written.
func (c *Cluster) WithExpect(e linkrate.Expect) *Cluster {
	cp := *c
	cp.expect = &e
	return &cp
}

// Resolved is the expected link as linkrate models it, capped by the NIC
// slots' PCIe bandwidth when the file gives it.
func (c *Cluster) Resolved() linkrate.Link {
	l := c.Expect().Link()
	l.PCIeGbps = c.Link.PCIeGbps
	return l
}

var (
	yamlLineRE   = lazyre.New(`^line (\d+): (.*)`)
	unknownRE    = lazyre.New(`field (\S+) not found in type`)
	typeErrRE    = lazyre.New("cannot unmarshal (!!\\w+) `([^`]*)` into (\\S+)")
	collErrRE    = lazyre.New(`cannot unmarshal (!!seq|!!map) into (\S+)`)
	keyLineRE    = lazyre.New(`(?:^|[\s{,-])([A-Za-z_]+):\s*("[^"]*"|'[^']*'|[^,{}\s]*)`)
	plainTypeFor = map[string]string{"int": "a whole number", "float64": "a number", "string": "text", "bool": "true or false", "[]string": "a list of text", "[]cluster.Node": "a list of nodes"}
	plainKind    = map[string]string{"!!str": "the text", "!!int": "the number", "!!float": "the number", "!!bool": "the boolean", "!!seq": "a list", "!!map": "a mapping", "!!null": "nothing"}
)

// Parse parses a cluster file strictly: unknown keys, missing names and
// addresses, duplicate names and bad values are errors of type *Error.
func Parse(b []byte) (*Cluster, error) {
	var c Cluster
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, explain(b, err)
	}
	if err := c.validate(); err != nil {
		// Lines are found only on the error path, in one pass.
		if err.at != nil {
			err.Line = err.at(indexLines(b))
		}
		return nil, err
	}
	return &c, nil
}

func (c *Cluster) validate() *Error {
	if len(c.Nodes) < 2 {
		return &Error{at: byKey("nodes"), Msg: fmt.Sprintf("a cluster needs at least 2 nodes, got %d", len(c.Nodes))}
	}
	l := &c.Launcher
	if l.Type == "" {
		l.Type = "ssh"
	}
	if l.Type != "ssh" && l.Type != "local" && l.Type != "srun" {
		return &Error{at: byKey("type"), Msg: fmt.Sprintf("launcher type %q: want ssh, local or srun", l.Type)}
	}
	if l.BasePort == 0 {
		l.BasePort = DefaultBasePort
	}
	if l.BasePort < 1024 || l.BasePort > 60000 {
		return &Error{at: byKey("base_port"), Msg: fmt.Sprintf("base_port %d: want 1024..60000 (bench uses ports above it)", l.BasePort)}
	}
	if err := c.Thresholds.fill(); err != nil {
		return &Error{at: byKey("thresholds"), Msg: err.Error()}
	}
	if err := c.Link.check(); err != nil {
		return &Error{at: byKey("link"), Msg: err.Error()}
	}
	seen := make(map[string]bool, len(c.Nodes))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Name == "" {
			return &Error{at: byKey("nodes"), Msg: fmt.Sprintf("nodes[%d] has no name", i)}
		}
		at := byValue("name", n.Name, 1)
		if seen[n.Name] {
			return &Error{at: byValue("name", n.Name, 2), Msg: fmt.Sprintf("node %q is listed twice", n.Name)}
		}
		seen[n.Name] = true
		if !validName(n.Name) {
			return &Error{at: at, Msg: fmt.Sprintf("node name %q: use letters, digits, '.', '-' and '_'", n.Name)}
		}
		d := c.Defaults
		n.Device = or(n.Device, d.Device)
		n.SSH = or(n.SSH, d.SSH)
		n.Class = or(n.Class, d.Class)
		if n.Port == 0 {
			n.Port = max(d.Port, 1)
		}
		if n.SSHPort == 0 {
			n.SSHPort = max(d.SSHPort, 22)
		}
		if n.GIDIndex == nil {
			n.GIDIndex = d.GIDIndex
		}
		if n.PCIeGTps == 0 && n.PCIeWidth == 0 {
			n.PCIeGTps, n.PCIeWidth = d.PCIeGTps, d.PCIeWidth
		}
		if (n.PCIeGTps > 0) != (n.PCIeWidth > 0) || n.PCIeGTps < 0 || n.PCIeWidth < 0 {
			return &Error{at: at, Msg: fmt.Sprintf("node %q: give both pcie_gtps and pcie_width, positive", n.Name)}
		}
		if n.Data == "" {
			return &Error{at: at, Msg: fmt.Sprintf("node %q has no data address", n.Name)}
		}
		if _, err := netip.ParseAddr(n.Data); err != nil && !validHostname(n.Data) {
			return &Error{at: at, Msg: fmt.Sprintf("node %q: data address %q is neither an IP nor a host name", n.Name, n.Data)}
		}
		if n.SSH == "" {
			n.SSH = n.Data
		}
		if strings.ContainsAny(n.SSH, " \t'\"`$;&|<>\\") || strings.HasPrefix(n.SSH, "-") {
			return &Error{at: at, Msg: fmt.Sprintf("node %q: ssh destination %q is not a [user@]host", n.Name, n.SSH)}
		}
		if n.Device != "" && !validName(n.Device) {
			return &Error{at: at, Msg: fmt.Sprintf("node %q: device %q is not an RDMA device name", n.Name, n.Device)}
		}
		if n.Port < 1 || n.Port > 255 || n.SSHPort < 1 || n.SSHPort > 65535 {
			return &Error{at: at, Msg: fmt.Sprintf("node %q: port %d or ssh_port %d out of range", n.Name, n.Port, n.SSHPort)}
		}
	}
	return nil
}

func (t *Thresholds) fill() error {
	d := DefaultThresholds
	for _, p := range []struct {
		v   *float64
		def float64
	}{{&t.Healthy, d.Healthy}, {&t.Degraded, d.Degraded}, {&t.Bandwidth, d.Bandwidth}, {&t.Latency, d.Latency}, {&t.AboveCeiling, d.AboveCeiling}, {&t.Spread, d.Spread}} {
		if *p.v == 0 {
			*p.v = p.def
		}
	}
	switch {
	case !(t.Degraded > 0 && t.Healthy > t.Degraded && t.Healthy <= 1):
		return fmt.Errorf("thresholds: want 0 < degraded < healthy ≤ 1, got degraded %g, healthy %g", t.Degraded, t.Healthy)
	case !(t.Bandwidth > 0 && t.Bandwidth < 1):
		return fmt.Errorf("thresholds: bandwidth is a share of the peers' median, want 0 < bandwidth < 1, got %g", t.Bandwidth)
	case !(t.Latency > 1):
		return fmt.Errorf("thresholds: latency is a factor over the peers' median, want > 1, got %g", t.Latency)
	case !(t.AboveCeiling >= 1):
		return fmt.Errorf("thresholds: above_ceiling is a share of the link's ceiling, want ≥ 1, got %g", t.AboveCeiling)
	case !(t.Spread > 0):
		return fmt.Errorf("thresholds: spread wants > 0, got %g", t.Spread)
	}
	return nil
}

// check validates the link as written. It fills in no defaults: those
// are linkrate.NewExpect's, the same as the flags', applied once by Expect.
func (s *LinkSpec) check() error {
	if s.Layer != "" {
		if _, err := linkrate.ParseLayer(s.Layer); err != nil {
			return err
		}
	}
	if s.Rate != "" && s.RateGbps != 0 {
		return fmt.Errorf("link: give rate or rate_gbps, not both")
	}
	if s.Rate != "" {
		if _, err := linkrate.ParseRate(s.Rate); err != nil {
			return fmt.Errorf("link: %v", err)
		}
	}
	if s.RateGbps < 0 || s.MTUBytes < 0 || s.PCIeGbps < 0 {
		return fmt.Errorf("link: rate_gbps, mtu_bytes and pcie_gbps must be positive")
	}
	return nil
}

// lines indexes where each key (and key: value) first appears, in one
// pass, so errors can name lines without rescanning the file per node.
type lines struct {
	key  map[string]int
	vals map[string][]int // "key\x00value" → lines
}

func indexLines(b []byte) *lines {
	ix := &lines{key: map[string]int{}, vals: map[string][]int{}}
	for i, l := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		for _, m := range keyLineRE().FindAllStringSubmatch(l, -1) {
			if _, ok := ix.key[m[1]]; !ok {
				ix.key[m[1]] = i + 1
			}
			v := strings.Trim(m[2], `"'`)
			k := m[1] + "\x00" + v
			if len(ix.vals[k]) < 2 {
				ix.vals[k] = append(ix.vals[k], i+1)
			}
		}
	}
	return ix
}

func (ix *lines) first(key string) int { return ix.key[key] }

func (ix *lines) nth(key, v string, n int) int {
	if ls := ix.vals[key+"\x00"+v]; len(ls) >= n {
		return ls[n-1]
	}
	return ix.first(key)
}

// keyOf names the key holding value on a line: the YAML library says only
// which Go type it wanted.
func keyOf(b []byte, line int, value string) string {
	for i, l := range strings.SplitN(string(b), "\n", line+1) {
		if i != line-1 {
			continue
		}
		for _, m := range keyLineRE().FindAllStringSubmatch(l, -1) {
			if strings.Trim(m[2], `"'`) == value {
				return fmt.Sprintf("field %q", m[1])
			}
		}
	}
	return "this field"
}

// explain turns the YAML library's first error into plain words with its
// line: `line 4: this field wants a whole number, got the text "twenty"`.
func explain(b []byte, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimSpace(strings.TrimPrefix(msg, "unmarshal errors:"))
	msg, _, _ = strings.Cut(msg, "\n")
	m := yamlLineRE().FindStringSubmatch(msg)
	if m == nil {
		return &Error{Msg: "not valid YAML: " + msg}
	}
	line, _ := strconv.Atoi(m[1])
	what := m[2]
	if u := unknownRE().FindStringSubmatch(what); u != nil {
		return &Error{Line: line, Msg: fmt.Sprintf("unknown field %q (docs/cluster-file.md lists the fields)", u[1])}
	}
	if t := typeErrRE().FindStringSubmatch(what); t != nil {
		if t[3] == "cluster.Cluster" {
			return &Error{Line: line, Msg: fmt.Sprintf("a cluster file is a mapping with nodes:, link: and launcher: (docs/cluster-file.md), got %s %q", plainKind[t[1]], t[2])}
		}
		want := plainTypeFor[t[3]]
		if want == "" {
			// Never a Go type name: users know the file, not the code.
			want = "a mapping (docs/cluster-file.md)"
		}
		return &Error{Line: line, Msg: fmt.Sprintf("%s wants %s, got %s %q", keyOf(b, line, t[2]), want, plainKind[t[1]], t[2])}
	}
	if t := collErrRE().FindStringSubmatch(what); t != nil {
		want := plainTypeFor[t[2]]
		if want == "" && strings.HasPrefix(t[2], "[]") {
			want = "a list"
		} else if want == "" {
			want = "a mapping (docs/cluster-file.md)"
		}
		key := "this field"
		if m := keyLineRE().FindStringSubmatch(lineOf(b, line)); m != nil {
			key = fmt.Sprintf("field %q", m[1])
		}
		return &Error{Line: line, Msg: fmt.Sprintf("%s wants %s, got %s", key, want, plainKind[t[1]])}
	}
	return &Error{Line: line, Msg: "not valid YAML: " + what}
}

// lineOf is line n (from 1) of b, or "".
func lineOf(b []byte, n int) string {
	ls := strings.SplitN(string(b), "\n", n+1)
	if n < 1 || n > len(ls) {
		return ""
	}
	return ls[n-1]
}

var (
	hostnameRE = lazyre.New(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)
	nameRE     = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

func validHostname(s string) bool { return len(s) < 254 && hostnameRE().MatchString(s) }
func validName(s string) bool     { return len(s) < 128 && nameRE().MatchString(s) }

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
