// Package phycheck judges physical-layer facts (internal/phy) against
// published limits: post-FEC BER, FEC correction capability, the
// module's own thresholds. Every finding states the limit, its source
// and the window the counters cover; a BER over a window too short to
// reach the limit's resolution is not called a pass. Pure functions: no
// reading, no printing.
package phycheck

import "github.com/rdmalab/rdmalab/internal/check"

// Check ids.
const (
	IDEffectiveBER  = "phy.ber.effective"
	IDRawBER        = "phy.ber.raw"
	IDUncorrectable = "phy.fec.uncorrectable"
	IDHistogram     = "phy.fec.histogram"
	IDFECMode       = "phy.fec.mode"
	IDLane          = "phy.lane.errors"
	IDLinkState     = "phy.link.state"
	IDLinkDown      = "phy.link.down"
	IDLinkSpeed     = "phy.link.speed"
	IDModuleDDM     = "phy.module.ddm"
	IDModuleReading = "phy.module.reading"
	IDModuleFlags   = "phy.module.flags"
	IDModulePower   = "phy.module.power"
	IDTrouble       = "phy.troubleshooting"
	IDCut           = "phy.output.cut"
	IDIBDiagStage   = "phy.ibdiagnet.stage"
)

// Published limits (shared/docs/FORMATS-NEXT.md §8 and its sources).
const (
	// EffectiveBERLimit is the post-FEC BER target: FEC1 (after-FEC
	// target of RS(544,514)), ID1 (ibdiagnet --ber_test default 1e-12).
	EffectiveBERLimit = 1e-12
	// KP4InputBER is RS(544,514)'s pre-FEC design input, about 2.4e-4
	// (IEEE 802.3bs/cd design point as quoted by secondary sources ⚠).
	KP4InputBER = 2.4e-4
	// zeroErrorFactor: zero errors in N bits bound the BER below 3/N at
	// 95% confidence (the rule of three), so showing BER < 1e-12 with no
	// errors needs at least 3e12 bits counted.
	zeroErrorFactor = 3.0
)

const (
	srcBER     = "FORMATS-NEXT.md §8: post-FEC BER below 1e-12 (FEC1: Intel AN 846 RS(544,514) after-FEC target; ID1: ibdiagnet --ber_test default 1e-12)"
	srcKP4     = "FORMATS-NEXT.md §8: RS(544,514) pre-FEC design input about 2.4e-4 (IEEE 802.3bs/cd design point via secondary sources ⚠)"
	srcFECCap  = "FORMATS-NEXT.md §8: RS(544,514) corrects up to 15 symbols per codeword (FEC1, FEC2); RS(528,514) up to 7 ⚠"
	srcModule  = "FORMATS-NEXT.md §8: the module's own alarm/warning thresholds (ethtool -m threshold lines, mlxlink [lo..hi]), used only when self-consistent (ET)"
	srcWindow  = "MFT: every mlxlink counter's window is Time Since Last Clear; mlx5 ethtool -S counters run since the driver loaded (K17, KS)"
	srcIBDiag  = "ibdiagnet's own stage counts (ID1); legacy ibdiagnet 1.x prints Errors before Warnings, ibdiagnet2 the reverse"
	srcRSFEC   = "IEEE 802.3 (50G-per-lane PAM4 PHYs use RS(544,514)) and InfiniBand HDR and later (PAM4 with RS-FEC; internal/linkrate)"
	srcSupport = "mlxlink Supported Info: Enabled Link Speed and Supported Cable Speed (MFT; FORMATS-NEXT.md §1.4)"
)

// The physical-layer checks: each is a rule's catalog entry;
// the rule reports through a reporter bound to it (entry.Reporter(host)).
var (
	CheckEffectiveBER = check.Entry{ID: IDEffectiveBER, Title: "BER after FEC below 1e-12 over a window long enough to show it",
		Why:         "errors left after FEC are lost frames and retransmissions: the link-quality figure. Zero errors prove BER < 1e-12 only once the window holds enough bits (3e12 for 95% confidence); a BER over a few minutes of counters is not a BER.",
		Source:      srcBER + "; " + srcWindow,
		Fixes:       []string{"mlxlink -d <dev> [-p <port>] -c (read again after the window grows; --clear_counters starts a new window)", "reseat or replace the cable or module"},
		Needs:       "effective (post-FEC) errors or BER, the window (Time Since Last Clear) and the operating speed and width",
		UnknownWhen: "no errors were counted but the window or speed is not in the output, or the window holds fewer than 3e12 bits"}
	CheckRawBER = check.Entry{ID: IDRawBER, Title: "raw (pre-FEC) BER well inside what the FEC corrects",
		Why:         "PAM4 links always have pre-FEC errors; the FEC is sized for a raw BER of about 2.4e-4 (RS(544,514)). At or above it, codewords start to fail.",
		Source:      srcKP4,
		Fixes:       []string{"mlxlink -d <dev> [-p <port>] -c -e (per-lane raw BER and eye)", "clean or replace the optics; replace the cable"},
		Needs:       "Raw Physical BER (and per lane) with an RS(544,514) FEC active",
		UnknownWhen: "never: without RS(544,514) or a raw BER the rule does not apply (no published limit for other FEC kinds is used)"}
	CheckUncorrectable = check.Entry{ID: IDUncorrectable, Title: "no uncorrectable FEC blocks, no symbol errors past the FEC",
		Why:         "an uncorrectable codeword is a lost frame: more errors arrived than the FEC could fix (rx_pcs_symbol_err_phy, uncorrectable_blocks).",
		Source:      srcFECCap + "; K17 (rx_pcs_symbol_err_phy: not corrected by FEC)",
		Fixes:       []string{"ethtool -S <if> | grep -E 'symbol_err|corrected|lane' twice a minute apart: rising is a live fault", "reseat or replace the cable or module"},
		Needs:       "uncorrectable_blocks (ethtool -I --show-fec) or rx_pcs_symbol_err_phy (ethtool -S) or IB Symbol Errors (mlxlink)",
		UnknownWhen: "an ethtool -S output shows PHY counters but not rx_pcs_symbol_err_phy (a grep or the author dropped it, or the NIC lacks the counter group); other outputs without these counters get no finding"}
	CheckHistogram = check.Entry{ID: IDHistogram, Title: "FEC histogram: the worst codeword within the correction limit",
		Why:         "the highest non-zero bin shows how close the worst codeword came to what the FEC corrects (15 symbols for RS(544,514)); a count above the limit is an uncorrectable codeword.",
		Source:      srcFECCap + "; MF3 (Histogram of FEC Errors)",
		Fixes:       []string{"mlxlink -d <dev> [-p <port>] --rx_fec_histogram --show_histogram (again after --clear_histogram)", "replace the cable or module"},
		Needs:       "mlxlink's Histogram of FEC Errors and the active FEC",
		UnknownWhen: "the FEC's correction limit is not known (an RS code of unstated parameters)"}
	CheckFECMode = check.Entry{ID: IDFECMode, Title: "RS-FEC active on a speed that needs it",
		Why:         "PAM4 lanes (50G per lane Ethernet and up, InfiniBand HDR and later) run with RS-FEC by design; without it the raw BER is the link's BER.",
		Source:      srcRSFEC,
		Fixes:       []string{"ethtool --set-fec <if> encoding rs (both ends)", "mlxconfig/mlxlink --fec on the IB port per the vendor's guide"},
		Needs:       "the active FEC and the operating speed and width",
		UnknownWhen: "FEC is off and the output does not show the speed (ethtool --show-fec alone)"}
	CheckLane = check.Entry{ID: IDLane, Title: "no lane far above the others",
		Why:         "errors concentrated on one lane point at one fibre, one conductor pair or one serdes: the cable or module, rarely the port. A lane with ten times the port's median lane count is named.",
		Source:      "mlxlink Raw Physical Errors Per Lane (MF1); mlx5 rx_err_lane_<N>_phy (K17)",
		Fixes:       []string{"reseat the cable; swap it with a known-good one: the lane's errors follow the cable or stay with the port"},
		Needs:       "per-lane raw error counts (or per-lane raw BER) of at least two lanes",
		UnknownWhen: "never: without per-lane counters the rule does not apply"}
	CheckLinkState = check.Entry{ID: IDLinkState, Title: "the port is up (Active, link up)",
		Why:    "a port in Polling has no partner (cable, module or peer); Disabled was turned off.",
		Source: "mlxlink Operational Info (State, Physical state)",
		Fixes:  []string{"mlxlink -d <dev> [-p <port>] -m (module present? LOS per lane)", "check the cable at both ends"},
		Needs:  "mlxlink's Operational Info", UnknownWhen: "never: without it the rule does not apply"}
	CheckLinkDown = check.Entry{ID: IDLinkDown, Title: "no link drops or retrains in the window",
		Why:    "each link-down drops every connection over the port; error-recovery retrains stall traffic. Either in the window is a marginal link.",
		Source: "mlxlink Link Down Counter, Link Error Recovery Counter; mlx5 link_down_events_phy (K17); " + srcWindow,
		Fixes:  []string{"mlxlink -d <dev> [-p <port>] -c after --clear_counters: still rising = replace the cable or module"},
		Needs:  "the link-down or recovery counters", UnknownWhen: "never: without them the rule does not apply"}
	CheckLinkSpeed = check.Entry{ID: IDLinkSpeed, Title: "the link runs at the fastest speed both the port and the cable support",
		Why:         "a link that trained below what the port is enabled for and the cable supports has downshifted: a marginal cable, a dirty connector, or a peer limited lower.",
		Source:      srcSupport,
		Fixes:       []string{"mlxlink -d <dev> [-p <port>] (peer's enabled speeds, cable's supported speeds)", "reseat or replace the cable"},
		Needs:       "the operating speed and the enabled and cable speed lists",
		UnknownWhen: "a list was cut from the output (named), or the speed names are not ones rdmalab knows"}
	CheckModuleDDM = check.Entry{ID: IDModuleDDM, Title: "module readings inside the module's own thresholds",
		Why:         "temperature, supply voltage, laser bias and Tx/Rx optical power outside what the module itself declares are its own alarm (fail) or warning (warn): failing lasers, dirty fibre, overheating cage.",
		Source:      srcModule,
		Fixes:       []string{"clean the connector and the fibre; reseat the module", "replace the module (Rx low: check the far end's Tx first)"},
		Needs:       "the readings and the module's thresholds (ethtool -m threshold lines, mlxlink [lo..hi])",
		UnknownWhen: "the module's thresholds are not in the output (elided, not implemented), so readings cannot be judged"}
	CheckModuleReading = check.Entry{ID: IDModuleReading, Title: "module readings and thresholds are physical and self-consistent",
		Why:    "-inf dBm (0 mW), an impossible temperature, or thresholds out of order (low alarm above high alarm) are reading errors of the module or its decoder, not alarms: the readings are not judged against such thresholds.",
		Source: srcModule + "; FORMATS-NEXT.md §2.3 (threshold pitfalls, -inf dBm)",
		Fixes:  []string{"read the module again (ethtool -m <if>, mlxlink -m); update ethtool; if it persists, replace the module"},
		Needs:  "the module's readings or thresholds", UnknownWhen: "never: without them the rule does not apply"}
	CheckModuleFlags = check.Entry{ID: IDModuleFlags, Title: "no module fault, loss-of-signal or alarm flags",
		Why:         "Tx fault and the module's alarm flags are its own verdict; LOS/LOL on a port that is down is no light or no lock on that lane. Flags are latched: set while the link is up they record a past event.",
		Source:      "mlxlink Module Info per-lane flags (MF4); ethtool -m alarm/warning flags (ET)",
		Fixes:       []string{"clean and reseat; swap the module; check the far end's Tx"},
		Needs:       "the module's flags (and the port state, to tell a latched flag from a live one)",
		UnknownWhen: "never: without flags the rule does not apply"}
	CheckModulePower = check.Entry{ID: IDModulePower, Title: "the module is not held in low-power mode",
		Why:    "an SFF-8636 module the host holds in low-power mode (Power override On, Power set On) does not transmit.",
		Source: "FORMATS-NEXT.md §2.3 (SFF-8636 byte 93, ethtool --set-module)",
		Fixes:  []string{"ethtool --set-module <if> power-mode-policy high"},
		Needs:  "ethtool -m's Power set and Power override lines", UnknownWhen: "Power override Off: the LPMode pin decides, and it is not in the output"}
	CheckTrouble = check.Entry{ID: IDTrouble, Title: "mlxlink's troubleshooting status is clear",
		Why:    "firmware's own diagnosis (Status Opcode, Recommendation) names faults such as a bad cable or a speed mismatch.",
		Source: "mlxlink Troubleshooting Info (MFT)",
		Fixes:  []string{"follow mlxlink's Recommendation"},
		Needs:  "Troubleshooting Info", UnknownWhen: "never: without it the rule does not apply"}
	CheckCut = check.Entry{ID: IDCut, Title: "the output is whole",
		Why:    "an excerpt cut mid-section: what is whole is judged, and what was cut is named so its facts are not taken as absent.",
		Source: "the output itself",
		Fixes:  []string{"save the whole output (mlxlink ... --json > file)"},
		Needs:  "the output", UnknownWhen: "always unknown when the output was cut: the cut part's facts are not in the file"}
	CheckIBDiagStage = check.Entry{ID: IDIBDiagStage, Title: "ibdiagnet stages without errors or warnings",
		Why:         "ibdiagnet's stages (discovery, links, speeds and widths, counters, partitions, IPoIB) count what they found; errors fail, warnings warn, with the messages printed under the stage.",
		Source:      srcIBDiag,
		Fixes:       []string{"read the stage's -E-/-W- lines in the ibdiagnet log"},
		Needs:       "the stages table (Stages Status Report, or ibdiagnet2's Stage/Warnings/Errors rows)",
		UnknownWhen: "never: each stage's counts are in the table"}
)

// Catalog lists every physical-layer check.
var Catalog = []check.Entry{
	CheckEffectiveBER,
	CheckRawBER,
	CheckUncorrectable,
	CheckHistogram,
	CheckFECMode,
	CheckLane,
	CheckLinkState,
	CheckLinkDown,
	CheckLinkSpeed,
	CheckModuleDDM,
	CheckModuleReading,
	CheckModuleFlags,
	CheckModulePower,
	CheckTrouble,
	CheckCut,
	CheckIBDiagStage,
}
