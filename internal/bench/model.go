package bench

import (
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/host"
)

// Link is what a pair's path can carry, as the cluster file states it.
type Link struct {
	// Layer is IB, RoCE or TCP.
	Layer string `json:"layer"`
	// RateGbps is the nominal port rate: 4X HDR = 200, 25GbE = 25.
	RateGbps float64 `json:"rate_gbps"`
	// Speed is the IB speed name when known (QDR pays 8b/10b).
	Speed    string `json:"speed,omitempty"`
	MTUBytes int    `json:"mtu_bytes"`
}

// Per-packet overheads in bytes.
const (
	ibHeaders   = 8 + 12 + 4 + 2                    // LRH, BTH, ICRC, VCRC
	roceHeaders = 8 + 14 + 4 + 12 + 20 + 8 + 12 + 4 // preamble+SFD, Ethernet, FCS, IFG, IPv4, UDP, BTH, ICRC
	ethWire     = 8 + 14 + 4 + 12                   // preamble+SFD, Ethernet, FCS, IFG around an IP packet
	tcpIPHeader = 20 + 32                           // IPv4, TCP with timestamps
)

// CeilingGbps is the most payload the link can carry: the line's data rate
// (after 8b/10b on SDR–QDR) times the share of each packet that is payload.
func (l Link) CeilingGbps() float64 {
	rate := l.RateGbps
	if host.SpeedRank(l.Speed) > 0 && host.SpeedRank(l.Speed) <= host.SpeedRank("QDR") {
		rate *= 0.8
	}
	mtu := float64(l.MTUBytes)
	switch strings.ToUpper(l.Layer) {
	case "IB":
		return rate * mtu / (mtu + ibHeaders)
	case "ROCE":
		return rate * mtu / (mtu + roceHeaders)
	default: // TCP: MTU is the IP MTU; the payload is what IP and TCP leave
		return rate * (mtu - tcpIPHeader) / (mtu + ethWire)
	}
}

// Describe is "25GbE RoCE at MTU 4096" or "4X HDR InfiniBand at MTU 4096".
func (l Link) Describe() string {
	switch strings.ToUpper(l.Layer) {
	case "IB":
		name := fmt.Sprintf("%g Gb/s", l.RateGbps)
		if l.Speed != "" {
			name = l.Speed
		}
		return fmt.Sprintf("%s InfiniBand at MTU %d", name, l.MTUBytes)
	case "ROCE":
		return fmt.Sprintf("%gGbE RoCE at MTU %d", l.RateGbps, l.MTUBytes)
	}
	return fmt.Sprintf("%g Gb/s TCP at MTU %d", l.RateGbps, l.MTUBytes)
}

// Thresholds split results into verdicts; the seeds' defaults are 95% and 80%.
type Thresholds struct {
	Healthy  float64 `json:"healthy"`
	Degraded float64 `json:"degraded"`
}

// DefaultThresholds are seed 001's: "within 5% of theoretical = healthy;
// 20% under = the fabric is wrong".
var DefaultThresholds = Thresholds{Healthy: 0.95, Degraded: 0.80}

// Verdicts.
const (
	Healthy  = "healthy"
	Degraded = "degraded"
	Broken   = "broken"
)

// Judge returns the verdict and a sentence a person reads:
// "24.50 Gb/s = 98% of what 25GbE RoCE at MTU 4096 can carry: healthy".
func Judge(gbps float64, l Link, t Thresholds) (verdict string, ratio float64, sentence string) {
	ceil := l.CeilingGbps()
	if ceil <= 0 {
		return "", 0, fmt.Sprintf("%.2f Gb/s (no expected link given)", gbps)
	}
	ratio = gbps / ceil
	switch {
	case ratio >= t.Healthy:
		verdict = Healthy
	case ratio >= t.Degraded:
		verdict = Degraded
	default:
		verdict = Broken
	}
	return verdict, ratio, fmt.Sprintf("%.2f Gb/s = %.0f%% of what %s can carry (%.2f Gb/s): %s", gbps, ratio*100, l.Describe(), ceil, verdict)
}
