package design

import (
	"fmt"
	"strconv"

	"github.com/rdmalab/rdmalab/internal/fabric"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"sigs.k8s.io/yaml"
)

// FabricRequest are the flags of `design fabric`, as given.
type FabricRequest struct {
	// Hosts is the number of fabric endpoints (NIC ports); or give Nodes
	// and NICsPerNode (rail NICs per node), whose product it is.
	Hosts       int
	Nodes       int
	NICsPerNode int
	GPUsPerNode int
	Radix       int    // switch ports
	Rate        string // per port, linkrate syntax
	Layer       string // InfiniBand or RoCE (Ethernet); default from Rate
	// Oversubscription is the leaf's down:up port ratio (1 = non-blocking).
	Oversubscription float64
}

// Fabric is a sized fabric and its cabling plan.
type Fabric struct {
	Calculator  string         `json:"calculator"` // "fabric"
	Layer       linkrate.Layer `json:"layer"`
	Design      string         `json:"design"`
	Nodes       int            `json:"nodes,omitempty"`
	NICsPerNode int            `json:"nics_per_node"`
	GPUsPerNode int            `json:"gpus_per_node,omitempty"`
	Endpoints   int            `json:"endpoints"`
	Radix       int            `json:"radix"`
	Rate        string         `json:"rate"`
	RateGbps    float64        `json:"rate_gbps"`
	Tiers       int            `json:"tiers"`
	// Leaves, Spines and Cores count switches per tier (Cores only in a
	// three-tier fat tree, where Spines are the pods' aggregation switches).
	Leaves int `json:"leaves"`
	Spines int `json:"spines"`
	Cores  int `json:"cores,omitempty"`
	Pods   int `json:"pods,omitempty"`
	// LeafDownPorts face hosts, LeafUpPorts face the next tier.
	LeafDownPorts int `json:"leaf_down_ports"`
	LeafUpPorts   int `json:"leaf_up_ports"`
	// LinksPerPair is how many parallel cables join a leaf and a spine.
	LinksPerPair         int        `json:"links_per_leaf_spine_pair,omitempty"`
	HostCables           int        `json:"host_cables"`
	SwitchCables         int        `json:"switch_cables"`
	Cables               int        `json:"cables"`
	Oversubscription     float64    `json:"oversubscription"`
	MaxEndpointsOneTier  int        `json:"max_endpoints_one_switch"`
	MaxEndpointsTwoTier  int        `json:"max_endpoints_two_tier"`
	MaxEndpointsThree    int        `json:"max_endpoints_three_tier"`
	SingleSwitchSuffices bool       `json:"single_switch_suffices"`
	AllreduceCeilingGBps float64    `json:"allreduce_busbw_ceiling_gbytes_per_s"`
	AllreduceHealthyGBps [2]float64 `json:"allreduce_busbw_healthy_gbytes_per_s"`
	Figures              []Figure   `json:"figures"`
	Notes                []string   `json:"notes,omitempty"`
	// Cabling is the plan `fabric check --topology` reads.
	Cabling []fabric.TopoLink `json:"cabling"`
}

// routedClosAbove is seed 001's threshold: "Above 8 nodes, plan routed
// Clos with BGP unnumbered. Below 8, a single switch is fine."
const routedClosAbove = 8

// Seed 001's healthy allreduce band: 20–24 GB/s observed against a 25 GB/s
// ceiling (200 Gb/s per NIC).
const (
	healthyBusbwLow  = 20.0 / 25
	healthyBusbwHigh = 24.0 / 25
)

// PlanFabric sizes a fabric for the endpoints at the switch radix.
func PlanFabric(r FabricRequest) (*Fabric, error) {
	if r.Radix < 4 || r.Radix > 1024 || r.Radix%2 != 0 {
		return nil, inputErr("--radix", "%d: want an even number of switch ports from 4 to 1024", r.Radix)
	}
	rate, err := linkrate.ParseRate(r.Rate)
	if err != nil {
		return nil, &InputError{Flag: "--rate", Err: err}
	}
	layer := linkrate.RoCE
	if rate.Speed != "" {
		layer = linkrate.InfiniBand
	}
	if r.Layer != "" {
		if layer, err = linkrate.ParseLayer(r.Layer); err != nil {
			return nil, &InputError{Flag: "--link-layer", Err: err}
		}
		if layer == linkrate.TCP {
			layer = linkrate.RoCE // a plain Ethernet fabric is sized the same
		}
	}
	if r.Oversubscription < 1 || r.Oversubscription > float64(r.Radix-1) {
		return nil, inputErr("--oversubscription", "%g: want a down:up ratio from 1 (non-blocking) to %d", r.Oversubscription, r.Radix-1)
	}
	if r.NICsPerNode < 1 || r.NICsPerNode > 64 {
		return nil, inputErr("--nics-per-node", "%d: want 1 to 64 rail NICs per node", r.NICsPerNode)
	}
	if r.GPUsPerNode < 0 || r.GPUsPerNode > 64 {
		return nil, inputErr("--gpus-per-node", "%d: want 0 to 64", r.GPUsPerNode)
	}
	f := &Fabric{Calculator: "fabric", Layer: layer, Radix: r.Radix, Rate: rate.String(), RateGbps: rate.Gbps,
		NICsPerNode: r.NICsPerNode, GPUsPerNode: r.GPUsPerNode}
	switch {
	case r.Hosts > 0 && r.Nodes > 0:
		return nil, inputErr("--endpoints", "give --endpoints (NIC ports) or --nodes with --nics-per-node, not both")
	case r.Hosts > 0:
		if r.NICsPerNode != 1 {
			return nil, inputErr("--endpoints", "--endpoints counts NIC ports; with rail NICs give --nodes and --nics-per-node")
		}
		f.Endpoints = r.Hosts
	case r.Nodes > 0:
		f.Nodes, f.Endpoints = r.Nodes, r.Nodes*r.NICsPerNode
	default:
		return nil, inputErr("--nodes", "give --nodes (with --nics-per-node) or --endpoints")
	}
	k := r.Radix
	f.LeafUpPorts = max(1, int(float64(k)/(r.Oversubscription+1)+0.999999))
	f.LeafDownPorts = k - f.LeafUpPorts
	d, u := f.LeafDownPorts, f.LeafUpPorts
	f.Oversubscription = float64(d) / float64(u)
	f.MaxEndpointsOneTier = k
	f.MaxEndpointsTwoTier = k * d         // k leaves, one cable from each to each spine port
	f.MaxEndpointsThree = k * (k / 2) * d // k pods of k/2 leaves
	if f.Endpoints > f.MaxEndpointsThree {
		return nil, inputErr("--radix", "%d endpoints need more than three tiers of %d-port switches (at most %d at %s:1): use a larger radix",
			f.Endpoints, k, f.MaxEndpointsThree, num(f.Oversubscription))
	}
	kind := "leaf-spine (routed Clos)"
	if layer == linkrate.InfiniBand {
		kind = "fat tree"
	}
	nodes := f.Nodes
	if nodes == 0 {
		nodes = f.Endpoints
	}
	// Seed 001: on Ethernet, above 8 nodes plan a routed Clos (two spines
	// from 8–16 nodes) even where one switch has the ports.
	routed := layer != linkrate.InfiniBand && nodes > routedClosAbove
	switch {
	case f.Endpoints <= k && routed:
		f.Tiers, f.Design = 2, "two-tier "+kind
		f.twoTier(2, 2)
		f.Notes = append(f.Notes, fmt.Sprintf("%d endpoints would fit one %d-port switch, but %d nodes is above %d: seed 001 plans a routed Clos there (two leaves, two spines: a switch can fail or be upgraded without stopping the cluster, and it grows by adding leaves).", f.Endpoints, k, nodes, routedClosAbove))
	case f.Endpoints <= k:
		f.SingleSwitchSuffices, f.Tiers, f.Leaves = true, 1, 1
		f.LeafDownPorts, f.LeafUpPorts, f.Oversubscription = f.Endpoints, 0, 1
		f.Design = "single switch"
		n := newNamer(f)
		for e := 0; e < f.Endpoints; e++ {
			f.hostLink(n.endpoint(e), n.leaf(0), e+1)
		}
	case f.Endpoints <= f.MaxEndpointsTwoTier:
		f.Tiers, f.Design = 2, "two-tier "+kind
		f.twoTier(1, 1)
	default:
		f.Tiers, f.Design = 3, "three-tier "+kind
		f.threeTier()
	}
	f.Cables = f.HostCables + f.SwitchCables
	f.figures(layer, rate)
	f.notes(layer)
	return f, nil
}

// hostLink cables an endpoint's port 1 to a leaf port.
func (f *Fabric) hostLink(endpoint, leaf string, port int) {
	f.Cabling = append(f.Cabling, fabric.TopoLink{A: fabric.TopoEnd{Node: endpoint, Port: 1}, B: fabric.TopoEnd{Node: leaf, Port: port}})
	f.HostCables++
}

func (f *Fabric) switchLink(a string, ap int, b string, bp int) {
	f.Cabling = append(f.Cabling, fabric.TopoLink{A: fabric.TopoEnd{Node: a, Port: ap}, B: fabric.TopoEnd{Node: b, Port: bp}})
	f.SwitchCables++
}

// twoTier: L leaves of d host ports; S spines, the fewest whose ports
// take every leaf's uplinks. Leaf uplink x goes to spine x mod S, so each
// leaf has ⌈u/S⌉ or ⌊u/S⌋ cables to each spine (equal when S divides u);
// spine s keeps a block of ⌈u/S⌉ ports per leaf.
func (f *Fabric) twoTier(minLeaves, minSpines int) {
	k, d, u := f.Radix, f.LeafDownPorts, f.LeafUpPorts
	f.Leaves = max(minLeaves, ceilDiv(f.Endpoints, d))
	f.Spines = max(minSpines, ceilDiv(f.Leaves*u, k))
	for f.Spines < u && f.Leaves*ceilDiv(u, f.Spines) > k {
		f.Spines++
	}
	p := ceilDiv(u, f.Spines)
	f.LinksPerPair = p
	// endpoints per leaf: full leaves, or spread evenly over the minimum
	per := d
	if f.Leaves > ceilDiv(f.Endpoints, d) {
		per = ceilDiv(f.Endpoints, f.Leaves)
	}
	n := newNamer(f)
	for leaf := 0; leaf < f.Leaves; leaf++ {
		for port := 1; port <= per; port++ {
			if e := leaf*per + port - 1; e < f.Endpoints {
				f.hostLink(n.endpoint(e), n.leaf(leaf), port)
			}
		}
		for x := 0; x < u; x++ {
			f.switchLink(n.leaf(leaf), d+1+x, n.spine(x%f.Spines), leaf*p+x/f.Spines+1)
		}
	}
}

// threeTier is the k-ary fat tree generalised to an oversubscribed leaf:
// pods of k/2 leaves and u aggregation switches (every leaf cabled once to
// each), each aggregation switch with k/2 down and k/2 up ports; aggregation
// switch j of every pod goes to core group j, m cables per pod and core.
func (f *Fabric) threeTier() {
	k, d, u := f.Radix, f.LeafDownPorts, f.LeafUpPorts
	half := k / 2
	f.Leaves = ceilDiv(f.Endpoints, d)
	f.Pods = ceilDiv(f.Leaves, half)
	m := 1
	for c := half; c >= 1; c-- {
		if half%c == 0 && f.Pods*c <= k {
			m = c
			break
		}
	}
	perGroup := half / m
	f.Spines = f.Pods * u
	f.Cores = u * perGroup
	f.LinksPerPair = 1
	n := newNamer(f)
	for leaf := 0; leaf < f.Leaves; leaf++ {
		pod, l := leaf/half, leaf%half
		for port := 1; port <= d; port++ {
			if e := leaf*d + port - 1; e < f.Endpoints {
				f.hostLink(n.endpoint(e), n.leaf(leaf), port)
			}
		}
		for j := 0; j < u; j++ {
			f.switchLink(n.leaf(leaf), d+1+j, n.spine(pod*u+j), l+1)
		}
	}
	for pod := 0; pod < f.Pods; pod++ {
		for j := 0; j < u; j++ {
			for x := 0; x < half; x++ {
				f.switchLink(n.spine(pod*u+j), half+1+x, n.core(j*perGroup+x/m), pod*m+x%m+1)
			}
		}
	}
}

func (f *Fabric) figures(layer linkrate.Layer, rate linkrate.Rate) {
	k, d, u, H := f.Radix, f.LeafDownPorts, f.LeafUpPorts, f.Endpoints
	if f.Nodes > 0 {
		f.Figures = append(f.Figures, figure("endpoints", float64(H), "", "nodes × rail NICs per node", fmt.Sprintf("%d × %d", f.Nodes, f.NICsPerNode)))
	}
	f.Figures = append(f.Figures,
		figure("one switch holds", float64(k), "endpoints", "radix k", strconv.Itoa(k)))
	if f.Tiers > 1 {
		f.Figures = append(f.Figures,
			figure("leaf up ports", float64(u), "", "⌈k / (oversubscription + 1)⌉", fmt.Sprintf("⌈%d / %s⌉", k, num(f.Oversubscription+1))),
			figure("leaf host ports", float64(d), "", "k − up ports", fmt.Sprintf("%d − %d", k, u)),
			figure("oversubscription", f.Oversubscription, ": 1", "host ports / up ports", fmt.Sprintf("%d / %d", d, u)),
			figure("two tiers hold", float64(f.MaxEndpointsTwoTier), "endpoints", "k × host ports (k²/2 non-blocking)", fmt.Sprintf("%d × %d", k, d)),
			figure("three tiers hold", float64(f.MaxEndpointsThree), "endpoints", "k × k/2 × host ports (k³/4 non-blocking)", fmt.Sprintf("%d × %d × %d", k, k/2, d)),
			figure("leaves", float64(f.Leaves), "", "⌈endpoints / host ports⌉", fmt.Sprintf("⌈%d / %d⌉", H, d)))
	}
	switch f.Tiers {
	case 2:
		f.Figures = append(f.Figures,
			figure("spines", float64(f.Spines), "", "⌈leaves × up ports / k⌉, more while leaves × ⌈up ports / spines⌉ > k", fmt.Sprintf("⌈%d × %d / %d⌉", f.Leaves, u, k)),
			figure("cables per leaf–spine pair (at most)", float64(f.LinksPerPair), "", "⌈up ports / spines⌉", fmt.Sprintf("⌈%d / %d⌉", u, f.Spines)))
		if u%f.Spines != 0 {
			f.Notes = append(f.Notes, fmt.Sprintf("%d uplinks do not divide evenly over %d spines: each leaf has %d cables to %d spine(s) and %d to the rest; ECMP spreads per link, so the load stays even per cable.",
				u, f.Spines, ceilDiv(u, f.Spines), u%f.Spines, u/f.Spines))
		}
	case 3:
		f.Figures = append(f.Figures,
			figure("pods", float64(f.Pods), "", "⌈leaves / (k/2)⌉", fmt.Sprintf("⌈%d / %d⌉", f.Leaves, k/2)),
			figure("aggregation (spine) switches", float64(f.Spines), "", "pods × up ports", fmt.Sprintf("%d × %d", f.Pods, u)),
			figure("core switches", float64(f.Cores), "", "up ports × k/2 / cables per pod and core ((k/2)² non-blocking)", fmt.Sprintf("%d × %d / %d", u, k/2, (k/2)*u/f.Cores)))
	}
	f.Figures = append(f.Figures,
		figure("host cables", float64(f.HostCables), "", "endpoints", strconv.Itoa(H)),
		figure("switch-to-switch cables", float64(f.SwitchCables), "", "leaves × up ports (+ aggregation × k/2 in three tiers)", f.switchCableWorking()),
		figure("cables", float64(f.Cables), "", "host cables + switch cables", fmt.Sprintf("%d + %d", f.HostCables, f.SwitchCables)))
	link := linkrate.Link{Layer: layer, RateGbps: rate.Gbps, Speed: rate.Speed}
	wire := link.WireGbps()
	wireText := num(rate.Gbps) + " Gb/s"
	if wire != rate.Gbps {
		wireText = fmt.Sprintf("%s Gb/s data rate of %s", num(wire), rate)
	}
	// The one busbw ceiling every command uses (linkrate), at the MTU a
	// designed fabric runs: payload, not line rate (the article's 200 Gb/s
	// ≈ 25 GB/s counts the headers too).
	link.MTUBytes = linkrate.BestMTU
	f.AllreduceCeilingGBps = linkrate.BusbwCeilingGBps(link, f.NICsPerNode)
	f.Figures = append(f.Figures, figure("inter-node allreduce busbw ceiling", f.AllreduceCeilingGBps, "GB/s per node",
		fmt.Sprintf("rail NICs per node × payload ceiling at MTU %d / 8 bits (line rate less headers)", linkrate.BestMTU),
		fmt.Sprintf("%d × %s Gb/s (of %s) / 8", f.NICsPerNode, num(link.CeilingGbps()), wireText)))
	f.AllreduceHealthyGBps = [2]float64{f.AllreduceCeilingGBps * healthyBusbwLow, f.AllreduceCeilingGBps * healthyBusbwHigh}
	f.Figures = append(f.Figures, figure("healthy allreduce busbw from", f.AllreduceHealthyGBps[0], "GB/s", "ceiling × 20/25 (seed 001: 20–24 GB/s healthy at 25)", fmt.Sprintf("%s × 0.8", num(f.AllreduceCeilingGBps))))
	if f.Tiers > 1 && f.Oversubscription > 1 {
		f.Figures = append(f.Figures, figure("busbw ceiling across leaves, all nodes busy", f.AllreduceCeilingGBps/f.Oversubscription, "GB/s per node",
			"ceiling / oversubscription", fmt.Sprintf("%s / %s", num(f.AllreduceCeilingGBps), num(f.Oversubscription))))
	}
}

func (f *Fabric) switchCableWorking() string {
	switch f.Tiers {
	case 2:
		return fmt.Sprintf("%d × %d", f.Leaves, f.LeafUpPorts)
	case 3:
		return fmt.Sprintf("%d × %d + %d × %d", f.Leaves, f.LeafUpPorts, f.Spines, f.Radix/2)
	}
	return "0 (one switch)"
}

func (f *Fabric) notes(layer linkrate.Layer) {
	if f.SingleSwitchSuffices {
		f.Notes = append(f.Notes, fmt.Sprintf("%d endpoints fit one %d-port switch: no spine, no routing protocol, one hop (seed 001: below 8 nodes a single switch is fine).", f.Endpoints, f.Radix))
	}
	if f.NICsPerNode > 1 {
		f.Notes = append(f.Notes, "Endpoints are placed rail by rail (NIC r of every node, then NIC r+1), so a rail fills whole leaves where it can: same-rail traffic stays one hop.")
	}
	if f.GPUsPerNode > 0 && f.NICsPerNode < f.GPUsPerNode {
		f.Notes = append(f.Notes, fmt.Sprintf("%d GPUs share %d NIC(s) per node: inter-node allreduce is capped by the NICs, not the GPUs.", f.GPUsPerNode, f.NICsPerNode))
	}
	if f.Tiers > 1 && f.Oversubscription > 1 {
		f.Notes = append(f.Notes, fmt.Sprintf("Oversubscribed %s:1: when every node sends across leaves at once, each gets 1/%s of its line rate through the spines.", num(f.Oversubscription), num(f.Oversubscription)))
	}
	switch layer {
	case linkrate.InfiniBand:
		f.Notes = append(f.Notes, "InfiniBand: one master subnet manager (with a standby) routes the whole fabric; use OpenSM's fat-tree aware routing (routing_engine ftree, or updn) so traffic spreads over every spine.")
	default:
		if f.Tiers > 1 {
			f.Notes = append(f.Notes, fmt.Sprintf("Ethernet: route it (L3 Clos, BGP unnumbered, ECMP across spines) rather than stretch L2 (seed 001: above ~8 nodes): 'rdmalab design frr --spines %d --leaves %d --dir DIR' writes the switch configs.", f.Spines, f.Leaves))
		}
		f.Notes = append(f.Notes, "RoCE needs PFC on the RDMA priority and ECN marking on every switch port, MTU 9000 end to end.")
	}
	f.Notes = append(f.Notes, "Keep a separate 1/10 GbE management network: SSH must work when this fabric does not.")
}

// CablingYAML is the cabling plan in the format `rdmalab fabric check
// --topology FILE.yaml` reads (docs/design.md).
func (f *Fabric) CablingYAML() ([]byte, error) {
	return yaml.Marshal(struct {
		Links []fabric.TopoLink `json:"links"`
	}{f.Cabling})
}

// namer names endpoints ("node0001 mlx5_0", the node description rdma-ndd
// sets) and switches, zero-padded to the count so names sort.
type namer struct {
	nodes                    int
	nodeW, leafW, spW, coreW int
}

func newNamer(f *Fabric) namer {
	nodes := f.Nodes
	if nodes == 0 {
		nodes = f.Endpoints
	}
	w := func(n int) int { return max(2, len(strconv.Itoa(n))) }
	return namer{nodes: nodes, nodeW: w(nodes), leafW: w(f.Leaves), spW: w(f.Spines), coreW: w(f.Cores)}
}

// endpoint e: rail e / nodes, node e % nodes.
func (n namer) endpoint(e int) string {
	return fmt.Sprintf("node%0*d mlx5_%d", n.nodeW, e%n.nodes+1, e/n.nodes)
}
func (n namer) leaf(i int) string  { return fmt.Sprintf("leaf%0*d", n.leafW, i+1) }
func (n namer) spine(i int) string { return fmt.Sprintf("spine%0*d", n.spW, i+1) }
func (n namer) core(i int) string  { return fmt.Sprintf("core%0*d", n.coreW, i+1) }

func ceilDiv(a, b int) int { return (a + b - 1) / b }
