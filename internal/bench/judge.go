package bench

import (
	"fmt"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/cluster"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

var perftestHeaderRE = lazyre.New(`(?m)^\s*#bytes\s+#iterations\s`)

// SniffPerftest reports whether b looks like saved perftest output.
func SniffPerftest(b []byte) bool { return perftestHeaderRE().Match(b) }

// JudgePerftestFile judges one saved perftest output against what is
// expected of its link (nil, or a zero rate: the rate is unknown). The
// link layer is the one perftest printed (Link type: Ethernet is RoCE);
// an expected layer that differs is a finding. Bandwidth is judged against
// what the link can carry at the MTU perftest used, latency against seed
// 001's table for the rate (the loosest row when the rate is unknown), so
// one run gets a verdict without peers; the MTU is judged against the
// largest RDMA MTU; perftest's warnings become findings with their fixes
// and whether they mattered at the measured saturation. The payload is
// the parsed table.
//
// A file holding several runs (a transcript, a server's output then its
// client's) is judged run by run, each finding's subject naming its run;
// the payload is then the list of runs.
func JudgePerftestFile(name string, b []byte, link *linkrate.Link) ([]check.Finding, any, error) {
	runs, err := ParsePerftestRuns(string(b))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	fs, payload := JudgePerftestRuns(name, runs, link)
	return fs, payload, nil
}

// JudgePerftestRuns judges the runs of one saved output already read
// (judge reads them through its format registry), as JudgePerftestFile.
func JudgePerftestRuns(name string, runs []*PerftestResult, link *linkrate.Link) ([]check.Finding, any) {
	if len(runs) == 1 {
		return judgeRun(name, runs[0], link), runs[0]
	}
	var fs []check.Finding
	for i, p := range runs {
		fs = append(fs, judgeRun(fmt.Sprintf("%s run %d of %d (%s)", name, i+1, len(runs), cmpOr(p.Test, p.Kind)), p, link)...)
	}
	return fs, runs
}

// judgeRun judges one run; subject names it in every finding.
func judgeRun(name string, p *PerftestResult, link *linkrate.Link) []check.Finding {
	var fs []check.Finding
	var l linkrate.Link
	if link != nil {
		l = *link
	}
	// The layer the run used, as perftest printed it.
	layerSource := "perftest's Link type: " + p.LinkType
	ran, ok := linkrate.Layer(""), false
	if p.LinkType != "" {
		if lr, err := linkrate.ParseLayer(p.LinkType); err == nil {
			ran, ok = lr, true
		}
	}
	switch {
	case ok && l.Layer != "" && l.Layer != ran:
		f := CheckPerftestLinkLayer.Reporter("").New(check.Fail, name, "the run went over %s (Link type: %s), not the expected %s", ran, p.LinkType, l.Layer)
		f.Evidence = []check.Evidence{{What: "Link type", Value: p.LinkType, Source: name}, {What: "expected", Value: string(l.Layer), Source: "--expect-link-layer"}}
		f.Fix = []string{"check the port's link_layer (ibstat, ibv_devinfo) and the device the test ran on (-d)"}
		fs = append(fs, f)
		l.Layer = ran
	case ok:
		l.Layer = ran
	case l.Layer != "":
		layerSource = "--expect-link-layer (perftest printed no Link type)"
	default:
		l.Layer, layerSource = linkrate.InfiniBand, "assumed: perftest printed no Link type and no --expect-link-layer was given"
	}
	if p.MTUBytes > 0 {
		l.MTUBytes = p.MTUBytes
	} else if l.MTUBytes == 0 {
		l.MTUBytes = linkrate.DefaultMTU(l.Layer)
	}
	if p.MTUBytes > 0 {
		fs = append(fs, judgeMTU(name, p.Device, p.MTUBytes, l, layerSource))
	}
	t := cluster.DefaultThresholds
	if p.Kind == "lat" {
		fs = append(fs, judgeLatency(name, p, l, layerSource))
		return append(fs, WarningFindings(p.Warnings, "", name, 0, t)...)
	}
	best := p.Best()
	got := fmt.Sprintf("%.2f Gb/s at %d bytes", best.AvgGbps, best.Bytes)
	if l.RateGbps <= 0 {
		fs = append(fs, CheckPerftestBandwidth.Reporter("").New(check.Unknown, name, "%s: no expected rate given (--expect-rate) to judge it against", got))
		return append(fs, WarningFindings(p.Warnings, "", name, 0, t)...)
	}
	ceil := l.CeilingGbps()
	share := best.AvgGbps / ceil
	r := CheckPerftestBandwidth.Reporter("")
	var f check.Finding
	switch {
	case share > t.AboveCeiling:
		causes := "the expected rate is wrong, or the measurement is"
		if len(p.Warnings) > 0 {
			causes = "perftest's own warning (" + p.Warnings[0] + "), or " + causes
		}
		f = r.New(check.Warn, name, "suspect: %s is %.0f%% of what %s can carry, which no link does; likely causes: %s", got, 100*share, l.Describe(), causes)
	case share >= t.Healthy:
		f = r.New(check.Pass, name, "%s = %.0f%% of what %s can carry: healthy", got, 100*share, l.Describe())
	case share >= t.Degraded:
		f = r.New(check.Fail, name, "%s = %.0f%% of what %s can carry: degraded", got, 100*share, l.Describe())
	default:
		f = r.New(check.Fail, name, "%s = %.0f%% of what %s can carry: broken", got, 100*share, l.Describe())
	}
	f.Evidence = []check.Evidence{
		{What: "BW average", Value: got, Source: name},
		{What: "ceiling", Value: fmt.Sprintf("%.2f Gb/s", ceil), Source: l.Describe() + " (" + layerSource + ")"},
	}
	if e := linkrate.ExpectedFor(l.RateGbps); e.LowGbps > 0 {
		f.Evidence = append(f.Evidence, check.Evidence{What: "a clean fabric", Value: fmt.Sprintf("%g–%g Gb/s on %s", e.LowGbps, e.HighGbps, e.Link), Source: e.Source})
	}
	fs = append(fs, f)
	return append(fs, WarningFindings(p.Warnings, "", name, share, t)...)
}

// judgeMTU: a run below the largest RDMA MTU pays more headers per byte;
// on RoCE it usually means the netdev MTU was left at 1500 (seed 000:
// "the default Ethernet MTU of 1500 limits the RDMA MTU to 1024"). dev is
// the RDMA device perftest ran on ("" when not known): the RoCE fix names
// its netdev through sysfs.
func judgeMTU(name, dev string, mtu int, l linkrate.Link, layerSource string) check.Finding {
	r := CheckPerftestMTU.Reporter("")
	ev := []check.Evidence{
		{What: "Mtu", Value: fmt.Sprintf("%d", mtu), Source: name},
		{What: "largest RDMA MTU", Value: fmt.Sprintf("%d", linkrate.BestMTU), Source: "InfiniBand and RoCE (" + layerSource + ")"},
	}
	if mtu >= linkrate.BestMTU {
		f := r.New(check.Pass, name, "the run used MTU %d, the largest RDMA MTU", mtu)
		f.Evidence = ev
		return f
	}
	cost := ""
	if l.RateGbps > 0 {
		at, best := l, l
		best.MTUBytes = linkrate.BestMTU
		cost = fmt.Sprintf(" (%s can carry %.2f Gb/s at MTU %d, %.2f at %d)", l.Describe(), at.CeilingGbps(), mtu, best.CeilingGbps(), linkrate.BestMTU)
	}
	if l.Layer == linkrate.RoCE {
		f := r.New(check.Warn, name, "the run used RoCE MTU %d, not %d: every message is cut into %d× as many packets%s; a netdev MTU of 1500 gives 1024", mtu, linkrate.BestMTU, linkrate.BestMTU/mtu, cost)
		f.Evidence = ev
		netdev := "DEV"
		if dev != "" {
			netdev = `"$(ls /sys/class/infiniband/` + dev + `/device/net)"`
		}
		f.Fix = []string{fmt.Sprintf("ip link set %s mtu 9000 (at least %d) on both ends and every switch port on the path, then check ibv_devinfo's active_mtu", netdev, linkrate.NetdevMTUFor(linkrate.BestMTU))}
		return f
	}
	f := r.New(check.Warn, name, "the run used InfiniBand MTU %d, not %d%s: the subnet manager's partition MTU or the HCA limits it", mtu, linkrate.BestMTU, cost)
	f.Evidence = ev
	f.Fix = []string{"set mtu=5 (4096) on the partition in OpenSM's partitions.conf (or the switch SM), then check ibv_devinfo's active_mtu"}
	return f
}

// judgeLatency: the smallest message's typical latency against seed 001's
// table for the rate; a read or atomic is a full round trip (twice the
// one-way range); software RDMA (rxe, siw) is the kernel's latency.
func judgeLatency(name string, p *PerftestResult, l linkrate.Link, layerSource string) check.Finding {
	best := p.Best()
	e := linkrate.ExpectedFor(l.RateGbps)
	trips := linkrate.LatencyRoundTrips(p.Operation())
	lo, hi, broken := e.LowUs*trips, e.HighUs*trips, e.BrokenUs*trips
	// Older perftest prints no percentile columns: say what was printed,
	// never "p99 0.00 µs".
	got := fmt.Sprintf("%d-byte latency: typical %.2f µs", best.Bytes, best.TypicalUs)
	if best.P99Us > 0 {
		got += fmt.Sprintf(", p99 %.2f µs", best.P99Us)
	}
	if best.P999Us > 0 {
		got += fmt.Sprintf(", p99.9 %.2f µs", best.P999Us)
	}
	what := "one way"
	if trips > 1 {
		what = "a round trip (read/atomic: twice the one-way range)"
	}
	r := CheckPerftestLatency.Reporter("")
	var f check.Finding
	switch {
	case p.Software():
		f = r.New(check.Warn, name, "%s on %s, software RDMA (the kernel does the NIC's work): not a hardware verdict; a clean hardware fabric does %.2f–%.2f µs", got, p.Device, lo, hi)
	case best.TypicalUs <= hi:
		f = r.New(check.Pass, name, "%s: within what a clean fabric does (%.2f–%.2f µs on %s): healthy", got, lo, hi, e.Link)
	case best.TypicalUs <= broken:
		f = r.New(check.Warn, name, "%s: above what a clean fabric does (%.2f–%.2f µs on %s): check CPU governor, NUMA placement of the process, MTU and the switch path", got, lo, hi, e.Link)
	default:
		f = r.New(check.Fail, name, "%s: above %.1f µs, which is broken, not slow, on one switch (a clean fabric does %.2f–%.2f µs on %s)", got, broken, lo, hi, e.Link)
	}
	f.Evidence = []check.Evidence{
		{What: "t_typical", Value: fmt.Sprintf("%.2f µs", best.TypicalUs), Source: name},
		{What: "a clean fabric", Value: fmt.Sprintf("%.2f–%.2f µs (%s); above %.1f µs broken", lo, hi, what, broken), Source: e.Source + ", " + e.Link + " (" + layerSource + ")"},
	}
	return f
}
