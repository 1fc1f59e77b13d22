// Package linkrate is the one place that knows what a link or a bus can
// carry: InfiniBand speed × width × encoding, RoCE and TCP per-packet
// overheads, PCIe generation × width × encoding, the RoCE MTU a netdev MTU
// allows, NIC and switch model maxima, and the one parser of rate flags
// ("200", "4X HDR", "25GbE") and link layers used by every command.
//
// Nothing else in rdmalab defines per-lane rates or header sizes; a test
// (TestNoRateMathElsewhere) keeps it so.
package linkrate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Speed is an InfiniBand lane speed.
type Speed struct {
	Name string
	// LaneGbps is the nominal per-lane rate the kernel and ibstat print
	// (FDR shows 14, HDR 50): the figure "4X HDR = 200 Gb/s" is made of.
	LaneGbps float64
	// SignalGbps is the per-lane signalling rate iblinkinfo prints
	// (HDR: 53.125).
	SignalGbps float64
	// DataGbps is what one lane carries after line encoding: 8b/10b up to
	// QDR, 64b/66b for FDR10–EDR, PAM4 with RS-FEC from HDR on (the FEC is
	// inside the signalling rate, so HDR's lane carries its nominal 50).
	DataGbps float64
}

// Speeds lists InfiniBand speeds slowest first (IBTA Vol. 2 ch. 5/6).
var Speeds = []Speed{
	{"SDR", 2.5, 2.5, 2},
	{"DDR", 5, 5, 4},
	{"QDR", 10, 10, 8},
	{"FDR10", 10, 10.3125, 10},
	{"FDR", 14, 14.0625, 14.0625 * 64 / 66},
	{"EDR", 25, 25.78125, 25},
	{"HDR", 50, 53.125, 50},
	{"NDR", 100, 106.25, 100},
	{"XDR", 200, 212.5, 200},
}

// SpeedByName returns the speed with that name (case-insensitive).
func SpeedByName(name string) (Speed, bool) {
	for _, s := range Speeds {
		if strings.EqualFold(s.Name, strings.TrimSpace(name)) {
			return s, true
		}
	}
	return Speed{}, false
}

// SpeedBySignal returns the speed whose per-lane signalling rate iblinkinfo
// prints as s ("53.125", "10.0").
func SpeedBySignal(s string) (Speed, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return Speed{}, false
	}
	for _, sp := range Speeds {
		if math.Abs(sp.SignalGbps-v) < 1e-6 {
			return sp, true
		}
	}
	return Speed{}, false
}

// speedCodes are the IBTA PortInfo LinkSpeedActive codes (what
// ibv_devinfo -v prints in parentheses after active_speed).
var speedCodes = map[int]string{1: "SDR", 2: "DDR", 4: "QDR", 8: "FDR10", 16: "FDR", 32: "EDR", 64: "HDR", 128: "NDR", 256: "XDR"}

// SpeedByCode returns the speed of an IBTA LinkSpeedActive code.
func SpeedByCode(code int) (Speed, bool) { return SpeedByName(speedCodes[code]) }

// SpeedRank orders speed names, slowest first from 1; unknown names rank 0.
func SpeedRank(name string) int {
	for i, s := range Speeds {
		if s.Name == name {
			return i + 1
		}
	}
	return 0
}

// LaneGbps is the nominal per-lane rate of a speed name, 0 when unknown.
func LaneGbps(name string) float64 {
	s, _ := SpeedByName(name)
	return s.LaneGbps
}

// Widths are the InfiniBand link widths in lanes.
var Widths = []int{1, 2, 4, 8, 12}

// ParseWidth reads "4X" (or "4x", "4") as a lane count.
func ParseWidth(s string) (int, bool) {
	s = strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "X")
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, false
	}
	for _, w := range Widths {
		if w == n {
			return n, true
		}
	}
	return 0, false
}

// IBRateGbps is the nominal rate of a width and speed ("4X", "HDR" → 200);
// 0 when either is unknown.
func IBRateGbps(width, speed string) float64 {
	w, ok := ParseWidth(width)
	if !ok {
		return 0
	}
	return float64(w) * LaneGbps(speed)
}

// Layer is a link layer, in one vocabulary for every command.
type Layer string

// Link layers. InfiniBand and RoCE are RDMA; TCP is plain sockets over
// Ethernet (or IPoIB).
const (
	InfiniBand Layer = "InfiniBand"
	RoCE       Layer = "RoCE"
	TCP        Layer = "TCP"
)

// ParseLayer reads a link layer as users and tools spell it: IB,
// InfiniBand; RoCE, Ethernet, Eth (what sysfs link_layer says for RoCE);
// TCP.
func ParseLayer(s string) (Layer, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ib", "infiniband":
		return InfiniBand, nil
	case "roce", "rocev2", "ethernet", "eth":
		return RoCE, nil
	case "tcp":
		return TCP, nil
	}
	return "", fmt.Errorf("link layer %q: want InfiniBand (IB), RoCE (Ethernet) or TCP", s)
}

// SysfsLayer maps sysfs link_layer ("InfiniBand", "Ethernet") to a Layer.
func SysfsLayer(s string) (Layer, bool) {
	switch s {
	case "InfiniBand":
		return InfiniBand, true
	case "Ethernet":
		return RoCE, true
	}
	return "", false
}

// Rate is a parsed rate flag.
type Rate struct {
	Gbps float64
	// Width and Speed are set when the rate was given as InfiniBand
	// width and speed ("4X HDR"); Speed also for a bare "HDR" (4X).
	Width int
	Speed string
	// Ethernet is set for "25GbE"-style rates.
	Ethernet bool
}

// String prints the rate the way it was meant: "4X HDR (200 Gb/s)",
// "25GbE", "200 Gb/s".
func (r Rate) String() string {
	switch {
	case r.Speed != "":
		return fmt.Sprintf("%dX %s (%g Gb/s)", r.Width, r.Speed, r.Gbps)
	case r.Ethernet:
		return fmt.Sprintf("%gGbE", r.Gbps)
	}
	return fmt.Sprintf("%g Gb/s", r.Gbps)
}

// ParseRate reads a rate flag in the one syntax every command takes:
// a number of Gb/s ("200", "200G", "200Gb/s", "200 Gbps"), an Ethernet
// rate ("25GbE", "100GbE"), or an InfiniBand width and speed ("4X HDR",
// "HDR" meaning 4X). Zero, negative and unknown values are refused.
func ParseRate(s string) (Rate, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if t == "" {
		return Rate{}, fmt.Errorf("rate %q: empty; want Gb/s (200), Ethernet (25GbE) or width and speed (4X HDR)", s)
	}
	num := strings.TrimSpace(strings.TrimRight(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZ/ "))
	unit := strings.ReplaceAll(strings.TrimSpace(t[len(num):]), " ", "")
	if num != "" {
		v, err := strconv.ParseFloat(num, 64)
		if err == nil {
			switch unit {
			case "", "G", "GB/S", "GBPS", "GBIT/S", "GBIT":
				return positive(s, Rate{Gbps: v})
			case "GBE", "GE", "GIGE":
				return positive(s, Rate{Gbps: v, Ethernet: true})
			case "T", "TB/S", "TBPS":
				return positive(s, Rate{Gbps: v * 1000})
			}
			if unit != "" && !strings.HasPrefix(unit, "X") {
				return Rate{}, fmt.Errorf("rate %q: unknown unit %q; want Gb/s (200), Ethernet (25GbE) or width and speed (4X HDR)", s, unit)
			}
		}
	}
	width, speed := 4, t
	if w, sp, ok := strings.Cut(t, "X"); ok && w != "" {
		n, ok := ParseWidth(w)
		if !ok {
			return Rate{}, fmt.Errorf("rate %q: width %sX is not an InfiniBand width (1X, 2X, 4X, 8X, 12X)", s, w)
		}
		width, speed = n, strings.TrimSpace(sp)
	}
	sp, ok := SpeedByName(speed)
	if !ok {
		return Rate{}, fmt.Errorf("rate %q: want Gb/s (200), Ethernet (25GbE) or width and speed (4X HDR); speeds: SDR DDR QDR FDR10 FDR EDR HDR NDR XDR", s)
	}
	return Rate{Gbps: float64(width) * sp.LaneGbps, Width: width, Speed: sp.Name}, nil
}

func positive(s string, r Rate) (Rate, error) {
	if !(r.Gbps > 0) || math.IsInf(r.Gbps, 0) || r.Gbps > 1e6 {
		return Rate{}, fmt.Errorf("rate %q: must be a positive number of Gb/s", s)
	}
	return r, nil
}
