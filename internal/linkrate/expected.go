package linkrate

import "fmt"

// Expected is what a clean fabric measures on one kind of link: the
// large-message ib_send_bw range and the 2-byte ib_send_lat range, from
// seed 001's table ("Expected numbers on a clean fabric"), and where the
// latency stops being slow and is broken.
type Expected struct {
	// Link names the table row: "200 Gb/s HDR / 200 GbE RoCE"; RateGbps
	// is its nominal port rate.
	Link     string
	RateGbps float64
	// LowGbps–HighGbps: large-message bandwidth (0: no row for this rate).
	LowGbps, HighGbps float64
	// LowUs–HighUs: 2-byte one-way latency (ib_send_lat, ib_write_lat).
	LowUs, HighUs float64
	// BrokenUs: above it the path is broken, not slow ("anything over
	// 5 µs on a single-switch RoCE fabric is broken").
	BrokenUs float64
	Source   string
}

// SeedExpectedSource names where the expectations come from.
const SeedExpectedSource = "seed 001's table of expected numbers on a clean fabric"

// BrokenLatencyUs: seed 001, "anything over 5 µs on a single-switch RoCE
// fabric is broken".
const BrokenLatencyUs = 5.0

// expectedRows is seed 001's table, by nominal port rate. Slower links
// than 100 Gb/s keep the 100 Gb/s latency: serialisation of a 2-byte
// message is negligible at any of these rates, and the seeds' own slower
// links agree (QDR 1.15 µs in seed 003, 25GbE RoCE 1.41 µs in seed 000,
// both called healthy by their authors).
var expectedRows = []Expected{
	{Link: "100 Gb/s EDR / 100 GbE RoCE", RateGbps: 100, LowGbps: 95, HighGbps: 98, LowUs: 1.0, HighUs: 1.5},
	{Link: "200 Gb/s HDR / 200 GbE RoCE", RateGbps: 200, LowGbps: 188, HighGbps: 197, LowUs: 0.9, HighUs: 1.3},
	{Link: "400 Gb/s NDR", RateGbps: 400, LowGbps: 370, HighGbps: 395, LowUs: 0.8, HighUs: 1.1},
}

// ExpectedFor returns seed 001's expectations for a port rate: the row of
// that rate (bandwidth and latency), or for another rate the latency of
// the nearest row and no bandwidth range. rate 0 (unknown) gets the
// loosest latency (the 100 Gb/s row). RoCE at 400 Gb/s has no row of its
// own; it takes NDR's.
func ExpectedFor(rateGbps float64) Expected {
	e := expectedRows[0]
	for _, r := range expectedRows {
		if rateGbps == r.RateGbps {
			e = r
			e.BrokenUs, e.Source = BrokenLatencyUs, SeedExpectedSource
			return e
		}
		if rateGbps >= r.RateGbps {
			e = r
		}
	}
	e.LowGbps, e.HighGbps, e.RateGbps = 0, 0, rateGbps
	e.Link = fmt.Sprintf("%g Gb/s (latency of the %s row)", rateGbps, e.Link)
	if rateGbps <= 0 {
		e.Link = "unknown rate (latency of the " + expectedRows[0].Link + " row)"
	}
	e.BrokenUs, e.Source = BrokenLatencyUs, SeedExpectedSource
	return e
}

// LatencyRoundTrips is how many network round trips a perftest latency
// test reports in one figure: ib_write_lat and ib_send_lat print half a
// ping-pong (one way); ib_read_lat and ib_atomic_lat print the time for
// the answer to come back (a full round trip), so they are judged against
// twice the one-way range.
func LatencyRoundTrips(test string) float64 {
	switch test {
	case "read", "atomic":
		return 2
	}
	return 1
}

// BestMTU is the largest RDMA MTU (InfiniBand and RoCE alike); a run at a
// smaller one pays more headers per byte and, on RoCE, usually means the
// netdev MTU was left at 1500.
const BestMTU = 4096

// NetdevMTUFor is the smallest netdev MTU that gives a RoCE port the RDMA
// MTU m (4096 → 4192; seed 000 sets 4200).
func NetdevMTUFor(m int) int { return m + RoCEMTUHeadroom }
