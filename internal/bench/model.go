package bench

import (
	"fmt"

	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// Link is what a pair's path can carry, as the cluster file states it.
type Link = linkrate.Link

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
