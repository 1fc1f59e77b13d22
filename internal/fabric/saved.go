package fabric

import (
	"bytes"
	"fmt"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// Saved outputs of the fabric tools, recognised by content and read into
// fabric snapshots (judge's registry names them; fabriccheck judges them).

var (
	linkArrowRE  = lazyre.New(`(?m)==\(.*\)==>`)
	sniffNodeRE  = lazyre.New(`(?m)^\s*(Switch|Ca|Hca|Rt)\s+\d+\s+"`)
	sniffPortsRE = lazyre.New(`(?m)^\s*(CA|SW)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s+\d+x\s`)
	qeLineRE     = lazyre.New(`(?m)^\s*GUID 0x[0-9a-fA-F]+ port (\d+|ALL):`)
	qeSummaryRE  = lazyre.New(`(?m)^## Summary: (\d+) nodes checked`)
	qeNodeLineRE = lazyre.New(`(?m)^Errors for `)
)

// SniffIBLinkInfo reports whether b looks like iblinkinfo's output (either
// mode) and not ibqueryerrors' (which can quote link lines).
func SniffIBLinkInfo(b []byte) bool { return linkArrowRE().Match(b) && !qeNodeLineRE().Match(b) }

// SniffTopology reports whether b looks like an ibnetdiscover topology (or
// an ibsim netlist).
func SniffTopology(b []byte) bool { return sniffNodeRE().Match(b) }

// SniffIBNetDiscoverPorts reports whether b looks like `ibnetdiscover -p`.
func SniffIBNetDiscoverPorts(b []byte) bool { return sniffPortsRE().Match(b) }

// SniffIBQueryErrors reports whether b looks like ibqueryerrors' output
// (its summary, or its port lines), not the older ibcheckerrors'.
func SniffIBQueryErrors(b []byte) bool {
	return qeSummaryRE().Match(b) && !bytes.Contains(b, []byte("#warn: counter")) || qeLineRE().Match(b)
}

// FromIBQueryErrors reads saved ibqueryerrors output into a snapshot of
// the ports it lists, with their counters. Output without its summary, or
// with an error line, is a failed read (CounterError): the counters are
// unknown, not zero.
func FromIBQueryErrors(b []byte, source string) (*Snapshot, error) {
	pes, err := ParseIBQueryErrors(string(b))
	if err != nil {
		return nil, err
	}
	s := &Snapshot{SchemaVersion: SchemaVersion, Source: source, Read: []Tool{IBQueryErrors}}
	for _, pe := range pes {
		s.Ports = append(s.Ports, Port{NodeGUID: pe.GUID, PortGUID: pe.GUID, NodeDesc: pe.NodeDesc, Num: pe.Port, Counters: pe.Counters})
	}
	if f := ToolFailure(Output{Stdout: b}); f != "" {
		s.CounterError = fmt.Sprintf("ibqueryerrors printed %q", f)
	} else if !qeSummaryRE().Match(b) {
		s.CounterError = "the output has no \"## Summary\": cut short, or the tool failed"
	}
	s.Resolve()
	return s, nil
}
