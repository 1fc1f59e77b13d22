// Package phy is the physical-layer facts of a port as the tools print
// them: BER before and after FEC, symbol errors, the FEC in use and its
// histogram, per-lane errors, link drops, speed and width against what
// the port and cable support, and the module's own readings with the
// module's own thresholds. One reader per format, each a file with a
// Sniff and a Parse: mlxlink/mstlink (text and --json, a JSON cut
// mid-object read as far as it is whole), ethtool -S PHY counters,
// ethtool --show-fec, ethtool -m, and the ibdiagnet summary.
//
// The readers keep what was printed and where; judging is phycheck's.
// Every counter carries its window: what was counted since when
// ("Time Since Last Clear", or since the driver loaded, unknown length).
package phy

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Port is what the tools showed about one port (or netdev).
type Port struct {
	// Host is set when the output names it (a prompt, a capture tree).
	Host string `json:"host,omitempty"`
	// Device is the RDMA or mst device (mlx5_0, mt4119_pciconf0); Port its
	// port number (0: not shown). Netdev is the interface, when shown.
	Device string `json:"device,omitempty"`
	Port   int    `json:"port,omitempty"`
	Netdev string `json:"netdev,omitempty"`
	// Tool is the format read ("mlxlink", "ethtool -S", …); Source the
	// file and line the facts came from.
	Tool   string `json:"tool"`
	Source string `json:"source,omitempty"`

	// State and PhysState are the logical and physical state as printed.
	State     string `json:"state,omitempty"`
	PhysState string `json:"phys_state,omitempty"`
	// Speed is the operating speed as printed ("400G", "IB-EDR", "100GbE");
	// Width the active lane count (0: not shown).
	Speed string `json:"speed,omitempty"`
	Width int    `json:"width,omitempty"`
	// Enabled and Cable are the speeds the port is enabled for and the
	// cable supports, as the tool names them ("400G_4X", "NDR", "100G").
	Enabled []string `json:"enabled_speeds,omitempty"`
	Cable   []string `json:"cable_speeds,omitempty"`

	FEC       *FEC       `json:"fec,omitempty"`
	Counters  *Counters  `json:"counters,omitempty"`
	Histogram *Histogram `json:"fec_histogram,omitempty"`
	Module    *Module    `json:"module,omitempty"`

	// StatusOpcode and Recommendation are mlxlink's Troubleshooting Info.
	StatusOpcode   string `json:"status_opcode,omitempty"`
	Recommendation string `json:"recommendation,omitempty"`

	// Cut names what the output lost (a JSON cut mid-object: the path of
	// the object it stopped in); what is whole before it is kept.
	Cut string `json:"cut,omitempty"`
	// Skipped lists the lines not read (prompts, annotations), by number.
	Skipped []string `json:"skipped,omitempty"`
}

// Name is how a finding names the port: "mlx5_0 port 1", "enp1s0f1np1",
// "mt4119_pciconf0 port 1".
func (p Port) Name() string {
	var s string
	switch {
	case p.Device != "" && p.Port > 0:
		s = fmt.Sprintf("%s port %d", p.Device, p.Port)
	case p.Device != "":
		s = p.Device
	case p.Netdev != "":
		return p.Netdev
	default:
		return "port not named in the output"
	}
	if p.Netdev != "" {
		s += " (" + p.Netdev + ")"
	}
	return s
}

// FEC is the forward error correction of a port.
type FEC struct {
	// Active is the mode as printed ("Standard_RS-FEC - (544,514)", "RS",
	// "No FEC", "Off"); Kind what it is.
	Active string  `json:"active"`
	Kind   FECKind `json:"kind"`
	// Configured and Supported are ethtool --show-fec's lists.
	Configured []string `json:"configured,omitempty"`
	Supported  []string `json:"supported,omitempty"`
}

// FECKind classifies a FEC mode.
type FECKind string

// FEC kinds. KP4 is RS(544,514), KR4 RS(528,514); RS is a Reed-Solomon
// code whose parameters the output does not give; LL is the low-latency
// RS(272,257+1) of InfiniBand NDR; FC is Fire Code (BaseR).
const (
	FECUnknown FECKind = ""
	FECNone    FECKind = "none"
	FECKP4     FECKind = "RS(544,514)"
	FECKR4     FECKind = "RS(528,514)"
	FECLL      FECKind = "RS(272,257+1)"
	FECRS      FECKind = "RS"
	FECFC      FECKind = "FC"
	FECAuto    FECKind = "auto"
)

// ClassifyFEC reads a FEC mode however the tools spell it.
func ClassifyFEC(s string) FECKind {
	t := strings.ToUpper(strings.Join(strings.Fields(s), ""))
	switch {
	case t == "":
		return FECUnknown
	case strings.Contains(t, "NOFEC"), t == "OFF", t == "NONE":
		return FECNone
	case strings.Contains(t, "544"):
		return FECKP4
	case strings.Contains(t, "528"):
		return FECKR4
	case strings.Contains(t, "272"):
		return FECLL
	case strings.Contains(t, "RS"):
		return FECRS
	case strings.Contains(t, "BASER"), strings.Contains(t, "FIRECODE"), strings.Contains(t, "FC-FEC"), t == "FC":
		return FECFC
	case t == "AUTO":
		return FECAuto
	}
	return FECUnknown
}

// Counters are a port's error counters and the window they cover.
type Counters struct {
	// WindowMin is "Time Since Last Clear [Min]" (nil: not shown).
	WindowMin *float64 `json:"window_min,omitempty"`
	// Window says in words what the counters cover ("1715.4 min since
	// the counters were last cleared", "since the driver loaded or the
	// port reset (length not in the output)").
	Window string `json:"window"`

	// Effective are errors left after FEC; EffectiveBER their BER.
	Effective    *uint64 `json:"effective_errors,omitempty"`
	EffectiveBER *BER    `json:"effective_ber,omitempty"`
	// RawBER and RawBERLane are before FEC; RawLane raw errors per lane.
	RawBER     *BER     `json:"raw_ber,omitempty"`
	RawBERLane []BER    `json:"raw_ber_lane,omitempty"`
	RawLane    []uint64 `json:"raw_errors_lane,omitempty"`
	// RawLaneName is what the tool calls the per-lane counter.
	RawLaneName string `json:"raw_errors_lane_name,omitempty"`
	// Symbol are symbol errors (IB: after FEC; ethtool rx_pcs_symbol_err_phy:
	// not corrected by FEC); SymbolBER their BER.
	Symbol     *uint64 `json:"symbol_errors,omitempty"`
	SymbolName string  `json:"symbol_errors_name,omitempty"`
	SymbolBER  *BER    `json:"symbol_ber,omitempty"`
	// CorrectedBits are bits the FEC corrected.
	CorrectedBits *uint64 `json:"corrected_bits,omitempty"`
	// ReceivedBits are the bits the window counted (mlxlink "PHY Received
	// Bits", mlx5 rx_bits_phy): the BER's denominator when shown.
	ReceivedBits *uint64 `json:"received_bits,omitempty"`
	// CorrectedBlocks and Uncorrectable are FEC blocks (codewords).
	CorrectedBlocks *uint64 `json:"corrected_blocks,omitempty"`
	Uncorrectable   *uint64 `json:"uncorrectable_blocks,omitempty"`
	// LinkDown and Recovery are link drops and retrain events.
	LinkDown *uint64 `json:"link_down,omitempty"`
	Recovery *uint64 `json:"link_recovery,omitempty"`
}

// WindowUnknown is the window of counters that run since the driver
// loaded: cumulative, of a length the output does not give.
const WindowUnknown = "since the driver loaded or the port was reset (length not in the output)"

// BER is a bit error rate as the tool printed it.
type BER struct {
	Text  string  `json:"text"`
	Value float64 `json:"value"`
	// NoErrors is MFT's 15E-255: no errors counted (below resolution),
	// never a number to compute with.
	NoErrors bool `json:"no_errors,omitempty"`
}

// ParseBER reads "5E-10", "1.5e-12", "15E-255" (no errors), "0".
func ParseBER(s string) (BER, bool) {
	t := strings.TrimSpace(s)
	if t == "" || strings.EqualFold(t, "N/A") {
		return BER{}, false
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return BER{}, false
	}
	// MFT prints 15E-255 when the error count is 0; anything that far
	// below any physical resolution is the same statement.
	return BER{Text: t, Value: v, NoErrors: v == 0 || v < 1e-100}, true
}

// Histogram is mlxlink's "Histogram of FEC Errors": codewords by the
// number of symbols the FEC corrected in them.
type Histogram struct {
	Bins []Bin `json:"bins"`
}

// Bin is one histogram bin: codewords with Lo..Hi corrected symbols.
type Bin struct {
	Lo    int    `json:"lo"`
	Hi    int    `json:"hi"`
	Count uint64 `json:"count"`
}

// Highest is the highest bin with a non-zero count (-1: none).
func (h Histogram) Highest() int {
	hi := -1
	for _, b := range h.Bins {
		if b.Count > 0 && b.Hi > hi {
			hi = b.Hi
		}
	}
	return hi
}

// Module is a cable or transceiver's identity, readings and thresholds.
type Module struct {
	Identifier string `json:"identifier,omitempty"`
	CableType  string `json:"cable_type,omitempty"`
	Vendor     string `json:"vendor,omitempty"`
	PartNumber string `json:"part_number,omitempty"`
	Serial     string `json:"serial,omitempty"`
	// Passive is a passive copper cable: no laser, no receiver, no CDR, so
	// no DDM and no meaningful LOS/LOL flags.
	Passive bool `json:"passive,omitempty"`
	// Readings are the DDM values (per lane where the module has lanes).
	Readings []Reading `json:"readings,omitempty"`
	// Thresholds are the module's own limits by quantity.
	Thresholds map[Quantity]Thresholds `json:"thresholds,omitempty"`
	// Flags are per-lane alarm bits as printed (LOS, LOL, faults).
	Flags []Flag `json:"flags,omitempty"`
	// LowPower is set when the output shows whether the host holds the
	// module in low-power mode (SFF-8636 Power set / Power override).
	LowPower *bool `json:"low_power,omitempty"`
	// PowerLine is the evidence for LowPower, as printed.
	PowerLine string `json:"power_line,omitempty"`
	// Elided is set when the author cut the listing (" ..." lines).
	Elided bool `json:"elided,omitempty"`
}

// Quantity is what a module reading measures.
type Quantity string

// Module quantities.
const (
	Temperature Quantity = "temperature"
	Voltage     Quantity = "voltage"
	Bias        Quantity = "bias current"
	TxPower     Quantity = "tx power"
	RxPower     Quantity = "rx power"
)

// Reading is one DDM value.
type Reading struct {
	Quantity Quantity `json:"quantity"`
	// Lane counts from 1 as ethtool's channels do; 0 for module-wide.
	Lane  int     `json:"lane,omitempty"`
	Value float64 `json:"value"` // may be -Inf (0 mW in dBm)
	Unit  string  `json:"unit"`
	Text  string  `json:"text"`
}

// readingJSON is a Reading as JSON: JSON has no -Inf, so a power of 0 mW
// (-inf dBm) is value null with no_light set, and reads back as -Inf.
type readingJSON struct {
	Quantity Quantity `json:"quantity"`
	Lane     int      `json:"lane,omitempty"`
	Value    *float64 `json:"value"`
	NoLight  bool     `json:"no_light,omitempty"`
	Unit     string   `json:"unit"`
	Text     string   `json:"text"`
}

// MarshalJSON writes a non-finite value as null (no_light for -Inf).
func (r Reading) MarshalJSON() ([]byte, error) {
	j := readingJSON{Quantity: r.Quantity, Lane: r.Lane, Unit: r.Unit, Text: r.Text}
	switch {
	case math.IsInf(r.Value, -1):
		j.NoLight = true
	case !math.IsNaN(r.Value) && !math.IsInf(r.Value, 0):
		j.Value = &r.Value
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (r *Reading) UnmarshalJSON(b []byte) error {
	var j readingJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Reading{Quantity: j.Quantity, Lane: j.Lane, Unit: j.Unit, Text: j.Text, Value: math.NaN()}
	switch {
	case j.Value != nil:
		r.Value = *j.Value
	case j.NoLight:
		r.Value = math.Inf(-1)
	}
	return nil
}

// Thresholds are a module's limits for one quantity, in the reading's
// unit. Level says what they are: "alarm and warning" (ethtool -m), or
// "range" (mlxlink's [lo..hi], whose level mlxlink does not state).
type Thresholds struct {
	AlarmLo *float64 `json:"alarm_lo,omitempty"`
	AlarmHi *float64 `json:"alarm_hi,omitempty"`
	WarnLo  *float64 `json:"warn_lo,omitempty"`
	WarnHi  *float64 `json:"warn_hi,omitempty"`
	Level   string   `json:"level"`
	Text    string   `json:"text"`
}

// Flag is a per-lane module status bit.
type Flag struct {
	Name  string `json:"name"` // "Rx LOS", "Tx Fault"
	Lanes []bool `json:"lanes"`
	Text  string `json:"text"`
}

// Set lists the lanes (from 0) whose flag is set.
func (f Flag) Set() []int {
	var out []int
	for i, v := range f.Lanes {
		if v {
			out = append(out, i)
		}
	}
	return out
}

func u64(v uint64) *uint64   { return &v }
func f64(v float64) *float64 { return &v }

// parseCount reads a counter value (digits, perhaps with separators).
func parseCount(s string) (uint64, bool) {
	t := strings.ReplaceAll(strings.TrimSpace(s), ",", "")
	v, err := strconv.ParseUint(t, 10, 64)
	return v, err == nil
}

// splitList splits a comma list "26711,0,0,9108" or "3065, 3367".
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(f))
	}
	return out
}
