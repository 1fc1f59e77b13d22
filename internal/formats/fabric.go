package formats

import (
	"errors"
	"strings"

	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// The fabric tools' outputs are read by fabric's parsers into fabric
// snapshots; ibcheckerrors, which judged with its own thresholds, into
// what it warned about.

var (
	checkWarnFlatRE = lazyre.New(`#warn: counter (\w+) = (\d+) \(threshold (\d+)\)`)
	checkSniffRE    = lazyre.New(`#warn: counter \w+ = \d+\s+\(threshold \d+\)|Error check on lid \d+ \(.*\) port\s+\w+:\s+FAILED`)
	checkLineRE     = lazyre.New(`Error check on lid (\d+) \((.*?)\) port\s+(\w+):\s+FAILED`)
)

func readNetDiscoverPorts(name string, b []byte) (any, error) {
	return fabric.FromIBNetDiscoverPorts(string(b), "ibnetdiscover -p output "+name)
}

func readLinkInfo(name string, b []byte) (any, error) {
	return fabric.FromIBLinkInfo(string(b), "iblinkinfo output "+name)
}

func readTopology(name string, b []byte) (any, error) {
	t, err := fabric.ParseTopology(string(b))
	if err != nil {
		return nil, err
	}
	if len(t.Nodes) == 0 {
		return nil, errors.New("no nodes")
	}
	return fabric.FromTopology(t, "ibnetdiscover output "+name), nil
}

// readQueryErrors reads ibqueryerrors output into a fabric snapshot (a
// cut or failed output leaves its counters unknown).
func readQueryErrors(name string, b []byte) (any, error) {
	return fabric.FromIBQueryErrors(b, "ibqueryerrors output "+name)
}

// sniffCheckErrors wants a whole warning or failure line, behind any
// launcher prefix: prose naming the markers is not the tool's output.
func sniffCheckErrors(b []byte) bool { return checkSniffRE().Match(b) }

// readCheckErrors reads the older ibcheckerrors, which prints a warning
// per counter over its own threshold and a FAILED line per port (mail
// archives wrap that line, so the text is read with its spacing folded).
func readCheckErrors(name string, b []byte) (any, error) {
	flat := strings.Join(strings.Fields(string(b)), " ")
	out := &CheckErrors{Summary: strings.Contains(flat, "## Summary")}
	prev := 0
	for _, loc := range checkLineRE().FindAllStringSubmatchIndex(flat, -1) {
		lid, desc, port := flat[loc[2]:loc[3]], flat[loc[4]:loc[5]], flat[loc[6]:loc[7]]
		for _, w := range checkWarnFlatRE().FindAllStringSubmatch(flat[prev:loc[0]], -1) {
			out.Over = append(out.Over, CheckError{LID: lid, Desc: desc, Port: port, Counter: w[1], Value: w[2], Threshold: w[3]})
		}
		prev = loc[1]
	}
	if len(out.Over) == 0 && !out.Summary {
		return nil, errors.New("no FAILED port and no summary: cut short")
	}
	return out, nil
}
