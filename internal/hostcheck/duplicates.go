package hostcheck

import (
	"fmt"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
)

// DuplicateID names snapshots given more than once.
const DuplicateID = "input.duplicate"

// DuplicateEntry: the same snapshot given twice (or a thousand copies of
// it) is one host judged once; saying so keeps a fleet of one from passing
// for a fleet.
var DuplicateEntry = check.Entry{ID: DuplicateID, Title: "Each host's snapshot is given once",
	Why:         "Copies of one snapshot collapse into one host: a count of nodes, or a fleet majority, would rest on copies rather than on machines.",
	Source:      "issue 30 (1,000 copies of one snapshot collapsed into one node with no notice)",
	Fixes:       []string{"give one snapshot per host (rdmalab inventory --output json on each node)", "two snapshots of one host must differ in collected_at to compare counters"},
	Needs:       "the hostname and collected_at of every snapshot given",
	UnknownWhen: "never: copies are counted or there are none"}

// RunDuplicates warns once per host given the same snapshot (same hostname
// and collection time) more than once, with the count. Snapshots of one
// host taken at different times are counter history, not copies.
func RunDuplicates(all []*host.Snapshot) []check.Finding {
	type key struct{ host, at string }
	count := map[key]int{}
	var order []key
	for _, s := range all {
		k := key{s.Hostname, s.CollectedAt.UTC().String()}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	rep := DuplicateEntry.Reporter("")
	for _, k := range order {
		n := count[k]
		if n < 2 {
			continue
		}
		f := rep.On(k.host).Warn("snapshot", "the same snapshot given %d times: judged once, as one host", n)
		f.Evidence = []check.Evidence{{What: "copies (same hostname and collected_at)", Value: fmt.Sprint(n), Source: "the inputs"}, {What: "collected_at", Value: k.at}}
	}
	return rep.Findings()
}
