package bench

import (
	"fmt"
	"regexp"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

var perftestHeaderRE = regexp.MustCompile(`(?m)^\s*#bytes\s+#iterations\s`)

// SniffPerftest reports whether b looks like saved perftest output.
func SniffPerftest(b []byte) bool { return perftestHeaderRE.Match(b) }

// JudgePerftestFile judges one saved perftest output: bandwidth against
// what link can carry (nil: not judged, said as unknown), with an upper
// sanity bound; perftest's own MTU replaces the link's; its warnings
// become findings with their fixes. The payload is the parsed table.
func JudgePerftestFile(name string, b []byte, link *linkrate.Link) ([]check.Finding, any, error) {
	p, err := ParsePerftest(string(b))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	best := p.Best()
	var fs []check.Finding
	for _, w := range p.Warnings {
		f := WarningFinding(w, "")
		f.Subject = name
		fs = append(fs, f)
	}
	if p.Kind == "lat" {
		fs = append(fs, check.Finding{Check: "bench.perftest.latency", Outcome: check.Unknown, Subject: name,
			Message:  fmt.Sprintf("%d-byte latency: p50 %.2f µs, p99 %.2f µs, p99.9 %.2f µs; one run has no peers to compare with: run rdmalab bench for verdicts", best.Bytes, best.TypicalUs, best.P99Us, best.P999Us),
			Evidence: []check.Evidence{{What: "t_typical", Value: fmt.Sprintf("%.2f µs", best.TypicalUs), Source: name}}})
		return fs, p, nil
	}
	got := fmt.Sprintf("%.2f Gb/s at %d bytes", best.AvgGbps, best.Bytes)
	if link == nil || link.RateGbps <= 0 {
		fs = append(fs, check.Finding{Check: "bench.perftest.bandwidth", Outcome: check.Unknown, Subject: name,
			Message: got + ": no expected rate given (--expect-rate) to judge it against"})
		return fs, p, nil
	}
	l := *link
	if p.MTUBytes > 0 {
		l.MTUBytes = p.MTUBytes
	}
	ceil := l.CeilingGbps()
	share := best.AvgGbps / ceil
	t := cluster.DefaultThresholds
	f := check.Finding{Check: "bench.perftest.bandwidth", Subject: name, Evidence: []check.Evidence{
		{What: "BW average", Value: got, Source: name},
		{What: "ceiling", Value: fmt.Sprintf("%.2f Gb/s", ceil), Source: l.Describe()},
	}}
	switch {
	case share > t.AboveCeiling:
		f.Outcome = check.Warn
		causes := "the expected rate is wrong, or the measurement is"
		if len(p.Warnings) > 0 {
			causes = "perftest's own warning (" + p.Warnings[0] + "), or " + causes
		}
		f.Message = fmt.Sprintf("suspect: %s is %.0f%% of what %s can carry, which no link does; likely causes: %s", got, 100*share, l.Describe(), causes)
	case share >= t.Healthy:
		f.Outcome = check.Pass
		f.Message = fmt.Sprintf("%s = %.0f%% of what %s can carry: healthy", got, 100*share, l.Describe())
	case share >= t.Degraded:
		f.Outcome = check.Fail
		f.Message = fmt.Sprintf("%s = %.0f%% of what %s can carry: degraded", got, 100*share, l.Describe())
	default:
		f.Outcome = check.Fail
		f.Message = fmt.Sprintf("%s = %.0f%% of what %s can carry: broken", got, 100*share, l.Describe())
	}
	return append(fs, f), p, nil
}
