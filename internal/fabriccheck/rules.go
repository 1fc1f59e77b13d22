// Package fabriccheck judges a fabric snapshot: links below the rate they
// should run at (by --expect-rate, the device models of both ends, and
// their peers), ports not configured, error counters over thresholds or
// saturated or rising, subnet manager trouble, and cabling against an
// intended topology. Every rule is a pure function of the snapshot and
// reports the shared check.Finding, naming both ends of a link by
// description and GUID. A rule whose input could not be read says unknown;
// a rule whose tool was never run (a saved output of another tool) says
// nothing.
package fabriccheck

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/counters"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// Options are what a fabric is judged against.
type Options struct {
	// Expect is the rate every link should run at (no rate: judged by
	// device models and peers), and where that belief comes from. It is
	// authoritative when given.
	Expect linkrate.Expect
	// Plan is the intended cabling (nil: no topology diff).
	Plan *fabric.Topology
	// Thresholds override the error counters' thresholds (0 each, as
	// ibqueryerrors) by PMA name.
	Thresholds map[string]uint64
}

// ErrorCounters lists the PortCounters that count errors, by PMA name, from
// the one counter table: the names --threshold takes.
func ErrorCounters() []string {
	var out []string
	for _, c := range counters.Select(counters.PortCounters, counters.Error) {
		out = append(out, c.PMA)
	}
	return out
}

// The fabric checks. A rule makes its findings through its entry (find),
// so a finding's id and fixes are the entry's.
var (
	smEntry = check.Entry{ID: "fabric.sm", Title: "one master subnet manager", Why: "nothing on the fabric routes until a subnet manager assigns LIDs; two masters fight over the subnet; without an SM, SA path queries (rdma_cm, IPoIB) fail", Source: "sminfo, saquery SMIR, iblinkinfo port states", Fixes: []string{"start exactly one subnet manager: on one node of this fabric, systemctl enable --now opensm (or enable the managed switch's SM)"},
		Needs: "sminfo's answer (and saquery SMIR for standbys), or the ports' states: every linked port in INIT or at LID 0 is no SM", UnknownWhen: "sminfo could not ask at all (not installed, the local port would not open) while ports are Active with LIDs; sminfo asking and getting no answer (\"failed: query\", a timeout) fails"}
	smPriorityEntry = check.Entry{ID: "fabric.sm.priority-clash", Title: "subnet managers with distinct priorities", Why: "two SMs at the same priority elect by GUID, so which one is master depends on which GUID is lower: \"two software SMs racing each other is an afternoon of debugging nobody needs\"", Source: "saquery SMIR", Fixes: []string{"give the intended master a higher priority (opensm -p 15, or PRIORITY in opensm.conf)"},
		Needs: "saquery SMIR listing every SM (master and standbys)", UnknownWhen: "saquery SMIR failed: only the master is known"}
	lidUnassignedEntry = check.Entry{ID: "fabric.lid.unassigned", Title: "every linked port has a LID", Why: "a port with LID 0 cannot be addressed: no SM has configured it", Source: "iblinkinfo", Fixes: []string{"run a subnet manager", "check it sees the port (ibnetdiscover)"},
		Needs: "iblinkinfo's port lines (LID and state)", UnknownWhen: "not run on an ibnetdiscover dump alone, which carries no port states"}
	portStateEntry = check.Entry{ID: "fabric.port.state", Title: "linked ports are Active", Why: "a port with a physical link stuck in Initialize or Armed has not been configured by the SM", Source: "iblinkinfo", Fixes: []string{"check the SM log (/var/log/opensm.log) and sminfo"},
		Needs: "iblinkinfo's port lines", UnknownWhen: "not run on an ibnetdiscover dump alone"}
	linkWidthEntry = check.Entry{ID: "fabric.link.width", Title: "links at the width they should run at", Why: "a 4X link that trains at 1X runs at a quarter of its rate: a bad cable, lane or port", Source: "iblinkinfo or ibnetdiscover; device model table; peers", Fixes: []string{"reseat or replace the cable", "ibportstate <lid> <port> (on the switch end it compares the width and speed enabled, supported and active with the peer's)"},
		Needs: "the link's active width and one basis for what it should be: --expect-rate, the device models of both ends (vendor/device id → linkrate.Models), or a majority of links of the same class (CA↔Switch, Switch↔Switch) at one rate; or iblinkinfo's \"Could be\" (computed from both ends' supported sets: a link below it fails, whatever its peers run at; where the hints are the advertise-everything kind, a 12X hint no device model confirms, as ibsim gives, they count only as far as the device models confirm them)", UnknownWhen: "no basis at all (no flag, unknown devices, no peer majority, no hint); an advertise-everything hint the models cannot confirm is a warning when no peers judge the link, and so is a 2X link at HDR or later among 4X peers (the HDR100/NDR200 split looks the same)"}
	linkSpeedEntry = check.Entry{ID: "fabric.link.speed", Title: "links at the speed they should run at", Why: "\"came up at 100 Gb/s instead of 200\" is the most common silent failure", Source: "iblinkinfo or ibnetdiscover; device model table; peers", Fixes: []string{"check the cable's rating (mlxlink --show_module), replace it", "check the ports' enabled speeds: ibportstate <lid> <port> (on the switch end it compares them with the peer's)"},
		Needs: "as fabric.link.width, for the lane speed", UnknownWhen: "as fabric.link.width"}
	linkRateEntry = check.Entry{ID: "fabric.link.rate", Title: "links at the expected rate", Why: "the fabric was bought for one rate; a slower link halves a job's all-reduce", Source: "iblinkinfo or ibnetdiscover vs --expect-rate", Fixes: []string{"replace the cable or port", "see fabric.link.speed/width"},
		Needs: "--expect-rate and each link's active width and speed", UnknownWhen: "links whose source gives no rate"}
	// PortErrorsEntry is also what judge reports for a saved ibcheckerrors.
	PortErrorsEntry = check.Entry{ID: "fabric.port.errors", Title: "error counters under thresholds", Why: "symbol, receive and link-recovery errors mean a marginal link long before it drops", Source: "ibqueryerrors", Fixes: []string{"replace the cable", "clear with perfquery -R <lid> <port> and watch for recurrence"},
		Needs: "an ibqueryerrors run that printed its summary and no error", UnknownWhen: "ibqueryerrors failed, timed out, or printed an error (\"Query SA failed\") even when it exited 0; a counter at its field's maximum is saturated (its true value unknown) and fails"}
	portErrorsRisingEntry = check.Entry{ID: "fabric.port.errors.rising", Title: "error counters not rising", Why: "a counter that grows between two samples is a live fault, not history", Source: "ibqueryerrors sampled twice (--interval)", Fixes: []string{"replace the cable or port now"},
		Needs: "two good ibqueryerrors samples (--interval)", UnknownWhen: "the second sample failed (reported under fabric.port.errors)"}
	portDownEntry = check.Entry{ID: "fabric.port.down", Title: "planned cables are up", Why: "a port the plan says is cabled is Down or Polling: unplugged, dead cable or disabled port", Source: "iblinkinfo vs the plan", Fixes: []string{"check the cable at both ends", "ibportstate <lid> <port> enable"},
		Needs: "--topology and the scan's links, matched by node GUID (or by a node name that only one node carries)", UnknownWhen: "a plan naming a node by a description several nodes share is refused (exit 2): name it by GUID"}
	miswiredEntry = check.Entry{ID: "fabric.topology.miswired", Title: "cables where the plan puts them", Why: "a cable moved to another port breaks routing assumptions (fat-tree up/down, rail alignment)", Source: "ibnetdiscover vs the plan", Fixes: []string{"move the cable back to the planned port"},
		Needs: "as fabric.port.down", UnknownWhen: "as fabric.port.down"}
	missingEntry = check.Entry{ID: "fabric.topology.missing", Title: "planned nodes present", Why: "a node the plan lists was not discovered at all", Source: "ibnetdiscover vs the plan", Fixes: []string{"check the node is powered and cabled"},
		Needs: "as fabric.port.down", UnknownWhen: "as fabric.port.down"}
	unreadableEntry = check.Entry{ID: "fabric.parse.unreadable", Title: "every tool line read", Why: "a node sets its own description, and one holding a tool's own syntax (quotes, \"==(\", \"lid 4\") must never move another link's verdict: a line that cannot be read for certain leaves what it describes unknown", Source: "iblinkinfo, ibnetdiscover", Fixes: []string{"rerun with rdmalab fabric scan (it prints nodes by GUID through a node name map), or ask the node's owner for a plain description (smpquery nodedesc with its LID shows it)"},
		Decides: true, Needs: "the tools' lines", UnknownWhen: "a line whose fixed fields (GUIDs, LIDs, port numbers, width, speed, state) cannot be told apart from a node description: that port or link is unknown"}
	extraEntry = check.Entry{ID: "fabric.topology.extra", Title: "no unplanned links", Why: "a link the plan does not know about", Source: "ibnetdiscover vs the plan", Fixes: []string{"add it to the plan, or remove it"},
		Needs: "as fabric.port.down; an empty plan is refused", UnknownWhen: "as fabric.port.down"}
)

// Catalog lists every fabric check.
var Catalog = []check.Entry{smEntry, smPriorityEntry, lidUnassignedEntry, portStateEntry, linkWidthEntry, linkSpeedEntry, linkRateEntry, PortErrorsEntry, portErrorsRisingEntry, portDownEntry, miswiredEntry, missingEntry, unreadableEntry, extraEntry}

// Run applies every rule. The error is a plan that cannot be matched to
// the fabric (a name several nodes carry).
func Run(s *fabric.Snapshot, o Options) ([]check.Finding, error) {
	names := s.Names()
	var fs []check.Finding
	fs = append(fs, unreadable(s)...)
	fs = append(fs, subnetManager(s)...)
	fs = append(fs, portsConfigured(s, names)...)
	fs = append(fs, linkRules(s, o, names)...)
	fs = append(fs, counterRules(s, o, names)...)
	if o.Plan != nil {
		d, err := Diff(s, o.Plan)
		if err != nil {
			return nil, err
		}
		fs = append(fs, d...)
	}
	check.Sort(fs)
	return fs, nil
}

// find is a finding of check e: on a failure or warning it carries the
// entry's fixes unless the rule sets ones naming the port or link.
func find(e check.Entry, out check.Outcome, subject, format string, a ...any) check.Finding {
	return e.Reporter("").New(out, subject, format, a...)
}

// unreadable reports each line a parser could not read: what it
// describes is unknown, and said to be.
// filled names the ports a fix is about: each "<lid> <port>" of the
// catalog's fixes becomes one line per port given that has a LID (the
// input's own numbers); a fix no port can fill stays as it is.
func filled(f check.Finding, ports ...*fabric.Port) check.Finding {
	var out []string
	for _, fx := range f.Fix {
		if !strings.Contains(fx, "<lid>") {
			out = append(out, fx)
			continue
		}
		n := 0
		for _, p := range ports {
			if p == nil || p.LID <= 0 {
				continue
			}
			out = append(out, strings.NewReplacer("<lid>", strconv.Itoa(p.LID), "<port>", strconv.Itoa(p.Num)).Replace(fx))
			n++
		}
		if n == 0 {
			out = append(out, fx)
		}
	}
	f.Fix = out
	return f
}

// switchPorts keeps the switch ports of ps, or all of them when none is
// a switch's (a CA↔CA cable).
func switchPorts(ps []*fabric.Port) []*fabric.Port {
	var out []*fabric.Port
	for _, p := range ps {
		if p != nil && p.NodeType == fabric.Switch {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return ps
	}
	return out
}

func unreadable(s *fabric.Snapshot) []check.Finding {
	var fs []check.Finding
	for _, u := range s.Unreadable {
		f := find(unreadableEntry, check.Unknown, fmt.Sprintf("%s line %d", u.Tool, u.Line), "%s: the port or link on this line is unknown", u.Reason)
		f.Evidence = []check.Evidence{{What: "line", Value: u.Text, Source: u.Tool}}
		fs = append(fs, f)
	}
	return fs
}

func subnetManager(s *fabric.Snapshot) []check.Finding {
	configured, unconfigured := 0, 0
	for _, p := range s.Ports {
		switch {
		case p.State == portstate.Active && p.LID > 0:
			configured++
		case p.PhysState == portstate.LinkUp && (p.State == portstate.Init || p.LID == 0):
			unconfigured++
		}
	}
	if !s.Has(fabric.SMInfo) && s.SMQueryError == "" {
		// Without sminfo (a saved iblinkinfo), the ports still tell: every
		// linked port waiting in INIT is a fabric no SM has configured.
		if s.Has(fabric.IBLinkInfo) && configured == 0 && unconfigured > 0 {
			return []check.Finding{find(smEntry, check.Fail, "subnet", "no subnet manager: %d linked port(s) stuck in INIT or without a LID, none Active, so nothing routes (iblinkinfo's port states; sminfo was not run)", unconfigured)}
		}
		return nil
	}
	var masters []fabric.SM
	for _, sm := range s.SMs {
		if sm.State == "MASTER" {
			masters = append(masters, sm)
		}
	}
	smEvidence := func(f check.Finding) check.Finding {
		if s.SMQueryError != "" {
			f.Evidence = append(f.Evidence, check.Evidence{What: "sminfo", Value: s.SMQueryError, Source: "sminfo"})
		}
		if s.SMRecordsError != "" {
			f.Evidence = append(f.Evidence, check.Evidence{What: "saquery SMIR", Value: s.SMRecordsError, Source: "saquery"})
		}
		if s.CounterError != "" && strings.Contains(s.CounterError, "SA") {
			f.Evidence = append(f.Evidence, check.Evidence{What: "ibqueryerrors", Value: s.CounterError, Source: "ibqueryerrors"})
		}
		return f
	}
	var fs []check.Finding
	switch {
	case len(s.SMs) > 0 && len(masters) == 0:
		fs = append(fs, find(smEntry, check.Fail, "subnet", "no subnet manager is MASTER (%s): an election or handover is under way, or stuck", smName(s.SMs[0])))
	case len(masters) == 0 && configured == 0 && unconfigured > 0:
		// Every linked port waits for an SM: that is the evidence, whether
		// or not sminfo could ask.
		fs = append(fs, smEvidence(find(smEntry, check.Fail, "subnet", "no subnet manager: %d linked port(s) stuck in INIT or without a LID, none Active, so nothing routes", unconfigured)))
	case len(masters) == 0 && s.SMNoAnswer && configured > 0:
		fs = append(fs, smEvidence(find(smEntry, check.Fail, "subnet", "no subnet manager answers sminfo, although %d port(s) are Active with LIDs: the SM that configured them is gone, so SA path queries (rdma_cm, IPoIB) fail and no fault is routed around", configured)))
	case len(masters) == 0 && configured > 0:
		f := find(smEntry, check.Unknown, "subnet", "sminfo could not ask for a subnet manager, and %d ports are Active with LIDs (an SM configured them): cannot tell whether it still runs", configured)
		fs = append(fs, smEvidence(f))
	case len(masters) == 0 && s.SMNoAnswer:
		fs = append(fs, smEvidence(find(smEntry, check.Fail, "subnet", "no subnet manager answers sminfo")))
	case len(masters) == 0:
		fs = append(fs, smEvidence(find(smEntry, check.Unknown, "subnet", "sminfo could not ask for a subnet manager and no port shows whether one runs")))
	case len(masters) > 1:
		var names []string
		for _, m := range masters {
			names = append(names, smName(m))
		}
		fs = append(fs, find(smEntry, check.Fail, "subnet", "%d subnet managers claim MASTER: %s", len(masters), strings.Join(names, "; ")))
	default:
		fs = append(fs, find(smEntry, check.Pass, "subnet", "master SM %s, %d standby", smName(masters[0]), len(s.SMs)-1))
	}
	byPrio := map[int][]fabric.SM{}
	for _, sm := range s.SMs {
		byPrio[sm.Priority] = append(byPrio[sm.Priority], sm)
	}
	if s.SMRecordsError != "" {
		f := find(smPriorityEntry, check.Unknown, "subnet", "saquery SMIR failed, so only the master is known: a standby at the same priority cannot be seen")
		f.Evidence = []check.Evidence{{What: "saquery SMIR", Value: s.SMRecordsError, Source: "saquery"}}
		fs = append(fs, f)
	}
	prios := make([]int, 0, len(byPrio))
	for p := range byPrio {
		prios = append(prios, p)
	}
	slices.Sort(prios)
	for _, prio := range prios {
		sms := byPrio[prio]
		if len(sms) < 2 {
			continue
		}
		var names []string
		for _, m := range sms {
			names = append(names, smName(m))
		}
		fs = append(fs, find(smPriorityEntry, check.Warn, "subnet",
			"%d subnet managers share priority %d, so the lowest GUID wins the election: %s", len(sms), prio, strings.Join(names, "; ")))
	}
	return fs
}

func smName(sm fabric.SM) string {
	return fmt.Sprintf("LID %d GUID %s priority %d %s", sm.LID, sm.GUID, sm.Priority, sm.State)
}

// portsConfigured flags linked ports without a LID or not Active, one
// finding per problem with the ports as evidence (a fabric without an SM
// has hundreds). It needs port states: an ibnetdiscover dump has none.
func portsConfigured(s *fabric.Snapshot, n *fabric.Names) []check.Finding {
	if !s.Has(fabric.IBLinkInfo) {
		return nil
	}
	var noLID, notActive []fabric.Port
	for _, p := range s.Ports {
		if p.PhysState != portstate.LinkUp {
			continue
		}
		if p.LID == 0 {
			noLID = append(noLID, p)
		}
		if p.State != portstate.Active {
			notActive = append(notActive, p)
		}
	}
	var fs []check.Finding
	for _, c := range []struct {
		entry check.Entry
		ports []fabric.Port
		what  string
	}{{lidUnassignedEntry, noLID, "have LID 0"}, {portStateEntry, notActive, "have a link but are not Active"}} {
		if len(c.ports) == 0 {
			fs = append(fs, find(c.entry, check.Pass, "ports", "every linked port is fine"))
			continue
		}
		f := find(c.entry, check.Fail, "ports", "%d linked port(s) %s, e.g. %s", len(c.ports), c.what, n.Port(c.ports[0].Key()))
		for i, p := range c.ports {
			if i == 10 {
				f.Evidence = append(f.Evidence, check.Evidence{What: "…", Value: fmt.Sprintf("%d more", len(c.ports)-10)})
				break
			}
			f.Evidence = append(f.Evidence, check.Evidence{What: n.Port(p.Key()), Value: fmt.Sprintf("GUID %s, LID %d, %s/%s", p.NodeGUID, p.LID, p.State, p.PhysState), Source: "iblinkinfo"})
		}
		fs = append(fs, f)
	}
	return fs
}

func counterRules(s *fabric.Snapshot, o Options, n *fabric.Names) []check.Finding {
	if s.CounterError != "" {
		f := find(PortErrorsEntry, check.Unknown, "ports", "the error counters could not be read, so nothing is known about them: %s", s.CounterError)
		f.Evidence = []check.Evidence{{What: "ibqueryerrors", Value: s.CounterError, Source: "ibqueryerrors"}}
		return []check.Finding{f}
	}
	if !s.Has(fabric.IBQueryErrors) {
		return nil
	}
	var fs []check.Finding
	bad, unknown := 0, 0
	for _, p := range s.Ports {
		if p.CounterError != "" {
			// One port's PMA did not answer: unknown for it alone.
			unknown++
			f := find(PortErrorsEntry, check.Unknown, n.Port(p.Key()), "its PMA did not answer ibqueryerrors, so its error counters are unknown (not zero)%s", peer(p, n))
			f.Evidence = []check.Evidence{{What: "ibqueryerrors", Value: p.CounterError, Source: "ibqueryerrors"}}
			fs = append(fs, f)
			continue
		}
		names := make([]string, 0, len(p.Counters))
		for name := range p.Counters {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			v := p.Counters[name]
			c, known := counters.ByPMA(name)
			if !known || c.Kind != counters.Error {
				continue // data and congestion counters: context, not errors
			}
			limit := o.Thresholds[name]
			subject := n.Port(p.Key()) + " " + name
			ev := check.Evidence{What: name, Value: fmt.Sprint(v), Source: "ibqueryerrors"}
			switch {
			case c.Saturated(v):
				bad++
				f := find(PortErrorsEntry, check.Fail, subject, "saturated at %d (a %d-bit counter): the true count is unknown and new errors are not counted%s", v, c.WidthBits, peer(p, n))
				f.Evidence = append(f.Evidence, ev)
				fs = append(fs, filled(f, &p))
			case v > limit:
				bad++
				f := find(PortErrorsEntry, check.Fail, subject, "%d, over the threshold %d%s", v, limit, peer(p, n))
				f.Evidence = append(f.Evidence, ev)
				fs = append(fs, filled(f, &p))
			}
			if r := p.CounterRates[name]; r > 0 {
				f := find(portErrorsRisingEntry, check.Fail, subject, "rising at %.2f/s (%.0f/hour) over %.0f s%s", r, r*3600, s.IntervalSeconds, peer(p, n))
				f.Evidence = append(f.Evidence, ev)
				fs = append(fs, f)
			}
		}
	}
	switch {
	case bad == 0 && unknown == 0:
		fs = append(fs, find(PortErrorsEntry, check.Pass, "ports", "no error counter over its threshold on %d ports (ibqueryerrors read them all)", len(s.Ports)))
	case bad == 0:
		fs = append(fs, find(PortErrorsEntry, check.Pass, "ports", "no error counter over its threshold on the %d ports ibqueryerrors read (%d did not answer)", len(s.Ports)-unknown, unknown))
	}
	return fs
}

// peer names the far end, since a receive error is often the sender's cable.
func peer(p fabric.Port, n *fabric.Names) string {
	if p.Remote == nil {
		return ""
	}
	return fmt.Sprintf(" (link to %s)", n.Port(p.Remote.Key()))
}
