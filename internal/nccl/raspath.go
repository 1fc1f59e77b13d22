package nccl

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// RASOptions is what judging RAS knows beyond the reports: the hosts'
// snapshots, to follow a suspect rank to the NIC port its GPU uses.
type RASOptions struct {
	// Hosts binds a host as RAS prints it (a hostname or an address) to
	// its snapshot (--snapshot NAME=FILE).
	Hosts map[string]*host.Snapshot
	// Snapshots are matched by hostname (or its short form) or by a RoCE
	// GID's IPv4 address.
	Snapshots []*host.Snapshot
	// Cluster is the cluster file the follow-up bench command names.
	Cluster string
	// Fabric, when given, names the cable from the rail's port to the
	// switch (by the NIC's node GUID).
	Fabric *fabric.Snapshot
}

func (o *RASOptions) snapshotFor(h string) *host.Snapshot {
	if o == nil || h == "" {
		return nil
	}
	if s := o.Hosts[h]; s != nil {
		return s
	}
	short, _, _ := strings.Cut(h, ".")
	for _, s := range o.Snapshots {
		sh, _, _ := strings.Cut(s.Hostname, ".")
		if s.Hostname == h || sh == short && short != "" {
			return s
		}
		for _, d := range s.RDMADevices {
			for _, p := range d.Ports {
				if slices.ContainsFunc(p.GIDs, func(g host.GID) bool { return g.IPv4 == h }) {
					return s
				}
			}
		}
	}
	return nil
}

// nvmlIndex is the rank's NVML device index: nvml_dev from JSON, or the
// text form "3" (CUDA and NVML alike) / "3 (NVML 5)".
func nvmlIndex(k RASRank) (int, bool) {
	if k.NVMLDev != nil {
		return *k.NVMLDev, true
	}
	g := k.GPU
	if _, n, ok := strings.Cut(g, "(NVML "); ok {
		g = strings.TrimSuffix(n, ")")
	}
	i, err := strconv.Atoi(strings.TrimSpace(g))
	return i, err == nil
}

func cudaIndex(k RASRank) int {
	if k.CUDADev != nil {
		return *k.CUDADev
	}
	c, _, _ := strings.Cut(k.GPU, " ")
	i, err := strconv.Atoi(c)
	if err != nil {
		return -1
	}
	return i
}

// RankPath follows a rank to its rail: the host's snapshot → its GPU (the
// NVML index is the GPU's place in PCI bus order, as NVML enumerates) →
// that GPU's rail NIC (host.Rails, the one nearest-NIC answer) → the
// NIC's port NCCL uses (its active one). It returns the path in words and
// the rail's device and port; ok is false when a link of the chain is not
// in the snapshot.
func RankPath(s *host.Snapshot, k RASRank) (path, device string, port int, ok bool) {
	idx, known := nvmlIndex(k)
	if !known {
		return fmt.Sprintf("%s: the report does not say which GPU rank %d drives", s.Hostname, k.Rank), "", 0, false
	}
	gpus := slices.Clone(s.GPUs)
	slices.SortFunc(gpus, func(a, b host.GPU) int { return a.Address.Compare(b.Address) })
	if idx < 0 || idx >= len(gpus) {
		return fmt.Sprintf("%s: NVML GPU %d, but the snapshot holds %d GPU(s)", s.Hostname, idx, len(gpus)), "", 0, false
	}
	g := gpus[idx]
	gpuWords := fmt.Sprintf("GPU %s = %s %s (NVML index %d: the GPU at place %d in PCI bus order)", k.GPUName(), g.Address, g.Name, idx, idx+1)
	rails := s.Rails()
	i := slices.IndexFunc(rails, func(r host.Rail) bool { return r.GPU == g.Address })
	if i < 0 || rails[i].RDMA == "" {
		return fmt.Sprintf("%s → %s → no RDMA NIC in the snapshot", s.Hostname, gpuWords), "", 0, false
	}
	rail := rails[i]
	d := s.RDMA(rail.RDMA)
	if d == nil || len(d.Ports) == 0 {
		return fmt.Sprintf("%s → %s → rail %s (%s), no port read", s.Hostname, gpuWords, rail.RDMA, rail.Level), rail.RDMA, 0, false
	}
	p := d.Ports[0]
	for _, q := range d.Ports {
		if q.State == portstate.Active {
			p = q
			break
		}
	}
	nd := ""
	for _, n := range s.NetDevs {
		if n.RDMADevice == rail.RDMA && n.RDMAPort == p.Port {
			nd = ", netdev " + n.Name
		}
	}
	return fmt.Sprintf("%s → %s → rail NIC %s (%s, path %s) → port %d (%s, %g Gb/s%s)", s.Hostname, gpuWords, rail.RDMA, rail.NIC, rail.Level, p.Port, p.State, p.RateGbps, nd),
		rail.RDMA, p.Port, true
}

// attachPath adds the rank's path to a finding and offers the follow-up:
// bench re-pairing the suspect rail with a known-good node, so that the
// cable is named by traffic, not guessed.
func (o *RASOptions) attachPath(f *check.Finding, k RASRank) {
	s := o.snapshotFor(k.Host)
	if s == nil {
		if o != nil && (len(o.Hosts) > 0 || len(o.Snapshots) > 0) {
			f.Evidence = append(f.Evidence, check.Evidence{What: "path", Value: fmt.Sprintf("no snapshot of %s among those given (--snapshot %s=FILE binds one)", k.Host, k.Host)})
		}
		return
	}
	path, dev, port, ok := RankPath(s, k)
	f.Evidence = append(f.Evidence, check.Evidence{What: "path", Value: path, Source: "snapshot of " + s.Hostname})
	if !ok {
		return
	}
	f.Message += fmt.Sprintf("; its GPU's rail is %s port %d", dev, port)
	if o.Fabric != nil {
		cable, found := cableOf(o.Fabric, s, dev, port)
		f.Evidence = append(f.Evidence, check.Evidence{What: "cable", Value: cable, Source: cmpOr(o.Fabric.Source, "the fabric snapshot")})
		if found {
			f.Message += ", cabled " + cable
		}
	}
	cuda := cudaIndex(k)
	gpu := ""
	if cuda >= 0 {
		gpu = fmt.Sprintf(", cuda_gpu: %d", cuda)
	}
	f.Fix = append([]string{fmt.Sprintf("retest that rail by traffic against a known-good node GOOD: in %s give node %s device: %s, port: %d%s; then printf '0 %s GOOD\\n' > retest.rounds && rdmalab bench --cluster %s --rounds retest.rounds --use-cuda",
		cmpOr(o.Cluster, "the cluster file"), k.Host, dev, port, gpu, k.Host, cmpOr(o.Cluster, "CLUSTER"))}, f.Fix...)
}

// cableOf names the link from a host's RDMA port to the fabric: the
// port's far end in the fabric snapshot, found by the NIC's node GUID.
func cableOf(fs *fabric.Snapshot, s *host.Snapshot, dev string, port int) (string, bool) {
	d := s.RDMA(dev)
	if d == nil || d.NodeGUID.IsZero() {
		return fmt.Sprintf("%s has no node GUID in the snapshot of %s: its cable cannot be found in the fabric", dev, s.Hostname), false
	}
	names := fs.Names()
	for i := range fs.Ports {
		p := &fs.Ports[i]
		if p.NodeGUID != d.NodeGUID || p.Num != port {
			continue
		}
		if p.Remote == nil {
			return fmt.Sprintf("%s port %d (%s) has no link in the fabric snapshot", dev, port, d.NodeGUID), false
		}
		far := p.Remote.NodeDesc
		if names.Known(p.Remote.NodeGUID) {
			far = names.Node(p.Remote.NodeGUID)
		}
		state := strings.TrimSpace(strings.Join([]string{p.Width, p.Speed, p.State.String()}, " "))
		return fmt.Sprintf("%s port %d ↔ %s port %d (%s)", dev, port, far, p.Remote.Port, state), true
	}
	return fmt.Sprintf("no port of node GUID %s (%s) in the fabric snapshot", d.NodeGUID, dev), false
}
