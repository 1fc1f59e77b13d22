package fabriccheck

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// rate is an InfiniBand width and speed.
type rate struct {
	Width int
	Speed string
}

func (r rate) known() bool      { return r.Width > 0 && linkrate.SpeedRank(r.Speed) > 0 }
func (r rate) gbps() float64    { return linkrate.IBRateGbps(fmt.Sprintf("%dX", r.Width), r.Speed) }
func (r rate) String() string   { return fmt.Sprintf("%dX %s (%g Gb/s)", r.Width, r.Speed, r.gbps()) }
func (r rate) less(o rate) bool { return r.gbps() < o.gbps() }

// capTo is r limited to what c can do: the narrower width and the slower speed.
func (r rate) capTo(c rate) rate {
	out := r
	if c.Width < out.Width {
		out.Width = c.Width
	}
	if linkrate.SpeedRank(c.Speed) < linkrate.SpeedRank(out.Speed) {
		out.Speed = c.Speed
	}
	return out
}

func active(p *fabric.Port) rate {
	w, _ := linkrate.ParseWidth(p.Width)
	return rate{w, p.Speed}
}

// couldBe is what iblinkinfo says the link could run at (the active value
// where it says nothing), and whether it said anything.
func couldBe(p *fabric.Port) (rate, bool) {
	r, said := active(p), false
	if w, ok := linkrate.ParseWidth(p.CouldBeWidth); ok {
		r.Width, said = w, true
	}
	if linkrate.SpeedRank(p.CouldBeSpeed) > 0 {
		r.Speed, said = p.CouldBeSpeed, true
	}
	return r, said
}

// linkHint is what iblinkinfo says the link could run at. iblinkinfo
// computes "Could be" from both ends' supported sets, so either end's line
// speaks for the link (the other's may be cut from a paste); both, the
// lower of the two.
func linkHint(l fabric.Link) rate {
	a, okA := couldBe(l.A)
	b, okB := couldBe(l.B)
	switch {
	case okA && okB:
		return a.capTo(b)
	case okB:
		return b
	}
	return a
}

// advertisesEverything reports whether the snapshot's "Could be" hints
// are the universal advertisement ibsim (and some firmware) makes, every
// width and speed on every port, rather than what the ports support: a
// hint of 12X that the device models of both ends do not confirm (no
// ConnectX or Quantum port was ever 12X). Then no hint of this snapshot
// is evidence by itself; the device models and peers still are.
func advertisesEverything(s *fabric.Snapshot, nodes map[host.GUID]*fabric.Node) bool {
	for _, l := range s.Links() {
		for _, p := range []*fabric.Port{l.A, l.B} {
			if p.CouldBeWidth != "12X" {
				continue
			}
			mA, _, okA := model(nodes, l.A)
			mB, _, okB := model(nodes, l.B)
			if !okA || !okB || !slices.Contains(mA.Widths, 12) || !slices.Contains(mB.Widths, 12) {
				return true
			}
		}
	}
	return false
}

// hintText is a hint as a belief: "53.125 Gbps/lane (HDR)", "4X", or both.
func hintText(h, now rate) string {
	var parts []string
	if h.Width > now.Width {
		parts = append(parts, fmt.Sprintf("%dX", h.Width))
	}
	if linkrate.SpeedRank(h.Speed) > linkrate.SpeedRank(now.Speed) {
		if sp, ok := linkrate.SpeedByName(h.Speed); ok {
			parts = append(parts, fmt.Sprintf("%g Gbps/lane (%s)", sp.SignalGbps, sp.Name))
		} else {
			parts = append(parts, h.Speed)
		}
	}
	return strings.Join(parts, " and ")
}

// model is what a node's device can do at best, from linkrate.Models.
func model(nodes map[host.GUID]*fabric.Node, p *fabric.Port) (linkrate.Model, rate, bool) {
	n := nodes[p.NodeGUID]
	if n == nil || n.VendorID == "" || n.DeviceID == "" {
		return linkrate.Model{}, rate{}, false
	}
	m, ok := linkrate.ModelOf(n.VendorID, n.DeviceID)
	if !ok || m.MaxSpeed == "" || len(m.Widths) == 0 {
		return linkrate.Model{}, rate{}, false
	}
	return m, rate{slices.Max(m.Widths), m.MaxSpeed}, true
}

// consensus is the rate most links of a class run at, when more than half
// of at least three do.
type consensus struct {
	rate     rate
	n, total int
}

func peerConsensus(links []fabric.Link) map[string]consensus {
	count := map[string]map[rate]int{}
	total := map[string]int{}
	for _, l := range links {
		r := active(l.A)
		if !r.known() {
			continue
		}
		c := l.Class()
		if count[c] == nil {
			count[c] = map[rate]int{}
		}
		count[c][r]++
		total[c]++
	}
	out := map[string]consensus{}
	for c, m := range count {
		for r, n := range m {
			if total[c] >= 3 && 2*n > total[c] {
				out[c] = consensus{r, n, total[c]}
			}
		}
	}
	return out
}

// linkRules judges each link's rate as an expert would: against
// --expect-rate when given (authoritative); otherwise against what both
// ends' device models can do, what iblinkinfo's "Could be" says both ends
// support (unless the snapshot's hints are ibsim's advertise-everything,
// when only the device models confirm them), and what the link's peers
// (same class) run at: peers degraded alike never outvote the hint. One finding per degraded link, naming both ends, what it
// runs at, what it should run at and why that is believed.
func linkRules(s *fabric.Snapshot, o Options, n *fabric.Names) []check.Finding {
	links := s.Links()
	if len(links) == 0 {
		if s.Has(fabric.IBLinkInfo) || s.Has(fabric.IBNetDiscover) {
			return []check.Finding{find(linkWidthEntry, check.Unknown, "links", "no linked port in the source: no link to judge")}
		}
		return nil
	}
	peers := peerConsensus(links)
	nodes := map[host.GUID]*fabric.Node{}
	for i := range s.Nodes {
		nodes[s.Nodes[i].GUID] = &s.Nodes[i]
	}
	universal := advertisesEverything(s, nodes)
	var fs []check.Finding
	ok, noRate, noBasis := 0, 0, 0
	var bases []string
	addBasis := func(b string) {
		if !slices.Contains(bases, b) {
			bases = append(bases, b)
		}
	}
	for _, l := range links {
		now := active(l.A)
		if !now.known() {
			noRate++
			continue
		}
		if o.Expect.HasRate() {
			src := cmp.Or(o.Expect.Source, "--expect-rate")
			addBasis(src + " " + o.Expect.Rate.String())
			if now.gbps() < o.Expect.Rate.Gbps {
				f := find(linkRateEntry, check.Fail, n.Link(l), "runs at %s, below the expected %s (%s)", now, o.Expect.Rate, src)
				fs = append(fs, evidence(s, nodes, f, l, n))
				continue
			}
			ok++
			continue
		}
		mA, capA, okA := model(nodes, l.A)
		mB, capB, okB := model(nodes, l.B)
		capBoth := okA && okB
		limit := capA.capTo(capB)
		// Candidates for what the link should run at, each with its reason.
		var should rate
		var why []string
		consider := func(r rate, reason string) {
			if !now.less(r) {
				return
			}
			if should.less(r) {
				should = r
			}
			why = append(why, reason)
		}
		basis := capBoth
		if capBoth {
			addBasis("device models")
		}
		peerAgrees := false
		if c, has := peers[l.Class()]; has {
			peerAgrees = !now.less(c.rate) && !c.rate.less(now)
			basis = true
			addBasis("peers")
			p := c.rate
			if capBoth {
				p = p.capTo(limit)
			}
			consider(p, fmt.Sprintf("%d of %d %s links run at %s", c.n, c.total, l.Class(), c.rate))
		}
		hint := linkHint(l)
		unconfirmed, hintConfirmed := false, false
		if now.less(hint) {
			if capBoth {
				h := hint.capTo(limit)
				reason := fmt.Sprintf("both ends support %s per iblinkinfo (\"Could be\")", hintText(h, now))
				if h != hint {
					reason = fmt.Sprintf("iblinkinfo says both ends could run %s, which the device models cap at %s", rateText(hint), rateText(h))
				}
				if now.less(h) {
					hintConfirmed = true
				}
				consider(h, reason)
			} else if !universal {
				// The tool's own word on this link, in a fabric whose
				// hints are not the universal advertisement: iblinkinfo
				// computed it from both ends' supported sets, so the link
				// runs below what both ends can do. Peers that run alike
				// are degraded alike, not a reason to pass. One known end
				// still caps it.
				h := hint
				if okA {
					h = h.capTo(capA)
				}
				if okB {
					h = h.capTo(capB)
				}
				if now.less(h) {
					consider(h, fmt.Sprintf("both ends support %s per iblinkinfo (\"Could be\")", hintText(h, now)))
				}
			} else {
				// One known end still caps the hint: a Quantum cannot
				// run 12X, whatever its unknown peer advertises.
				h := hint
				if okA {
					h = h.capTo(capA)
				}
				if okB {
					h = h.capTo(capB)
				}
				unconfirmed = now.less(h)
			}
		}
		switch {
		case should.known():
			if capBoth {
				why = append(why, fmt.Sprintf("the device models allow it (%s: %s; %s: %s)", mA.Name, capA, mB.Name, capB))
			}
			e := linkSpeedEntry
			if now.Width < should.Width {
				e = linkWidthEntry
			}
			f := find(e, check.Fail, n.Link(l), "runs at %s, should run at %s: %s", now, should, strings.Join(why, "; "))
			if split(now, should) && !hintConfirmed {
				// 2X at HDR and later is the HDR100/NDR200 split: deliberate
				// on split switch ports and HDR100 cards, which peers and
				// device families cannot tell apart from a lost lane pair;
				// nor can a "Could be 4X" the device models do not confirm
				// (what a split port reports as supported is not known here).
				f.Outcome = check.Warn
				f.Message += "; 2X " + now.Speed + " is also how split ports and " + now.Speed + "-split cards (HDR100, NDR200) run: if this port should be 4X, check the cable"
			}
			fs = append(fs, evidence(s, nodes, f, l, n))
		case unconfirmed && peerAgrees:
			// The hint is the device's word alone; the links of its class
			// run at this rate, and they are what the link is judged by.
			ok++
		case unconfirmed:
			e := linkSpeedEntry
			if now.Width < hint.Width && hint.Speed == now.Speed {
				e = linkWidthEntry
			}
			f := find(e, check.Warn, n.Link(l), "runs at %s; iblinkinfo says both ends could run %s, but their device models are unknown, so that is not confirmed (ibsim and some devices advertise every width and speed)", now, rateText(hint))
			fs = append(fs, evidence(s, nodes, f, l, n))
		case basis:
			ok++
		default:
			noBasis++
		}
	}
	if ok > 0 {
		fs = append(fs, find(linkWidthEntry, check.Pass, "links", "%d link(s) at the rate they should run at (judged by %s)", ok, strings.Join(bases, ", ")))
	}
	if noBasis > 0 {
		fs = append(fs, find(linkWidthEntry, check.Unknown, "links", "%d link(s) with nothing to judge their rate against: no --expect-rate, device models unknown, and no majority of peers at one rate", noBasis))
	}
	if noRate > 0 {
		fs = append(fs, find(linkWidthEntry, check.Unknown, "links", "%d link(s) whose source gives no width and speed", noRate))
	}
	return fs
}

func rateText(r rate) string {
	if r.known() {
		return r.String()
	}
	return fmt.Sprintf("%dX %s", r.Width, r.Speed)
}

func evidence(s *fabric.Snapshot, nodes map[host.GUID]*fabric.Node, f check.Finding, l fabric.Link, n *fabric.Names) check.Finding {
	src := "iblinkinfo"
	if !s.Has(fabric.IBLinkInfo) {
		src = "ibnetdiscover"
	}
	for _, p := range []*fabric.Port{l.A, l.B} {
		v := fmt.Sprintf("GUID %s port %d, LID %d, %s %s", p.NodeGUID, p.Num, p.LID, p.Width, p.Speed)
		if p.State.Known() {
			v += fmt.Sprintf(", %s/%s", p.State, p.PhysState)
		}
		if p.CouldBeWidth != "" || p.CouldBeSpeed != "" {
			v += ", could be " + strings.TrimSpace(p.CouldBeWidth+" "+p.CouldBeSpeed)
		}
		if m, _, ok := model(nodes, p); ok {
			v += ", device " + m.Name
		} else if nd := nodes[p.NodeGUID]; nd != nil && nd.DeviceID != "" && nd.DeviceID != "0x0" {
			v += fmt.Sprintf(", device %s:%s (not in the model table)", nd.VendorID, nd.DeviceID)
		}
		f.Evidence = append(f.Evidence, check.Evidence{What: n.PortOf(p), Value: v, Source: src})
	}
	return filled(f, switchPorts([]*fabric.Port{l.A, l.B})...)
}

// split reports a 2X link at the speed its 4X peers run, from HDR on.
func split(now, should rate) bool {
	return now.Width == 2 && should.Width == 4 && now.Speed == should.Speed && linkrate.SpeedRank(now.Speed) >= linkrate.SpeedRank("HDR")
}
