package phycheck

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// Ports judges every port's facts.
func Ports(ps []phy.Port) []check.Finding {
	var fs []check.Finding
	for _, p := range ps {
		fs = append(fs, Port(p)...)
	}
	check.Sort(fs)
	return fs
}

// Port applies every rule to one port's facts. A rule whose facts the
// output does not hold reports nothing.
func Port(p phy.Port) []check.Finding {
	var fs []check.Finding
	fs = append(fs, cut(p)...)
	fs = append(fs, linkState(p)...)
	fs = append(fs, linkSpeed(p)...)
	fs = append(fs, fecMode(p)...)
	fs = append(fs, effectiveBER(p)...)
	fs = append(fs, rawBER(p)...)
	fs = append(fs, uncorrectable(p)...)
	fs = append(fs, histogram(p)...)
	fs = append(fs, lanes(p)...)
	fs = append(fs, linkDown(p)...)
	fs = append(fs, trouble(p)...)
	fs = append(fs, module(p)...)
	for i := range fs {
		if fs[i].Host == "" {
			fs[i].Host = p.Host
		}
	}
	return fs
}

// find is a finding of the rule e about the port subject names (Port sets
// the host). fix is the rule's specific fixes, naming the port's own
// device or interface; where the output named neither (no fix, or only
// empty commands) the catalog's fixes stand.
func find(e check.Entry, out check.Outcome, subject string, fix []string, format string, a ...any) check.Finding {
	f := e.Reporter("").New(out, subject, "%s", fmt.Sprintf(format, a...))
	if fix = slices.DeleteFunc(slices.Clone(fix), func(s string) bool { return s == "" }); len(fix) > 0 && f.Fix != nil {
		f.Fix = fix
	}
	return f
}

func ev(what, value, source string) check.Evidence {
	return check.Evidence{What: what, Value: value, Source: source}
}

// mlxlinkCmd is the mlxlink command for the port, from the input's own
// names; ok false when the output named no device.
func mlxlinkCmd(p phy.Port, args string) string {
	if p.Device == "" {
		return ""
	}
	c := "mlxlink -d " + p.Device
	if p.Port > 0 {
		c += fmt.Sprintf(" -p %d", p.Port)
	}
	return c + " " + args
}

// ifName is the interface for an ethtool fix: the netdev the output
// named, else words saying where to find it.
func ifName(p phy.Port) string {
	if p.Netdev != "" {
		return p.Netdev
	}
	return "<the interface this output came from: not named in it>"
}

// cableFix names what to do with the cable of this port.
func cableFix(p phy.Port, what string) []string {
	var out []string
	if c := mlxlinkCmd(p, "-c -e -m"); c != "" {
		out = append(out, c+" (counters, eye and module per lane)")
	} else if p.Netdev != "" {
		out = append(out, fmt.Sprintf("ethtool -S %s | grep -E 'lane|corrected|symbol' and ethtool -m %s", p.Netdev, p.Netdev))
	}
	port := p.Name()
	if p.Device == "" && p.Netdev == "" {
		port = "the port this output came from (the output names none)"
	}
	return append(out, fmt.Sprintf("%s on %s: reseat, clean, then swap with a known-good cable: the fault follows the cable or stays with the port", what, port))
}

// rateGbps is the operating rate of the port: IB speed × width, or the
// Ethernet rate as printed (0: unknown).
func rateGbps(p phy.Port) float64 {
	s := strings.TrimSpace(p.Speed)
	if s == "" {
		return 0
	}
	if name, ok := ibSpeed(s); ok {
		if p.Width == 0 {
			return 0
		}
		return linkrate.IBRateGbps(strconv.Itoa(p.Width), name)
	}
	r, err := linkrate.ParseRate(s)
	if err != nil {
		return 0
	}
	return r.Gbps
}

// ibSpeed reads "IB-EDR", "EDR", "IB-HDR" as an InfiniBand speed name.
func ibSpeed(s string) (string, bool) {
	t := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(s)), "IB-")
	sp, ok := linkrate.SpeedByName(t)
	return sp.Name, ok
}

// pam4 reports whether the port runs PAM4 lanes (RS-FEC by design), and
// whether that is known.
func pam4(p phy.Port) (bool, bool) {
	if name, ok := ibSpeed(p.Speed); ok {
		return linkrate.SpeedRank(name) >= linkrate.SpeedRank("HDR"), true
	}
	g := rateGbps(p)
	if g == 0 || p.Width == 0 {
		return false, false
	}
	return g/float64(p.Width) >= 50, true
}

func cut(p phy.Port) []check.Finding {
	if p.Cut == "" {
		return nil
	}
	f := find(CheckCut, check.Unknown, p.Name(), nil, "the output was cut in %s: what is whole before it is judged; the facts after it are not in the file", p.Cut)
	f.Evidence = []check.Evidence{ev("cut", p.Cut, p.Source)}
	f.Fix = []string{"judge the whole output: " + orDefault(mlxlinkCmd(p, fmt.Sprintf("--json > %s-%d.mlxlink.json", p.Device, max(p.Port, 1))), "save the tool's whole output to a file")}
	return []check.Finding{f}
}

func linkState(p phy.Port) []check.Finding {
	if p.State == "" {
		return nil
	}
	st := strings.ToLower(p.State)
	e := []check.Evidence{ev("State", p.State, p.Source), ev("Physical state", p.PhysState, p.Source)}
	var f check.Finding
	switch {
	case st == "active":
		f = find(CheckLinkState, check.Pass, p.Name(), nil, "port Active (%s) at %s %dx", p.PhysState, p.Speed, p.Width)
	case strings.HasPrefix(st, "disable"):
		f = find(CheckLinkState, check.Warn, p.Name(), []string{mlxlinkCmd(p, "-a UP (if the port is meant to carry traffic)")}, "port %s: turned off, carries no traffic", p.State)
	default:
		f = find(CheckLinkState, check.Fail, p.Name(), cableFix(p, "no link"), "port %s (%s): no link to a partner", p.State, p.PhysState)
	}
	f.Evidence = e
	return []check.Finding{f}
}

// speedGbps reads a speed name from mlxlink's lists ("400G_4X", "100G",
// "NDR") as Gb/s (Ethernet) or an IB speed name.
func speedOf(name string) (gbps float64, ib string) {
	n := strings.ToUpper(strings.TrimSpace(name))
	if sp, ok := ibSpeed(n); ok {
		return 0, sp
	}
	if i := strings.IndexByte(n, '_'); i > 0 {
		n = n[:i]
	}
	r, err := linkrate.ParseRate(n)
	if err != nil {
		return 0, ""
	}
	return r.Gbps, ""
}

func linkSpeed(p phy.Port) []check.Finding {
	if p.Speed == "" || len(p.Enabled) == 0 {
		if p.Speed != "" && p.Cut != "" {
			return []check.Finding{find(CheckLinkSpeed, check.Unknown, p.Name(), nil, "runs %s %dx; the enabled and cable speed lists were cut from the output (%s)", p.Speed, p.Width, p.Cut)}
		}
		return nil
	}
	// The fastest speed both the port is enabled for and the cable supports.
	both := p.Enabled
	if len(p.Cable) > 0 {
		both = nil
		for _, s := range p.Enabled {
			if slices.ContainsFunc(p.Cable, func(c string) bool { return strings.EqualFold(c, s) }) {
				both = append(both, s)
			}
		}
	}
	e := []check.Evidence{ev("speed", fmt.Sprintf("%s %dx", p.Speed, p.Width), p.Source), ev("enabled", strings.Join(p.Enabled, ","), p.Source), ev("cable supports", strings.Join(p.Cable, ","), p.Source)}
	opG, opIB := speedOf(p.Speed)
	best, bestName := 0.0, ""
	for _, s := range both {
		g, ib := speedOf(s)
		switch {
		case opIB != "" && ib != "":
			if r := float64(linkrate.SpeedRank(ib)); r > best {
				best, bestName = r, s
			}
		case opIB == "" && ib == "" && g > best:
			best, bestName = g, s
		}
	}
	op := opG
	if opIB != "" {
		op = float64(linkrate.SpeedRank(opIB))
	}
	if best == 0 || op == 0 {
		f := find(CheckLinkSpeed, check.Unknown, p.Name(), nil, "runs %s; the speeds both port and cable support (%s) are not names rdmalab compares", p.Speed, strings.Join(both, ","))
		f.Evidence = e
		return []check.Finding{f}
	}
	var f check.Finding
	if op < best {
		f = find(CheckLinkSpeed, check.Fail, p.Name(), cableFix(p, "speed downshift"), "runs %s although the port is enabled for and the cable supports %s: the link trained below its capability", p.Speed, bestName)
	} else {
		f = find(CheckLinkSpeed, check.Pass, p.Name(), nil, "runs %s, the fastest speed both the port and the cable support", p.Speed)
	}
	f.Evidence = e
	return []check.Finding{f}
}

func fecMode(p phy.Port) []check.Finding {
	if p.FEC == nil || p.FEC.Active == "" {
		return nil
	}
	e := []check.Evidence{ev("active FEC", p.FEC.Active, p.Source)}
	if len(p.FEC.Configured) > 0 {
		e = append(e, ev("configured FEC", strings.Join(p.FEC.Configured, " "), p.Source))
	}
	need, known := pam4(p)
	var f check.Finding
	switch {
	case p.FEC.Kind == phy.FECNone && known && need:
		fix := []string{fmt.Sprintf("ethtool --set-fec %s encoding rs (on both ends)", ifName(p))}
		if _, ib := ibSpeed(p.Speed); ib {
			fix = []string{mlxlinkCmd(p, "--fec (per the vendor's guide; both ends)")}
		}
		f = find(CheckFECMode, check.Fail, p.Name(), fix, "FEC %s on %s %dx, whose PAM4 lanes need RS-FEC (%s)", p.FEC.Active, p.Speed, p.Width, srcRSFEC)
	case p.FEC.Kind == phy.FECNone && !known:
		f = find(CheckFECMode, check.Unknown, p.Name(), nil, "FEC %s; whether the speed needs RS-FEC is not in this output (ethtool %s shows the speed: 50G per lane and up needs RS)", p.FEC.Active, ifName(p))
	case p.FEC.Kind == phy.FECNone:
		f = find(CheckFECMode, check.Pass, p.Name(), nil, "no FEC at %s %dx: NRZ lanes may run without one; the BER rules judge the link", p.Speed, p.Width)
	default:
		f = find(CheckFECMode, check.Pass, p.Name(), nil, "FEC active: %s", p.FEC.Active)
	}
	f.Evidence = e
	return []check.Finding{f}
}

// bits is how many bits the window held at the operating rate (0: unknown).
func bits(p phy.Port) float64 {
	if p.Counters != nil && p.Counters.ReceivedBits != nil && *p.Counters.ReceivedBits > 0 {
		// The tool counted them: no rate × window needed.
		return float64(*p.Counters.ReceivedBits)
	}
	if p.Counters == nil || p.Counters.WindowMin == nil {
		return 0
	}
	return rateGbps(p) * 1e9 * *p.Counters.WindowMin * 60
}

func effectiveBER(p phy.Port) []check.Finding {
	c := p.Counters
	if c == nil || c.Effective == nil && c.EffectiveBER == nil {
		return nil
	}
	e := []check.Evidence{ev("window", c.Window, p.Source)}
	if c.Effective != nil {
		e = append(e, ev("Effective Physical Errors", strconv.FormatUint(*c.Effective, 10), p.Source))
	}
	if c.EffectiveBER != nil {
		e = append(e, ev("Effective Physical BER", c.EffectiveBER.Text, p.Source))
	}
	n := bits(p)
	errs := -1.0
	switch {
	case c.Effective != nil:
		errs = float64(*c.Effective)
	case c.EffectiveBER.NoErrors:
		errs = 0
	}
	lim := fmt.Sprintf("limit %g (%s)", EffectiveBERLimit, srcBER)
	var f check.Finding
	switch {
	case errs == 0 && n >= zeroErrorFactor/EffectiveBERLimit:
		f = find(CheckEffectiveBER, check.Pass, p.Name(), nil, "no errors after FEC in %s at %g Gb/s (%.2g bits): effective BER < %.1g at 95%% confidence; %s", c.Window, rateGbps(p), n, zeroErrorFactor/n, lim)
	case errs == 0 && n > 0:
		need := zeroErrorFactor / EffectiveBERLimit / (rateGbps(p) * 1e9) / 60
		f = find(CheckEffectiveBER, check.Unknown, p.Name(), nil, "no errors after FEC, but %s at %g Gb/s is only %.2g bits: zero errors there shows BER < %.1g, not < %g; %s is not a BER over this window", c.Window, rateGbps(p), n, zeroErrorFactor/n, EffectiveBERLimit, textOr(c.EffectiveBER))
		when := "once the counters hold 3e12 bits"
		if rateGbps(p) > 0 {
			when = fmt.Sprintf("once the window is at least %.1f min (3e12 bits at %g Gb/s)", need, rateGbps(p))
		}
		f.Fix = []string{fmt.Sprintf("read the counters again %s: %s", when, orDefault(mlxlinkCmd(p, "-c"), "mlxlink -c on this port"))}
	case errs == 0:
		f = find(CheckEffectiveBER, check.Unknown, p.Name(), nil, "no errors after FEC, but the output lacks the window or the speed (%s; speed %q width %d), so how many bits were counted is not known", c.Window, p.Speed, p.Width)
		f.Fix = []string{"save mlxlink -c with its Operational Info (speed, width) and Time Since Last Clear: " + orDefault(mlxlinkCmd(p, "-c"), "mlxlink -d <this port's device> -c")}
	default:
		ber, how := 0.0, ""
		switch {
		case errs > 0 && n > 0:
			ber, how = errs/n, fmt.Sprintf("%.0f errors in %.2g bits (%s at %g Gb/s)", errs, n, c.Window, rateGbps(p))
		case c.EffectiveBER != nil && !c.EffectiveBER.NoErrors:
			ber, how = c.EffectiveBER.Value, "the tool's Effective Physical BER "+c.EffectiveBER.Text
		}
		switch {
		case ber >= EffectiveBERLimit || ber == 0 && errs > 0:
			f = find(CheckEffectiveBER, check.Fail, p.Name(), cableFix(p, "errors after FEC"), "errors left after FEC: %s, BER %.2g ≥ %g (%s; window: %s)", orDefault(how, fmt.Sprintf("%.0f errors", errs)), ber, EffectiveBERLimit, srcBER, c.Window)
		case ber > 0:
			f = find(CheckEffectiveBER, check.Warn, p.Name(), cableFix(p, "errors after FEC"), "errors left after FEC (frames were lost): %s, BER %.2g, below the limit %g (%s)", how, ber, EffectiveBERLimit, srcBER)
		default:
			f = find(CheckEffectiveBER, check.Pass, p.Name(), nil, "no errors after FEC (%s)", c.Window)
		}
	}
	f.Evidence = e
	return []check.Finding{f}
}

func textOr(b *phy.BER) string {
	if b == nil {
		return "the effective BER"
	}
	return "the printed " + b.Text
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func rawBER(p phy.Port) []check.Finding {
	c := p.Counters
	if c == nil || p.FEC == nil || p.FEC.Kind != phy.FECKP4 || c.RawBER == nil && len(c.RawBERLane) == 0 {
		return nil
	}
	worst, where := 0.0, ""
	var e []check.Evidence
	if c.RawBER != nil {
		worst, where = c.RawBER.Value, "port"
		e = append(e, ev("Raw Physical BER", c.RawBER.Text, p.Source))
	}
	for i, b := range c.RawBERLane {
		if b.Value > worst {
			worst, where = b.Value, fmt.Sprintf("lane %d", i)
		}
	}
	if len(c.RawBERLane) > 0 {
		var ts []string
		for _, b := range c.RawBERLane {
			ts = append(ts, b.Text)
		}
		e = append(e, ev("Raw Physical BER Per Lane", strings.Join(ts, ","), p.Source))
	}
	e = append(e, ev("window", c.Window, p.Source))
	var f check.Finding
	if worst >= KP4InputBER {
		f = find(CheckRawBER, check.Fail, p.Name(), cableFix(p, "raw BER at the FEC's limit"), "raw BER %.2g (%s) at or above RS(544,514)'s design input %.1e: codewords will fail (%s; window: %s)", worst, where, KP4InputBER, srcKP4, c.Window)
	} else {
		margin := "no errors"
		if worst > 0 {
			margin = fmt.Sprintf("%.1f orders of magnitude below", math.Log10(KP4InputBER/worst))
		}
		f = find(CheckRawBER, check.Pass, p.Name(), nil, "worst raw BER %.2g (%s): %s RS(544,514)'s design input %.1e (%s; window: %s)", worst, where, margin, KP4InputBER, srcKP4, c.Window)
	}
	f.Evidence = e
	return []check.Finding{f}
}

func uncorrectable(p phy.Port) []check.Finding {
	c := p.Counters
	if c == nil {
		return nil
	}
	var fs []check.Finding
	if p.Tool == "ethtool -S" && c.Symbol == nil {
		// A paste with PHY counters but not the one that counts what the
		// FEC could not correct: whether frames were lost is not shown.
		f := find(CheckUncorrectable, check.Unknown, p.Name(), nil, "the output shows PHY counters but not rx_pcs_symbol_err_phy, which counts what the FEC could not correct (a grep or the author dropped it, or the NIC lacks the counter group): whether frames were lost is not shown")
		f.Fix = []string{fmt.Sprintf("ethtool -S %s | grep -E 'symbol_err|corrected_bits|lane'", ifName(p))}
		fs = append(fs, f)
	}
	for _, x := range []struct {
		v    *uint64
		name string
	}{{c.Uncorrectable, "uncorrectable_blocks"}, {c.Symbol, c.SymbolName}} {
		if x.v == nil {
			continue
		}
		e := []check.Evidence{ev(x.name, strconv.FormatUint(*x.v, 10), p.Source), ev("window", c.Window, p.Source)}
		var f check.Finding
		if *x.v > 0 {
			f = find(CheckUncorrectable, check.Fail, p.Name(), cableFix(p, "uncorrectable errors"), "%s = %d: errors the FEC could not correct, frames were lost (limit: none; %s); window: %s", x.name, *x.v, srcBER, c.Window)
		} else {
			f = find(CheckUncorrectable, check.Pass, p.Name(), nil, "%s = 0 (window: %s)", x.name, c.Window)
		}
		f.Evidence = e
		fs = append(fs, f)
	}
	return fs
}

// correctable is the FEC's correction limit in symbols per codeword.
func correctable(k phy.FECKind) int {
	switch k {
	case phy.FECKP4:
		return 15
	case phy.FECKR4:
		return 7
	}
	return 0
}

func histogram(p phy.Port) []check.Finding {
	h := p.Histogram
	if h == nil {
		return nil
	}
	hi := h.Highest()
	var kind phy.FECKind
	if p.FEC != nil {
		kind = p.FEC.Kind
	}
	t := correctable(kind)
	var parts []string
	for _, b := range h.Bins {
		if b.Count > 0 {
			parts = append(parts, fmt.Sprintf("[%d]=%d", b.Lo, b.Count))
		}
	}
	e := []check.Evidence{ev("non-zero bins", strings.Join(parts, " "), p.Source)}
	var f check.Finding
	switch {
	case t == 0:
		f = find(CheckHistogram, check.Unknown, p.Name(), nil, "worst codeword needed %d corrected symbols; the FEC's correction limit is not known for %q", hi, activeOf(p))
	case hi > t:
		f = find(CheckHistogram, check.Fail, p.Name(), cableFix(p, "uncorrectable codewords"), "codewords with %d errored symbols, beyond the %d %s corrects: uncorrectable (%s)", hi, t, kind, srcFECCap)
	case hi == t:
		f = find(CheckHistogram, check.Warn, p.Name(), cableFix(p, "FEC at its limit"), "the worst codeword needed all %d symbols %s corrects: one more and it is lost (%s)", t, kind, srcFECCap)
	default:
		f = find(CheckHistogram, check.Pass, p.Name(), nil, "worst codeword needed %d of the %d symbols %s corrects (%s)", max(hi, 0), t, kind, srcFECCap)
	}
	f.Evidence = e
	return []check.Finding{f}
}

func activeOf(p phy.Port) string {
	if p.FEC == nil {
		return "no FEC shown"
	}
	return p.FEC.Active
}

// lanes names a lane whose raw errors are ten times the port's median
// lane (with two lanes: the other lane), and at least 100.
func lanes(p phy.Port) []check.Finding {
	c := p.Counters
	if c == nil {
		return nil
	}
	var vals []float64
	var texts []string
	what := c.RawLaneName
	for _, v := range c.RawLane {
		vals = append(vals, float64(v))
		texts = append(texts, strconv.FormatUint(v, 10))
	}
	minCount := 100.0
	if len(vals) < 2 && len(c.RawBERLane) >= 2 {
		vals, texts, what, minCount = nil, nil, "Raw Physical BER Per Lane", 0
		for _, b := range c.RawBERLane {
			vals = append(vals, b.Value)
			texts = append(texts, b.Text)
		}
	}
	if len(vals) < 2 {
		return nil
	}
	var bad []int
	base := 0.0
	for i, v := range vals {
		var others []float64
		if len(vals) == 2 {
			others = []float64{vals[1-i]}
		} else {
			others = vals
		}
		m := median(others)
		if minCount == 0 {
			// BERs: no absolute floor; a floor of the smallest non-zero one.
			if v >= 10*m && m > 0 {
				bad, base = append(bad, i), m
			}
			continue
		}
		if v >= minCount && v >= 10*max(1, m) {
			bad, base = append(bad, i), m
		}
	}
	e := []check.Evidence{ev(what, strings.Join(texts, ","), p.Source), ev("window", c.Window, p.Source)}
	if len(bad) == 0 || len(bad) > len(vals)/2 {
		f := find(CheckLane, check.Pass, p.Name(), nil, "errors spread over the lanes (%s): no lane ten times the median", strings.Join(texts, ","))
		f.Evidence = e
		return []check.Finding{f}
	}
	out := check.Warn
	lost := ""
	if c.Effective != nil && *c.Effective > 0 || c.Uncorrectable != nil && *c.Uncorrectable > 0 || c.Symbol != nil && *c.Symbol > 0 {
		out, lost = check.Fail, "; errors also passed the FEC, and this lane is where they come from"
	}
	var fs []check.Finding
	for _, i := range bad {
		share := ""
		if sum := sumOf(vals); minCount > 0 && sum > 0 {
			share = fmt.Sprintf(", %.0f%% of the port's", 100*vals[i]/sum)
		}
		f := find(CheckLane, out, fmt.Sprintf("%s lane %d", p.Name(), i), cableFix(p, fmt.Sprintf("lane %d", i)),
			"lane %d (counting from 0) has %s raw errors%s, ≥10× the port's median lane (%g): one bad lane of the cable or module (%s: %s; window: %s)%s", i, texts[i], share, base, what, strings.Join(texts, ","), c.Window, lost)
		f.Evidence = e
		fs = append(fs, f)
	}
	return fs
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func sumOf(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}

func linkDown(p phy.Port) []check.Finding {
	c := p.Counters
	if c == nil || c.LinkDown == nil && c.Recovery == nil {
		return nil
	}
	var parts []string
	var e []check.Evidence
	bad := false
	for _, x := range []struct {
		v    *uint64
		name string
	}{{c.LinkDown, "link down"}, {c.Recovery, "link error recovery"}} {
		if x.v == nil {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d", x.name, *x.v))
		e = append(e, ev(x.name, strconv.FormatUint(*x.v, 10), p.Source))
		bad = bad || *x.v > 0
	}
	e = append(e, ev("window", c.Window, p.Source))
	var f check.Finding
	if bad {
		f = find(CheckLinkDown, check.Warn, p.Name(), cableFix(p, "link drops"), "%s in %s: the link dropped or retrained", strings.Join(parts, ", "), c.Window)
	} else {
		f = find(CheckLinkDown, check.Pass, p.Name(), nil, "%s in %s", strings.Join(parts, ", "), c.Window)
	}
	f.Evidence = e
	return []check.Finding{f}
}

func trouble(p phy.Port) []check.Finding {
	if p.StatusOpcode == "" {
		return nil
	}
	e := []check.Evidence{ev("Status Opcode", p.StatusOpcode, p.Source), ev("Recommendation", p.Recommendation, p.Source)}
	var f check.Finding
	if p.StatusOpcode == "0" {
		f = find(CheckTrouble, check.Pass, p.Name(), nil, "firmware status opcode 0: %s", p.Recommendation)
	} else {
		f = find(CheckTrouble, check.Warn, p.Name(), []string{p.Recommendation}, "firmware status opcode %s: %s", p.StatusOpcode, p.Recommendation)
	}
	f.Evidence = e
	return []check.Finding{f}
}
