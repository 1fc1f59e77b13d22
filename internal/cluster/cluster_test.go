package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rdmalab/rdmalab/internal/linkrate"
)

func TestParseStrict(t *testing.T) {
	good := "nodes:\n  - {name: a, data: 10.0.0.1, gid_index: 3}\n  - {name: b, data: 10.0.0.2, pcie_gtps: 8, pcie_width: 16}\ndefaults: {device: mlx5_0}\nlink: {layer: IB, rate: 4X HDR}\n"
	c, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Nodes[1].Device != "mlx5_0" || c.Nodes[0].SSH != "10.0.0.1" || c.Resolved().MTUBytes != 4096 || c.Launcher.Type != "ssh" || *c.Nodes[0].GIDIndex != 3 {
		t.Fatalf("%+v", c)
	}
	l := c.LinkFor(c.Nodes[0], c.Nodes[1])
	if l.RateGbps != 200 || l.Speed != "HDR" || !l.LimitedByPCIe() {
		t.Errorf("HDR on a Gen3 x16 slot is capped by PCIe: %+v (%s)", l, l.Describe())
	}
	if c.Thresholds != DefaultThresholds {
		t.Errorf("thresholds %+v", c.Thresholds)
	}
	two := "nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b, data: 10.0.0.2}\n"
	for _, bad := range []struct{ yaml, want string }{
		{"nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b, data: 10.0.0.2, colour: red}\n", `line 3: unknown field "colour"`},
		{"nodes:\n  - {name: a, data: 10.0.0.1}\n", "at least 2 nodes"},
		{"nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: a, data: 10.0.0.2}\n", `line 3: node "a" is listed twice`},
		{"nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b}\n", `line 3: node "b" has no data address`},
		{"nodes:\n  - {name: a, data: 10.0.0.1, ssh: \"x; rm -rf /\"}\n  - {name: b, data: 10.0.0.2}\n", "is not a [user@]host"},
		{two + "launcher: {type: pdsh}\n", `line 4: launcher type "pdsh"`},
		{two + "thresholds: {healthy: 0.7, degraded: 0.8}\n", "line 4: thresholds: want 0 < degraded < healthy"},
		{two + "link: {layer: IB, rate: 4X FAST}\n", "line 4: link: rate"},
		{two + "link: {layer: carrier-pigeon}\n", "line 4: link layer"},
		{"nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b, data: 10.0.0.2,\n     ssh_port: twenty}\n", `line 4: field "ssh_port" wants a whole number, got the text "twenty"`},
		{"nodes:\n  - name: a\n    data: 10.0.0.1\n   bad: indent\n", "line 3: not valid YAML"},
		{two + "launcher: {type: ssh, base_port: 80}\n", "base_port 80"},
	} {
		_, err := Parse([]byte(bad.yaml))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q:\n got %v\nwant %q", bad.yaml, err, bad.want)
		}
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	os.WriteFile(p, []byte(two+"link: {layer: carrier-pigeon}\n"), 0o644)
	if _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), p+":4: ") {
		t.Errorf("Load names file and line: %v", err)
	}
}

func TestFingerprint(t *testing.T) {
	a, _ := Parse([]byte("nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b, data: 10.0.0.2}\n"))
	b, _ := Parse([]byte("# reordered, reformatted\nnodes:\n- name: b\n  data: 10.0.0.2\n- name: a\n  data: 10.0.0.1\n"))
	c, _ := Parse([]byte("nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b, data: 10.0.0.3}\n"))
	if a.Fingerprint() != b.Fingerprint() || a.Fingerprint() == c.Fingerprint() {
		t.Errorf("%s %s %s", a.Fingerprint(), b.Fingerprint(), c.Fingerprint())
	}
}

// The example in docs/cluster-file.md is complete and loads.
func TestDocExampleLoads(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cluster-file.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/cluster-file.md has no yaml example")
	}
	c, err := Parse(m[1])
	if err != nil {
		t.Fatalf("the documented example: %v", err)
	}
	if len(c.Nodes) < 2 || c.Link.Rate == "" || c.Nodes[0].Device == "" {
		t.Errorf("the example should show nodes, a rate and a device: %+v", c)
	}
}

func bigCluster(n int) []byte {
	var b strings.Builder
	b.WriteString("link: {layer: IB, rate: 4X HDR}\ndefaults: {device: mlx5_0}\nnodes:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: n%06d, data: 10.%d.%d.%d}\n", i, i>>16&255, i>>8&255, i&255)
	}
	return []byte(b.String())
}

// Validation is linear: 100,000 nodes in well under a second (it took
// minutes when every node's line was found by rescanning the file).
func TestValidationIsLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	// Linear, judged by growth rather than a wall-clock bound a loaded
	// machine breaks: ten times the nodes may take at most 25 times as
	// long (quadratic validation would take 100 times), each size timed at
	// its best of three so one stall does not decide.
	best := func(n int) time.Duration {
		b := bigCluster(n)
		var min time.Duration
		for range 3 {
			start := time.Now()
			c, err := Parse(b)
			if err != nil || len(c.Nodes) != n {
				t.Fatal(err)
			}
			if d := time.Since(start); min == 0 || d < min {
				min = d
			}
		}
		return min
	}
	small, large := best(10000), best(100000)
	if large > 25*small && large > 2*time.Second {
		t.Errorf("10,000 nodes validated in %s but 100,000 in %s: not linear", small, large)
	}
	t.Logf("10,000 nodes in %s, 100,000 in %s", small.Round(time.Millisecond), large.Round(time.Millisecond))
}

func BenchmarkParse100k(b *testing.B) {
	data := bigCluster(100000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b, data: 10.0.0.2}\n")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse([]byte(s))
		if err != nil {
			return
		}
		if len(c.Nodes) < 2 {
			t.Fatal("accepted a cluster of fewer than 2 nodes")
		}
		seen := map[string]bool{}
		for _, n := range c.Nodes {
			if seen[n.Name] || n.Data == "" || n.SSH == "" {
				t.Fatalf("accepted a bad node %+v", n)
			}
			seen[n.Name] = true
		}
	})
}

// The file's link is resolved by the flags' rules (issue 37): a GbE rate
// without a layer is RoCE, as --expect-rate 25GbE is, never TCP; and a
// layer given as a flag over a file without a link section is that
// layer at its own MTU, not TCP's 1500; the file's section stays as
// written.
func TestLinkResolvedAsTheFlags(t *testing.T) {
	two := "nodes:\n  - {name: a, data: 10.0.0.1}\n  - {name: b, data: 10.0.0.2}\n"
	c, err := Parse([]byte(two + "link: {rate: 25GbE}\n"))
	if err != nil {
		t.Fatal(err)
	}
	flag, _ := linkrate.NewExpect("25GbE", "", 0, "--expect-rate")
	if got := c.Expect(); got.Layer != linkrate.RoCE || got.Layer != flag.Layer || got.Link().MTUBytes != flag.Link().MTUBytes {
		t.Errorf("cluster file 25GbE: %+v; the flag: %+v", got, flag)
	}

	c, err = Parse([]byte(two))
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Expect().Override("", "IB", "--expect-link-layer IB")
	if err != nil {
		t.Fatal(err)
	}
	ib := c.WithExpect(e)
	if l := ib.Resolved(); l.Layer != linkrate.InfiniBand || l.MTUBytes != 4096 {
		t.Errorf("--expect-link-layer IB without a link section: %+v, want InfiniBand at 4096", l)
	}
	if c.Link != (LinkSpec{}) || c.Expect().Layer != "" {
		t.Errorf("the override was written back into the file's link: %+v", c.Link)
	}

	// A layer flag over a file's RoCE at jumbo MTU drops that MTU; a rate
	// flag keeps the file's layer and MTU.
	c, _ = Parse([]byte(two + "link: {layer: RoCE, rate: 100GbE, mtu_bytes: 4096}\n"))
	if e, _ := c.Expect().Override("", "IB", "--expect-link-layer IB"); e.Link().MTUBytes != 4096 || e.Layer != linkrate.InfiniBand || e.Rate.Gbps != 100 {
		t.Errorf("IB over RoCE: %+v", e)
	}
	if e, _ := c.Expect().Override("200GbE", "", "--expect-rate 200GbE"); e.Layer != linkrate.RoCE || e.MTUBytes != 4096 || e.Rate.Gbps != 200 || e.Source != "--expect-rate 200GbE" {
		t.Errorf("rate over RoCE: %+v", e)
	}
}
