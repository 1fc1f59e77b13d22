package linkrate

import (
	"fmt"
	"slices"
)

// Per-packet overheads in bytes on the wire.
const (
	// IBHeaderBytes: LRH, BTH, ICRC, VCRC.
	IBHeaderBytes = 8 + 12 + 4 + 2
	// RoCEHeaderBytes: preamble+SFD, Ethernet, FCS, inter-frame gap,
	// IPv4, UDP, BTH, ICRC.
	RoCEHeaderBytes = 8 + 14 + 4 + 12 + 20 + 8 + 12 + 4
	// EthernetWireBytes: preamble+SFD, Ethernet header, FCS and
	// inter-frame gap around one IP packet.
	EthernetWireBytes = 8 + 14 + 4 + 12
	// TCPIPHeaderBytes: IPv4 and TCP with timestamps.
	TCPIPHeaderBytes = 20 + 32
	// RoCEMTUHeadroom is what a RoCE packet adds inside the netdev MTU
	// (IP, UDP, BTH, ICRC and room for extended headers) as mlx5 sizes it.
	RoCEMTUHeadroom = 96
)

// RoCEMTU is the RDMA MTU a RoCE port gets from its netdev MTU: the
// largest IB MTU that fits with the headers (1500 → 1024, 9000 → 4096).
func RoCEMTU(netdevMTU int) int {
	for _, m := range []int{4096, 2048, 1024, 512, 256} {
		if netdevMTU-RoCEMTUHeadroom >= m {
			return m
		}
	}
	return 0
}

// Link is what one path can carry, from the port rate, the link layer,
// the MTU and, when known, the PCIe links of the NICs at both ends.
type Link struct {
	Layer Layer `json:"layer"`
	// RateGbps is the nominal port rate: 4X HDR = 200, 25GbE = 25.
	RateGbps float64 `json:"rate_gbps"`
	// Speed is the InfiniBand speed name when known (QDR pays 8b/10b).
	Speed    string `json:"speed,omitempty"`
	MTUBytes int    `json:"mtu_bytes"`
	// PCIeGbps is the usable PCIe bandwidth of the slower NIC's slot, 0
	// when unknown; an HDR card on a Gen3 x16 link cannot pass ~100 Gb/s.
	PCIeGbps float64 `json:"pcie_gbps,omitempty"`
}

// WireGbps is the line's data rate after encoding: a 4X QDR port's 40
// nominal Gb/s carry 32; FDR's 56 carry 54.5. Ethernet rates are data rates.
func (l Link) WireGbps() float64 {
	if s, ok := SpeedByName(l.Speed); ok && l.Layer == InfiniBand {
		return l.RateGbps * s.DataGbps / s.LaneGbps
	}
	return l.RateGbps
}

// CeilingGbps is the most payload the link can carry: the line's data rate
// times the share of each packet that is payload, capped by PCIe.
func (l Link) CeilingGbps() float64 {
	rate := l.WireGbps()
	mtu := float64(l.MTUBytes)
	var c float64
	switch l.Layer {
	case InfiniBand:
		c = rate * mtu / (mtu + IBHeaderBytes)
	case RoCE:
		c = rate * mtu / (mtu + RoCEHeaderBytes)
	default: // TCP: MTU is the IP MTU; the payload is what IP and TCP leave
		c = rate * (mtu - TCPIPHeaderBytes) / (mtu + EthernetWireBytes)
	}
	if l.PCIeGbps > 0 && l.PCIeGbps < c {
		return l.PCIeGbps
	}
	return c
}

// LimitedByPCIe reports whether the PCIe link, not the port, sets the
// ceiling.
func (l Link) LimitedByPCIe() bool {
	p := l
	p.PCIeGbps = 0
	return l.PCIeGbps > 0 && l.PCIeGbps < p.CeilingGbps()
}

// Describe is "25GbE RoCE at MTU 4096" or "4X HDR InfiniBand at MTU 4096",
// with the PCIe cap when it binds.
func (l Link) Describe() string {
	var s string
	switch l.Layer {
	case InfiniBand:
		name := fmt.Sprintf("%g Gb/s", l.RateGbps)
		if l.Speed != "" {
			name = l.Speed
		}
		s = fmt.Sprintf("%s InfiniBand at MTU %d", name, l.MTUBytes)
	case RoCE:
		s = fmt.Sprintf("%gGbE RoCE at MTU %d", l.RateGbps, l.MTUBytes)
	default:
		s = fmt.Sprintf("%g Gb/s TCP at MTU %d", l.RateGbps, l.MTUBytes)
	}
	if l.LimitedByPCIe() {
		s += fmt.Sprintf(", capped by PCIe at %.1f Gb/s", l.PCIeGbps)
	}
	return s
}

// DefaultMTU is the MTU a layer uses when nothing says otherwise: 4096 on
// InfiniBand, 1024 on RoCE (netdev MTU 1500), 1500 for TCP.
func DefaultMTU(l Layer) int {
	switch l {
	case InfiniBand:
		return 4096
	case RoCE:
		return 1024
	}
	return 1500
}

// PCIe generations: transfer rate per lane and encoding.
var pcieGens = []struct {
	GTps, Efficiency float64
}{
	{2.5, 0.8}, {5, 0.8}, {8, 128.0 / 130}, {16, 128.0 / 130}, {32, 128.0 / 130}, {64, 242.0 / 256}, {128, 242.0 / 256},
}

// PCIeGen returns the PCIe generation of a link speed in GT/s (0 if unknown).
func PCIeGen(gtps float64) int {
	for gen, g := range pcieGens {
		if gtps > 0 && gtps <= g.GTps+0.01 {
			return gen + 1
		}
	}
	return 0
}

// PCIeGbps is the raw data rate of a PCIe link after line encoding (Gen3
// x16: 126 Gb/s); 0 when unknown.
func PCIeGbps(gtps float64, width int) float64 {
	gen := PCIeGen(gtps)
	if gen == 0 || width <= 0 {
		return 0
	}
	return gtps * float64(width) * pcieGens[gen-1].Efficiency
}

// PCIeUsableShare is the share of the encoded PCIe rate left for DMA
// payload after TLP headers and flow control at a 256-byte max payload,
// the usual NIC setting (about 20 bytes of TLP overhead per 256 bytes plus
// DLLPs).
const PCIeUsableShare = 0.85

// PCIeUsableGbps is what a NIC can move over its PCIe link, as a ceiling
// for network throughput (Gen3 x16 ≈ 107 Gb/s; Gen4 x16 ≈ 214 Gb/s).
func PCIeUsableGbps(gtps float64, width int) float64 {
	return PCIeGbps(gtps, width) * PCIeUsableShare
}

// BytesPerSecond turns a rate in Gb/s (decimal gigabits, as link rates are
// quoted) into bytes per second, the unit Prometheus exporters report.
func BytesPerSecond(gbps float64) float64 { return gbps * 1e9 / 8 }

// BusbwCeilingGBps is the most inter-node busbw (nccl-tests' GB/s, 10^9
// bytes) a node's rails can carry: rails × the link's payload ceiling / 8.
// An MTU of 0 is the layer's default. It is the one busbw ceiling every
// command uses (nccl judge and run, design, report), so that 200GbE reads
// as one number everywhere.
func BusbwCeilingGBps(l Link, rails int) float64 {
	if l.MTUBytes == 0 {
		l.MTUBytes = DefaultMTU(l.Layer)
	}
	return float64(max(rails, 1)) * l.CeilingGbps() / 8
}

// NVLinkMaxGBps is the fastest GPU interconnect's per-GPU, per-direction
// bandwidth (NVLink 5 on B200/GB200: 18 links × 50 GB/s = 900 GB/s). No
// busbw measured inside one node can honestly exceed twice it (the
// all_reduce formula with in-switch reduction, NVLS): a number beyond is a
// measurement error, not a fast machine.
const NVLinkMaxGBps = 900

// FastestGbps is the most any one link the tables know carries: the
// widest width at the fastest lane (12X XDR). A bandwidth measured above it
// on one direction is no measurement.
func FastestGbps() float64 {
	return float64(slices.Max(Widths)) * Speeds[len(Speeds)-1].LaneGbps
}

// GPUFabricMaxGBps is the most one GPU moves, both ways: NVLink 5, 18
// links of 50 GB/s each way (1.8 TB/s, Blackwell). No collective's bus
// bandwidth per GPU exceeds it; nccl-tests printing more printed no
// measurement.
const GPUFabricMaxGBps = 2 * NVLinkMaxGBps
