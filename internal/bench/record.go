package bench

import (
	"slices"
	"time"
)

// Record is one measured (or failed, or skipped) direction: one JSON line
// of the results log. From sends, To receives.
type Record struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Engine string `json:"engine"`
	Test   string `json:"test"`
	Round  int    `json:"round,omitempty"`
	// Retest records repeat a suspect's failing direction against a
	// known-good partner.
	Retest  bool      `json:"retest,omitempty"`
	Suspect string    `json:"suspect,omitempty"`
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// Samples are the repeated measurements; the verdict uses their median.
	SamplesGbps  []float64 `json:"samples_gbps,omitempty"`
	SamplesP50Us []float64 `json:"samples_p50_us,omitempty"`
	// The tail of each latency sample, so a comparison of two runs knows
	// how much p99 and p99.9 move by themselves.
	SamplesP99Us  []float64 `json:"samples_p99_us,omitempty"`
	SamplesP999Us []float64 `json:"samples_p99_9_us,omitempty"`
	Gbps          float64   `json:"gbps,omitempty"`
	P50Us         float64   `json:"p50_us,omitempty"`
	P99Us         float64   `json:"p99_us,omitempty"`
	P999Us        float64   `json:"p99_9_us,omitempty"`
	MTUBytes      int       `json:"mtu_bytes,omitempty"`
	LinkType      string    `json:"link_type,omitempty"` // as perftest printed it
	Warnings      []string  `json:"warnings,omitempty"`
	TimedOut      bool      `json:"timed_out,omitempty"`
	Error         string    `json:"error,omitempty"`
	// ErrorNode is the node that could not be reached, when known.
	ErrorNode string `json:"error_node,omitempty"`
	// NotMeasured says why the direction was not tried.
	NotMeasured string `json:"not_measured,omitempty"`
}

func (r Record) valid() bool {
	return r.From != "" && r.To != "" && r.From != r.To && r.Engine != "" && r.Test != ""
}

// Failed is true when the direction has no measurement.
func (r Record) Failed() bool { return r.Error != "" || r.TimedOut || r.NotMeasured != "" }

// DirKey names a direction of a test.
func (r Record) DirKey() string { return r.From + ">" + r.To + "|" + r.Engine + "|" + r.Test }

// PairKey names an unordered pair of a test: the same whichever end is
// listed first, so reordering the cluster file re-measures nothing.
func PairKey(a, b, engine, test string) string {
	if a > b {
		a, b = b, a
	}
	return a + "|" + b + "|" + engine + "|" + test
}

// Median of the values (0 for none).
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
