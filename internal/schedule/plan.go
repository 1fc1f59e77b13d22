package schedule

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/route"
)

// PayloadVersion is bumped on any change that removes or re-types a field
// of Payload.
const PayloadVersion = 1

// Payload is what 'rdmalab bench schedule --output json' carries.
type Payload struct {
	SchemaVersion int     `json:"schema_version"`
	Source        string  `json:"source"`
	Nodes         int     `json:"nodes"`          // CA ports scheduled
	Links         int     `json:"directed_links"` // every direction of every cable
	Coverable     int     `json:"coverable_links"`
	Covered       int     `json:"covered_links"`
	Rounds        []Round `json:"rounds"`
	// Uncoverable links carry no host-to-host route: no schedule can test them.
	Uncoverable []LinkRef  `json:"uncoverable_links"`
	Unrouted    []Unrouted `json:"unrouted_pairs,omitempty"`
	// CircleRounds is what the circle method (all pairs) takes;
	// CircleRoundsToCover is after how many of its rounds, in host-name
	// order, every coverable link has carried traffic.
	CircleRounds        int      `json:"circle_rounds"`
	CircleRoundsToCover int      `json:"circle_rounds_to_cover"`
	ScheduleSeconds     float64  `json:"schedule_seconds"` // paths + cover
	Problems            []string `json:"problems,omitempty"`
}

// Round is one round: its pairs and every link they cross.
type Round struct {
	Round int       `json:"round"` // from 1
	Pairs []PairRef `json:"pairs"`
	Links []LinkRef `json:"links"`
}

// Endpoint is a node by name and the CA port it measures from.
type Endpoint struct {
	Name     string    `json:"name"`
	PortGUID host.GUID `json:"port_guid"`
	Port     int       `json:"port"`
}

// PairRef is a pair, measured in both directions.
type PairRef struct {
	A Endpoint `json:"a"`
	B Endpoint `json:"b"`
}

// PortRef is a port by GUID and number, with the name people use.
type PortRef struct {
	GUID host.GUID `json:"guid"`
	Port int       `json:"port"`
	Name string    `json:"name"`
}

// LinkRef is one direction of a cable.
type LinkRef struct {
	From PortRef `json:"from"`
	To   PortRef `json:"to"`
}

// Unrouted is a pair the forwarding tables do not deliver.
type Unrouted struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// Result is a planned schedule: the payload and the schedule by name.
type Result struct {
	Payload  Payload
	Schedule *Schedule
}

// Plan computes every path, the cover schedule and the circle baseline.
func Plan(f *route.Fabric, source string) *Result {
	start := time.Now()
	p := f.Paths()
	c := CoverRounds(p)
	elapsed := time.Since(start)
	order := make([]int, p.N)
	for i := range order {
		order[i] = i
	}
	pl := Payload{SchemaVersion: PayloadVersion, Source: source, Nodes: p.N, Links: len(f.Links),
		Coverable: c.Coverable, Covered: c.Covered, Uncoverable: []LinkRef{},
		CircleRounds: CircleRounds(p.N), CircleRoundsToCover: CircleRoundsToCover(p, order),
		ScheduleSeconds: elapsed.Seconds(), Problems: f.Problems}
	ref := func(k route.PortKey) PortRef { return PortRef{k.GUID, k.Port, f.PortName(k)} }
	link := func(l int) LinkRef { return LinkRef{ref(f.Links[l].From), ref(f.Links[l].To)} }
	end := func(i int) Endpoint { return Endpoint{f.CAs[i].Name, f.CAs[i].Key.GUID, f.CAs[i].Key.Port} }
	for i, r := range c.Rounds {
		round := Round{Round: i + 1}
		for _, pr := range r {
			round.Pairs = append(round.Pairs, PairRef{end(pr.A), end(pr.B)})
		}
		for _, l := range c.RoundLinks[i] {
			round.Links = append(round.Links, link(l))
		}
		pl.Rounds = append(pl.Rounds, round)
	}
	for _, l := range p.Uncoverable() {
		pl.Uncoverable = append(pl.Uncoverable, link(l))
	}
	for _, u := range p.Unrouted {
		pl.Unrouted = append(pl.Unrouted, Unrouted{f.CAs[u.Src].Name, f.CAs[u.Dst].Name, u.Reason})
	}
	return &Result{Payload: pl, Schedule: Named(f, c.Rounds)}
}

// Findings are the judgements a schedule carries: pairs with no route fail
// (those hosts cannot talk), links no host traffic reaches are a warning
// (nothing here can test them), problems joining the inputs are unknown.
func (r *Result) Findings() []check.Finding {
	pl := r.Payload
	var fs []check.Finding
	if n := len(pl.Unrouted); n > 0 {
		var ev []check.Evidence
		for _, u := range pl.Unrouted[:min(n, 10)] {
			ev = append(ev, check.Evidence{What: u.From + " → " + u.To, Value: u.Reason, Source: "forwarding tables"})
		}
		f := CheckUnrouted.Reporter("").New(check.Fail, "routes", "%d host pairs have no route in the forwarding tables (first %d listed)", n, len(ev))
		f.Evidence = ev
		f.Fix = []string{"check the subnet manager's log for routing errors and re-sweep (opensm, or 'ibdiagnet -r')"}
		fs = append(fs, f)
	}
	if n := len(pl.Uncoverable); n > 0 {
		var ev []check.Evidence
		for _, l := range pl.Uncoverable[:min(n, 10)] {
			ev = append(ev, check.Evidence{What: "link", Value: l.From.Name + " → " + l.To.Name, Source: "forwarding tables"})
		}
		f := CheckUncoverable.Reporter("").New(check.Warn, "links", "%d directed links carry no host-to-host route, so no benchmark between hosts can test them (first %d listed)", n, len(ev))
		f.Evidence = ev
		fs = append(fs, f)
	}
	for _, p := range pl.Problems {
		fs = append(fs, CheckInput.Reporter("").New(check.Unknown, "inputs", "%s", p))
	}
	if pl.Covered != pl.Coverable {
		fs = append(fs, CheckCover.Reporter("").New(check.Fail, "schedule", "the schedule covers %d of %d coverable links", pl.Covered, pl.Coverable))
	}
	return fs
}

// WriteTable prints the schedule for a person: the summary first, then
// each round's pairs, then the links nothing can test.
func (r *Result) WriteTable(w io.Writer) error {
	pl := r.Payload
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Fabric:\t%s\n", pl.Source)
	fmt.Fprintf(tw, "Nodes:\t%d CA ports, %d directed links, %d coverable, %d uncoverable\n", pl.Nodes, pl.Links, pl.Coverable, len(pl.Uncoverable))
	fmt.Fprintf(tw, "Cover schedule:\t%d round(s), covering %d of %d coverable links (computed in %.3f s)\n", len(pl.Rounds), pl.Covered, pl.Coverable, pl.ScheduleSeconds)
	fmt.Fprintf(tw, "Circle method:\t%d rounds for all pairs; every link carried traffic after %d\n", pl.CircleRounds, pl.CircleRoundsToCover)
	tw.Flush()
	for _, rd := range pl.Rounds {
		fmt.Fprintf(w, "\nRound %d: %d pairs, %d links\n", rd.Round, len(rd.Pairs), len(rd.Links))
		for _, p := range rd.Pairs {
			fmt.Fprintf(w, "  %s ↔ %s\n", p.A.Name, p.B.Name)
		}
	}
	if len(pl.Uncoverable) > 0 {
		fmt.Fprintf(w, "\nUncoverable links (no host-to-host route crosses them):\n")
		for _, l := range pl.Uncoverable {
			fmt.Fprintf(w, "  %s → %s\n", l.From.Name, l.To.Name)
		}
	}
	if len(pl.Unrouted) > 0 {
		fmt.Fprintf(w, "\nPairs with no route: %d\n", len(pl.Unrouted))
		for _, u := range pl.Unrouted[:min(len(pl.Unrouted), 20)] {
			fmt.Fprintf(w, "  %s → %s: %s\n", u.From, u.To, u.Reason)
		}
	}
	for _, p := range pl.Problems {
		fmt.Fprintf(w, "\nProblem: %s\n", strings.TrimSpace(p))
	}
	return nil
}
