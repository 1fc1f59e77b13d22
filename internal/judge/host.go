package judge

import (
	"fmt"
	"path/filepath"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/formats"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/hostcheck"
	"github.com/rdmalab/rdmalab/internal/phycheck"
)

// judgeHost judges a partial host snapshot with doctor's own rules, only
// those the parts it shows can feed, so a saved output and a live host
// get the same verdict.
func judgeHost(m *formats.HostPart, opt Options) ([]check.Finding, any, error) {
	s := m.Snapshot
	var only []string
	if m.Shows&formats.ShowsPorts != 0 {
		only = append(only, hostcheck.PortRules...)
	}
	if m.Shows&formats.ShowsCounters != 0 {
		only = append(only, "port.errors")
	}
	if m.Shows&formats.ShowsPCIe != 0 {
		only = append(only, "pcie.link.degraded")
	}
	var fs []check.Finding
	if len(m.PHY) > 0 {
		// The PHY counters ethtool -S rows carry, by phycheck's rules.
		fs = append(fs, phycheck.Ports(m.PHY)...)
		if m.Shows == 0 {
			return fs, m.PHY, nil
		}
	}
	if len(only) > 0 {
		fs = hostcheck.Doctor([]*host.Snapshot{s}, hostcheck.Options{Expect: opt.Expect, Only: only})
	}
	if m.Shows&(formats.ShowsRoCE|formats.ShowsGIDs) != 0 {
		fs = append(fs, pauseRising(s, m.Readings)...)
		fs = append(fs, hostcheck.RunRoCE(s)...)
	}
	switch {
	case m.Shows&formats.ShowsPCIe != 0:
		return fs, pciePayload{s.PCIDevices, m.PCIeControl}, nil
	case m.Shows&formats.ShowsGIDs != 0:
		return fs, s.RDMADevices, nil
	case m.Shows&formats.ShowsRoCE != 0:
		return fs, s.RoCE, nil
	}
	return fs, s, nil
}

// pciePayload is what an lspci -vvv output showed: the functions with
// their links, and ACS/ATS control as read.
type pciePayload struct {
	PCIDevices  []host.PCIDevice      `json:"pci_devices"`
	PCIeControl []formats.PCIeControl `json:"pcie_control,omitempty"`
}

// pauseRising: pauses rising between two ethtool -S readings of one
// interface in one file.
func pauseRising(s *host.Snapshot, rs []host.EthtoolReading) []check.Finding {
	base := filepath.Base(s.Source)
	var fs []check.Finding
	last := map[string]host.EthtoolReading{}
	for _, r := range rs {
		src := fmt.Sprintf("%s line %d", base, r.Line)
		if prev, ok := last[r.Netdev]; ok {
			a := host.Read[map[string]uint64]{Value: prev.Counters, Source: fmt.Sprintf("%s line %d", base, prev.Line)}
			sub := r.Netdev
			if sub == "" {
				sub = "interface not named in the output"
			}
			fs = append(fs, hostcheck.PauseRising(s.Hostname, sub, a, *host.Got(r.Counters, src), "two readings")...)
		}
		last[r.Netdev] = r
	}
	return fs
}
