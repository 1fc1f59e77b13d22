package cli

import (
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// rateFlag reads a rate flag in the one rate syntax ("200", "4X HDR",
// "25GbE"); empty means no expectation (0).
func rateFlag(name, v string) (float64, error) {
	if v == "" {
		return 0, nil
	}
	r, err := linkrate.ParseRate(v)
	if err != nil {
		return 0, usageErr("%s: %v", name, err)
	}
	return r.Gbps, nil
}

// expectFlags reads --expect-rate and --expect-link-layer the same way in
// every command that judges hosts (doctor, slurm health, exporter).
func expectFlags(rate, linkLayer string) (hostcheck.Options, error) {
	var opt hostcheck.Options
	var err error
	if opt.ExpectRateGbps, err = rateFlag("--expect-rate", rate); err != nil {
		return opt, err
	}
	if linkLayer != "" {
		l, err := linkrate.ParseLayer(linkLayer)
		if err != nil || l == linkrate.TCP {
			return opt, usageErr("--expect-link-layer %q: want InfiniBand (IB) or RoCE (Ethernet)", linkLayer)
		}
		opt.ExpectLinkLayer = l
	}
	return opt, nil
}
