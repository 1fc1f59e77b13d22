package phycheck

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// module judges the module's readings against its own thresholds, the
// readings and thresholds against physics, its flags and its power mode.
func module(p phy.Port) []check.Finding {
	m := p.Module
	if m == nil {
		return nil
	}
	var fs []check.Finding
	fs = append(fs, power(p)...)
	fs = append(fs, flags(p)...)
	if m.Passive && allZero(m) {
		// A passive copper cable has no laser, receiver or monitor: its
		// zero readings in a [0..0] range are no readings at all.
		return fs
	}
	bad := map[phy.Quantity]string{}
	for q, t := range m.Thresholds {
		if why := inconsistent(t); why != "" {
			bad[q] = why
			f := find(CheckModuleReading, check.Warn, p.Name(), readAgain(p), "the module's %s thresholds contradict each other (%s: %s): a reading error of the module or its decoder; its %s readings are not judged against them", q, strings.TrimSpace(strings.TrimSuffix(t.Text, "; ")), why, q)
			f.Evidence = []check.Evidence{ev(string(q)+" thresholds", t.Text, p.Source)}
			fs = append(fs, f)
		}
	}
	var fails, warns, passes []string
	var unjudged []string
	for _, r := range m.Readings {
		name := readingName(r)
		if why := unphysical(r); why != "" {
			f := find(CheckModuleReading, check.Warn, laneSubject(p, r), readAgain(p), "%s reads %s: %s — a reading error, not an alarm; not judged against the thresholds", name, r.Text, why)
			f.Evidence = []check.Evidence{ev(name, r.Text, p.Source)}
			fs = append(fs, f)
			continue
		}
		if _, contradicted := bad[r.Quantity]; contradicted {
			continue
		}
		t, ok := m.Thresholds[r.Quantity]
		if !ok || unset(t) {
			unjudged = append(unjudged, name)
			continue
		}
		out, why := against(r.Value, t)
		line := fmt.Sprintf("%s %s %s (%s)", name, strconv.FormatFloat(r.Value, 'g', -1, 64), r.Unit, why)
		switch out {
		case check.Fail:
			f := find(CheckModuleDDM, check.Fail, laneSubject(p, r), moduleFix(p, r), "%s %s %s outside the module's own %s: %s (%s)", name, strconv.FormatFloat(r.Value, 'g', -1, 64), r.Unit, levelName(t), why, srcModule)
			f.Evidence = []check.Evidence{ev(name, r.Text, p.Source), ev(string(r.Quantity)+" thresholds", t.Text, p.Source)}
			fs = append(fs, f)
			fails = append(fails, line)
		case check.Warn:
			f := find(CheckModuleDDM, check.Warn, laneSubject(p, r), moduleFix(p, r), "%s %s %s outside the module's own warning thresholds: %s (%s)", name, strconv.FormatFloat(r.Value, 'g', -1, 64), r.Unit, why, srcModule)
			f.Evidence = []check.Evidence{ev(name, r.Text, p.Source), ev(string(r.Quantity)+" thresholds", t.Text, p.Source)}
			fs = append(fs, f)
			warns = append(warns, line)
		default:
			passes = append(passes, line)
		}
	}
	if len(fails)+len(warns) == 0 && len(passes) > 0 {
		f := find(CheckModuleDDM, check.Pass, p.Name(), nil, "%d module readings inside the module's own thresholds (%s)", len(passes), srcModule)
		for _, l := range passes {
			f.Evidence = append(f.Evidence, ev("reading", l, p.Source))
		}
		fs = append(fs, f)
	}
	if len(unjudged) > 0 {
		why := "the module's thresholds are not in the output"
		if m.Elided {
			why += " (the author cut the listing with \"...\")"
		}
		f := find(CheckModuleDDM, check.Unknown, p.Name(), nil, "%d readings (%s) not judged: %s", len(unjudged), strings.Join(unjudged, ", "), why)
		fs = append(fs, f)
	}
	return fs
}

func allZero(m *phy.Module) bool {
	for _, r := range m.Readings {
		if r.Value != 0 {
			return false
		}
	}
	for _, t := range m.Thresholds {
		if !unset(t) {
			return false
		}
	}
	return true
}

// unset is a threshold set the module did not fill: all zero.
func unset(t phy.Thresholds) bool {
	for _, v := range []*float64{t.AlarmLo, t.AlarmHi, t.WarnLo, t.WarnHi} {
		if v != nil && *v != 0 {
			return false
		}
	}
	return true
}

// inconsistent checks low alarm ≤ low warning < high warning ≤ high alarm
// for what is present (FORMATS-NEXT.md §2.3).
func inconsistent(t phy.Thresholds) string {
	if unset(t) {
		return ""
	}
	type pair struct {
		a, b   *float64
		na, nb string
		strict bool
	}
	for _, c := range []pair{
		{t.AlarmLo, t.AlarmHi, "low alarm", "high alarm", true},
		{t.WarnLo, t.WarnHi, "low warning", "high warning", true},
		{t.AlarmLo, t.WarnLo, "low alarm", "low warning", false},
		{t.WarnHi, t.AlarmHi, "high warning", "high alarm", false},
	} {
		if c.a == nil || c.b == nil {
			continue
		}
		if math.IsNaN(*c.a) || math.IsNaN(*c.b) {
			return "not a number"
		}
		if *c.a > *c.b || c.strict && *c.a == *c.b {
			return fmt.Sprintf("%s %g is not below %s %g", c.na, *c.a, c.nb, *c.b)
		}
	}
	return ""
}

// unphysical says why a reading cannot be a measurement ("" when it can).
func unphysical(r phy.Reading) string {
	v := r.Value
	switch {
	case math.IsNaN(v):
		return "not a number"
	case math.IsInf(v, -1) && (r.Quantity == phy.TxPower || r.Quantity == phy.RxPower):
		return "0 mW (-inf dBm) is no light at all or no measurement"
	case math.IsInf(v, 0):
		return "infinite"
	case r.Quantity == phy.Temperature && (v < -60 || v > 150):
		return "no module works at that temperature"
	case r.Quantity == phy.Voltage && r.Unit == "V" && (v < 0 || v > 6), r.Quantity == phy.Voltage && r.Unit == "mV" && (v < 0 || v > 6000):
		return "no module supply is at that voltage"
	case r.Quantity == phy.Bias && v < 0:
		return "a negative laser bias"
	case (r.Quantity == phy.TxPower || r.Quantity == phy.RxPower) && v > 20:
		return "above what any pluggable module emits (100 mW)"
	}
	return ""
}

// against judges a value: outside alarm → fail, outside warning → warn.
func against(v float64, t phy.Thresholds) (check.Outcome, string) {
	lvl := "alarm"
	if t.Level == "range" {
		lvl = "range (mlxlink does not say whether it is the alarm or warning level ⚠)"
	}
	if t.AlarmLo != nil && v < *t.AlarmLo {
		return check.Fail, fmt.Sprintf("below the low %s %g", lvl, *t.AlarmLo)
	}
	if t.AlarmHi != nil && v > *t.AlarmHi {
		return check.Fail, fmt.Sprintf("above the high %s %g", lvl, *t.AlarmHi)
	}
	if t.WarnLo != nil && v < *t.WarnLo {
		return check.Warn, fmt.Sprintf("below the low warning %g", *t.WarnLo)
	}
	if t.WarnHi != nil && v > *t.WarnHi {
		return check.Warn, fmt.Sprintf("above the high warning %g", *t.WarnHi)
	}
	var lims []string
	if t.AlarmLo != nil || t.AlarmHi != nil {
		lims = append(lims, fmt.Sprintf("%s %s..%s", strings.Fields(lvl)[0], fmtp(t.AlarmLo), fmtp(t.AlarmHi)))
	}
	if t.WarnLo != nil || t.WarnHi != nil {
		lims = append(lims, fmt.Sprintf("warning %s..%s", fmtp(t.WarnLo), fmtp(t.WarnHi)))
	}
	return check.Pass, "inside " + strings.Join(lims, ", ")
}

func fmtp(v *float64) string {
	if v == nil {
		return "?"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

func levelName(t phy.Thresholds) string {
	if t.Level == "range" {
		return "range (mlxlink [lo..hi]; alarm or warning level not stated ⚠)"
	}
	return "alarm thresholds"
}

// Module readings are per channel, counted from 1 as ethtool -m prints
// them (mlxlink's per-lane lists: the Nth value is channel N); error
// counters' lanes count from 0 as the counters' names do.
func readingName(r phy.Reading) string {
	if r.Lane > 0 {
		return fmt.Sprintf("%s channel %d", r.Quantity, r.Lane)
	}
	return string(r.Quantity)
}

// laneSubject names the port, and the channel for a per-channel reading.
func laneSubject(p phy.Port, r phy.Reading) string {
	if r.Lane > 0 {
		return fmt.Sprintf("%s channel %d", p.Name(), r.Lane)
	}
	return p.Name()
}

func readAgain(p phy.Port) []string {
	var out []string
	if c := mlxlinkCmd(p, "-m"); c != "" {
		out = append(out, c)
	}
	if p.Netdev != "" {
		out = append(out, "ethtool -m "+p.Netdev)
	}
	return append(out, fmt.Sprintf("if the reading persists, replace the module in %s", p.Name()))
}

func moduleFix(p phy.Port, r phy.Reading) []string {
	var out []string
	switch r.Quantity {
	case phy.RxPower:
		out = append(out, fmt.Sprintf("check the far end's Tx power first; clean the fibre and connector into %s", p.Name()))
	case phy.TxPower, phy.Bias:
		out = append(out, fmt.Sprintf("replace the module in %s (its laser is outside its own limits)", p.Name()))
	case phy.Temperature:
		out = append(out, fmt.Sprintf("check airflow over %s's cage; replace the module if it stays hot", p.Name()))
	default:
		out = append(out, fmt.Sprintf("reseat the module in %s; replace it if the reading stays", p.Name()))
	}
	return append(out, readAgain(p)[0])
}

func flags(p phy.Port) []check.Finding {
	m := p.Module
	up := strings.EqualFold(p.State, "Active")
	var fs []check.Finding
	for _, fl := range m.Flags {
		set := fl.Set()
		if len(set) == 0 {
			continue
		}
		name := strings.ToLower(fl.Name)
		lanes := laneList(set, len(fl.Lanes))
		e := []check.Evidence{ev(fl.Name, fl.Text, p.Source)}
		var f check.Finding
		switch {
		case m.Passive && (strings.Contains(name, "los") || strings.Contains(name, "lol")):
			f = find(CheckModuleFlags, check.Pass, p.Name(), nil, "%s set on %s, but the cable is passive copper (no receiver, no CDR): the bit is no signal indication%s", fl.Name, lanes, upNote(p, up))
		case strings.Contains(name, "fault"):
			f = find(CheckModuleFlags, check.Fail, p.Name(), readAgain(p), "%s on %s: the module reports a transmitter fault", fl.Name, lanes)
		case strings.Contains(name, "warning"):
			f = find(CheckModuleFlags, check.Warn, p.Name(), readAgain(p), "the module's own %s flag is set (%s): latched since it was last read", fl.Name, lanes)
		case strings.Contains(name, "alarm"):
			f = find(CheckModuleFlags, check.Fail, p.Name(), readAgain(p), "the module's own %s flag is set (%s): latched since it was last read", fl.Name, lanes)
		case p.State == "":
			f = find(CheckModuleFlags, check.Warn, p.Name(), readAgain(p), "%s on %s: the module reported a loss on those lanes (latched since it was last read); the port's state is not in this output (ethtool %s shows the link)", fl.Name, lanes, ifName(p))
		case up:
			f = find(CheckModuleFlags, check.Warn, p.Name(), readAgain(p), "%s latched on %s while the port is Active: a loss since the flags were last read (a bring-up or a flap); read again to see whether it recurs", fl.Name, lanes)
		default:
			f = find(CheckModuleFlags, check.Fail, p.Name(), cableFix(p, "no light or lock"), "%s on %s and the port is not up (%s): no light or no lock on those lanes", fl.Name, lanes, orDefault(p.State, "state not shown"))
		}
		f.Evidence = e
		fs = append(fs, f)
	}
	return fs
}

func upNote(p phy.Port, up bool) string {
	if up {
		return fmt.Sprintf("; the port is %s %s", p.State, p.PhysState)
	}
	return ""
}

func laneList(set []int, n int) string {
	if n == 1 {
		return "the module"
	}
	var s []string
	for _, i := range set {
		s = append(s, strconv.Itoa(i))
	}
	return "lane(s) " + strings.Join(s, ",") + " (from 0)"
}

func power(p phy.Port) []check.Finding {
	m := p.Module
	if m.PowerLine == "" {
		return nil
	}
	e := []check.Evidence{ev("power mode", m.PowerLine, p.Source)}
	var f check.Finding
	switch {
	case m.LowPower == nil:
		f = find(CheckModulePower, check.Unknown, p.Name(), nil, "%s", m.PowerLine)
	case *m.LowPower:
		f = find(CheckModulePower, check.Fail, p.Name(), []string{fmt.Sprintf("ethtool --set-module %s power-mode-policy high", ifName(p))}, "the host holds the module in low-power mode (%s): it does not transmit", m.PowerLine)
	default:
		f = find(CheckModulePower, check.Pass, p.Name(), nil, "module in high-power mode (%s)", m.PowerLine)
	}
	f.Evidence = e
	return []check.Finding{f}
}
