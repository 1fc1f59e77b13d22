package htmlreport

import (
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/bench"
	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/phycheck"
)

// phyEnd is one end of a named cable with its own physical-layer
// readings, laid out beside the cable: a table per output gathered about
// it, or "no PHY evidence".
type phyEnd struct {
	End   string
	Ports []phyPort // none: no PHY evidence
	// Switch is a switch port: rdmalab gathers PHY outputs on hosts only.
	Switch bool
}

type phyPort struct {
	Name, Tool, Source string
	// Badge is the worst outcome of its readings (pass when all passed).
	Badge string
	Lines []phycheck.Line
	// Said is the one line the finding carries (phycheck.Summary).
	Said string
}

// newPHYEnds lays out the named cable's ends. A document written before
// the ends' PHY was recorded names the ends alone: no PHY evidence.
func newPHYEnds(cv *bench.Cover) []phyEnd {
	if cv == nil || cv.Fault == nil {
		return nil
	}
	ends := cv.Fault.PHY
	if len(ends) == 0 {
		for _, e := range cv.Fault.Ends {
			ends = append(ends, phycheck.EndPHY{End: e.Name})
		}
	}
	// Fault.PHY is in the order of Fault.Ends; the links say which are CAs.
	ca := map[string]bool{}
	for _, l := range cv.Links {
		ca[l.From.GUID.String()+"/"+strconv.Itoa(l.From.Port)] = ca[l.From.GUID.String()+"/"+strconv.Itoa(l.From.Port)] || l.FromCA
		ca[l.To.GUID.String()+"/"+strconv.Itoa(l.To.Port)] = ca[l.To.GUID.String()+"/"+strconv.Itoa(l.To.Port)] || l.ToCA
	}
	var out []phyEnd
	for i, e := range ends {
		pe := phyEnd{End: e.End}
		if i < len(cv.Fault.Ends) {
			r := cv.Fault.Ends[i]
			pe.Switch = !ca[r.GUID.String()+"/"+strconv.Itoa(r.Port)]
		}
		for _, p := range e.Ports {
			pp := phyPort{Name: p.Name(), Tool: p.Tool, Source: p.Source, Lines: phycheck.Readout(p), Said: phycheck.Summary(p), Badge: string(check.Pass)}
			worst := check.Pass
			for _, l := range pp.Lines {
				if l.Outcome != "" && l.Outcome.Rank() < worst.Rank() {
					worst = l.Outcome
				}
			}
			pp.Badge = string(worst)
			pe.Ports = append(pe.Ports, pp)
		}
		out = append(out, pe)
	}
	return out
}

// phyTitle is what the named cable's hover says of its ends' PHY.
func phyTitle(ends []phyEnd) string {
	var parts []string
	for _, e := range ends {
		if len(e.Ports) == 0 {
			parts = append(parts, e.End+": "+phycheck.NoEvidence)
			continue
		}
		for _, p := range e.Ports {
			parts = append(parts, e.End+" ("+p.Tool+"): "+p.Said)
		}
	}
	return strings.Join(parts, "; ")
}
