package fabric

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Runner runs one diagnostic tool and returns its standard output.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// Exec runs the real infiniband-diags tools as subprocesses. Every call has
// its own timeout: a dropped MAD must never hang a scan.
type Exec struct {
	// CA and Port choose the local HCA port to scan from (-C, -P); empty
	// means the tools' default (the first active port).
	CA   string
	Port int
	// Dir is the working directory, Env extra environment (the simulator's
	// LD_PRELOAD in tests).
	Dir     string
	Env     []string
	Timeout time.Duration
}

// Run implements Runner.
func (e Exec) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	timeout := e.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if e.CA != "" {
		args = append(args, "-C", e.CA)
	}
	if e.Port > 0 {
		args = append(args, "-P", fmt.Sprint(e.Port))
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = e.Dir
	cmd.Env = append(os.Environ(), e.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return stdout.Bytes(), fmt.Errorf("%s timed out after %s", name, timeout)
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return stdout.Bytes(), fmt.Errorf("%s %s: exit %d: %s", name, strings.Join(args, " "), ee.ExitCode(), lastLine(stderr.String()))
		}
		return stdout.Bytes(), fmt.Errorf("%s: %w (is infiniband-diags installed?)", name, err)
	}
	return stdout.Bytes(), nil
}

// lastLine is the most telling line of a tool's stderr (ibwarn noise first,
// the error last).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.Contains(l, "sim_connect") {
			return l
		}
	}
	return "(no error output)"
}

// ScanOptions tune a scan.
type ScanOptions struct {
	// Interval, when set, samples the error counters twice this far apart
	// and records rates.
	Interval time.Duration
	Now      func() time.Time
}

// Scan discovers the fabric once with ibnetdiscover (writing its cache),
// then reads links (iblinkinfo) and error counters (ibqueryerrors) from that
// cache, and the subnet managers (sminfo, saquery), the last four at once.
// One discovery instead of three is why it is faster than running the tools
// by hand.
func Scan(ctx context.Context, r Runner, o ScanOptions) (*Snapshot, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	dir, err := os.MkdirTemp("", "rdmalab-fabric-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cache := filepath.Join(dir, "ibnetdiscover.cache")

	s := &Snapshot{SchemaVersion: SchemaVersion, CollectedAt: now().UTC(),
		Source: "ibnetdiscover --cache; iblinkinfo --line; ibqueryerrors; sminfo; saquery SMIR"}
	out, err := r.Run(ctx, "ibnetdiscover", "--cache", cache)
	if err != nil {
		return nil, fmt.Errorf("discover the fabric: %w", err)
	}
	topo, err := ParseTopology(string(out))
	if err != nil {
		return nil, err
	}

	var (
		wg                    sync.WaitGroup
		linkOut, qeOut        []byte
		smOut, smirOut        []byte
		linkErr, qeErr, smErr error
		smirErr               error
	)
	wg.Add(4)
	go func() { defer wg.Done(); linkOut, linkErr = r.Run(ctx, "iblinkinfo", "--line", "--load-cache", cache) }()
	go func() { defer wg.Done(); qeOut, qeErr = queryErrors(ctx, r, cache) }()
	go func() { defer wg.Done(); smOut, smErr = r.Run(ctx, "sminfo") }()
	go func() { defer wg.Done(); smirOut, smirErr = r.Run(ctx, "saquery", "SMIR") }()
	wg.Wait()
	if linkErr != nil {
		return nil, fmt.Errorf("read links: %w", linkErr)
	}
	if s.Ports, err = ParseIBLinkInfo(string(linkOut)); err != nil {
		return nil, err
	}
	for _, n := range topo.Nodes {
		s.Nodes = append(s.Nodes, Node{GUID: n.GUID, Type: n.Type, Desc: n.Desc, Ports: n.Ports, LID: n.LID})
	}
	s.fillNodes()

	first := time.Now()
	if qeErr != nil {
		s.Errors = append(s.Errors, "error counters: "+qeErr.Error())
	} else if err := s.applyCounters(qeOut, nil, 0); err != nil {
		return nil, err
	}
	if o.Interval > 0 && qeErr == nil {
		select {
		case <-time.After(o.Interval):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		again, err := queryErrors(ctx, r, cache)
		if err != nil {
			s.Errors = append(s.Errors, "error counters, second sample: "+err.Error())
		} else {
			before := s.counters()
			secs := time.Since(first).Seconds()
			if err := s.applyCounters(again, before, secs); err != nil {
				return nil, err
			}
			s.IntervalSeconds = secs
		}
	}

	if smErr != nil {
		s.SMQueryError = smErr.Error()
	} else if sm, err := ParseSMInfo(string(smOut)); err != nil {
		s.SMQueryError = err.Error()
	} else {
		s.SMs = []SM{sm}
	}
	if smirErr == nil {
		if all, err := ParseSMInfoRecords(string(smirOut)); err == nil && len(all) > 0 {
			s.SMs = all
		}
	}
	return s, nil
}

// queryErrors runs ibqueryerrors, which exits 1 when it found errors: that
// is a result, not a failure, when its summary is there.
func queryErrors(ctx context.Context, r Runner, cache string) ([]byte, error) {
	out, err := r.Run(ctx, "ibqueryerrors", "--load-cache", cache)
	if err != nil && bytes.Contains(out, []byte("## Summary")) {
		return out, nil
	}
	return out, err
}

// fillNodes gives every port its node's GUID and type, matching iblinkinfo's
// port GUIDs with ibnetdiscover's nodes (a CA's port GUID is not its node GUID).
func (s *Snapshot) fillNodes() {
	byDesc := map[string][]*Node{}
	for i := range s.Nodes {
		byDesc[s.Nodes[i].Desc] = append(byDesc[s.Nodes[i].Desc], &s.Nodes[i])
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if n := s.Node(p.PortGUID); n != nil { // switches: port GUID = node GUID
			p.NodeGUID, p.NodeType = n.GUID, n.Type
			continue
		}
		if ns := byDesc[p.NodeDesc]; len(ns) == 1 {
			p.NodeGUID, p.NodeType = ns[0].GUID, ns[0].Type
			continue
		}
		if p.NodeGUID == "" {
			p.NodeGUID = p.PortGUID
		}
	}
}

func (s *Snapshot) counters() map[string]map[string]uint64 {
	m := map[string]map[string]uint64{}
	for _, p := range s.Ports {
		if p.Counters != nil {
			m[fmt.Sprintf("%s/%d", p.PortGUID, p.Num)] = p.Counters
		}
	}
	return m
}

// applyCounters sets each port's counters from ibqueryerrors output; with
// a previous sample it also sets the rates. Ports it does not list are zero.
func (s *Snapshot) applyCounters(out []byte, before map[string]map[string]uint64, secs float64) error {
	pes, err := ParseIBQueryErrors(string(out))
	if err != nil {
		return err
	}
	idx := map[string]*Port{}
	for i := range s.Ports {
		p := &s.Ports[i]
		p.Counters = nil
		idx[fmt.Sprintf("%s/%d", p.PortGUID, p.Num)] = p
		idx[fmt.Sprintf("%s/%d", p.NodeGUID, p.Num)] = p
	}
	for _, pe := range pes {
		p := idx[fmt.Sprintf("%s/%d", pe.GUID, pe.Port)]
		if p == nil {
			s.Errors = append(s.Errors, fmt.Sprintf("ibqueryerrors reports %s port %d (%s), which iblinkinfo did not list", pe.GUID, pe.Port, pe.NodeDesc))
			continue
		}
		p.Counters = pe.Counters
	}
	if before == nil || secs <= 0 {
		return nil
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		prev := before[fmt.Sprintf("%s/%d", p.PortGUID, p.Num)]
		for name, v := range p.Counters {
			if d := int64(v) - int64(prev[name]); d > 0 {
				if p.CounterRates == nil {
					p.CounterRates = map[string]float64{}
				}
				p.CounterRates[name] = float64(d) / secs
			}
		}
	}
	return nil
}
