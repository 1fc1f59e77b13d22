package design

import (
	"fmt"

	"github.com/rdmalab/rdmalab/internal/linkrate"
)

// TransferOptions are the flags of `design transfer`, as given.
type TransferOptions struct {
	Size string // "280GB"
	Rate string // per link, in linkrate.ParseRate's syntax: "25GbE", "100", "4X HDR"
	// Links is how many NICs (or LAG members) the transfer may use; Streams
	// how many parallel flows it opens. One flow uses one link: per-flow
	// hashing never splits a flow.
	Links   int
	Streams int
	// Efficiency is the share of the line rate that is payload; 0 derives
	// it from the protocol headers at MTUBytes (TCP over Ethernet,
	// InfiniBand for an IB rate).
	Efficiency float64
	MTUBytes   int // 0: 9000 on Ethernet (a data fabric's MTU), 4096 on InfiniBand
}

// Transfer is how long moving Size over the links takes.
type Transfer struct {
	Calculator string        `json:"calculator"` // "transfer"
	Size       Size          `json:"size"`
	Rate       string        `json:"rate"`
	Link       linkrate.Link `json:"link"`
	Links      int           `json:"links"`
	Streams    int           `json:"streams"`
	// UsedLinks is min(streams, links): the links the flows land on.
	UsedLinks int `json:"used_links"`
	// EfficiencyShare is payload / line rate; EfficiencySource says where
	// it came from.
	EfficiencyShare  float64  `json:"efficiency"`
	EfficiencySource string   `json:"efficiency_source"`
	UsableGbps       float64  `json:"usable_gbps"`
	LineRateSeconds  float64  `json:"line_rate_seconds"`
	Seconds          float64  `json:"seconds"`
	Figures          []Figure `json:"figures"`
	Notes            []string `json:"notes,omitempty"`
}

// PlanTransfer works out the transfer time.
func PlanTransfer(o TransferOptions) (*Transfer, error) {
	size, err := ParseSize(o.Size)
	if err != nil {
		return nil, &InputError{Flag: "--size", Err: err}
	}
	rate, err := linkrate.ParseRate(o.Rate)
	if err != nil {
		return nil, &InputError{Flag: "--rate", Err: err}
	}
	if o.Links < 1 || o.Links > 64 {
		return nil, inputErr("--links", "%d: want 1 to 64 links (NICs or LAG members)", o.Links)
	}
	if o.Streams < 1 || o.Streams > 4096 {
		return nil, inputErr("--streams", "%d: want 1 to 4096 parallel streams", o.Streams)
	}
	if o.Efficiency < 0 || o.Efficiency > 1 {
		return nil, inputErr("--efficiency", "%g: want a share of the line rate above 0 and at most 1 (0.9 = 90%%)", o.Efficiency)
	}
	link := linkrate.Link{Layer: linkrate.TCP, RateGbps: rate.Gbps, MTUBytes: o.MTUBytes}
	if rate.Speed != "" {
		link.Layer, link.Speed = linkrate.InfiniBand, rate.Speed
	}
	if link.MTUBytes == 0 {
		link.MTUBytes = 9000
		if link.Layer == linkrate.InfiniBand {
			link.MTUBytes = 4096
		}
	}
	if link.MTUBytes < 576 || link.MTUBytes > 65536 {
		return nil, inputErr("--mtu", "%d: want an MTU from 576 to 65536 bytes", link.MTUBytes)
	}
	t := &Transfer{Calculator: "transfer", Size: size, Rate: rate.String(), Link: link, Links: o.Links, Streams: o.Streams,
		UsedLinks: min(o.Links, o.Streams), EfficiencyShare: o.Efficiency, EfficiencySource: "--efficiency"}
	if o.Efficiency == 0 {
		t.EfficiencyShare = link.CeilingGbps() / rate.Gbps
		t.EfficiencySource = "payload share of " + link.Describe() + ": " + payloadWorking(link)
	}
	bits := size.Bytes * 8
	t.LineRateSeconds = bits / (rate.Gbps * 1e9)
	t.UsableGbps = float64(t.UsedLinks) * rate.Gbps * t.EfficiencyShare
	t.Seconds = bits / (t.UsableGbps * 1e9)
	gb := size.Bytes / 1e9
	t.Figures = []Figure{
		figure("line-rate time (one link)", t.LineRateSeconds, "s", "size × 8 / rate",
			fmt.Sprintf("%s GB × 8 / %s Gb/s", num(gb), num(rate.Gbps))),
		figure("links used", float64(t.UsedLinks), "", "min(streams, links): one flow rides one link",
			fmt.Sprintf("min(%d, %d)", o.Streams, o.Links)),
		figure("efficiency", t.EfficiencyShare, "", "payload / line rate", t.EfficiencySource),
		figure("usable rate", t.UsableGbps, "Gb/s", "links used × rate × efficiency",
			fmt.Sprintf("%d × %s Gb/s × %s", t.UsedLinks, num(rate.Gbps), num(t.EfficiencyShare))),
		figure("expected time", t.Seconds, "s", "size × 8 / usable rate",
			fmt.Sprintf("%s GB × 8 / %s Gb/s", num(gb), num(t.UsableGbps))),
	}
	if o.Streams < o.Links {
		t.Notes = append(t.Notes, fmt.Sprintf("%d stream(s) over %d links: a flow uses one link, so %d link(s) sit idle; open at least %d parallel streams (DALI, WebDataset and MosaicML Streaming do) to use them all",
			o.Streams, o.Links, o.Links-o.Streams, o.Links))
	}
	if o.Efficiency == 0 {
		t.Notes = append(t.Notes, "the efficiency counts protocol headers only; a storage target or a single slow TCP stream can be the real limit: measure with 'rdmalab bench --engine tcp'")
	}
	return t, nil
}

// payloadWorking spells out the header arithmetic linkrate.Link does, with
// linkrate's own constants.
func payloadWorking(l linkrate.Link) string {
	if l.Layer == linkrate.InfiniBand {
		enc := l.WireGbps() / l.RateGbps
		return fmt.Sprintf("encoding %s × %d / (%d + %d header bytes)", num(enc), l.MTUBytes, l.MTUBytes, linkrate.IBHeaderBytes)
	}
	return fmt.Sprintf("(%d − %d IP+TCP header bytes) / (%d + %d Ethernet framing bytes)",
		l.MTUBytes, linkrate.TCPIPHeaderBytes, l.MTUBytes, linkrate.EthernetWireBytes)
}
