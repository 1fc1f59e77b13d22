package hostcheck

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
)

// fleetKey reads one value per host (or "" when the host has none).
type fleetKey struct {
	check.Entry
	value func(s *host.Snapshot) string
}

// FleetRules compare every host with the majority of the fleet: the seeds'
// "same rate, same MTU, same link layer on every node".
var FleetRules = []fleetKey{
	{check.Entry{ID: "fleet.firmware", Title: "Same NIC firmware on every node", Why: "Mixed firmware behaves differently under load and in error recovery.", Source: "seed 004 (identically configured cluster)", Fix: "mlxfwmanager --online -u on the odd node"}, func(s *host.Snapshot) string {
		var fw []string
		for _, d := range s.RDMADevices {
			if d.FWVersion != "" && !slices.Contains(fw, d.HCAType+" "+d.FWVersion) {
				fw = append(fw, d.HCAType+" "+d.FWVersion)
			}
		}
		return strings.Join(fw, ", ")
	}},
	{check.Entry{ID: "fleet.rate", Title: "Same port rate on every node", Why: "One slow port drags every collective down to its speed.", Source: "seed 001", Fix: "see port.rate.below-expected on the odd node"}, func(s *host.Snapshot) string {
		return joinPorts(s, func(p host.RDMAPort) string { return p.Rate.Raw })
	}},
	{check.Entry{ID: "fleet.link-layer", Title: "Same link layer on every node", Why: "InfiniBand and RoCE ports cannot talk to each other.", Source: "seed 001", Fix: "mlxconfig LINK_TYPE_P1 on the odd node"}, func(s *host.Snapshot) string {
		return joinPorts(s, func(p host.RDMAPort) string { return p.LinkLayer })
	}},
	{check.Entry{ID: "fleet.mtu", Title: "Same RDMA netdev MTU on every node", Why: "A path runs at the smallest MTU on it.", Source: "seed 001 (MTU end to end)", Fix: "set the same MTU on every host and switch port"}, func(s *host.Snapshot) string {
		var m []string
		for _, d := range s.RDMADevices {
			for _, p := range d.Ports {
				for _, n := range p.NetDevs {
					if nd := s.NetDev(n); nd != nil && !slices.Contains(m, strconv.Itoa(nd.MTUBytes)) {
						m = append(m, strconv.Itoa(nd.MTUBytes))
					}
				}
			}
		}
		return strings.Join(m, ",")
	}},
	{check.Entry{ID: "fleet.driver", Title: "Same RDMA driver stack on every node", Why: "Inbox mlx5 and MLNX_OFED/DOCA differ in features (peermem, mlxconfig) and bugs.", Source: "seed 001 (MLNX_OFED or upstream)", Fix: "install the same driver stack everywhere"}, func(s *host.Snapshot) string {
		if len(s.RDMADevices) == 0 {
			return ""
		}
		if v, ok := s.Kernel.ModuleVersions["mlx5_core"]; ok {
			return "OFED/DOCA mlx5_core " + v
		}
		if s.Kernel.HasModule("mlx_compat") {
			return "OFED/DOCA"
		}
		return "inbox"
	}},
	{check.Entry{ID: "fleet.kernel", Title: "Same kernel on every node", Why: "Kernel versions change RDMA and VFIO behaviour.", Source: "seed 004", Fix: "boot the same kernel everywhere"}, func(s *host.Snapshot) string { return s.Kernel.Release }},
}

func joinPorts(s *host.Snapshot, f func(host.RDMAPort) string) string {
	var v []string
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			if p.State == "ACTIVE" {
				if x := f(p); x != "" && !slices.Contains(v, x) {
					v = append(v, x)
				}
			}
		}
	}
	slices.Sort(v)
	return strings.Join(v, ", ")
}

// RunFleet compares hosts; with fewer than two it says nothing.
func RunFleet(all []*host.Snapshot) []check.Finding {
	hosts := Latest(all)
	if len(hosts) < 2 {
		return nil
	}
	var out []check.Finding
	for _, k := range FleetRules {
		vals := map[string][]string{}
		for _, s := range hosts {
			if v := k.value(s); v != "" {
				vals[v] = append(vals[v], s.Hostname)
			}
		}
		if len(vals) == 0 {
			continue
		}
		major, n := "", 0
		for v, hs := range vals {
			if len(hs) > n || (len(hs) == n && v < major) {
				major, n = v, len(hs)
			}
		}
		if len(vals) == 1 {
			out = append(out, check.Finding{Check: k.ID, Outcome: check.Pass, Subject: "fleet", Message: fmt.Sprintf("all %d hosts: %s", n, major)})
			continue
		}
		for v, hs := range vals {
			if v == major {
				continue
			}
			for _, h := range hs {
				out = append(out, check.Finding{Check: k.ID, Outcome: check.Fail, Host: h, Subject: "fleet",
					Message:  fmt.Sprintf("%s has %q; %d of %d hosts have %q", h, v, n, len(hosts), major),
					Evidence: []check.Evidence{{What: "this host", Value: v}, {What: "majority", Value: major, Source: strings.Join(vals[major], " ")}},
					Fix:      []string{k.Fix}})
			}
		}
	}
	return out
}

// Latest keeps the newest snapshot of each host, in first-seen order.
func Latest(all []*host.Snapshot) []*host.Snapshot {
	idx := map[string]int{}
	var out []*host.Snapshot
	for _, s := range all {
		i, ok := idx[s.Hostname]
		switch {
		case !ok:
			idx[s.Hostname] = len(out)
			out = append(out, s)
		case s.CollectedAt.After(out[i].CollectedAt):
			out[i] = s
		}
	}
	return out
}

// MajorityRateGbps is the most common active port rate across hosts, the
// rate a fleet expects when the user named none (0 if no ports).
func MajorityRateGbps(hosts []*host.Snapshot) float64 {
	count := map[float64]int{}
	for _, s := range hosts {
		for _, d := range s.RDMADevices {
			for _, p := range d.Ports {
				if p.State == "ACTIVE" && p.RateGbps > 0 {
					count[p.RateGbps]++
				}
			}
		}
	}
	best, n := 0.0, 0
	for r, c := range count {
		if c > n || (c == n && r > best) {
			best, n = r, c
		}
	}
	return best
}

// Catalog lists every check doctor runs, host rules then fleet rules.
func Catalog() []check.Entry {
	var out []check.Entry
	for _, r := range Rules {
		out = append(out, r.Entry)
	}
	out = append(out, RisingEntry)
	for _, k := range FleetRules {
		out = append(out, k.Entry)
	}
	return out
}
