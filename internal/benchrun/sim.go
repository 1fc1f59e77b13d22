package benchrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/launch"
)

// SimFleet is a SIMULATED fleet for scale tests of the real orchestrator,
// schedule and localiser: no node, no process, no network. It answers the
// tcp engine's commands (through launch.Fake) from a link model: every
// node's cable carries Gbps, one node's cable (Slow) carries SlowShare of
// it, and every sample varies by up to ±Jitter, the same on every run.
// Nothing measured on it says anything about real hardware; what it
// measures is the orchestrator's own rounds, memory, threads and CPU.
type SimFleet struct {
	Gbps float64
	// Slow is the node whose cable is slow, both ways ("" for none).
	Slow      string
	SlowShare float64
	// SlowPath is one path between two nodes that is slow (its ends are
	// healthy with everyone else), e.g. a bad patch between two racks.
	SlowPath [2]string
	Jitter   float64
}

// Launcher is the fake launcher answering for the simulated fleet c.
func (s *SimFleet) Launcher(c *cluster.Cluster) *launch.Fake {
	byAddr := make(map[string]string, len(c.Nodes))
	for _, n := range c.Nodes {
		byAddr[n.Data] = n.Name
	}
	ready := launch.FakeRun{Stdout: Ready + "\n"}
	f := &launch.Fake{NoRecord: true}
	f.Run = func(node string, argv []string) launch.FakeRun {
		if slices.Contains(argv, "tcp-server") {
			return ready
		}
		i := slices.Index(argv, "--connect")
		if i < 0 || i+1 >= len(argv) || !slices.Contains(argv, "bw") {
			return launch.FakeRun{Err: errors.New("simulated fleet: only the tcp engine's bw test is simulated")}
		}
		addr := argv[i+1]
		to, port := byAddr[addr[:strings.LastIndex(addr, ":")]], addr[strings.LastIndex(addr, ":")+1:]
		b, _ := json.Marshal(TCPResult{Mode: "bw", Gbps: s.rate(node, to, port)})
		return launch.FakeRun{Stdout: string(b) + "\n"}
	}
	f.Session = FakeAgent(f.Run)
	return f
}

// rate is what from → to carries in one sample (the port tells samples
// apart, deterministically).
func (s *SimFleet) rate(from, to, port string) float64 {
	g := s.Gbps
	if s.Slow != "" && (from == s.Slow || to == s.Slow) {
		g *= s.SlowShare
	}
	if p := s.SlowPath; p[0] != "" && (p == [2]string{from, to} || p == [2]string{to, from}) {
		g *= s.SlowShare
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s>%s:%s", from, to, port)
	u := float64(h.Sum64()%10001)/10000*2 - 1 // [-1, 1]
	return math.Round(g*(1+s.Jitter*u)*100) / 100
}

// WallModel projects a run's wall time on a real fleet from the rounds it
// used: pairs of a round run at once, so a round lasts one pair's two
// directions of Samples samples; a retest round one direction.
type WallModel struct {
	Seconds, Samples int
	// PerSample is the launch overhead of one sample beyond its measuring
	// seconds (two commands over the control connections, the server's
	// start, the result): LaunchOverhead, measured.
	PerSample time.Duration
	// PerRound is the reap and probe after a round.
	PerRound time.Duration
	// Waves is how many times a round's pairs fill the window.
	Waves int
}

// LaunchOverhead is the measured cost of one sample beyond its seconds
// over ssh control connections: the median of TestBenchOverSSHInNamespaces
// (8 network namespaces, real sshd, tcp engine, 1 s samples: 0.39 s) on a
// loaded 2-core
// machine (docs/bench.md).
const LaunchOverhead = 400 * time.Millisecond

// ReapOverhead is the reap after a round (64 nodes at a time, one ssh
// command each over its control connection, ~0.1 s): per 64 nodes.
const ReapOverhead = 100 * time.Millisecond

// Model is the wall model of these flags over n nodes.
func Model(seconds, samples, nodes int) WallModel {
	return WallModel{Seconds: seconds, Samples: samples, PerSample: LaunchOverhead,
		PerRound: time.Duration((nodes+63)/64) * ReapOverhead, Waves: max(1, (nodes/2+DefaultWindow-1)/DefaultWindow)}
}

// Project is the wall time of measured rounds plus retest rounds (a few
// pairs: one wave).
func (m WallModel) Project(measured, retest int) time.Duration {
	sample := time.Duration(m.Seconds)*time.Second + m.PerSample
	return time.Duration(measured)*(time.Duration(max(1, m.Waves))*2*time.Duration(m.Samples)*sample+m.PerRound) +
		time.Duration(retest)*(time.Duration(m.Samples)*sample+m.PerRound)
}

// SimClusterFile is the cluster file of a simulated fleet of n nodes
// (sim0001 …, data addresses 10.x.y.z, ssh launcher, 100 Gb/s TCP link):
// the shape of a real one, for scale tests.
func SimClusterFile(n int) string {
	var b strings.Builder
	b.WriteString("# SIMULATED fleet (benchrun.SimFleet): no such nodes exist\nlink: {layer: TCP, rate: \"100\"}\nlauncher: {type: ssh, rdmalab: /opt/rdmalab/bin/rdmalab}\nnodes:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: sim%05d, ssh: root@sim%05d.fleet, data: 10.%d.%d.%d}\n", i+1, i+1, 16+(i+1)>>16, ((i+1)>>8)&255, (i+1)&255)
	}
	return b.String()
}

// FakeAgent answers the bench agent's sessions (launch.Fake.Session) with
// the same fake that answers a process per sample (run: the tcp engine's
// tcp-server and tcp-client argv), so a fake fleet behaves the same with
// and without Runner.Agent.
func FakeAgent(run func(node string, argv []string) launch.FakeRun) func(ctx context.Context, node string, argv []string, stdin io.Reader, stdout io.Writer) error {
	return func(ctx context.Context, node string, _ []string, stdin io.Reader, stdout io.Writer) error {
		ops := agentOps{
			serve: func(ctx context.Context, addr string, listening func(net.Addr)) error {
				r := run(node, []string{"rdmalab", "bench", "agent", "tcp-server", "--listen", addr})
				if r.Err != nil {
					return r.Err
				}
				listening(fakeAddr(addr))
				return nil
			},
			client: func(ctx context.Context, addr, test string, seconds float64) (*TCPResult, error) {
				r := run(node, []string{"rdmalab", "bench", "agent", "tcp-client", "--connect", addr, "--test", test, "--seconds", fmt.Sprint(seconds)})
				switch {
				case r.Hang:
					<-ctx.Done()
					return nil, ctx.Err()
				case r.Err != nil:
					return nil, r.Err
				}
				return ParseTCPResult([]byte(r.Stdout))
			},
		}
		// stdin ends when the orchestrator closes it; a kill cancels ctx
		// but a blocked read of stdin would not see it
		go func() { <-ctx.Done(); closeReader(stdin) }()
		return runAgent(ctx, stdin, stdout, ops)
	}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }

func closeReader(r io.Reader) {
	if c, ok := r.(io.Closer); ok {
		c.Close()
	}
}
