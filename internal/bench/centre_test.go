package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
)

// The peers' centre no minority can move: on 4 directions, one at 0.5 Gb/s
// stays bad when another is set to twice the rest (the median and the
// run's spread moved; the direction did not get better).
func TestCentreNoMinorityMovesIt(t *testing.T) {
	c := testCluster(t, 3, "")
	base := []Record{
		{From: "n1", To: "n3", Gbps: 7.94}, {From: "n3", To: "n1", Gbps: 8.36},
		{From: "n2", To: "n3", Gbps: 7.88}, {From: "n3", To: "n2", Gbps: 9.61},
	}
	for _, twice := range []bool{false, true} {
		recs := slices.Clone(base)
		for i := range recs {
			recs[i].Engine, recs[i].Test = "tcp", "bw"
			if recs[i].From == "n2" && recs[i].To == "n3" {
				recs[i].Gbps = 0.5
			}
			if twice && recs[i].From == "n3" && recs[i].To == "n1" {
				recs[i].Gbps *= 2
			}
			recs[i].SamplesGbps = []float64{recs[i].Gbps}
		}
		rep := Analyze(c, "tcp", "bw", false, recs, nil, nil)
		var slow []string
		for _, f := range findingsOf(rep, check.Fail) {
			slow = append(slow, f.Check+" "+f.Subject)
		}
		if !slices.Equal(slow, []string{"bench.direction.slow n2 → n3"}) {
			t.Errorf("twice=%v: failed %v\n%+v", twice, slow, rep.Findings)
		}
	}
}

// A believed ceiling: with three directions, two above 105% of 4X QDR's
// ceiling cannot overrule it (a majority of three is two artefacts); they
// are measurement errors, never good, and the third at 60% of the ceiling
// fails against the ceiling, not passes against the inflated peers.
func TestCentreFewDirectionsKeepTheCeiling(t *testing.T) {
	c := testCluster(t, 2, "link: {layer: IB, rate: 4X QDR}\n")
	recs := []Record{
		{From: "n1", To: "n2", Engine: "tcp", Test: "bw", Gbps: 19, SamplesGbps: []float64{19}},
		{From: "n2", To: "n1", Engine: "tcp", Test: "bw", Gbps: 40, SamplesGbps: []float64{40}},
	}
	rep := Analyze(c, "tcp", "bw", false, recs, nil, nil)
	var got []string
	for _, f := range rep.Findings {
		if f.Outcome != check.Pass {
			got = append(got, string(f.Outcome)+" "+f.Check+" "+f.Subject)
		}
	}
	want := []string{"fail bench.direction.slow n1 → n2", "warn bench.direction.above-ceiling n2 → n1"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v\n%+v", got, want, rep.Findings)
	}
	for _, d := range rep.Directions {
		if d.From == "n2" && (!d.Above || d.Bad) {
			t.Errorf("40 Gb/s on QDR (%.0f%% of its ceiling) is a measurement error: %+v", 100*d.CeilingShare, d)
		}
	}
}

// An absurd value (9,999,999 Gb/s, more than any link carries) is no
// measurement: bad, named, and no peer of the others.
func TestCentreAbsurdValueFails(t *testing.T) {
	c := testCluster(t, 3, "")
	recs := recorded(c, func(from, to string) []float64 {
		if from == "n1" && to == "n2" {
			return []float64{9999999}
		}
		return []float64{9.4, 9.5, 9.6}
	})
	rep := Analyze(c, "tcp", "bw", false, recs, nil, nil)
	var got []string
	for _, f := range findingsOf(rep, check.Fail) {
		got = append(got, f.Check+" "+f.Subject)
	}
	if !slices.Equal(got, []string{"bench.direction.slow n1 → n2"}) {
		t.Errorf("failed %v\n%+v", got, rep.Findings)
	}
}

// Two nodes, no rate declared, a TCP run: each direction has one peer
// at most, so 0.5 Gb/s against 9.5 Gb/s the other way is judged by
// nothing; the run is unproven (bench.run unknown, with what would answer
// it), never a pass for either node.
func TestCentreNothingToJudgeAgainst(t *testing.T) {
	c := testCluster(t, 2, "")
	recs := recorded(c, func(from, to string) []float64 {
		if from == "n1" {
			return []float64{0.5}
		}
		return []float64{9.5}
	})
	rep := Analyze(c, "tcp", "bw", false, recs, nil, nil)
	var got []string
	for _, f := range rep.Findings {
		got = append(got, string(f.Outcome)+" "+f.Check)
		if f.Check == "bench.run" && (len(f.Fix) == 0 || !strings.Contains(f.Fix[0], "link.rate")) {
			t.Errorf("the unknown names what would answer it: %+v", f)
		}
	}
	if !slices.Equal(got, []string{"unknown bench.run"}) {
		t.Errorf("got %v", got)
	}
}

// Latency alike: a p50 at ten times its peers whose own samples spread
// wildly (1, 300, 3000 µs) is bad, not noisy: no spread hides a p50 at
// twice the bad threshold.
func TestCentreLatencyBeyondNoise(t *testing.T) {
	c := testCluster(t, 3, "")
	recs := []Record{{From: "n1", To: "n3", P50Us: 30}, {From: "n3", To: "n1", P50Us: 31}, {From: "n2", To: "n3", P50Us: 300}, {From: "n3", To: "n2", P50Us: 32}}
	for i := range recs {
		recs[i].Engine, recs[i].Test, recs[i].SamplesP50Us = "tcp", "lat", []float64{recs[i].P50Us}
	}
	recs[2].SamplesP50Us = []float64{1, 300, 3000}
	rep := Analyze(c, "tcp", "lat", true, recs, nil, nil)
	var slow []string
	for _, f := range findingsOf(rep, check.Fail) {
		slow = append(slow, f.Check+" "+f.Subject)
	}
	if !slices.Equal(slow, []string{"bench.direction.slow n2 → n3"}) {
		t.Errorf("failed %v\n%+v", slow, rep.Findings)
	}
}
