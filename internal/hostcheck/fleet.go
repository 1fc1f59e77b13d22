package hostcheck

import (
	"cmp"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/gpudirect"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// fleetKey reads one value per host and group (a group is what the hosts
// are compared within: one NIC model for firmware, "" for the rest). An
// absent group means the host has nothing to compare.
type fleetKey struct {
	check.Entry
	values func(s *host.Snapshot) map[string]string
}

// one wraps a single-valued key ("" means the host has none).
func one(f func(s *host.Snapshot) string) func(s *host.Snapshot) map[string]string {
	return func(s *host.Snapshot) map[string]string {
		if v := f(s); v != "" {
			return map[string]string{"": v}
		}
		return nil
	}
}

// FleetRules compare every host with the majority of the fleet: the seeds'
// "same rate, same MTU, same link layer on every node". A host is named as
// the odd one only against a real majority: at least 3 hosts, and more
// than half of those that have the value.
var FleetRules = []fleetKey{
	{check.Entry{ID: "fleet.firmware", Title: "Same NIC firmware on every node, per NIC model", Why: "Mixed firmware behaves differently under load and in error recovery; different NIC models have their own firmware lines, so only like is compared with like.", Source: "seed 004 (identically configured cluster)", Fixes: []string{"mlxfwmanager --online -u on the odd node"},
		Needs: "fw_ver and the NIC model (PCI device id or hca_type) of each RDMA device on ≥3 hosts", UnknownWhen: "never unknown: when fewer than 3 hosts have the model, or no version is held by more than half of them, differing hosts are one warning that names no odd host"}, func(s *host.Snapshot) map[string]string {
		fw := map[string][]string{}
		for _, d := range s.RDMADevices {
			if d.FWVersion == "" {
				continue
			}
			m := nicModel(s, d)
			if !slices.Contains(fw[m], d.FWVersion) {
				fw[m] = append(fw[m], d.FWVersion)
			}
		}
		out := map[string]string{}
		for m, v := range fw {
			slices.Sort(v)
			out[m] = strings.Join(v, ", ")
		}
		return out
	}},
	{check.Entry{ID: "fleet.rate", Title: "Same port rate on every node", Why: "One slow port drags every collective down to its speed.", Source: "seed 001", Fixes: []string{"see port.rate.below-expected on the odd node"},
		Needs: "the rate of every Active port on ≥3 hosts", UnknownWhen: "never unknown: with fewer than 3 hosts, or no set of rates held by more than half of them, differing hosts are one warning that names no odd host"}, one(func(s *host.Snapshot) string {
		return joinPorts(s, func(p host.RDMAPort) string { return p.Rate.Raw })
	})},
	{check.Entry{ID: "fleet.link-layer", Title: "Same link layer on every node", Why: "InfiniBand and RoCE ports cannot talk to each other.", Source: "seed 001", Fixes: []string{"mlxconfig LINK_TYPE_P1 on the odd node"},
		Needs: "link_layer of every Active port on ≥3 hosts", UnknownWhen: "never unknown: with fewer than 3 hosts, or no majority, differing hosts are one warning that names no odd host"}, one(func(s *host.Snapshot) string {
		return joinPorts(s, func(p host.RDMAPort) string { return p.LinkLayer })
	})},
	{check.Entry{ID: "fleet.mtu", Title: "Same RDMA netdev MTU on every node", Why: "A path runs at the smallest MTU on it.", Source: "seed 001 (MTU end to end)", Fixes: []string{"set the same MTU on every host and switch port"},
		Needs: "the MTU of the netdevs of RDMA ports on ≥3 hosts", UnknownWhen: "never unknown: with fewer than 3 hosts, or no majority, differing hosts are one warning that names no odd host"}, one(func(s *host.Snapshot) string {
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
		slices.Sort(m)
		return strings.Join(m, ",")
	})},
	{check.Entry{ID: "fleet.driver", Title: "Same RDMA driver stack on every node", Why: "Inbox mlx5 and MLNX_OFED/DOCA differ in features (peermem, mlxconfig) and bugs.", Source: "seed 001 (MLNX_OFED or upstream)", Fixes: []string{"install the same driver stack everywhere"},
		Needs: "/proc/modules and /sys/module/mlx5_core/version on ≥3 hosts with RDMA devices", UnknownWhen: "never unknown: with fewer than 3 hosts, or no majority, differing hosts are one warning that names no odd host"}, one(func(s *host.Snapshot) string {
		if len(s.RDMADevices) == 0 || len(s.Kernel.Modules) == 0 {
			return ""
		}
		if v, ok := s.Kernel.ModuleVersions["mlx5_core"]; ok {
			return "OFED/DOCA mlx5_core " + v
		}
		if s.Kernel.HasModule("mlx_compat") {
			return "OFED/DOCA"
		}
		return "inbox"
	})},
	{check.Entry{ID: "fleet.kernel", Title: "Same kernel on every node (or a declared mix)", Why: "Kernel versions change RDMA and VFIO behaviour; a mix made on purpose (a RHEL 9/10 migration) is declared with --allow-kernels and then passes.", Source: "seed 004", Fixes: []string{"boot the same kernel everywhere", "or declare the mix: --allow-kernels '*.el9*,*.el10*'"},
		Needs: "/proc/sys/kernel/osrelease on ≥3 hosts", UnknownWhen: "never unknown: with fewer than 3 hosts, or no majority, differing hosts are one warning that names no odd host"}, one(func(s *host.Snapshot) string { return s.Kernel.Release })},
	{check.Entry{ID: "fleet.gpus", Title: "Same GPUs on every node", Why: "A node that lost a GPU (fell off the bus, driver unbound) runs fewer ranks or hangs the job; seed 004's cluster is identically configured.", Source: "seed 002, seed 004", Fixes: []string{"nvidia-smi -L and lspci -d 10de: on the odd node", "reseat or rebind the missing GPU"},
		Needs: "the GPUs of the PCI tree on ≥3 hosts", UnknownWhen: "never unknown: with fewer than 3 hosts, or no majority, differing hosts are one warning that names no odd host"}, one(func(s *host.Snapshot) string {
		models := map[string]int{}
		for _, g := range s.GPUs {
			models[cmp.Or(g.Name, g.Vendor+":"+g.Device)]++
		}
		var parts []string
		for _, m := range slices.Sorted(maps.Keys(models)) {
			parts = append(parts, fmt.Sprintf("%d × %s", models[m], m))
		}
		return cmp.Or(strings.Join(parts, ", "), "no GPU")
	})},
	{check.Entry{ID: "fleet.gpu-nic", Title: "Same GPU↔NIC topology on every node", Why: "NCCL builds one ring/tree plan for the job; a node whose GPUs sit at other levels from their rails (a NIC in another slot, a different riser) runs its rails slower or without GPUDirect RDMA.", Source: "seed 004 (identically configured cluster)", Fixes: []string{"compare rdmalab inventory on the odd node with a good one: move the NIC to the slot the others use"},
		Needs: "the PCI tree of GPUs and RDMA NICs on ≥3 hosts", UnknownWhen: "never unknown: hosts without GPUs are not compared"}, one(func(s *host.Snapshot) string {
		var cells []string
		for i, r := range s.Rails() {
			cells = append(cells, fmt.Sprintf("GPU%d→%s %s", i, cmp.Or(r.RDMA, "none"), r.Level))
		}
		return strings.Join(cells, ", ")
	})},
	// RoCE QoS (roce.go reads each host's summary).
	{check.Entry{ID: "fleet.roce-qos", Title: "Same RoCE QoS on every node",
		Why:    "PFC and DSCP must agree at every hop: one node with PFC on another priority, or trust pcp, makes every collective through it lossy.",
		Source: "seed 001 (the DSCP and the PFC priority need to agree at every hop)",
		Fixes:  []string{"apply the majority's mlnx_qos --trust/--pfc and traffic_class on the odd node (docs/roce.md)"},
		Needs:  "trust, PFC, ECN and traffic_class of the RoCE netdevs on ≥3 hosts", UnknownWhen: "never unknown: with fewer than 3 hosts, or no majority, differing hosts are one warning that names no odd host"},
		one(roceQoSSummary)},
}

// nicModel names an RDMA device's NIC model: the family from its PCI ids,
// else what the driver calls it (hca_type), else its PCI device id.
func nicModel(s *host.Snapshot, d host.RDMADevice) string {
	if pci := s.PCI(d.PCIAddress); pci != nil {
		if m, ok := linkrate.ModelOf(pci.Vendor, pci.Device); ok {
			return m.Name
		}
		if n := host.DeviceName(pci.Vendor, pci.Device); n != "" {
			return n
		}
		if d.HCAType == "" {
			return pci.Vendor + ":" + pci.Device
		}
	}
	return cmp.Or(d.HCAType, "unknown model")
}

func joinPorts(s *host.Snapshot, f func(host.RDMAPort) string) string {
	var v []string
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			if p.State == portstate.Active {
				if x := f(p); x != "" && !slices.Contains(v, x) {
					v = append(v, x)
				}
			}
		}
	}
	slices.Sort(v)
	return strings.Join(v, ", ")
}

// minFleet is the smallest fleet whose majority means anything: with two
// hosts that differ, neither is the odd one.
const minFleet = 3

// majority returns the value more than half of the hosts hold, with its
// host count, when at least minFleet hosts hold a value.
func majority(vals map[string][]string) (string, int, bool) {
	total := 0
	for _, hs := range vals {
		total += len(hs)
	}
	for v, hs := range vals {
		if total >= minFleet && 2*len(hs) > total {
			return v, len(hs), true
		}
	}
	return "", 0, false
}

// RunFleet compares the newest snapshot of each host; with fewer than two
// hosts it says nothing. opt (at most one) carries the declared kernel mix.
func RunFleet(all []*host.Snapshot, opt ...Options) []check.Finding {
	hosts := Latest(all)
	if len(hosts) < 2 {
		return nil
	}
	var o Options
	if len(opt) > 0 {
		o = opt[0]
	}
	var out []check.Finding
	for _, k := range FleetRules {
		rep := k.Entry.Reporter("")
		if k.ID == "fleet.kernel" && declaredKernels(rep, hosts, o.AllowKernels) {
			out = append(out, rep.Findings()...)
			continue
		}
		groups := map[string]map[string][]string{} // group → value → hosts
		for _, s := range hosts {
			for g, v := range k.values(s) {
				if groups[g] == nil {
					groups[g] = map[string][]string{}
				}
				groups[g][v] = append(groups[g][v], s.Hostname)
			}
		}
		for _, g := range slices.Sorted(maps.Keys(groups)) {
			judgeFleet(rep, g, groups[g])
		}
		out = append(out, rep.Findings()...)
	}
	return out
}

// judgeFleet compares one group's values (value → hosts): the hosts that
// differ from a real majority fail, each named; without a majority the
// difference is one warning.
func judgeFleet(rep *check.Reporter, group string, vals map[string][]string) {
	subject := "fleet"
	if group != "" {
		subject = "fleet " + group
	}
	total := 0
	for _, hs := range vals {
		total += len(hs)
	}
	if len(vals) == 1 {
		for v := range vals {
			rep.Pass(subject, "all %d hosts: %s", total, v)
		}
		return
	}
	major, n, ok := majority(vals)
	if !ok {
		var parts []string
		var e []check.Evidence
		for _, v := range slices.Sorted(maps.Keys(vals)) {
			parts = append(parts, fmt.Sprintf("%q on %s", v, strings.Join(vals[v], " ")))
			e = append(e, check.Evidence{What: strings.Join(vals[v], " "), Value: v})
		}
		f := rep.Warn(subject, "hosts differ and no value is held by a majority of at least %d hosts, so none can be named the odd one: %s", minFleet, strings.Join(parts, "; "))
		f.Evidence = e
		f.Fix = append([]string{"decide which is right, then:"}, f.Fix...)
		return
	}
	for _, v := range slices.Sorted(maps.Keys(vals)) {
		if v == major {
			continue
		}
		for _, h := range vals[v] {
			f := rep.On(h).Fail(subject, "%s has %q; %d of %d hosts have %q", h, v, n, total, major)
			f.Evidence = []check.Evidence{{What: "this host", Value: v}, {What: "expected", Value: major, Source: fmt.Sprintf("fleet majority: %d of %d hosts (%s)", n, total, strings.Join(vals[major], " "))}}
		}
	}
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

// fleetRates is the rate the fleet expects of each link layer when the
// user named none: each host votes for its most common Active rate on that
// layer, and a rate held by a real majority (≥3 hosts, more than half)
// becomes the expectation, citing the vote.
func fleetRates(hosts []*host.Snapshot) map[linkrate.Layer]linkrate.Expect {
	votes := map[linkrate.Layer]map[string][]string{}
	for _, s := range hosts {
		count := map[linkrate.Layer]map[float64]int{}
		for _, d := range s.RDMADevices {
			for _, p := range d.Ports {
				l, ok := linkrate.SysfsLayer(p.LinkLayer)
				if p.State != portstate.Active || p.RateGbps <= 0 || !ok {
					continue
				}
				if count[l] == nil {
					count[l] = map[float64]int{}
				}
				count[l][p.RateGbps]++
			}
		}
		for l, c := range count {
			best, n := 0.0, 0
			for r, k := range c {
				if k > n || (k == n && r > best) {
					best, n = r, k
				}
			}
			if votes[l] == nil {
				votes[l] = map[string][]string{}
			}
			key := strconv.FormatFloat(best, 'g', -1, 64)
			votes[l][key] = append(votes[l][key], s.Hostname)
		}
	}
	out := map[linkrate.Layer]linkrate.Expect{}
	for l, v := range votes {
		if rate, n, ok := majority(v); ok {
			total := 0
			for _, hs := range v {
				total += len(hs)
			}
			gbps, _ := strconv.ParseFloat(rate, 64)
			out[l] = linkrate.Expect{Rate: linkrate.Rate{Gbps: gbps}, Layer: l, Source: fmt.Sprintf("fleet majority: %d of %d hosts with %s ports", n, total, l)}
		}
	}
	return out
}

// Doctor is the whole doctor pipeline over one or more snapshots: host
// rules on the newest snapshot of each host (with the fleet's majority
// rate as the expectation when the user gave none), counter deltas between
// snapshots of one host, and the fleet rules. Findings come sorted.
func Doctor(all []*host.Snapshot, opt Options) []check.Finding {
	hosts := Latest(all)
	if !opt.Expect.HasRate() && len(hosts) > 1 {
		opt.fleetRate = fleetRates(hosts)
	}
	var fs []check.Finding
	for _, h := range hosts {
		fs = append(fs, Run(h, opt)...)
		if opt.Profile == VMHost {
			// GPUDirect is the guests' business; the host's is to hand
			// devices over whole and keep ACS (gpudirect's bare-metal ACS
			// advice would merge the IOMMU groups).
			fs = append(fs, RunVMHost(h)...)
		} else {
			ready := gpudirect.Readiness(h)
			// One story per fact: where gpudirect.path judges a GPU's
			// path to its rail (NCCL's GDR level, peer memory), the
			// affinity rule's reading of the same path is not repeated.
			judged := map[string]bool{}
			for _, f := range ready {
				if f.Check == "gpudirect.path" {
					judged[strings.TrimPrefix(f.Subject, "GPU ")] = true
				}
			}
			fs = slices.DeleteFunc(fs, func(f check.Finding) bool {
				return f.Check == "affinity.gpu-nic" && f.Host == h.Hostname && judged[f.Subject]
			})
			fs = append(fs, ready...)
			fs = append(fs, suggestVMHost(h)...)
		}
	}
	fs = append(fs, RunDeltas(all)...)
	fs = append(fs, RunFleet(all, opt)...)
	fs = append(fs, RunDuplicates(all)...)
	fs = slices.DeleteFunc(fs, func(f check.Finding) bool { return !opt.runs(f.Check) })
	check.Sort(fs)
	return fs
}

// Catalog lists every check doctor runs, host rules then fleet rules,
// then the vm-host profile and the VM placement rules of `plan check`.
func Catalog() []check.Entry {
	var out []check.Entry
	for _, r := range Rules {
		out = append(out, r.Entry)
	}
	out = append(out, gpudirect.ReadinessCatalog...)
	out = append(out, gpudirect.TopoCatalog...)
	out = append(out, gpudirect.FabricCatalog...)
	out = append(out, RisingEntry)
	for _, k := range FleetRules {
		out = append(out, k.Entry)
	}
	for _, r := range VMHostRules {
		out = append(out, r.Entry)
	}
	out = append(out, profileEntry)
	out = append(out, DomainCatalog...)
	out = append(out, DuplicateEntry)
	return out
}

// declaredKernels passes fleet.kernel when the hosts' kernels differ but
// every one matches a pattern the user declared (--allow-kernels): a mix
// made on purpose. A kernel outside the patterns leaves the normal rule.
// It reports the pass through rep and says whether it did.
func declaredKernels(rep *check.Reporter, hosts []*host.Snapshot, patterns []string) bool {
	if len(patterns) == 0 {
		return false
	}
	kernels := map[string][]string{}
	for _, s := range hosts {
		if s.Kernel.Release == "" {
			continue
		}
		ok := slices.ContainsFunc(patterns, func(p string) bool { m, _ := path.Match(p, s.Kernel.Release); return m })
		if !ok {
			return false
		}
		kernels[s.Kernel.Release] = append(kernels[s.Kernel.Release], s.Hostname)
	}
	if len(kernels) < 2 {
		return false
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(kernels)) {
		parts = append(parts, fmt.Sprintf("%s on %s", k, strings.Join(kernels[k], " ")))
	}
	f := rep.Pass("fleet", "kernels differ as declared: %s", strings.Join(parts, "; "))
	f.Evidence = []check.Evidence{{What: "declared mix", Value: strings.Join(patterns, " "), Source: "--allow-kernels"}}
	return true
}
