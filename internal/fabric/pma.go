package fabric

import (
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// PMAFailure is a port whose PMA did not answer one of ibqueryerrors'
// queries (a dropped MAD, a timeout): that port's counters are unknown,
// and the rest of the fabric's are still read.
type PMAFailure struct {
	LID int
	// Port is the port queried; 0 when the tool named only the LID (then
	// every port at that LID is unknown).
	Port int
	// Lines are what the tool printed about it, for the evidence.
	Lines []string
}

var (
	// ibqueryerrors: "IB_GSI_PORT_COUNTERS query failed on sw1, Lid 147 port 3"
	pmaQueryFailedRE = lazyre.New(`query failed on .*, Lid (\d+) port (\d+)\s*$`)
	// libibmad: "mad_rpc: _do_madrpc failed; dport (Lid 147)"
	madrpcFailedRE = lazyre.New(`_do_madrpc failed; dport \(Lid (\d+)\)`)
	// libibmad's lower-level line of the same event: "_do_madrpc: recv failed: Connection timed out"
	madrpcIORE = lazyre.New(`_do_madrpc: (recv|send) failed`)
)

// splitPMAFailures takes the per-port MAD failures out of a tool's output
// and returns them with the output left, so that only a failure of the
// whole run (no SM, no umad) is taken for one.
func splitPMAFailures(out Output) ([]PMAFailure, Output) {
	if !madrpcIORE().Match(out.Stderr) && !madrpcFailedRE().Match(out.Stderr) && !pmaQueryFailedRE().Match(out.Stderr) {
		return nil, out
	}
	type key struct{ lid, port int }
	byPort := map[key]*PMAFailure{}
	var order []key
	add := func(k key, line string) {
		f := byPort[k]
		if f == nil {
			f = &PMAFailure{LID: k.lid, Port: k.port}
			byPort[k] = f
			order = append(order, k)
		}
		f.Lines = append(f.Lines, line)
	}
	var rest []string
	var pending []string // low-level lines, told before the line naming the LID
	for _, line := range strings.Split(string(out.Stderr), "\n") {
		l := strings.TrimSpace(line)
		if m := pmaQueryFailedRE().FindStringSubmatch(l); m != nil {
			lid, _ := strconv.Atoi(m[1])
			port, _ := strconv.Atoi(m[2])
			add(key{lid, port}, l)
			continue
		}
		if m := madrpcFailedRE().FindStringSubmatch(l); m != nil {
			lid, _ := strconv.Atoi(m[1])
			for _, p := range pending {
				add(key{lid, 0}, p)
			}
			pending = nil
			add(key{lid, 0}, l)
			continue
		}
		if madrpcIORE().MatchString(l) {
			pending = append(pending, l)
			continue
		}
		rest = append(rest, line)
	}
	// A low-level line never followed by the LID it was for stays a failure.
	rest = append(rest, pending...)
	// The lines naming only a LID belong to the port line of that LID.
	var out2 []PMAFailure
	for _, k := range order {
		f := byPort[k]
		if k.port == 0 {
			merged := false
			for _, k2 := range order {
				if k2.lid == k.lid && k2.port != 0 {
					p := byPort[k2]
					p.Lines = slices.Concat(f.Lines, p.Lines)
					merged = true
				}
			}
			if merged {
				continue
			}
		}
		out2 = append(out2, *f)
	}
	out.Stderr = []byte(strings.Join(rest, "\n"))
	return out2, out
}

// markPMAFailures sets CounterError on the ports the failures name.
func (s *Snapshot) markPMAFailures(fails []PMAFailure) {
	for _, f := range fails {
		found := false
		for i := range s.Ports {
			p := &s.Ports[i]
			if p.LID == f.LID && (f.Port == 0 || p.Num == f.Port) {
				p.CounterError = strings.Join(f.Lines, "; ")
				p.Counters = nil
				found = true
			}
		}
		if !found {
			s.Errors = append(s.Errors, "ibqueryerrors: "+strings.Join(f.Lines, "; ")+" (no port with that LID was listed)")
		}
	}
}
