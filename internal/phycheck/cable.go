package phycheck

import (
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/phy"
)

// A cable rdmalab names from traffic (bench --schedule cover, fabric
// check, a RAS path) carries both ends' own physical evidence, or says
// there was none: the technician sees why the link is bad before
// touching it.

// End is one end of a cable: a host's RDMA device and port (or netdev),
// or a fabric port by GUID and port number.
type End struct {
	Host   string
	Device string // mlx5_0; for a switch, whatever its PHY output was saved as
	Port   int
	Netdev string
	GUID   host.GUID // node or port GUID, when the cable was named from a fabric scan
	// Name is how the finding names the end ("n02 HCA-1", "sw1 port 17").
	Name string
}

func (e End) label() string {
	switch {
	case e.Name != "":
		return e.Name
	case e.Host != "" && e.Device != "":
		return fmt.Sprintf("%s %s port %d", e.Host, e.Device, e.Port)
	case e.Device != "":
		return fmt.Sprintf("%s port %d", e.Device, e.Port)
	case e.Netdev != "":
		return strings.TrimSpace(e.Host + " " + e.Netdev)
	}
	return fmt.Sprintf("GUID %s port %d", e.GUID, e.Port)
}

// EvidencePrefix begins the What of every evidence line about a cable
// end's physical layer: reports find them by it.
const EvidencePrefix = "PHY of "

// NoEvidence is the value of an end's evidence line when no PHY output
// about it was gathered.
const NoEvidence = "no PHY evidence"

// EndOf resolves a fabric port (GUID and port number, as a cover finding
// names it) to the host, device and port of the snapshots, so its PHY
// facts can be found; the End keeps the GUID and name either way.
func EndOf(snaps []*host.Snapshot, guid host.GUID, port int, name string) End {
	e := End{GUID: guid, Port: port, Name: name}
	for _, s := range snaps {
		for _, d := range s.RDMADevices {
			for _, p := range d.Ports {
				if d.NodeGUID == guid && p.Port == port || p.PortGUID != 0 && p.PortGUID == guid {
					e.Host, e.Device, e.Port = s.Hostname, d.Name, p.Port
					if len(p.NetDevs) > 0 {
						e.Netdev = p.NetDevs[0]
					}
					return e
				}
			}
		}
	}
	return e
}

// HostFacts are the PHY facts every snapshot carries, each with its
// host's name (a saved output rarely names the host).
func HostFacts(snaps []*host.Snapshot) []phy.Port {
	var out []phy.Port
	for _, s := range snaps {
		for _, p := range s.Phy {
			if s.Hostname != "" {
				p.Host = s.Hostname
			}
			out = append(out, p)
		}
	}
	return out
}

// matches says whether facts p are about end e.
func matches(e End, p phy.Port) bool {
	if e.Host != "" && p.Host != "" && !strings.EqualFold(e.Host, p.Host) {
		return false
	}
	switch {
	case e.Device != "" && strings.EqualFold(p.Device, e.Device):
		return p.Port == 0 || e.Port == 0 || p.Port == e.Port
	case e.Netdev != "" && p.Netdev == e.Netdev:
		return true
	case e.GUID != 0 && p.Device != "" && strings.EqualFold(strings.TrimPrefix(p.Device, "0x"), strings.TrimPrefix(e.GUID.String(), "0x")):
		return p.Port == 0 || p.Port == e.Port
	}
	return false
}

// CableEvidence returns the evidence lines to attach to a finding that
// names the cable between ends: for each end, what its PHY outputs show
// (the rules' failures and warnings first, then the facts that passed),
// or "no PHY evidence" when none was gathered about it.
func CableEvidence(ends []End, facts []phy.Port) []check.Evidence {
	return Evidence(Cable(ends, facts))
}

// Evidence is the evidence lines of a cable's ends (CableEvidence).
func Evidence(ends []EndPHY) []check.Evidence {
	var out []check.Evidence
	for _, e := range ends {
		for _, p := range e.Ports {
			out = append(out, check.Evidence{What: EvidencePrefix + e.End + " (" + p.Tool + ")", Value: Summary(p), Source: p.Source})
		}
		if len(e.Ports) == 0 {
			out = append(out, check.Evidence{What: EvidencePrefix + e.End, Value: NoEvidence, Source: NoEvidenceSource})
		}
	}
	return out
}

// NoEvidenceSource is where the evidence line of an end without PHY
// facts says to look.
const NoEvidenceSource = "no mlxlink/mstlink, ethtool -S, --show-fec or ethtool -m output gathered for this port (docs/phy.md)"

// Summary is one line of what a port's PHY facts show: the failures and
// warnings of the rules, else the key facts that passed.
func Summary(p phy.Port) string {
	fs := Port(p)
	check.Sort(fs)
	var bad, good []string
	for _, f := range fs {
		switch f.Outcome {
		case check.Fail, check.Warn:
			bad = append(bad, fmt.Sprintf("%s %s: %s", strings.ToUpper(string(f.Outcome)), f.Check, f.Message))
		case check.Unknown:
			bad = append(bad, fmt.Sprintf("UNKNOWN %s: %s", f.Check, f.Message))
		case check.Pass:
			switch f.Check {
			case IDEffectiveBER, IDRawBER, IDModuleDDM, IDLinkSpeed, IDLane, IDHistogram:
				good = append(good, brief(f.Message))
			}
		}
	}
	if len(bad) > 0 {
		return strings.Join(bad, "; ")
	}
	if len(good) == 0 {
		return "nothing wrong in what the output shows"
	}
	return "healthy: " + strings.Join(good, "; ")
}

// brief is a passing message without its source citation: the evidence
// line names the output; the finding that cites is one `judge` away.
func brief(m string) string {
	for _, cut := range []string{" (FORMATS-NEXT", " (mlxlink", " (MF", " (FEC"} {
		if i := strings.Index(m, cut); i > 0 {
			m = m[:i]
		}
	}
	return m
}
