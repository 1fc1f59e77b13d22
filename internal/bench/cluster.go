package bench

import (
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strings"

	"github.com/rdmalab/rdmalab/internal/linkrate"
	"sigs.k8s.io/yaml"
)

// Cluster is the cluster file: the nodes, what their links can carry, and
// how to reach them.
type Cluster struct {
	Nodes      []Node     `json:"nodes"`
	Defaults   Node       `json:"defaults"`
	Link       Link       `json:"link"`
	Launcher   Launch     `json:"launcher"`
	Thresholds Thresholds `json:"thresholds"`
}

// Node is one host of the cluster.
type Node struct {
	Name string `json:"name"`
	// SSH is where the launcher reaches the node ([user@]host); it defaults
	// to Data. SSHPort defaults to 22.
	SSH     string `json:"ssh,omitempty"`
	SSHPort int    `json:"ssh_port,omitempty"`
	// Data is the data-plane address the benchmark traffic goes to.
	Data     string `json:"data,omitempty"`
	Device   string `json:"device,omitempty"` // mlx5_0
	Port     int    `json:"port,omitempty"`
	GIDIndex *int   `json:"gid_index,omitempty"`
}

// Launch says how commands reach the nodes.
type Launch struct {
	Type string `json:"type"` // ssh (default) or local
	// Options are extra ssh options, e.g. ["-i", "/path/key"].
	Options []string `json:"ssh_options,omitempty"`
	// KnownHosts is the known_hosts file host keys are checked against
	// (strictly); empty uses ssh's default.
	KnownHosts string `json:"known_hosts,omitempty"`
	// Rdmalab is the rdmalab binary on the nodes (for the tcp engine).
	Rdmalab  string `json:"rdmalab,omitempty"`
	BasePort int    `json:"base_port,omitempty"`
}

var unknownFieldRE = regexp.MustCompile(`unknown field "([^"]+)"`)

// LoadCluster reads and checks a cluster file. Every error names the file
// and, where it can, the line.
func LoadCluster(path string) (*Cluster, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := ParseCluster(b)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return c, nil
}

// ParseCluster parses a cluster file strictly: unknown keys, missing names
// and addresses, duplicate names and bad values are errors.
func ParseCluster(b []byte) (*Cluster, error) {
	var c Cluster
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		if m := unknownFieldRE.FindStringSubmatch(err.Error()); m != nil {
			return nil, fmt.Errorf("%d: unknown key %q", lineOf(b, m[1]+":"), m[1])
		}
		msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: yaml: ")
		return nil, fmt.Errorf(" %s", msg)
	}
	if len(c.Nodes) < 2 {
		return nil, fmt.Errorf("%d: a cluster needs at least 2 nodes, got %d", lineOf(b, "nodes:"), len(c.Nodes))
	}
	if c.Launcher.Type == "" {
		c.Launcher.Type = "ssh"
	}
	if c.Launcher.Type != "ssh" && c.Launcher.Type != "local" {
		return nil, fmt.Errorf("%d: launcher type %q: want ssh or local", lineOf(b, "type:"), c.Launcher.Type)
	}
	if c.Launcher.BasePort == 0 {
		c.Launcher.BasePort = 18515
	}
	if c.Thresholds == (Thresholds{}) {
		c.Thresholds = DefaultThresholds
	}
	if c.Thresholds.Degraded <= 0 || c.Thresholds.Healthy <= c.Thresholds.Degraded || c.Thresholds.Healthy > 1 {
		return nil, fmt.Errorf("%d: thresholds want 0 < degraded < healthy ≤ 1, got %+v", lineOf(b, "thresholds:"), c.Thresholds)
	}
	if c.Link.Layer == "" {
		c.Link.Layer = linkrate.TCP
	}
	layer, err := linkrate.ParseLayer(string(c.Link.Layer))
	if err != nil {
		return nil, fmt.Errorf("%d: %v", lineOf(b, "layer:"), err)
	}
	c.Link.Layer = layer
	if c.Link.MTUBytes == 0 {
		c.Link.MTUBytes = linkrate.DefaultMTU(layer)
	}
	seen := map[string]bool{}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		at := lineOf(b, "name: "+n.Name)
		if n.Name == "" {
			return nil, fmt.Errorf("%d: nodes[%d] has no name", lineOf(b, "nodes:"), i)
		}
		if seen[n.Name] {
			return nil, fmt.Errorf("%d: node %q is listed twice", at, n.Name)
		}
		seen[n.Name] = true
		d := c.Defaults
		n.Device = or(n.Device, d.Device)
		n.SSH = or(n.SSH, d.SSH)
		if n.Port == 0 {
			n.Port = max(d.Port, 1)
		}
		if n.SSHPort == 0 {
			n.SSHPort = max(d.SSHPort, 22)
		}
		if n.GIDIndex == nil {
			n.GIDIndex = d.GIDIndex
		}
		if n.Data == "" {
			return nil, fmt.Errorf("%d: node %q has no data address", at, n.Name)
		}
		if _, err := netip.ParseAddr(n.Data); err != nil && !validHostname(n.Data) {
			return nil, fmt.Errorf("%d: node %q: data address %q is neither an IP nor a host name", at, n.Name, n.Data)
		}
		if n.SSH == "" {
			n.SSH = n.Data
		}
		if strings.ContainsAny(n.SSH, " \t'\"`$;&|<>") || strings.HasPrefix(n.SSH, "-") {
			return nil, fmt.Errorf("%d: node %q: ssh destination %q is not a [user@]host", at, n.Name, n.SSH)
		}
	}
	return &c, nil
}

var hostnameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)

func validHostname(s string) bool { return len(s) < 254 && hostnameRE.MatchString(s) }

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// lineOf is the 1-based line where key first appears (block or flow
// style), or 0.
func lineOf(b []byte, key string) int {
	re := regexp.MustCompile(`(^|[\s{,-])` + regexp.QuoteMeta(key) + `(\s|,|}|$)`)
	for i, l := range strings.Split(string(b), "\n") {
		if re.MatchString(l) {
			return i + 1
		}
	}
	return 0
}
