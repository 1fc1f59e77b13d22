package judge

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/fabriccheck"
	"github.com/rdmalab/rdmalab/internal/lazyre"
)

var (
	checkWarnFlatRE = lazyre.New(`#warn: counter (\w+) = (\d+) \(threshold (\d+)\)`)
	checkSniffRE    = lazyre.New(`#warn: counter \w+ = \d+\s+\(threshold \d+\)|Error check on lid \d+ \(.*\) port\s+\w+:\s+FAILED`)
	checkLineRE     = lazyre.New(`Error check on lid (\d+) \((.*?)\) port\s+(\w+):\s+FAILED`)
)

func judgePorts(name string, b []byte, opt Options) ([]check.Finding, any, error) {
	s, err := fabric.FromIBNetDiscoverPorts(string(b), "ibnetdiscover -p output "+name)
	if err != nil {
		return nil, nil, err
	}
	return judgeSnapshot(s, opt)
}

// sniffCheckErrors wants a whole warning or failure line, behind any
// launcher prefix: prose naming the markers is not the tool's output.
func sniffCheckErrors(b []byte) bool { return checkSniffRE().Match(b) }

func fabricOptions(opt Options) fabriccheck.Options {
	return fabriccheck.Options{Expect: opt.Expect, Plan: opt.Plan, Thresholds: opt.Thresholds}
}

func judgeSnapshot(s *fabric.Snapshot, opt Options) ([]check.Finding, any, error) {
	fs, err := fabriccheck.Run(s, fabricOptions(opt))
	if err != nil {
		return nil, nil, err
	}
	return fs, s, nil
}

func judgeLinkInfo(name string, b []byte, opt Options) ([]check.Finding, any, error) {
	s, err := fabric.FromIBLinkInfo(string(b), "iblinkinfo output "+name)
	if err != nil {
		return nil, nil, err
	}
	return judgeSnapshot(s, opt)
}

func judgeTopology(name string, b []byte, opt Options) ([]check.Finding, any, error) {
	t, err := fabric.ParseTopology(string(b))
	if err != nil {
		return nil, nil, err
	}
	if len(t.Nodes) == 0 {
		return nil, nil, errors.New("no nodes")
	}
	return judgeSnapshot(fabric.FromTopology(t, "ibnetdiscover output "+name), opt)
}

// judgeQueryErrors judges ibqueryerrors output read into a fabric
// snapshot (a cut or failed output leaves its counters unknown).
func judgeQueryErrors(name string, b []byte, opt Options) ([]check.Finding, any, error) {
	s, err := fabric.FromIBQueryErrors(b, "ibqueryerrors output "+name)
	if err != nil {
		return nil, nil, err
	}
	return judgeSnapshot(s, opt)
}

// judgeCheckErrors reads the older ibcheckerrors, which prints a warning
// per counter over its own threshold and a FAILED line per port (mail
// archives wrap that line).
func judgeCheckErrors(name string, b []byte, opt Options) ([]check.Finding, any, error) {
	flat := strings.Join(strings.Fields(string(b)), " ")
	var fs []check.Finding
	prev := 0
	for _, loc := range checkLineRE().FindAllStringSubmatchIndex(flat, -1) {
		lid, desc, port := flat[loc[2]:loc[3]], flat[loc[4]:loc[5]], flat[loc[6]:loc[7]]
		// The fixes name this port: perfquery -R 2 7 (-a for the node's
		// every port when ibcheckerrors summed them).
		at := strings.NewReplacer("<lid>", lid, "<port>", port)
		if port == "all" {
			at = strings.NewReplacer("-R <lid> <port>", "-a -R "+lid, "<lid> <port>", lid)
		}
		var fixes []string
		for _, fx := range fixOf("fabric.port.errors") {
			fixes = append(fixes, at.Replace(fx))
		}
		for _, w := range checkWarnFlatRE().FindAllStringSubmatch(flat[prev:loc[0]], -1) {
			f := check.Finding{Check: "fabric.port.errors", Outcome: check.Fail,
				Subject:  fmt.Sprintf("lid %s (%s) port %s %s", lid, desc, port, w[1]),
				Message:  fmt.Sprintf("%s, over ibcheckerrors' threshold %s", w[2], w[3]),
				Evidence: []check.Evidence{{What: w[1], Value: w[2], Source: "ibcheckerrors"}},
				Fix:      slices.Clone(fixes)}
			if port == "all" {
				f.Message += " (summed over the node's ports)"
			}
			fs = append(fs, f)
		}
		prev = loc[1]
	}
	if len(fs) == 0 {
		if !strings.Contains(flat, "## Summary") {
			return nil, nil, errors.New("no FAILED port and no summary: cut short")
		}
		fs = append(fs, check.Finding{Check: "fabric.port.errors", Outcome: check.Pass, Subject: "ports", Message: "ibcheckerrors found no port over its thresholds"})
	}
	return fs, nil, nil
}

func fixOf(id string) []string {
	for _, e := range fabriccheck.Catalog {
		if e.ID == id {
			return slices.Clone(e.Fixes)
		}
	}
	return nil
}
