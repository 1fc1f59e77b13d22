package nccl

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/phycheck"
	"github.com/rdmalab/rdmalab/internal/portstate"
	"github.com/rdmalab/rdmalab/internal/route"
	"github.com/rdmalab/rdmalab/internal/schedule"
)

// RASOptions is what judging RAS knows beyond the reports: the hosts'
// snapshots, to follow a suspect rank to the NIC port its GPU uses, and
// the fabric with its forwarding tables, to follow that port's cable and
// routes; and the cluster file the follow-up retest names.
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
	// Routes are the fabric's forwarding tables (dump_fts, ibroute or
	// OpenSM's opensm-lfts.dump): with Fabric, the finding lists the links
	// the rail's traffic crosses to its partners, each by both ends, and
	// the follow-up re-pairs it with partners chosen so their routes
	// cross those links.
	Routes []route.LFT
	// RoutesSource says where Routes come from, for the evidence.
	RoutesSource string

	// peers are the hosts of the report being judged that RAS does not
	// name as missing, dead or behind (withReport sets them).
	peers []string
	// routed is Fabric joined with Routes, once for every finding.
	routed *routedFabric
}

// routedFabric is the join of the fabric snapshot and the forwarding
// tables, made on first use and shared by copies of the options.
type routedFabric struct {
	once  sync.Once
	f     *route.Fabric
	paths *route.Paths
	err   error
}

func (o *RASOptions) routes() (*route.Fabric, *route.Paths, error) {
	if o.routed == nil {
		o.routed = &routedFabric{}
	}
	r := o.routed
	r.once.Do(func() {
		r.f, r.err = route.FromSnapshot(o.Fabric, o.Routes)
		if r.err == nil {
			r.paths = r.f.Paths()
		}
	})
	return r.f, r.paths, r.err
}

// withReport is o for judging r: the hosts r names that are not
// suspects are the first partners a follow-up retests a suspect against.
func (o *RASOptions) withReport(r *RASReport) *RASOptions {
	if o == nil || r == nil {
		return o
	}
	if o.routed == nil {
		o.routed = &routedFabric{}
	}
	c := *o
	c.peers = reportPeers(r)
	return &c
}

// reportPeers are the hosts with a rank the report shows answering and
// not behind: not in any missing list, no lagging group, no dead process.
func reportPeers(r *RASReport) []string {
	bad := map[string]bool{}
	for _, p := range append(slices.Clone(r.MissingProcesses), r.DeadProcesses...) {
		bad[p.Host] = true
	}
	for _, c := range r.Comms {
		for _, k := range c.Missing {
			bad[k.Host] = true
		}
	}
	for _, l := range lagsOf(r) {
		for _, k := range l.named {
			bad[k.Host] = true
		}
	}
	var out []string
	for _, c := range r.Comms {
		for _, k := range c.Ranks {
			if k.Host != "" && !bad[k.Host] && !slices.Contains(out, k.Host) {
				out = append(out, k.Host)
			}
		}
	}
	slices.Sort(out)
	return out
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
	node := k.Host
	var partners []string
	// the rail's cable by its ends: the host's port, and the switch's
	// when the fabric names it; each with its own physical layer, or
	// "no PHY evidence"
	snaps := o.snapshots()
	ends := []phycheck.End{{Host: s.Hostname, Device: dev, Port: port, Netdev: netdevOf(s, dev, port), Name: fmt.Sprintf("%s %s port %d", s.Hostname, dev, port)}}
	if o.Fabric != nil {
		cable, far, found := cableOf(o.Fabric, s, dev, port)
		f.Evidence = append(f.Evidence, check.Evidence{What: "cable", Value: cable, Source: cmpOr(o.Fabric.Source, "the fabric snapshot")})
		if found {
			f.Message += ", cabled " + cable
			ends = append(ends, phycheck.EndOf(snaps, far.NodeGUID, far.Port, fmt.Sprintf("%s port %d", far.NodeDesc, far.Port)))
		}
	}
	f.Evidence = append(f.Evidence, phycheck.CableEvidence(ends, phycheck.HostFacts(snaps))...)
	if o.Fabric != nil && len(o.Routes) > 0 {
		node, partners = o.railRoutes(f, s, node, dev, port)
	}
	why := "hosts of the fabric whose routes to and from the rail cross its links"
	if len(partners) == 0 {
		partners, why = o.partners(node, s)
	}
	if n := len(partners); n < maxPartners {
		why += fmt.Sprintf(" — only %d known: with fewer than %d the suspect's directions may be the majority its centre is taken from; add known-good nodes of the job to the round file", n, maxPartners)
	}
	cmd := followUp(cmpOr(o.Cluster, "CLUSTER"), node, partners)
	f.Evidence = append(f.Evidence, check.Evidence{What: "follow-up", Value: cmd, Source: "partners: " + why})
	cuda := cudaIndex(k)
	gpu, gpuMem := "", ""
	if cuda >= 0 {
		gpu = fmt.Sprintf(", cuda_gpu: %d", cuda)
		gpuMem = fmt.Sprintf(" (add --use-cuda to measure from GPU %d's memory, as NCCL does)", cuda)
	}
	f.Fix = append([]string{fmt.Sprintf("retest that rail by traffic against known-good partners (the suspect paired with each, and the partners with each other, so the partners set the centre it is judged against): in %s give node %s device: %s, port: %d%s; then %s%s",
		cmpOr(o.Cluster, "the cluster file"), node, dev, port, gpu, cmd, gpuMem)}, f.Fix...)
}

// maxPartners is how many partners the follow-up pairs a suspect with:
// with four, the suspect's 8 directions are fewer than the partners' 12,
// so the centre it is judged against is theirs.
const maxPartners = 4

// partners are the follow-up's partners without routes: the report's
// hosts RAS does not suspect, then the other hosts whose snapshots were
// given (never the suspect's own, s), else placeholders (said so).
func (o *RASOptions) partners(suspect string, s *host.Snapshot) ([]string, string) {
	const none = "none known: name known-good nodes of the job (give the report's other hosts, their snapshots, or the fabric with its routes)"
	if o == nil {
		return placeholders(), none
	}
	var out, from []string
	add := func(h string) {
		if h != "" && h != suspect && h != s.Hostname && !slices.Contains(out, h) && len(out) < maxPartners {
			out = append(out, h)
		}
	}
	for _, h := range o.peers {
		add(h)
	}
	if len(out) > 0 {
		from = append(from, "hosts of the report whose ranks answered and are not behind")
	}
	n := len(out)
	for _, h := range slices.Sorted(maps.Keys(o.Hosts)) {
		if o.Hosts[h] != s {
			add(h)
		}
	}
	for _, sn := range o.Snapshots {
		if sn != s {
			add(sn.Hostname)
		}
	}
	if len(out) > n {
		from = append(from, "the other hosts whose snapshots were given")
	}
	if len(out) == 0 {
		return placeholders(), none
	}
	return out, strings.Join(from, ", then ")
}

func placeholders() []string {
	out := make([]string, maxPartners)
	for i := range out {
		out[i] = fmt.Sprintf("GOOD%d", i+1)
	}
	return out
}

// followUp is the one command that re-pairs the suspect node with its
// partners, and the partners with each other (the circle method over all
// of them), through bench's round file (ClusterKit's "<round> <node>
// <node>"); every name is shell-quoted, and printf never reads one as a
// format.
func followUp(cluster, suspect string, partners []string) string {
	nodes := append([]string{suspect}, partners...)
	order := make([]int, len(nodes))
	for i := range order {
		order[i] = i
	}
	var lines []string
	for r, round := range schedule.Circle(order) {
		for _, p := range round {
			lines = append(lines, shellQuote(fmt.Sprintf("%d %s %s", r, nodes[p.A], nodes[p.B])))
		}
	}
	return fmt.Sprintf("printf '%%s\\n' %s > retest.rounds && rdmalab bench --cluster %s --rounds retest.rounds", strings.Join(lines, " "), shellQuote(cluster))
}

// railRoutes follows the rail's port through the forwarding tables: it
// picks up to maxPartners other hosts (the report's unsuspected hosts
// first, then the same rail's, then any) so that their routes to and from
// the rail cross as many of the fabric's links as they can, and adds the
// routes and the cables on them, each by both ends with GUIDs. It returns
// the suspect's node as the fabric names it (the first word of its CA's
// description, as bench --schedule cover matches nodes) and the partners.
func (o *RASOptions) railRoutes(f *check.Finding, s *host.Snapshot, node, dev string, port int) (string, []string) {
	src := cmpOr(o.RoutesSource, "the forwarding tables")
	say := func(what, value string) {
		f.Evidence = append(f.Evidence, check.Evidence{What: what, Value: value, Source: src})
	}
	rf, paths, err := o.routes()
	if err != nil {
		say("links", "the fabric snapshot and the forwarding tables do not join: "+err.Error())
		return node, nil
	}
	key, ok := caKey(o.Fabric, s, dev, port)
	ca := slices.IndexFunc(rf.CAs, func(c route.CA) bool { return c.Key == key })
	if !ok || ca < 0 {
		say("links", fmt.Sprintf("%s port %d of %s is no routed CA port of the fabric", dev, port, s.Hostname))
		return node, nil
	}
	self, rail := caHost(rf.CAs[ca].Name)
	if self != "" {
		node = self
	}
	type cand struct {
		i, tier int
		host    string
		cables  []int
	}
	var cands []cand
	for j, c := range rf.CAs {
		h, r := caHost(c.Name)
		if h == "" || h == node || !paths.Routed(ca, j) || !paths.Routed(j, ca) {
			continue
		}
		tier := 2
		switch {
		case slices.Contains(o.peers, h):
			tier = 0
		case r == rail:
			tier = 1
		}
		var cables []int
		for _, l := range append(paths.Path(ca, j), paths.Path(j, ca)...) {
			cables = append(cables, min(int(l), rf.Reverse(int(l))))
		}
		slices.Sort(cables)
		cands = append(cands, cand{j, tier, h, slices.Compact(cables)})
	}
	if len(cands) == 0 {
		say("links", fmt.Sprintf("no CA port of another host is routed to and from %s in the forwarding tables", rf.CAs[ca].Name))
		return node, nil
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return a.tier - b.tier })
	// greedy: each next partner is of the earliest tier left (hosts the
	// report shows healthy are the known-good ones), and within it the
	// one whose routes add the most cables not yet crossed
	covered := map[int]bool{}
	var chosen []cand
	for len(chosen) < maxPartners {
		best, gain := -1, -1
		for ci, c := range cands {
			if slices.ContainsFunc(chosen, func(x cand) bool { return x.host == c.host }) {
				continue
			}
			if best >= 0 && c.tier > cands[best].tier {
				break // sorted by tier: the rest are later tiers
			}
			g := 0
			for _, l := range c.cables {
				if !covered[l] {
					g++
				}
			}
			if g > gain {
				best, gain = ci, g
			}
		}
		if best < 0 {
			break
		}
		chosen = append(chosen, cands[best])
		for _, l := range cands[best].cables {
			covered[l] = true
		}
	}
	var partners []string
	for _, c := range chosen {
		partners = append(partners, c.host)
		say("route to "+c.host, "out: "+pathWords(rf, paths.Path(ca, c.i))+"; back: "+pathWords(rf, paths.Path(c.i, ca)))
	}
	cables := slices.Sorted(maps.Keys(covered))
	words := make([]string, len(cables))
	for i, l := range cables {
		words[i] = portWords(rf, rf.Links[l].From) + " ↔ " + portWords(rf, rf.Links[l].To)
	}
	say("links", fmt.Sprintf("%d cable(s) carry %s port %d's traffic to and from %s: %s", len(cables), dev, port, strings.Join(partners, ", "), strings.Join(words, "; ")))
	f.Message += fmt.Sprintf("; its routes to and from %s cross %d cable(s)", strings.Join(partners, ", "), len(cables))
	return node, partners
}

// caHost splits a CA's description as rdma-core sets it ("<hostname>
// <device>"): the host and the rest.
func caHost(name string) (string, string) {
	h, rest, _ := strings.Cut(strings.TrimSpace(name), " ")
	return h, rest
}

// portWords names a port and the GUID the forwarding tables know it by:
// a CA port's own port GUID, a switch's node GUID.
func portWords(f *route.Fabric, k route.PortKey) string {
	if slices.ContainsFunc(f.CAs, func(c route.CA) bool { return c.Key == k }) {
		return fmt.Sprintf("%s (port GUID %s)", f.PortName(k), k.GUID)
	}
	return fmt.Sprintf("%s (switch GUID %s)", f.PortName(k), k.GUID)
}

// pathWords is a route hop by hop: "n1 mlx5_3 port 1 (port GUID 0x…) →
// leaf01 port 1 (switch GUID 0x…) ⇒ leaf01 port 5 (…) → spine01 port 1
// (…) ⇒ …".
func pathWords(f *route.Fabric, links []int32) string {
	parts := make([]string, len(links))
	for i, l := range links {
		parts[i] = portWords(f, f.Links[l].From) + " → " + portWords(f, f.Links[l].To)
	}
	return strings.Join(parts, " ⇒ ")
}

// caKey is the rail port as the forwarding tables know it: its port GUID
// (the node GUID when the scan has none), found by the NIC's node GUID.
func caKey(fs *fabric.Snapshot, s *host.Snapshot, dev string, port int) (route.PortKey, bool) {
	d := s.RDMA(dev)
	if d == nil || d.NodeGUID.IsZero() {
		return route.PortKey{}, false
	}
	for i := range fs.Ports {
		p := &fs.Ports[i]
		if p.NodeGUID == d.NodeGUID && p.Num == port {
			g := p.PortGUID
			if g.IsZero() {
				g = p.NodeGUID
			}
			return route.PortKey{GUID: g, Port: port}, true
		}
	}
	return route.PortKey{}, false
}

// snapshots are every host snapshot given, once each.
func (o *RASOptions) snapshots() []*host.Snapshot {
	out := slices.Clone(o.Snapshots)
	for _, h := range slices.Sorted(maps.Keys(o.Hosts)) {
		if s := o.Hosts[h]; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// netdevOf is the first netdev of a host's RDMA port ("" for none).
func netdevOf(s *host.Snapshot, dev string, port int) string {
	if d := s.RDMA(dev); d != nil {
		for _, p := range d.Ports {
			if p.Port == port && len(p.NetDevs) > 0 {
				return p.NetDevs[0]
			}
		}
	}
	return ""
}

// cableOf names the link from a host's RDMA port to the fabric: the
// port's far end in the fabric snapshot, found by the NIC's node GUID, and
// that end (its description the fabric's name for the node).
func cableOf(fs *fabric.Snapshot, s *host.Snapshot, dev string, port int) (string, fabric.End, bool) {
	d := s.RDMA(dev)
	if d == nil || d.NodeGUID.IsZero() {
		return fmt.Sprintf("%s has no node GUID in the snapshot of %s: its cable cannot be found in the fabric", dev, s.Hostname), fabric.End{}, false
	}
	names := fs.Names()
	for i := range fs.Ports {
		p := &fs.Ports[i]
		if p.NodeGUID != d.NodeGUID || p.Num != port {
			continue
		}
		if p.Remote == nil {
			return fmt.Sprintf("%s port %d (%s) has no link in the fabric snapshot", dev, port, d.NodeGUID), fabric.End{}, false
		}
		far := *p.Remote
		if names.Known(far.NodeGUID) {
			far.NodeDesc = names.Node(far.NodeGUID)
		}
		state := strings.TrimSpace(strings.Join([]string{p.Width, p.Speed, p.State.String()}, " "))
		return fmt.Sprintf("%s port %d ↔ %s port %d (%s)", dev, port, far.NodeDesc, far.Port, state), far, true
	}
	return fmt.Sprintf("no port of node GUID %s (%s) in the fabric snapshot", d.NodeGUID, dev), fabric.End{}, false
}
