package gpudirect

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
)

const topoSource = "nvidia-smi topo -m"

// TopoRails pairs each GPU of a matrix with its nearest NIC by the same
// rule as a snapshot's rails (host.AssignRails). Indexes are into
// t.Devices; -1 when the GPU has no NIC level.
func TopoRails(t *host.Topo) (rails []int, shared []bool) {
	gpus, nics := t.GPUs(), t.NICs()
	var cands []host.RailCandidate
	for gi, g := range gpus {
		for ni, n := range nics {
			if lv := t.Level(g, n); lv != "" {
				cands = append(cands, host.RailCandidate{GPU: gi, NIC: ni, Level: lv, Card: t.Devices[n].Label})
			}
		}
	}
	chosen := host.AssignRails(len(gpus), cands)
	for gi, ci := range chosen {
		r := -1
		if ci >= 0 {
			r = nics[cands[ci].NIC]
		}
		rails = append(rails, r)
		shared = append(shared, host.RailShared(cands, chosen, gi))
	}
	return rails, shared
}

// JudgeTopoFile reads a saved `nvidia-smi topo -m` and judges it; with a
// snapshot of the same host, it also compares it with what rdmalab
// predicts from sysfs. The payload is the matrix.
func JudgeTopoFile(b []byte, s *host.Snapshot) ([]check.Finding, any, error) {
	t, err := host.ParseTopo(b)
	if err != nil {
		return nil, nil, err
	}
	fs := JudgeTopo(t)
	if s != nil {
		fs = append(fs, CompareTopo(t, s)...)
	}
	return fs, t, nil
}

// topoRule is one rule over a saved matrix: its catalog entry and the
// function that judges the matrix through a reporter bound to it.
type topoRule struct {
	check.Entry
	run func(rep *check.Reporter, t *host.Topo)
}

// TopoRules judge a saved `nvidia-smi topo -m` for rail alignment: each
// GPU has a NIC at PIX or PXB of its own, no two GPUs share one, no NIC is
// across the CPU interconnect from every GPU, an NVSwitch board shows all
// its GPUs, and the GPUs support GPUDirect RDMA.
var TopoRules = []topoRule{
	{GPUClassEntry, topoGPUClass},
	{topoGPUsEntry, nvswitchCount},
	{topoNICsEntry, topoNICs},
	{topoRailEntry, topoRail},
	{topoRailSharedEntry, topoRailShared},
	{topoNICFarEntry, topoNICFar},
}

// JudgeTopo applies every rule of TopoRules to a matrix.
func JudgeTopo(t *host.Topo) []check.Finding {
	var fs []check.Finding
	for _, r := range TopoRules {
		rep := r.Entry.Reporter("")
		r.run(rep, t)
		fs = append(fs, rep.Findings()...)
	}
	return fs
}

func topoGPUClass(rep *check.Reporter, t *host.Topo) {
	for _, g := range t.GPUs() {
		if ok, why := GPUClass(t.Devices[g].Name); !ok {
			f := rep.Warn(t.Devices[g].Label+" "+t.Devices[g].Name, "%s", why)
			f.Evidence = []check.Evidence{{What: "GPU model", Value: t.Devices[g].Name, Source: "nvidia-smi GPU list pasted with the matrix"}}
			f.Fix = []string{"use a data-center or professional GPU for GPUDirect RDMA, or accept staging through host memory (perftest without --use_cuda shows the host-memory rate)"}
		}
	}
}

func topoNICs(rep *check.Reporter, t *host.Topo) {
	if len(t.NICs()) > 0 {
		return
	}
	f := rep.Warn("RDMA NICs", "the matrix has %d GPU(s) and no NIC column: nvidia-smi sees no RDMA NIC, so there is no GPUDirect RDMA and multi-node traffic goes through host sockets", len(t.GPUs()))
	f.Evidence = []check.Evidence{{What: "columns", Value: columnList(t), Source: topoSource}}
	f.Fix = []string{"ibv_devices   # is an RDMA NIC installed and its driver (mlx5_core, mlx5_ib) loaded?"}
}

func topoRail(rep *check.Reporter, t *host.Topo) {
	if len(t.NICs()) == 0 {
		return // topo.nics says so
	}
	rails, _ := TopoRails(t)
	c2c, c2cWhy := t.C2C()
	for gi, g := range t.GPUs() {
		subject := t.Devices[g].Label
		r := rails[gi]
		if r < 0 {
			rep.Unknown(subject, "%s's row is not in the matrix and no NIC row names its level (a pasted excerpt?)", subject).Fix =
				[]string{"paste the whole output of nvidia-smi topo -m"}
			continue
		}
		lv, nic := t.Level(g, r), t.Devices[r].Display()
		ev := check.Evidence{What: subject + " ↔ " + nic, Value: lv, Source: topoSource}
		var f *check.Finding
		switch {
		case lv == host.LevelPIX || lv == host.LevelPXB:
			f = rep.Pass(subject, "rail %s at %s: within NCCL's default GDR level %s", nic, lv, DefaultGDRLevel)
		case c2c:
			// Grace: the GPU is on the CPU's NVLink-C2C, so every NIC is
			// NODE/SYS in PCIe terms, and NCCL still reads GPU memory from
			// the NIC directly (NCCL_NET_GDR_C2C).
			f = rep.Pass(subject, "nearest NIC %s at %s, but the GPU sits on the CPU's NVLink-C2C (a Grace GH200/GB200 platform: %s): NCCL uses GPUDirect RDMA over C2C (NCCL_NET_GDR_C2C), not a PCIe path", nic, lv, c2cWhy)
			f.Evidence = append(f.Evidence, ev, check.Evidence{What: "coherent GPU memory", Value: c2cWhy, Source: topoSource})
			continue
		case lv == host.LevelPHB:
			f = rep.Warn(subject, "nearest NIC %s is at PHB (through the CPU's host bridge): NCCL uses GPUDirect RDMA only up to %s unless NCCL_NET_GDR_LEVEL=PHB", nic, DefaultGDRLevel)
			f.Fix = []string{"export NCCL_NET_GDR_LEVEL=PHB (measure it: through the root complex it can be slower than staging)", "or put the NIC under the GPU's PCIe switch"}
		default:
			f = rep.Warn(subject, "nearest NIC %s is at %s (%s): no GPUDirect RDMA, and its traffic crosses %s", nic, lv, levelWords(lv), crossWords(lv))
			f.Fix = []string{"put a NIC under the GPU's PCIe switch or host bridge, or run this GPU's ranks through another GPU's rail"}
		}
		f.Evidence = []check.Evidence{ev}
	}
}

// topoRailShared names a NIC that is the rail (at PIX or PXB) of more than
// one GPU.
func topoRailShared(rep *check.Reporter, t *host.Topo) {
	if len(t.NICs()) == 0 {
		return
	}
	rails, shared := TopoRails(t)
	byNIC := map[int][]int{}
	for gi, g := range t.GPUs() {
		if r := rails[gi]; r >= 0 && shared[gi] {
			if lv := t.Level(g, r); lv == host.LevelPIX || lv == host.LevelPXB {
				byNIC[r] = append(byNIC[r], g)
			}
		}
	}
	for _, r := range slices.Sorted(maps.Keys(byNIC)) {
		var names []string
		for _, g := range byNIC[r] {
			names = append(names, t.Devices[g].Label)
		}
		if len(names) < 2 {
			continue
		}
		f := rep.Warn(t.Devices[r].Display(), "%s share %s as their rail: each gets 1/%d of its bandwidth", strings.Join(names, ", "), t.Devices[r].Display(), len(names))
		f.Evidence = []check.Evidence{{What: "GPUs nearest " + t.Devices[r].Display(), Value: strings.Join(names, " "), Source: topoSource}}
		f.Fix = []string{"one NIC per GPU under each PCIe switch (rail-optimised), or expect the shared rail's rate divided among them"}
	}
}

func topoNICFar(rep *check.Reporter, t *host.Topo) {
	gpus := t.GPUs()
	if c2c, _ := t.C2C(); c2c || len(gpus) == 0 {
		return
	}
	for _, n := range t.NICs() {
		far, known := true, true
		for _, g := range gpus {
			switch t.Level(g, n) {
			case "":
				known = false
			case host.LevelSYS:
			default:
				far = false
			}
		}
		if far && known {
			f := rep.Warn(t.Devices[n].Display(), "%s is at SYS from every GPU: it is no GPU's rail, and any GPU traffic on it crosses the CPU interconnect", t.Devices[n].Display())
			f.Evidence = []check.Evidence{{What: t.Devices[n].Display() + " ↔ every GPU", Value: host.LevelSYS, Source: topoSource}}
			f.Fix = []string{fmt.Sprintf("if it is a storage or management NIC, keep NCCL off it: NCCL_IB_HCA=^=%s", t.Devices[n].Display())}
		}
	}
}

// nvswitchCount judges the GPU count of a matrix whose GPUs are all
// joined by one NV# of 12 or more links (an NVSwitch board: A100 NV12,
// H100/H200 and GB200 NV18): 1, 2, 4, 8 or 16 GPUs are a board or a
// Fabric Manager partition; any other count has a GPU missing.
func nvswitchCount(rep *check.Reporter, t *host.Topo) {
	gpus := t.GPUs()
	if len(gpus) < 2 {
		return
	}
	nv := ""
	for i, a := range gpus {
		for _, b := range gpus[i+1:] {
			lv := t.Level(a, b)
			n, err := strconv.Atoi(strings.TrimPrefix(lv, "NV"))
			if !strings.HasPrefix(lv, "NV") || err != nil || n < 12 || (nv != "" && lv != nv) {
				return
			}
			nv = lv
		}
	}
	ev := []check.Evidence{{What: "GPUs joined all-to-all", Value: fmt.Sprintf("%d by %s", len(gpus), nv), Source: topoSource}}
	switch len(gpus) {
	case 2, 4, 8, 16:
		rep.Pass("GPUs", "%d GPUs joined all-to-all by %s: a whole NVSwitch board or partition", len(gpus), nv).Evidence = ev
		return
	}
	want := 8
	if len(gpus) > 8 {
		want = 16
	}
	f := rep.Fail("GPUs", "%d GPUs joined all-to-all by %s: an NVSwitch board holds %d (or a partition of 1, 2 or 4), so %d GPU(s) are missing from the bus", len(gpus), nv, want, want-len(gpus))
	f.Evidence = ev
	f.Fix = []string{"nvidia-smi -L; dmesg | grep -iE 'NVRM|Xid|fallen off'   # which GPU is gone", "reseat or RMA the missing GPU"}
}

func levelWords(lv string) string {
	if lv == host.LevelNODE {
		return "between host bridges of one NUMA node"
	}
	return "across the interconnect between NUMA nodes"
}

func crossWords(lv string) string {
	if lv == host.LevelNODE {
		return "the CPU's internal fabric"
	}
	return "NUMA nodes (the SMP interconnect)"
}

func columnList(t *host.Topo) string {
	var l []string
	for _, d := range t.Devices {
		l = append(l, d.Label)
	}
	return strings.Join(l, " ")
}

// CompareTopo compares nvidia-smi's matrix with the one rdmalab predicts
// from the snapshot's PCI tree (host.TopoOf) and names every disagreement:
// GPU and NIC counts, each GPU↔NIC level, each GPU's rail, each GPU's NUMA
// affinity. GPUs are matched in PCI order (nvidia-smi's), NICs by name
// (by order when the matrix has no NIC legend).
func CompareTopo(t *host.Topo, s *host.Snapshot) []check.Finding {
	want := host.TopoOf(s)
	rep := topoVsSnapshotEntry.Reporter(s.Hostname)
	add := func(o check.Outcome, subject, msg string, ev ...check.Evidence) {
		rep.Report(o, subject, "%s", msg).Evidence = ev
	}
	snapSrc := "snapshot " + s.Hostname + " (PCI tree under /sys/devices)"
	tg, wg := t.GPUs(), want.GPUs()
	if len(tg) != len(wg) {
		add(check.Warn, "GPUs", fmt.Sprintf("nvidia-smi shows %d GPU(s), the snapshot has %d: not the same host, or a GPU fell off the bus (or is bound to another driver)", len(tg), len(wg)),
			check.Evidence{What: "GPUs", Value: fmt.Sprintf("%d vs %d", len(tg), len(wg)), Source: topoSource + " vs " + snapSrc})
	}
	// NIC matching: by RDMA name when the matrix names them.
	nicOf := map[int]int{} // matrix index → want index
	tn, wn := t.NICs(), want.NICs()
	named := slices.ContainsFunc(tn, func(i int) bool { return t.Devices[i].Name != "" })
	var missing []string
	for k, i := range tn {
		j := -1
		if named {
			j = slices.IndexFunc(wn, func(w int) bool { return want.Devices[w].Name == t.Devices[i].Name })
			if j >= 0 {
				j = wn[j]
			}
		} else if k < len(wn) {
			j = wn[k]
		}
		if j < 0 {
			missing = append(missing, t.Devices[i].Display())
			continue
		}
		nicOf[i] = j
	}
	if len(missing) > 0 || len(tn) != len(wn) {
		add(check.Warn, "RDMA NICs", fmt.Sprintf("nvidia-smi shows %d NIC(s), the snapshot %d with a PCI function; not in the snapshot: %s", len(tn), len(wn), orNone(missing)),
			check.Evidence{What: "NICs", Value: fmt.Sprintf("%d vs %d", len(tn), len(wn)), Source: topoSource + " vs " + snapSrc})
	}
	agree := 0
	for k := range min(len(tg), len(wg)) {
		g, w := tg[k], wg[k]
		if a, b := t.Devices[g].NUMAAffinity, want.Devices[w].NUMAAffinity; a != "" && a != "N/A" && b != "N/A" && a != b {
			add(check.Warn, t.Devices[g].Label, fmt.Sprintf("nvidia-smi puts %s on NUMA node %s, the snapshot on %s", t.Devices[g].Label, a, b),
				check.Evidence{What: "NUMA affinity", Value: a + " vs " + b, Source: topoSource + " vs " + snapSrc + " numa_node"})
		}
		for _, n := range tn {
			j, ok := nicOf[n]
			if !ok {
				continue
			}
			got, pred := t.Level(g, n), want.Level(w, j)
			if got == "" {
				continue
			}
			if got != strings.TrimSuffix(pred, "?") {
				subject := t.Devices[g].Label + " ↔ " + t.Devices[n].Display()
				add(check.Warn, subject, fmt.Sprintf("nvidia-smi says %s, rdmalab's reading of the PCI tree says %s", got, pred),
					check.Evidence{What: "level", Value: got, Source: topoSource},
					check.Evidence{What: "level", Value: pred, Source: snapSrc})
				continue
			}
			agree++
		}
	}
	// GPU↔GPU over PCIe (sysfs has no NVLink: NV# cells are not compared)
	for a := range min(len(tg), len(wg)) {
		for b := a + 1; b < min(len(tg), len(wg)); b++ {
			got, pred := t.Level(tg[a], tg[b]), want.Level(wg[a], wg[b])
			if got == "" || strings.HasPrefix(got, "NV") {
				continue
			}
			if got != strings.TrimSuffix(pred, "?") {
				add(check.Warn, t.Devices[tg[a]].Label+" ↔ "+t.Devices[tg[b]].Label, fmt.Sprintf("nvidia-smi says %s, rdmalab's reading of the PCI tree says %s", got, pred),
					check.Evidence{What: "level", Value: got, Source: topoSource},
					check.Evidence{What: "level", Value: pred, Source: snapSrc})
				continue
			}
			agree++
		}
	}
	rails, _ := TopoRails(t)
	wrails, _ := TopoRails(want)
	for k := range min(len(rails), len(wrails)) {
		if rails[k] < 0 || wrails[k] < 0 {
			continue
		}
		if j, ok := nicOf[rails[k]]; ok && j != wrails[k] && t.Level(tg[k], rails[k]) != want.Level(wg[k], wrails[k]) {
			add(check.Warn, t.Devices[tg[k]].Label, fmt.Sprintf("nvidia-smi's nearest NIC for %s is %s, rdmalab predicts %s", t.Devices[tg[k]].Label, t.Devices[rails[k]].Display(), want.Devices[wrails[k]].Display()),
				check.Evidence{What: "rail", Value: t.Devices[rails[k]].Display(), Source: topoSource},
				check.Evidence{What: "rail", Value: want.Devices[wrails[k]].Display(), Source: snapSrc})
		}
	}
	fs := rep.Findings()
	if len(fs) == 0 {
		add(check.Pass, "GPU↔NIC matrix", fmt.Sprintf("nvidia-smi topo -m agrees with the snapshot on %d GPU(s), %d NIC(s) and %d PCIe level(s)", len(tg), len(tn), agree),
			check.Evidence{What: "cells compared", Value: fmt.Sprint(agree), Source: topoSource + " vs " + snapSrc})
	}
	return rep.Findings()
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// GPUClass reports whether a GPU model supports GPUDirect RDMA: NVIDIA
// supports it on data-center (Tesla, A/H/B-series) and professional (RTX
// A-series, Quadro) GPUs, not on GeForce or TITAN. An unknown name ("")
// is not judged here.
func GPUClass(name string) (bool, string) {
	n := strings.ToLower(name)
	for _, consumer := range []string{"geforce", "titan"} {
		if strings.Contains(n, consumer) {
			return false, fmt.Sprintf("%s is a consumer GPU: NVIDIA does not support GPUDirect RDMA on GeForce/TITAN, so NCCL and perftest --use_cuda stage through host memory", name)
		}
	}
	return true, ""
}

// The checks of a saved `nvidia-smi topo -m`.
var (
	topoNICsEntry = check.Entry{ID: "topo.nics", Needs: "a saved nvidia-smi topo -m", UnknownWhen: "never: no NIC column is a finding", Title: "nvidia-smi sees an RDMA NIC",
		Why:    "Without a NIC column nvidia-smi sees no RDMA device: no GPUDirect RDMA, and multi-node traffic goes through host sockets.",
		Source: "nvidia-smi topo -m; seed 000", Fixes: []string{"install the NIC and load mlx5_core/mlx5_ib", "ibv_devices lists it"}}
	topoRailEntry = check.Entry{ID: "topo.rail", Needs: "the GPU's row (or the NIC rows' GPU column) of nvidia-smi topo -m", UnknownWhen: "the pasted matrix lacks the GPU's row and every NIC row", Title: "Each GPU has its own NIC at PIX or PXB",
		Why:    "NCCL uses GPUDirect RDMA only up to NCCL_NET_GDR_LEVEL (default PXB); at PHB it needs NCCL_NET_GDR_LEVEL=PHB, at NODE/SYS traffic stages through host memory across the CPU.",
		Source: "NCCL NCCL_NET_GDR_LEVEL; seed 001, seed 004", Fixes: []string{"put a NIC under each GPU's PCIe switch", "or NCCL_NET_GDR_LEVEL=PHB at PHB"}}
	topoRailSharedEntry = check.Entry{ID: "topo.rail-shared", Needs: "a saved nvidia-smi topo -m with NIC columns", UnknownWhen: "never", Title: "No two GPUs share one rail NIC",
		Why:    "Two GPUs whose nearest NIC is the same one halve its bandwidth each; a rail-optimised host has a NIC per GPU.",
		Source: "NVIDIA DGX/HGX rail design", Fixes: []string{"one NIC per GPU under each PCIe switch"}}
	topoNICFarEntry = check.Entry{ID: "topo.nic-far", Needs: "every GPU's level to the NIC", UnknownWhen: "a GPU's row is missing (then it is not judged)", Title: "No NIC is at SYS from every GPU",
		Why:    "A NIC across the SMP interconnect from every GPU is no GPU's rail; GPU traffic on it crosses sockets (storage and management NICs are expected here: keep NCCL off them).",
		Source: "nvidia-smi topo -m legend", Fixes: []string{"NCCL_IB_HCA=^=<nic> for storage/management NICs"}}
	topoGPUsEntry = check.Entry{ID: "topo.gpus", Needs: "the GPU rows of nvidia-smi topo -m", UnknownWhen: "never: a matrix whose GPUs are not all-to-all NVSwitch-linked is not judged", Title: "An NVSwitch board shows all its GPUs",
		Why:    "GPUs joined all-to-all by 12 or more NVLinks sit on an NVSwitch (HGX) board, which holds 8 GPUs (or a Fabric Manager partition of 1, 2 or 4 in a VM). Any other count is a GPU missing from the bus: the node runs fewer ranks or hangs the job.",
		Source: "NVIDIA HGX baseboards; Fabric Manager partitions", Fixes: []string{"nvidia-smi -L; dmesg | grep -iE 'NVRM|Xid|fallen off'", "reseat or RMA the missing GPU"}}
	topoVsSnapshotEntry = check.Entry{ID: "topo.vs-snapshot", Needs: "a saved nvidia-smi topo -m and a snapshot of the same host (--snapshot)", UnknownWhen: "never: run only when both are given", Title: "nvidia-smi's matrix agrees with rdmalab's reading of the PCI tree",
		Why:    "GPU and NIC counts, levels, rails and NUMA affinity from nvidia-smi and from sysfs must agree; a difference is a GPU or NIC missing, a different host, or a PCI tree rdmalab misreads.",
		Source: "nvidia-smi topo -m; host.PathLevel", Fixes: []string{"re-capture both on the same host at the same time", "report a level rdmalab misreads"}}
)

// TopoCatalog describes the checks of a saved `nvidia-smi topo -m`.
var TopoCatalog = []check.Entry{topoNICsEntry, topoRailEntry, topoRailSharedEntry, topoNICFarEntry, topoGPUsEntry, topoVsSnapshotEntry}
