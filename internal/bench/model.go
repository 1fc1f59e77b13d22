package bench

import (
	"fmt"

	"github.com/rdmalab/rdmalab/internal/check"
)

// Sides of a node.
const (
	Send    = "send"
	Receive = "receive"
)

// Direction is the final state of one direction, judged.
type Direction struct {
	Record
	// RefValue is the median of the same link class (Gb/s, or p50 µs for
	// latency); Share is this direction's value over it.
	RefValue float64 `json:"ref_value,omitempty"`
	Share    float64 `json:"share_of_peers,omitempty"`
	// CeilingGbps is what the link can carry (0 when no rate was declared);
	// CeilingShare is the measurement over it.
	CeilingGbps  float64 `json:"ceiling_gbps,omitempty"`
	CeilingShare float64 `json:"ceiling_share,omitempty"`
	Link         string  `json:"link,omitempty"`
	// Spread is (max − min) / median of the samples; Noise is the larger
	// of it and the spread of the direction's link class: a shortfall
	// inside it is not a verdict.
	Spread float64 `json:"spread,omitempty"`
	Noise  float64 `json:"noise,omitempty"`
	Bad    bool    `json:"bad,omitempty"`
	// Noisy: short of the peers or the link, but inside the run's own
	// noise (NoisyWhy says by how much): measure again, not a failure.
	Noisy    bool   `json:"noisy,omitempty"`
	NoisyWhy string `json:"noisy_why,omitempty"`
	Above    bool   `json:"above_ceiling,omitempty"`
	Why      string `json:"why,omitempty"`
	// Retest is the direction measured again after it was found bad with
	// no suspect node to explain it.
	Retest *Record `json:"retest,omitempty"`
}

// NodeSummary is one node's two sides.
type NodeSummary struct {
	Name      string  `json:"name"`
	SendValue float64 `json:"send_value,omitempty"` // median Gb/s (p50 µs for latency)
	RecvValue float64 `json:"receive_value,omitempty"`
	SendBad   int     `json:"send_bad"`
	SendTotal int     `json:"send_measured"`
	RecvBad   int     `json:"receive_bad"`
	RecvTotal int     `json:"receive_measured"`
	Failed    int     `json:"failed"`
	Out       string  `json:"taken_out,omitempty"`
	// NotMeasured counts the directions not tried because the node was
	// out (the runner summarises them per node, not one record per pair).
	NotMeasured int `json:"not_measured,omitempty"`
}

// Suspect is a node one of whose sides fails most of its directions.
type Suspect struct {
	Node    string   `json:"node"`
	Side    string   `json:"side"`
	Bad     int      `json:"bad"`
	Total   int      `json:"measured"`
	Retests []Record `json:"retests,omitempty"`
	// Confirmed: "yes" (every retest bad), "no" (every retest fine),
	// "mixed", or "" (not retested).
	Confirmed string `json:"confirmed,omitempty"`
}

// Report is a bench run judged: the view every renderer uses.
type Report struct {
	Engine       string            `json:"engine"`
	Test         string            `json:"test"`
	Latency      bool              `json:"latency"`
	RateDeclared bool              `json:"rate_declared"`
	Link         string            `json:"link,omitempty"`
	MedianValue  float64           `json:"median_value"` // Gb/s or p50 µs
	Directions   []Direction       `json:"directions"`
	Nodes        []NodeSummary     `json:"nodes"`
	Suspects     []Suspect         `json:"suspects,omitempty"`
	Good         []string          `json:"known_good,omitempty"`
	Out          map[string]string `json:"taken_out,omitempty"`
	Leftovers    []string          `json:"leftovers,omitempty"`
	// CUDA is the same test in GPU memory (--use-cuda), GPUDirect the
	// per-direction verdicts of GPU against host memory.
	CUDA      *Report         `json:"cuda,omitempty"`
	Cover     *Cover          `json:"cover,omitempty"`  // --schedule cover: the localiser's verdict
	Rounds    *RoundsUsed     `json:"rounds,omitempty"` // what the run took (benchrun.Run sets it)
	GPUDirect []check.Finding `json:"gpudirect,omitempty"`
	Findings  []check.Finding `json:"-"`
	// layer is the cluster file's link layer, as written.
	layer string
}

// FormatValue prints a measurement: Gb/s or p50 latency, two decimals.
func (r *Report) FormatValue(v float64) string {
	if r.Latency {
		return fmt.Sprintf("p50 %.2f µs", v)
	}
	return fmt.Sprintf("%.2f Gb/s", v)
}

func valueOf(r Record, latency bool) float64 {
	if latency {
		return r.P50Us
	}
	return r.Gbps
}
