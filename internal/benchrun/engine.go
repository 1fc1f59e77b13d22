package benchrun

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/cluster"
)

// Engine is one benchmark tool: how to start its two ends for one
// direction and how to read what it measured.
type Engine interface {
	Name() string
	Test() string
	// Latency is true for latency tests (judged by p50, no score).
	Latency() bool
	// ServerReceives is true when data flows from client to server
	// (write, send); false when the client pulls (read).
	ServerReceives() bool
	// Need lists what must exist on a node for the engine to run there.
	Need(n cluster.Node) []string
	Server(n cluster.Node, port int) []string
	Client(server, client cluster.Node, port int) []string
	// Ready is the line the server prints once it listens.
	Ready() string
	// Parse reads the client's output.
	Parse(out []byte) (Measure, error)
}

// Measure is what one run of a test measured.
type Measure struct {
	Gbps     float64
	P50Us    float64
	P99Us    float64
	P999Us   float64
	MTUBytes int
	// LinkType is what perftest printed: IB or Ethernet (RoCE).
	LinkType string
	Warnings []string
}

// PerftestTests are the perftest binaries bench runs; --test takes no
// other name, so nothing else is ever executed on the nodes.
var PerftestTests = []string{"ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_lat"}

// NewEngine returns the engine for name and test ("" picks the default
// test), or an error naming what is accepted.
func NewEngine(name, test string, seconds int, timeout time.Duration, rdmalab string, perftestArgs []string) (Engine, error) {
	switch name {
	case "tcp":
		test = cmp.Or(test, "bw")
		if test != "bw" && test != "lat" {
			return nil, fmt.Errorf("--test %q: the tcp engine runs bw or lat", test)
		}
		return &tcpEngine{test: test, seconds: seconds, timeout: timeout, bin: rdmalab}, nil
	case "perftest":
		test = cmp.Or(test, "ib_write_bw")
		if !slices.Contains(PerftestTests, test) {
			return nil, fmt.Errorf("--test %q is not a perftest test bench runs: %s", test, strings.Join(PerftestTests, ", "))
		}
		for _, a := range perftestArgs {
			if strings.ContainsAny(a, "\n\x00") {
				return nil, fmt.Errorf("--perftest-arg %q: one argument per flag", a)
			}
		}
		return &perftestEngine{test: test, seconds: seconds, args: perftestArgs}, nil
	}
	return nil, fmt.Errorf("--engine %q: want perftest or tcp", name)
}

type tcpEngine struct {
	test    string
	seconds int
	timeout time.Duration
	bin     string
}

func (e *tcpEngine) Name() string               { return "tcp" }
func (e *tcpEngine) Test() string               { return e.test }
func (e *tcpEngine) Latency() bool              { return e.test == "lat" }
func (e *tcpEngine) ServerReceives() bool       { return true }
func (e *tcpEngine) Need(cluster.Node) []string { return []string{e.bin} }
func (e *tcpEngine) Ready() string              { return Ready }

func (e *tcpEngine) Server(n cluster.Node, port int) []string {
	return []string{e.bin, "bench", "agent", "tcp-server", "--listen", fmt.Sprintf("%s:%d", n.Data, port), "--timeout", e.timeout.String()}
}

func (e *tcpEngine) Client(server, _ cluster.Node, port int) []string {
	return []string{e.bin, "bench", "agent", "tcp-client", "--connect", fmt.Sprintf("%s:%d", server.Data, port), "--test", e.test, "--seconds", fmt.Sprint(e.seconds)}
}

// Agent is the one process a round starts on a node (Runner.Agent): it
// reads the node's steps on stdin.
func (e *tcpEngine) Agent() []string { return []string{e.bin, "bench", "agent", "session"} }

func (e *tcpEngine) Parse(out []byte) (Measure, error) {
	t, err := ParseTCPResult(out)
	if err != nil {
		return Measure{}, err
	}
	return Measure{Gbps: t.Gbps, P50Us: t.P50Us, P99Us: t.P99Us, P999Us: t.P999Us}, nil
}

type perftestEngine struct {
	test    string
	seconds int
	args    []string
	// cuda puts both ends' buffers in GPU memory (--use_cuda=<node's
	// cuda_gpu>): the GPUDirect RDMA path.
	cuda bool
}

// CUDAEngine is the perftest engine with both ends' buffers in GPU memory:
// the same test through GPUDirect RDMA, recorded under its own engine name
// so host and GPU results stand side by side in one log.
func CUDAEngine(e Engine) (Engine, error) {
	p, ok := e.(*perftestEngine)
	if !ok || p.Latency() {
		return nil, fmt.Errorf("--use-cuda needs the perftest engine and a bandwidth test (ib_write_bw, ib_read_bw, ib_send_bw)")
	}
	c := *p
	c.cuda = true
	return &c, nil
}

func (e *perftestEngine) Name() string {
	if e.cuda {
		return "perftest+cuda"
	}
	return "perftest"
}
func (e *perftestEngine) Test() string         { return e.test }
func (e *perftestEngine) Latency() bool        { return strings.HasSuffix(e.test, "_lat") }
func (e *perftestEngine) ServerReceives() bool { return e.test != "ib_read_bw" }
func (e *perftestEngine) Ready() string        { return "Waiting for client" }

func (e *perftestEngine) Need(n cluster.Node) []string {
	need := []string{e.test}
	if n.Device != "" {
		need = append(need, fmt.Sprintf("/sys/class/infiniband/%s/ports/%d", n.Device, n.Port))
	}
	return need
}

func (e *perftestEngine) common(n cluster.Node, port int) []string {
	args := []string{e.test, "-p", fmt.Sprint(port)}
	if n.Device != "" {
		args = append(args, "-d", n.Device, "-i", fmt.Sprint(n.Port))
	}
	if n.GIDIndex != nil {
		args = append(args, "-x", fmt.Sprint(*n.GIDIndex))
	}
	if !e.Latency() {
		args = append(args, "--report_gbits", "-D", fmt.Sprint(e.seconds))
	}
	if e.cuda {
		args = append(args, fmt.Sprintf("--use_cuda=%d", n.CUDAGPU))
	}
	return append(args, e.args...)
}

func (e *perftestEngine) Server(n cluster.Node, port int) []string { return e.common(n, port) }

func (e *perftestEngine) Client(server, client cluster.Node, port int) []string {
	return append(e.common(client, port), server.Data)
}

func (e *perftestEngine) Parse(out []byte) (Measure, error) {
	p, err := bench.ParsePerftest(string(out))
	if err != nil {
		return Measure{}, err
	}
	b := p.Best()
	m := Measure{Gbps: b.AvgGbps, P50Us: b.TypicalUs, P99Us: b.P99Us, P999Us: b.P999Us, MTUBytes: p.MTUBytes, LinkType: p.LinkType, Warnings: p.Warnings}
	if p.Kind == "lat" {
		m.Gbps = 0
	}
	return m, nil
}
