// Package fabriccheck judges a fabric snapshot: links below what both ends
// support or below the expected rate, ports down that the plan says are
// cabled, error counters over thresholds or saturated or rising, subnet
// manager trouble, unassigned LIDs, and cabling against an intended
// topology. Every rule is a pure function of the snapshot and reports the
// shared check.Finding, naming both ends of a link.
package fabriccheck

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
)

// Options are what a fabric is judged against.
type Options struct {
	// ExpectRateGbps is the rate every link should run at (0: not checked).
	ExpectRateGbps float64
	// Plan is the intended cabling (nil: no topology diff).
	Plan *fabric.Topology
	// Thresholds override DefaultThresholds per counter.
	Thresholds map[string]uint64
}

// DefaultThresholds are ibqueryerrors' own defaults: 0, so any error counts.
// infiniband-diags' error_thresholds file documents looser values (10 for
// symbol errors, 100 for discards); pass them with Options.Thresholds.
var DefaultThresholds = map[string]uint64{
	"SymbolErrorCounter": 0, "LinkErrorRecoveryCounter": 0, "LinkDownedCounter": 0, "PortRcvErrors": 0,
	"PortRcvRemotePhysicalErrors": 0, "PortRcvSwitchRelayErrors": 0, "PortXmitDiscards": 0,
	"PortXmitConstraintErrors": 0, "PortRcvConstraintErrors": 0, "LocalLinkIntegrityErrors": 0,
	"ExcessiveBufferOverrunErrors": 0, "VL15Dropped": 0, "PortXmitWait": 0,
}

// counterMax is each PortCounters field's width: a counter at its maximum
// has stopped counting, its true value is unknown.
var counterMax = map[string]uint64{
	"SymbolErrorCounter": 0xffff, "LinkErrorRecoveryCounter": 0xff, "LinkDownedCounter": 0xff, "PortRcvErrors": 0xffff,
	"PortRcvRemotePhysicalErrors": 0xffff, "PortRcvSwitchRelayErrors": 0xffff, "PortXmitDiscards": 0xffff,
	"PortXmitConstraintErrors": 0xff, "PortRcvConstraintErrors": 0xff, "LocalLinkIntegrityErrors": 0xf,
	"ExcessiveBufferOverrunErrors": 0xf, "VL15Dropped": 0xffff, "PortXmitWait": 0xffffffff,
}

// Catalog lists every fabric check.
var Catalog = []check.Entry{
	{ID: "fabric.sm", Title: "one master subnet manager", Why: "nothing on the fabric routes until a subnet manager assigns LIDs; two masters fight over the subnet", Source: "sminfo, saquery SMIR", Fix: "start exactly one opensm (systemctl enable --now opensm) or the switch's SM"},
	{ID: "fabric.sm.priority-clash", Title: "subnet managers with distinct priorities", Why: "two SMs at the same priority elect by GUID, so which one is master depends on which GUID is lower: \"two software SMs racing each other is an afternoon of debugging nobody needs\"", Source: "saquery SMIR", Fix: "give the intended master a higher priority (opensm -p 15, or PRIORITY in opensm.conf)"},
	{ID: "fabric.lid.unassigned", Title: "every linked port has a LID", Why: "a port with LID 0 cannot be addressed: no SM has configured it", Source: "iblinkinfo", Fix: "run a subnet manager; check it sees the port (ibnetdiscover)"},
	{ID: "fabric.port.state", Title: "linked ports are Active", Why: "a port with a physical link stuck in Initialize or Armed has not been configured by the SM", Source: "iblinkinfo", Fix: "check the SM log (/var/log/opensm.log) and sminfo"},
	{ID: "fabric.link.width", Title: "links at the widest width both ends support", Why: "a 4X link that trains at 1X runs at a quarter of its rate: a bad cable, lane or port", Source: "iblinkinfo \"Could be\"", Fix: "reseat or replace the cable; mlxlink -d <dev> -p <port> shows lane errors"},
	{ID: "fabric.link.speed", Title: "links at the fastest speed both ends support", Why: "\"came up at 100 Gb/s instead of 200\" is the most common silent failure", Source: "iblinkinfo \"Could be\"", Fix: "check the cable's rating (mlxlink --show_module), replace it; check the ports' enabled speeds"},
	{ID: "fabric.link.rate", Title: "links at the expected rate", Why: "the fabric was bought for one rate; a slower link halves a job's all-reduce", Source: "iblinkinfo", Fix: "replace the cable or port; see fabric.link.speed/width"},
	{ID: "fabric.port.errors", Title: "error counters under thresholds", Why: "symbol, receive and link-recovery errors mean a marginal link long before it drops", Source: "ibqueryerrors", Fix: "replace the cable; clear with perfquery -R <lid> <port> and watch for recurrence"},
	{ID: "fabric.port.errors.rising", Title: "error counters not rising", Why: "a counter that grows between two samples is a live fault, not history", Source: "ibqueryerrors sampled twice (--interval)", Fix: "replace the cable or port now"},
	{ID: "fabric.port.down", Title: "planned cables are up", Why: "a port the plan says is cabled is Down or Polling: unplugged, dead cable or disabled port", Source: "iblinkinfo vs the plan", Fix: "check the cable at both ends; ibportstate <lid> <port> enable"},
	{ID: "fabric.topology.miswired", Title: "cables where the plan puts them", Why: "a cable moved to another port breaks routing assumptions (fat-tree up/down, rail alignment)", Source: "ibnetdiscover vs the plan", Fix: "move the cable back to the planned port"},
	{ID: "fabric.topology.missing", Title: "planned nodes present", Why: "a node the plan lists was not discovered at all", Source: "ibnetdiscover vs the plan", Fix: "check the node is powered and cabled"},
	{ID: "fabric.topology.extra", Title: "no unplanned links", Why: "a link the plan does not know about", Source: "ibnetdiscover vs the plan", Fix: "add it to the plan, or remove it"},
}

// Run applies every rule.
func Run(s *fabric.Snapshot, o Options) []check.Finding {
	var fs []check.Finding
	fs = append(fs, subnetManager(s)...)
	fs = append(fs, portsConfigured(s)...)
	fs = append(fs, linkRules(s, o)...)
	fs = append(fs, counterRules(s, o)...)
	if o.Plan != nil {
		fs = append(fs, Diff(s, o.Plan)...)
	}
	check.Sort(fs)
	return fs
}

func find(id string, out check.Outcome, subject, format string, a ...any) check.Finding {
	f := check.Finding{Check: id, Outcome: out, Subject: subject, Message: fmt.Sprintf(format, a...)}
	for _, e := range Catalog {
		if e.ID == id && out != check.Pass {
			f.Fix = []string{e.Fix}
		}
	}
	return f
}

func subnetManager(s *fabric.Snapshot) []check.Finding {
	var masters []fabric.SM
	for _, sm := range s.SMs {
		if sm.State == "MASTER" {
			masters = append(masters, sm)
		}
	}
	var fs []check.Finding
	switch {
	case len(s.SMs) > 0 && len(masters) == 0:
		fs = append(fs, find("fabric.sm", check.Fail, "subnet", "no subnet manager is MASTER (%s): an election or handover is under way, or stuck", smName(s.SMs[0])))
	case len(masters) == 0:
		f := find("fabric.sm", check.Fail, "subnet", "no subnet manager answers: ports stay Initialize with LID 0 and nothing routes")
		if s.SMQueryError != "" {
			f.Evidence = append(f.Evidence, check.Evidence{What: "sminfo", Value: s.SMQueryError, Source: "sminfo"})
		}
		fs = append(fs, f)
	case len(masters) > 1:
		var names []string
		for _, m := range masters {
			names = append(names, smName(m))
		}
		fs = append(fs, find("fabric.sm", check.Fail, "subnet", "%d subnet managers claim MASTER: %s", len(masters), strings.Join(names, "; ")))
	default:
		fs = append(fs, find("fabric.sm", check.Pass, "subnet", "master SM %s, %d standby", smName(masters[0]), len(s.SMs)-1))
	}
	byPrio := map[int][]fabric.SM{}
	for _, sm := range s.SMs {
		byPrio[sm.Priority] = append(byPrio[sm.Priority], sm)
	}
	for prio, sms := range byPrio {
		if len(sms) < 2 {
			continue
		}
		var names []string
		for _, m := range sms {
			names = append(names, smName(m))
		}
		f := find("fabric.sm.priority-clash", check.Warn, "subnet",
			"%d subnet managers share priority %d, so the lowest GUID wins the election: %s", len(sms), prio, strings.Join(names, "; "))
		fs = append(fs, f)
	}
	return fs
}

func smName(sm fabric.SM) string {
	return fmt.Sprintf("LID %d GUID %s priority %d %s", sm.LID, sm.GUID, sm.Priority, sm.State)
}

// portsConfigured flags linked ports without a LID or not Active, one
// finding per problem with the ports as evidence (a fabric without an SM
// has hundreds).
func portsConfigured(s *fabric.Snapshot) []check.Finding {
	var noLID, notActive []fabric.Port
	for _, p := range s.Ports {
		if p.PhysState != "LinkUp" {
			continue
		}
		if p.LID == 0 {
			noLID = append(noLID, p)
		}
		if p.State != "Active" {
			notActive = append(notActive, p)
		}
	}
	var fs []check.Finding
	for _, c := range []struct {
		id    string
		ports []fabric.Port
		what  string
	}{{"fabric.lid.unassigned", noLID, "have LID 0"}, {"fabric.port.state", notActive, "have a link but are not Active"}} {
		if len(c.ports) == 0 {
			fs = append(fs, find(c.id, check.Pass, "ports", "every linked port is fine"))
			continue
		}
		f := find(c.id, check.Fail, "ports", "%d linked port(s) %s, e.g. %s", len(c.ports), c.what, c.ports[0].Name())
		for i, p := range c.ports {
			if i == 10 {
				f.Evidence = append(f.Evidence, check.Evidence{What: "…", Value: fmt.Sprintf("%d more", len(c.ports)-10)})
				break
			}
			f.Evidence = append(f.Evidence, check.Evidence{What: p.Name(), Value: fmt.Sprintf("LID %d, %s/%s", p.LID, p.State, p.PhysState), Source: "iblinkinfo"})
		}
		fs = append(fs, f)
	}
	return fs
}

func linkText(p *fabric.Port) string {
	return fmt.Sprintf("%s %s (%g Gb/s)", p.Width, p.Speed, p.RateGbps)
}

func linkRules(s *fabric.Snapshot, o Options) []check.Finding {
	var fs []check.Finding
	ok := 0
	for _, l := range s.Links() {
		a, b := l.A, l.B
		bad := false
		width := cmp.Or(a.CouldBeWidth, b.CouldBeWidth)
		speed := cmp.Or(a.CouldBeSpeed, b.CouldBeSpeed)
		if width != "" {
			bad = true
			fs = append(fs, evidence(find("fabric.link.width", check.Fail, l.Name(),
				"%s, both ends support %s", linkText(a), width), a, b))
		}
		if speed != "" {
			bad = true
			fs = append(fs, evidence(find("fabric.link.speed", check.Fail, l.Name(),
				"%s, both ends support %s", linkText(a), speed), a, b))
		}
		if o.ExpectRateGbps > 0 && a.RateGbps > 0 && a.RateGbps < o.ExpectRateGbps {
			bad = true
			fs = append(fs, evidence(find("fabric.link.rate", check.Fail, l.Name(),
				"%s, below the expected %g Gb/s", linkText(a), o.ExpectRateGbps), a, b))
		}
		if !bad {
			ok++
		}
	}
	fs = append(fs, find("fabric.link.width", check.Pass, "links", "%d link(s) at their best width, speed and the expected rate", ok))
	return fs
}

func evidence(f check.Finding, a, b *fabric.Port) check.Finding {
	for _, p := range []*fabric.Port{a, b} {
		v := fmt.Sprintf("%s %s, %s/%s, LID %d", p.Width, p.Speed, p.State, p.PhysState, p.LID)
		if p.CouldBeWidth != "" || p.CouldBeSpeed != "" {
			v += ", could be " + strings.TrimSpace(p.CouldBeWidth+" "+p.CouldBeSpeed)
		}
		f.Evidence = append(f.Evidence, check.Evidence{What: p.Name(), Value: v, Source: "iblinkinfo"})
	}
	return f
}

func counterRules(s *fabric.Snapshot, o Options) []check.Finding {
	var fs []check.Finding
	bad := 0
	for _, p := range s.Ports {
		names := make([]string, 0, len(p.Counters))
		for n := range p.Counters {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			v := p.Counters[n]
			limit, isErr := DefaultThresholds[n]
			if t, ok := o.Thresholds[n]; ok {
				limit, isErr = t, true
			}
			if !isErr {
				continue // data counters
			}
			subject := p.Name() + " " + n
			ev := check.Evidence{What: n, Value: fmt.Sprint(v), Source: "ibqueryerrors"}
			switch {
			case counterMax[n] > 0 && v >= counterMax[n]:
				bad++
				f := find("fabric.port.errors", check.Fail, subject, "saturated at %d: the true count is unknown and new errors are not counted%s", v, peer(p))
				f.Evidence = append(f.Evidence, ev)
				fs = append(fs, f)
			case v > limit:
				bad++
				f := find("fabric.port.errors", check.Fail, subject, "%d, over the threshold %d%s", v, limit, peer(p))
				f.Evidence = append(f.Evidence, ev)
				fs = append(fs, f)
			}
			if r := p.CounterRates[n]; r > 0 {
				f := find("fabric.port.errors.rising", check.Fail, subject, "rising at %.2f/s (%.0f/hour) over %.0f s%s", r, r*3600, s.IntervalSeconds, peer(p))
				f.Evidence = append(f.Evidence, ev)
				fs = append(fs, f)
			}
		}
	}
	if bad == 0 {
		fs = append(fs, find("fabric.port.errors", check.Pass, "ports", "no error counter over its threshold on %d ports", len(s.Ports)))
	}
	return fs
}

// peer names the far end, since a receive error is often the sender's cable.
func peer(p fabric.Port) string {
	if p.Remote == nil {
		return ""
	}
	return fmt.Sprintf(" (link to %s port %d)", p.Remote.NodeDesc, p.Remote.Port)
}
