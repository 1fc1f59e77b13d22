package fabric

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/procgroup"
)

// Output is what a tool printed.
type Output struct {
	Stdout, Stderr []byte
}

// Runner runs one diagnostic tool.
type Runner interface {
	Run(ctx context.Context, name string, args ...string) (Output, error)
}

// ToolError is a tool that failed: a non-zero exit, a timeout, or not
// installed. Output still holds what it printed.
type ToolError struct {
	Tool     string
	Args     []string
	Exit     int // -1 when it did not exit by itself
	TimedOut time.Duration
	Msg      string
}

func (e *ToolError) Error() string {
	switch {
	case e.TimedOut > 0:
		return fmt.Sprintf("%s timed out after %s (killed with its children)", e.Tool, e.TimedOut)
	case e.Exit >= 0:
		return fmt.Sprintf("%s %s: exit %d: %s", e.Tool, strings.Join(e.Args, " "), e.Exit, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Tool, e.Msg)
}

// Exec runs the real infiniband-diags tools as subprocesses. Every call has
// its own timeout: a dropped MAD must never hang a scan. Each tool runs in
// its own process group, and a timeout kills the whole group, so a tool
// that forked a child holding its output pipe still returns on time.
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

// DefaultTimeout bounds one tool when Exec.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// Run implements Runner.
func (e Exec) Run(ctx context.Context, name string, args ...string) (Output, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if e.CA != "" {
		args = append(args, "-C", e.CA)
	}
	if e.Port > 0 {
		args = append(args, "-P", fmt.Sprint(e.Port))
	}
	cmd := procgroup.Command(ctx, 0, time.Second, name, args...)
	cmd.Dir = e.Dir
	cmd.Env = append(os.Environ(), e.Env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := Output{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if ctx.Err() == context.DeadlineExceeded {
		return out, &ToolError{Tool: name, Args: args, Exit: -1, TimedOut: timeout}
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() >= 0 {
			return out, &ToolError{Tool: name, Args: args, Exit: ee.ExitCode(), Msg: lastLine(stderr.String())}
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		return out, &ToolError{Tool: name, Args: args, Exit: -1, Msg: err.Error() + " (is infiniband-diags installed?)"}
	}
	return out, nil
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

// failureRE finds the lines by which a tool says it failed even when it
// exits 0 (ibqueryerrors prints "Query SA failed" and exits 0 when no SM
// answers). The simulator's own attach notice is not a failure.
var failureRE = lazyre.New(`(?im)^.*(failed|ibpanic|iberror|timeout|timed out|error:|no sm/sa found).*$`)

// dataLineRE finds the tools' data lines, which carry node descriptions:
// a node called "failed" or "error: x" is no failure of the tool.
var dataLineRE = lazyre.New(`^\s*(?:Errors for |Data Counters for |GUID 0x|(?:CA|Switch|Router): |(?:Switch|Ca|Hca|Rt)\s+\d+\s+"|\[\d+\]|0x[0-9a-fA-F]+\s+")|==\(`)

// failureWords are what failureRE looks for, as they are spelled: a cheap
// test before the regular expression runs over a large output.
var failureWords = [][]byte{[]byte("ailed"), []byte("AILED"), []byte("ibpanic"), []byte("iberror"), []byte("imeout"), []byte("imed out"), []byte("rror:"), []byte("ERROR:"), []byte("No SM/SA")}

// ToolFailure returns the first line of out that reports a failure, or "".
func ToolFailure(out Output) string {
	for _, b := range [][]byte{out.Stderr, out.Stdout} {
		hit := false
		for _, w := range failureWords {
			if bytes.Contains(b, w) {
				hit = true
				break
			}
		}
		if !hit {
			continue
		}
		for _, m := range failureRE().FindAll(b, -1) {
			l := strings.TrimSpace(string(m))
			if strings.Contains(l, "sim_connect") || strings.HasPrefix(l, "##") || dataLineRE().MatchString(l) {
				continue
			}
			return l
		}
	}
	return ""
}

// ScanOptions tune a scan.
type ScanOptions struct {
	// Interval, when set, samples the error counters twice this far apart
	// and records rates.
	Interval time.Duration
	Now      func() time.Time
	// Progress, when set, receives one line per stage and a countdown
	// while the scan waits (the CLI passes stderr when it is a terminal).
	Progress io.Writer
}

func (o ScanOptions) say(format string, a ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format, a...)
	}
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

	s := &Snapshot{SchemaVersion: SchemaVersion, CollectedAt: now().UTC(), Read: []Tool{IBNetDiscover},
		Source: "ibnetdiscover --cache; iblinkinfo --line; ibqueryerrors; sminfo; saquery SMIR"}
	o.say("fabric: discovering (ibnetdiscover)…\n")
	out, err := r.Run(ctx, "ibnetdiscover", "--cache", cache)
	if err != nil {
		return nil, fmt.Errorf("discover the fabric: %w", err)
	}
	topo, err := ParseTopology(string(out.Stdout))
	if err != nil {
		return nil, err
	}
	if len(topo.Nodes) == 0 {
		return nil, fmt.Errorf("discover the fabric: ibnetdiscover printed no nodes (%s)", cmpOr(ToolFailure(out), "no output"))
	}

	// Node descriptions are set by the nodes themselves: the tools that
	// follow print every node under its GUID instead (a node name map
	// rdmalab writes), so no description reaches the lines parsed for
	// structure; the descriptions shown are the discovery's.
	nameMap := filepath.Join(dir, "node-name-map")
	if err := writeNameMap(nameMap, topo.Nodes); err != nil {
		return nil, fmt.Errorf("write the node name map: %w", err)
	}
	o.say("fabric: %d nodes; reading links, error counters and subnet managers…\n", len(topo.Nodes))
	var (
		wg                    sync.WaitGroup
		linkOut, qeOut        Output
		smOut, smirOut        Output
		linkErr, qeErr, smErr error
		smirErr               error
	)
	wg.Add(4)
	go func() {
		defer wg.Done()
		linkOut, linkErr = r.Run(ctx, "iblinkinfo", "--line", "--load-cache", cache, "--node-name-map", nameMap)
	}()
	var qeFails []PMAFailure
	go func() { defer wg.Done(); qeOut, qeFails, qeErr = queryErrors(ctx, r, cache, nameMap) }()
	go func() { defer wg.Done(); smOut, smErr = r.Run(ctx, "sminfo") }()
	go func() { defer wg.Done(); smirOut, smirErr = r.Run(ctx, "saquery", "SMIR") }()
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if linkErr != nil {
		return nil, fmt.Errorf("read links: %w", linkErr)
	}
	if s.Ports, s.Unreadable, err = ParseIBLinkInfo(string(linkOut.Stdout)); err != nil {
		return nil, err
	}
	s.Unreadable = append(topo.Unreadable, s.Unreadable...)
	s.Read = append(s.Read, IBLinkInfo)
	if f := ToolFailure(linkOut); f != "" {
		s.Errors = append(s.Errors, "iblinkinfo: "+f)
	}
	for _, n := range topo.Nodes {
		s.Nodes = append(s.Nodes, Node{GUID: n.GUID, Type: n.Type, Desc: n.Desc, Ports: n.Ports, SysImageGUID: n.SysImageGUID, LID: n.LID, VendorID: n.VendorID, DeviceID: n.DeviceID})
	}
	s.addPortGUIDs(topo)
	s.Resolve()
	s.describe(topo)

	s.Read = append(s.Read, IBQueryErrors)
	first := time.Now()
	if qeErr != nil {
		s.CounterError = qeErr.Error()
	} else if err := s.applyCounters(qeOut.Stdout, nil, 0); err != nil {
		s.CounterError = err.Error()
	} else {
		s.markPMAFailures(qeFails)
	}
	if o.Interval > 0 && s.CounterError == "" {
		if err := o.wait(ctx, o.Interval); err != nil {
			return nil, err
		}
		again, fails, err := queryErrors(ctx, r, cache, nameMap)
		if err != nil {
			s.CounterError = "second sample: " + err.Error()
		} else {
			before := s.counters()
			secs := time.Since(first).Seconds()
			if err := s.applyCounters(again.Stdout, before, secs); err != nil {
				s.CounterError = "second sample: " + err.Error()
			}
			s.markPMAFailures(append(qeFails, fails...))
			s.IntervalSeconds = secs
		}
	}

	s.Read = append(s.Read, SMInfo)
	if smErr != nil {
		s.SMQueryError = smErr.Error()
		s.SMNoAnswer = SMNoAnswer(smOut, smErr)
	} else if sm, err := ParseSMInfo(string(smOut.Stdout)); err != nil {
		s.SMQueryError = err.Error()
	} else {
		s.SMs = []SM{sm}
	}
	if smirErr != nil {
		s.SMRecordsError = smirErr.Error()
	} else if all, err := ParseSMInfoRecords(string(smirOut.Stdout)); err != nil {
		s.SMRecordsError = err.Error()
	} else if len(all) > 0 {
		s.SMs = all
	}
	o.say("fabric: done: %d nodes, %d ports\n", len(s.Nodes), len(s.Ports))
	return s, nil
}

// SMNoAnswer reports whether a failed sminfo asked the fabric and got no
// answer ("iberror: failed: query", a dropped MAD, a timeout) rather than
// failing to ask (not installed, the local port would not open).
func SMNoAnswer(out Output, err error) bool {
	var te *ToolError
	if !errors.As(err, &te) {
		return false
	}
	if te.TimedOut > 0 {
		return true
	}
	if te.Exit < 0 {
		return false
	}
	text := string(out.Stderr) + string(out.Stdout)
	for _, local := range []string{"can't open UMAD port", "Failed to open", "Permission denied", "No such device"} {
		if strings.Contains(text, local) {
			return false
		}
	}
	for _, asked := range []string{"failed: query", "_do_madrpc failed", "No SM/SA found"} {
		if strings.Contains(text, asked) {
			return true
		}
	}
	return false
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// wait sleeps d, bounded by ctx, with a countdown on the progress writer.
func (o ScanOptions) wait(ctx context.Context, d time.Duration) error {
	end := time.Now().Add(d)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		left := time.Until(end)
		if left <= 0 {
			o.say("\rfabric: taking the second counter sample        \n")
			return nil
		}
		o.say("\rfabric: second counter sample in %s   ", left.Round(time.Second))
		select {
		case <-ctx.Done():
			o.say("\n")
			return ctx.Err()
		case <-tick.C:
		case <-time.After(left):
		}
	}
}

// queryErrors runs ibqueryerrors. It exits 1 when it found errors: that
// is a result, not a failure, when its summary is there. It also prints
// errors and exits 0 (no SM: "Query SA failed"): that is a failed read,
// and the counters are unknown. A MAD to one port that got no answer is
// that port's failure alone: it is returned, not an error.
func queryErrors(ctx context.Context, r Runner, cache, nameMap string) (Output, []PMAFailure, error) {
	out, err := r.Run(ctx, "ibqueryerrors", "--load-cache", cache, "--node-name-map", nameMap)
	fails, err := CheckQueryErrors(out, err)
	return out, fails, err
}

// CheckQueryErrors judges one ibqueryerrors run (its output and the
// Runner's error): the ports whose PMA did not answer, and an error when
// the run as a whole failed.
func CheckQueryErrors(out Output, err error) ([]PMAFailure, error) {
	summary := bytes.Contains(out.Stdout, []byte("## Summary"))
	var te *ToolError
	if err != nil && !(summary && errors.As(err, &te) && te.Exit == 1) {
		return nil, err
	}
	fails, rest := splitPMAFailures(out)
	if f := ToolFailure(rest); f != "" {
		return nil, fmt.Errorf("ibqueryerrors printed %q: the counters are unknown", f)
	}
	if !summary {
		return nil, errors.New("ibqueryerrors printed no summary: the counters are unknown")
	}
	return fails, nil
}

// writeNameMap writes a node name map (infiniband-diags' --node-name-map)
// naming every node by its own GUID.
func writeNameMap(path string, nodes []TopoNode) error {
	var b strings.Builder
	for _, n := range nodes {
		if !n.GUID.IsZero() {
			fmt.Fprintf(&b, "%s \"%s\"\n", n.GUID, n.GUID)
		}
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// describe gives every port and far end the description the discovery
// read for its node (the tools after it printed GUIDs in its place).
func (s *Snapshot) describe(t *Topology) {
	desc := map[host.GUID]string{}
	for _, n := range t.Nodes {
		if !n.GUID.IsZero() {
			desc[n.GUID] = n.Desc
		}
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if d, ok := desc[p.NodeGUID]; ok {
			p.NodeDesc = d
		}
		if r := p.Remote; r != nil {
			if d, ok := desc[r.NodeGUID]; ok {
				r.NodeDesc = d
			}
		}
	}
}

// addPortGUIDs records ibnetdiscover's port GUIDs (a CA's port GUID is not
// its node GUID) on the ports iblinkinfo listed.
func (s *Snapshot) addPortGUIDs(t *Topology) {
	nodeOf := map[host.GUID]host.GUID{}
	for _, l := range t.Links {
		for _, e := range []TopoEnd{l.A, l.B} {
			if !e.PortGUID.IsZero() && !e.GUID.IsZero() {
				nodeOf[e.PortGUID] = e.GUID
			}
		}
	}
	for i := range s.Ports {
		p := &s.Ports[i]
		if g, ok := nodeOf[p.PortGUID]; ok && p.NodeGUID.IsZero() {
			p.NodeGUID = g
		}
		if r := p.Remote; r != nil && r.NodeGUID.IsZero() {
			if g, ok := nodeOf[r.PortGUID]; ok {
				r.NodeGUID = g
			}
		}
	}
}

func (s *Snapshot) counters() map[PortKey]map[string]uint64 {
	m := map[PortKey]map[string]uint64{}
	for _, p := range s.Ports {
		if p.Counters != nil {
			m[p.Key()] = p.Counters
		}
	}
	return m
}

// applyCounters sets each port's counters from ibqueryerrors output; with
// a previous sample it also sets the rates. Ports it does not list are zero
// (ibqueryerrors lists only ports over their thresholds).
func (s *Snapshot) applyCounters(out []byte, before map[PortKey]map[string]uint64, secs float64) error {
	pes, err := ParseIBQueryErrors(string(out))
	if err != nil {
		return err
	}
	idx := map[PortKey]*Port{}
	for i := range s.Ports {
		p := &s.Ports[i]
		p.Counters = nil
		idx[p.Key()] = p
		idx[PortKey{p.PortGUID, p.Num}] = p
	}
	for _, pe := range pes {
		p := idx[PortKey{pe.GUID, pe.Port}]
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
		prev := before[p.Key()]
		for name, v := range p.Counters {
			if v > prev[name] {
				if p.CounterRates == nil {
					p.CounterRates = map[string]float64{}
				}
				p.CounterRates[name] = float64(v-prev[name]) / secs
			}
		}
	}
	return nil
}

// Replay is a Runner that answers from captured output by tool name, for
// tests without a simulator. A tool it has no capture of fails as if not
// installed; Exit makes a capture exit non-zero.
type Replay map[string]Captured

// Captured is one tool's recorded run.
type Captured struct {
	Stdout, Stderr string
	Exit           int
}

// Run implements Runner.
func (r Replay) Run(ctx context.Context, name string, args ...string) (Output, error) {
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	c, ok := r[name]
	if !ok {
		return Output{}, &ToolError{Tool: name, Args: args, Exit: -1, Msg: "no capture of it (not installed)"}
	}
	out := Output{Stdout: []byte(c.Stdout), Stderr: []byte(c.Stderr)}
	if c.Exit != 0 {
		return out, &ToolError{Tool: name, Args: args, Exit: c.Exit, Msg: lastLine(c.Stderr)}
	}
	return out, nil
}
