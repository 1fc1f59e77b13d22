package linkrate

import (
	"fmt"
	"strings"
)

// Expect is what a link is believed to be, and why: the one expectation
// type every rule and command judges against (hostcheck, fabriccheck,
// judge, bench's cluster file, nccl). A zero Rate means no rate is
// expected; an empty Layer, no layer.
type Expect struct {
	Rate  Rate  `json:"rate"`
	Layer Layer `json:"layer,omitempty"`
	// MTUBytes is the path MTU (0: the layer's default).
	MTUBytes int `json:"mtu_bytes,omitempty"`
	// Source says where the belief comes from: "--expect-rate", "cluster
	// file c.yaml", "fleet majority: 3 of 4 hosts". Every verdict quotes it.
	Source string `json:"source,omitempty"`
}

// NewExpect builds an expectation from a rate and a link layer as users
// spell them ("" for none: "200", "4X HDR", "25GbE"; "IB", "RoCE",
// "Ethernet", "TCP"), an MTU (0: default) and where they came from. A
// GbE rate without a layer means RoCE. It is the one place a flag or a
// file's rate and layer become an expectation.
func NewExpect(rate, layer string, mtu int, source string) (Expect, error) {
	e := Expect{MTUBytes: mtu, Source: source}
	if strings.TrimSpace(rate) != "" {
		r, err := ParseRate(rate)
		if err != nil {
			return Expect{}, err
		}
		e.Rate = r
	}
	if strings.TrimSpace(layer) != "" {
		l, err := ParseLayer(layer)
		if err != nil {
			return Expect{}, err
		}
		e.Layer = l
	} else if e.Rate.Ethernet {
		e.Layer = RoCE
	}
	if mtu < 0 {
		return Expect{}, fmt.Errorf("mtu %d: must be positive", mtu)
	}
	return e, nil
}

// HasRate reports whether a rate is expected.
func (e Expect) HasRate() bool { return e.Rate.Gbps > 0 }

// Link is the expectation as a link to compute ceilings with: InfiniBand
// when no layer was given, the layer's default MTU when none was.
func (e Expect) Link() Link {
	l := e.Layer
	if l == "" {
		l = InfiniBand
	}
	mtu := e.MTUBytes
	if mtu == 0 {
		mtu = DefaultMTU(l)
	}
	return Link{Layer: l, RateGbps: e.Rate.Gbps, Speed: e.Rate.Speed, MTUBytes: mtu}
}

// String is the expected rate and where the belief comes from:
// "4X HDR (200 Gb/s) (--expect-rate)".
func (e Expect) String() string {
	s := e.Rate.String()
	if e.Source != "" {
		s += " (" + e.Source + ")"
	}
	return s
}

// Override is e with the rate and link layer given as flags ("" keeps
// e's) in their place, read by NewExpect's rules: a new value, e left as
// it was. A GbE rate without a layer is RoCE; a new layer drops e's MTU,
// which was the old layer's.
func (e Expect) Override(rate, layer, source string) (Expect, error) {
	if strings.TrimSpace(rate) == "" && strings.TrimSpace(layer) == "" {
		return e, nil
	}
	o, err := NewExpect(rate, layer, 0, source)
	if err != nil {
		return Expect{}, err
	}
	out := e
	if o.HasRate() {
		out.Rate, out.Source = o.Rate, source
	} else {
		out.Source = strings.TrimPrefix(e.Source+", "+source, ", ")
	}
	if o.Layer != "" && o.Layer != e.Layer {
		out.Layer, out.MTUBytes = o.Layer, 0
	}
	return out, nil
}
