package phycheck

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// EndPHY is one end of a named cable and what its PHY outputs show: the
// facts of each output gathered about it, none when there were none ("no
// PHY evidence"). A report lays it out beside the cable.
type EndPHY struct {
	End   string     `json:"end"`
	Ports []phy.Port `json:"facts,omitempty"`
}

// Cable returns each end with the PHY facts about it.
func Cable(ends []End, facts []phy.Port) []EndPHY {
	out := []EndPHY{}
	for _, e := range ends {
		ep := EndPHY{End: e.label()}
		for _, p := range facts {
			if matches(e, p) {
				ep.Ports = append(ep.Ports, p)
			}
		}
		out = append(out, ep)
	}
	return out
}

// Line is one reading of a port's physical layer as a report shows it
// beside its cable: what, the value as the tool printed it, what it is
// judged against, the counters' window, and the rule's outcome ("" when
// no rule judged it).
type Line struct {
	What    string        `json:"what"`
	Value   string        `json:"value"`
	Limit   string        `json:"limit,omitempty"`
	Window  string        `json:"window,omitempty"`
	Outcome check.Outcome `json:"outcome,omitempty"`
	Check   string        `json:"check,omitempty"`
}

// Readout is the readings a technician looks at first, each with the
// outcome of the rule that judges it: the link, the FEC, the BER after
// and before FEC with the window it was counted over, what the FEC could
// not correct, the worst lane, link drops, the module's temperature,
// voltage and Tx/Rx power against its own thresholds; then every other
// rule that found something.
func Readout(p phy.Port) []Line {
	fs := Port(p)
	worst := map[string]*check.Finding{}
	for i := range fs {
		f := &fs[i]
		if w := worst[f.Check]; w == nil || f.Outcome.Rank() < w.Outcome.Rank() {
			worst[f.Check] = f
		}
	}
	judged := func(l Line, ids ...string) Line {
		for _, id := range ids {
			if f := worst[id]; f != nil && (l.Outcome == "" || f.Outcome.Rank() < l.Outcome.Rank()) {
				l.Outcome, l.Check = f.Outcome, id
			}
		}
		return l
	}
	shown := map[string]bool{}
	var out []Line
	add := func(l Line, ids ...string) {
		out = append(out, judged(l, ids...))
		for _, id := range ids {
			shown[id] = true
		}
	}
	if p.State != "" || p.Speed != "" {
		v := strings.TrimSpace(p.State + " " + p.PhysState)
		if p.Speed != "" {
			v = strings.TrimSpace(fmt.Sprintf("%s, %s", v, p.Speed))
			if p.Width > 0 {
				v += fmt.Sprintf(" %dx", p.Width)
			}
		}
		l := Line{What: "link", Value: strings.TrimPrefix(v, ", ")}
		if len(p.Enabled) > 0 {
			l.Limit = "the port is enabled for " + strings.Join(p.Enabled, ", ")
			if len(p.Cable) > 0 {
				l.Limit += "; the cable supports " + strings.Join(p.Cable, ", ")
			}
		}
		add(l, IDLinkState, IDLinkSpeed)
	}
	if p.FEC != nil && p.FEC.Active != "" {
		add(Line{What: "FEC", Value: p.FEC.Active}, IDFECMode)
	}
	if c := p.Counters; c != nil {
		if c.Effective != nil || c.EffectiveBER != nil {
			var v []string
			if c.EffectiveBER != nil {
				v = append(v, berText(*c.EffectiveBER))
			}
			if c.Effective != nil {
				v = append(v, fmt.Sprintf("%d errors", *c.Effective))
			}
			add(Line{What: "effective BER (after FEC)", Value: strings.Join(v, ", "), Limit: fmt.Sprintf("< %g", EffectiveBERLimit), Window: c.Window}, IDEffectiveBER)
		}
		if c.RawBER != nil || len(c.RawBERLane) > 0 {
			v := ""
			if c.RawBER != nil {
				v = berText(*c.RawBER)
			}
			if i, b := worstBER(c.RawBERLane); i >= 0 && len(c.RawBERLane) > 1 {
				v = strings.TrimPrefix(fmt.Sprintf("%s; worst lane %d: %s", v, i, berText(b)), "; ")
			}
			l := Line{What: "raw BER (before FEC)", Value: v, Window: c.Window}
			if p.FEC != nil && p.FEC.Kind == phy.FECKP4 {
				l.Limit = fmt.Sprintf("< %.1e (RS(544,514)'s design input)", KP4InputBER)
			}
			add(l, IDRawBER)
		}
		if c.Uncorrectable != nil || c.Symbol != nil {
			var v []string
			if c.Uncorrectable != nil {
				v = append(v, fmt.Sprintf("%d uncorrectable blocks", *c.Uncorrectable))
			}
			if c.Symbol != nil {
				v = append(v, fmt.Sprintf("%s %d", c.SymbolName, *c.Symbol))
			}
			add(Line{What: "FEC uncorrectable", Value: strings.Join(v, ", "), Limit: "0: any is a lost frame", Window: c.Window}, IDUncorrectable, IDHistogram)
		} else if p.Histogram != nil {
			add(Line{What: "FEC histogram", Value: fmt.Sprintf("worst codeword: %d corrected symbols", max(p.Histogram.Highest(), 0)), Limit: fmt.Sprintf("≤ %d (%s)", correctable(fecKind(p)), fecKind(p))}, IDHistogram)
		}
		if l, ok := worstLane(c); ok {
			add(l, IDLane)
		}
		if c.LinkDown != nil || c.Recovery != nil {
			var v []string
			if c.LinkDown != nil {
				v = append(v, fmt.Sprintf("%d link down", *c.LinkDown))
			}
			if c.Recovery != nil {
				v = append(v, fmt.Sprintf("%d recovery", *c.Recovery))
			}
			add(Line{What: "link drops", Value: strings.Join(v, ", "), Limit: "0", Window: c.Window}, IDLinkDown)
		}
	}
	if m := p.Module; m != nil && !m.Passive {
		for _, q := range []phy.Quantity{phy.Temperature, phy.Voltage, phy.TxPower, phy.RxPower} {
			if l, ok := moduleLine(m, q); ok {
				out = append(out, l)
			}
		}
		shown[IDModuleDDM] = true
	}
	// every other rule that found something, in its own words
	check.Sort(fs)
	for _, f := range fs {
		if f.Outcome == check.Pass || shown[f.Check] {
			continue
		}
		out = append(out, Line{What: f.Check, Value: brief(f.Message), Outcome: f.Outcome, Check: f.Check})
	}
	return out
}

func fecKind(p phy.Port) phy.FECKind {
	if p.FEC == nil {
		return phy.FECUnknown
	}
	return p.FEC.Kind
}

// berText is a BER as printed, with MFT's 15E-255 said in words.
func berText(b phy.BER) string {
	if b.NoErrors {
		return "no errors counted (" + b.Text + ")"
	}
	return b.Text
}

func worstBER(bs []phy.BER) (int, phy.BER) {
	at := -1
	for i, b := range bs {
		if at < 0 || b.Value > bs[at].Value {
			at = i
		}
	}
	if at < 0 {
		return -1, phy.BER{}
	}
	return at, bs[at]
}

// worstLane is the lane with the most raw errors, beside the others.
func worstLane(c *phy.Counters) (Line, bool) {
	if len(c.RawLane) < 2 {
		return Line{}, false
	}
	at := 0
	var all []string
	for i, v := range c.RawLane {
		if v > c.RawLane[at] {
			at = i
		}
		all = append(all, strconv.FormatUint(v, 10))
	}
	return Line{What: "worst lane (raw errors)", Value: fmt.Sprintf("lane %d: %d (lanes from 0: %s)", at, c.RawLane[at], strings.Join(all, ", ")),
		Limit: "< 10× the port's median lane", Window: c.Window}, true
}

// moduleLine is a module quantity's worst reading (the one whose outcome
// is worst, else the lowest; the hottest for temperature) against the
// module's own thresholds.
func moduleLine(m *phy.Module, q phy.Quantity) (Line, bool) {
	var best *phy.Reading
	var bestOut check.Outcome
	var bestWhy string
	t, hasT := m.Thresholds[q]
	for i := range m.Readings {
		r := &m.Readings[i]
		if r.Quantity != q {
			continue
		}
		out, why := check.Pass, ""
		switch {
		case unphysical(*r) != "":
			out, why = check.Warn, "a reading error: "+unphysical(*r)
		case !hasT || unset(t):
			out = ""
		case inconsistent(t) != "":
			out, why = check.Warn, "thresholds contradict each other: "+inconsistent(t)
		default:
			out, why = against(r.Value, t)
		}
		worse := best == nil || out != "" && (bestOut == "" || out.Rank() < bestOut.Rank())
		if !worse && best != nil && out == bestOut {
			if q == phy.Temperature {
				worse = r.Value > best.Value
			} else {
				worse = r.Value < best.Value || math.IsNaN(best.Value)
			}
		}
		if worse {
			best, bestOut, bestWhy = r, out, why
		}
	}
	if best == nil {
		return Line{}, false
	}
	what := "module " + string(q)
	if best.Lane > 0 {
		what += fmt.Sprintf(" (worst channel %d)", best.Lane)
	}
	v := cmpOr(best.Text, strconv.FormatFloat(best.Value, 'g', -1, 64))
	if best.Unit != "" && !strings.Contains(v, best.Unit) {
		v += " " + best.Unit
	}
	l := Line{What: what, Value: strings.TrimSpace(v), Outcome: bestOut}
	if bestOut != "" {
		l.Check = IDModuleDDM
	}
	switch {
	case bestWhy != "" && bestOut != check.Pass:
		l.Limit = bestWhy
	case hasT && !unset(t):
		l.Limit = "the module's own " + levelName(t) + ": " + thresholdText(t, best.Unit)
	default:
		l.Limit = "the module's thresholds are not in the output"
	}
	return l, true
}

func thresholdText(t phy.Thresholds, unit string) string {
	var parts []string
	if t.AlarmLo != nil || t.AlarmHi != nil {
		parts = append(parts, fmt.Sprintf("%s..%s", fmtp(t.AlarmLo), fmtp(t.AlarmHi)))
	}
	if t.WarnLo != nil || t.WarnHi != nil {
		parts = append(parts, fmt.Sprintf("warning %s..%s", fmtp(t.WarnLo), fmtp(t.WarnHi)))
	}
	return strings.TrimSpace(strings.Join(parts, ", ") + " " + unit)
}

func cmpOr(a, b string) string {
	if strings.TrimSpace(a) != "" {
		return a
	}
	return b
}
