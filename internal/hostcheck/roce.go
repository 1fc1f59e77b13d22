package hostcheck

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// ifName is the netdev for a fix command, a placeholder when the source
// did not name it.
func ifName(q host.RoCEQoS) string {
	if q.Netdev == "" {
		return "<if>"
	}
	return q.Netdev
}

// roceSubject names a RoCE QoS entry: its RDMA port and netdev when both
// are known.
func roceSubject(q host.RoCEQoS) string {
	nd := q.Netdev
	if nd == "" {
		nd = "interface not named in the output"
	}
	if q.Device != "" {
		return portSubject(q.Device, q.Port) + " (" + nd + ")"
	}
	return nd
}

// roceEntries lists the QoS entries doctor judges: those of active RoCE
// ports, and those with no port at all (judged saved outputs).
func roceEntries(s *host.Snapshot) []host.RoCEQoS {
	var out []host.RoCEQoS
	for _, q := range s.RoCE {
		if q.Device == "" {
			out = append(out, q)
			continue
		}
		d := s.RDMA(q.Device)
		if d == nil && len(s.RDMADevices) == 0 {
			// A saved output (judge) names the device but shows no port
			// state: judged as shown, its fixes naming the device.
			out = append(out, q)
			continue
		}
		if d != nil {
			for _, p := range d.Ports {
				if p.Port == q.Port && p.State == portstate.Active {
					out = append(out, q)
				}
			}
		}
	}
	return out
}

// trafficDSCP is the DSCP RoCE traffic carries and why: the forced
// traffic class, else DSCP 0 (NCCL's NCCL_IB_TC default; rdma_cm's
// default_roce_tos does not reach NCCL, which does not use rdma_cm).
func trafficDSCP(q host.RoCEQoS) (dscp int, why string, e []check.Evidence, known bool) {
	if q.DefaultRoCETos != nil {
		e = append(e, ev("default_roce_tos (rdma_cm connections only; NCCL does not use rdma_cm)", strconv.Itoa(q.DefaultRoCETos.Value), q.DefaultRoCETos.Source))
	}
	if q.TrafficClass == nil {
		return 0, "", e, false
	}
	if tc := q.TrafficClass.Value; tc >= 0 {
		e = append(e, ev("traffic_class", strconv.Itoa(tc), q.TrafficClass.Source))
		return tc >> 2, fmt.Sprintf("traffic_class %d → DSCP %d", tc, tc>>2), e, true
	}
	e = append(e, ev("traffic_class", "not forced", q.TrafficClass.Source), ev("NCCL_IB_TC", "unset (default −1: NCCL leaves the traffic class 0)", "RDMA reference §4.4 (net_ib/connect.cc)"))
	return 0, "traffic_class not forced, NCCL_IB_TC unset → DSCP 0", e, true
}

func ecnOn(q host.RoCEQoS, prio int) (on, known bool) {
	if q.ECNNotify == nil || q.ECNReact == nil {
		return false, false
	}
	return slices.Contains(q.ECNNotify.Value, prio) && slices.Contains(q.ECNReact.Value, prio), true
}

func prioList(ps []int) string {
	if len(ps) == 0 {
		return "none"
	}
	var s []string
	for _, p := range ps {
		s = append(s, strconv.Itoa(p))
	}
	return strings.Join(s, ",")
}

// pfcFlags spells PFC priorities as mlnx_qos --pfc wants them.
func pfcFlags(ps []int) string {
	f := make([]string, 8)
	for i := range f {
		f[i] = "0"
		if slices.Contains(ps, i) {
			f[i] = "1"
		}
	}
	return strings.Join(f, ",")
}

func qosEvidence(q host.RoCEQoS) []check.Evidence {
	var e []check.Evidence
	if q.Trust != nil {
		e = append(e, ev("trust", q.Trust.Value, q.Trust.Source))
	}
	if q.PFC != nil {
		e = append(e, ev("PFC priorities", prioList(q.PFC.Value), q.PFC.Source))
	}
	if q.ECNNotify != nil && q.ECNReact != nil {
		e = append(e, ev("ECN priorities (np / rp)", prioList(q.ECNNotify.Value)+" / "+prioList(q.ECNReact.Value), q.ECNNotify.Source+", "+q.ECNReact.Source))
	}
	if len(q.Skipped) > 0 {
		e = append(e, ev("skipped (not the format)", strings.Join(q.Skipped, "; "), "the saved output"))
	}
	return e
}

func roceQoSPath(rep *check.Reporter, s *host.Snapshot, o Options) {
	for _, q := range roceEntries(s) {
		sub := roceSubject(q)
		dscp, dscpWhy, e, dscpKnown := trafficDSCP(q)
		e = append(e, qosEvidence(q)...)
		fix := func(f *check.Finding, lossless int) {
			nd := ifName(q)
			f.Fix = []string{"mlnx_qos -i " + nd + " --trust dscp", fmt.Sprintf("mlnx_qos -i %s --pfc %s", nd, pfcFlags([]int{lossless}))}
			tc := (lossless*8+2)<<2 | 2 // the AF x1 DSCP of that priority, ECT(0): 106 for priority 3
			if q.Device != "" {
				f.Fix = append(f.Fix, fmt.Sprintf("echo %d > /sys/class/infiniband/%s/tc/%d/traffic_class", tc, q.Device, q.Port))
			}
			f.Fix = append(f.Fix, fmt.Sprintf("export NCCL_IB_TC=%d   # GPU-initiated (DevX/GDAKI) QPs ignore traffic_class", tc))
		}
		var f *check.Finding
		switch {
		case q.Trust == nil && q.PFC != nil && len(q.PFC.Value) == 0:
			// PFC off on every priority: lossy whatever the trust mode
			// maps the traffic to, so the unread trust decides nothing
			ecnAny := q.ECNNotify != nil && q.ECNReact != nil && slices.ContainsFunc(q.ECNNotify.Value, func(p int) bool { return slices.Contains(q.ECNReact.Value, p) })
			switch {
			case ecnAny:
				f = rep.Warn(sub, "PFC off on every priority: RoCE traffic is lossy (ECN only, on priority %s)", prioList(q.ECNNotify.Value))
			default:
				cc := "ECN state unread"
				if q.ECNNotify != nil && q.ECNReact != nil {
					cc = "no ECN on any priority"
				}
				f = rep.Fail(sub, "PFC off on every priority, %s: RoCE traffic is lossy whatever priority the trust mode gives it (RoCE needs a lossless priority, or ECN that slows senders before the switch drops)", cc)
			}
			fix(f, 3)
		case q.Trust == nil || q.PFC == nil:
			var missing []string
			if q.Trust == nil {
				missing = append(missing, "trust mode")
			}
			if q.PFC == nil {
				missing = append(missing, "PFC priorities")
			}
			f = rep.Unknown(sub, "%s not read (no MLNX_OFED qos/ files, no mlnx_qos or dcb output): cannot tell whether RoCE traffic is lossless", strings.Join(missing, " and "))
		case !dscpKnown:
			lossless := "no priority is lossless"
			if len(q.PFC.Value) > 0 {
				lossless = "priority " + prioList(q.PFC.Value) + " is lossless"
			}
			f = rep.Unknown(sub, "trust %s, %s; the DSCP the traffic carries (traffic_class, NCCL_IB_TC) is not in the source", q.Trust.Value, lossless)
		default:
			prio, prioWhy, _ := q.PrioOf(dscp)
			pfcOn := slices.Contains(q.PFC.Value, prio)
			ecn, ecnKnown := ecnOn(q, prio)
			elsewhere := ""
			if others := slices.DeleteFunc(slices.Clone(q.PFC.Value), func(p int) bool { return p == prio }); len(others) > 0 {
				elsewhere = fmt.Sprintf(" while priority %s is lossless", prioList(others))
			}
			// The fix moves PFC to a forced DSCP's priority (under trust
			// dscp), else the traffic to the one lossless priority, else
			// both to seed 001's priority 3.
			target := 3
			if dt := (host.RoCEQoS{Trust: host.Got("dscp", ""), DSCPPrio: q.DSCPPrio}); q.TrafficClass.Value >= 0 {
				target, _, _ = dt.PrioOf(dscp)
			} else if len(q.PFC.Value) == 1 {
				target = q.PFC.Value[0]
			}
			// A traffic class forced to DSCP 0 is a setting, not a
			// default left alone: RoCE's class is DSCP 26 (traffic_class
			// 106) on priority 3, and no lossless priority is ever 0 by
			// convention. The fix moves the traffic, never PFC, to 0.
			forcedZero := q.TrafficClass.Value >= 0 && dscp == 0
			if forcedZero {
				target = 3
				if len(q.PFC.Value) == 1 {
					target = q.PFC.Value[0]
				}
			}
			switch {
			case forcedZero && !pfcOn:
				tc := (target*8+2)<<2 | 2 // the AF x1 DSCP of that priority, ECT(0): 106 for priority 3
				like := ""
				if ptc, peer, ok := tcPeer(s, q); ok {
					tc, like = ptc, ", as "+peer+" has"
				}
				f = rep.Fail(sub, "%s → priority %d (%s), PFC off: DSCP 0 is no standard RoCE class (set traffic_class %d: DSCP %d%s): RoCE traffic is lossy%s", dscpWhy, prio, prioWhy, tc, tc>>2, like, elsewhere)
				if q.Device != "" {
					f.Fix = []string{fmt.Sprintf("echo %d > /sys/class/infiniband/%s/tc/%d/traffic_class", tc, q.Device, max(q.Port, 1))}
				} else {
					// The output names the netdev only: the shell finds its RDMA device.
					f.Fix = []string{fmt.Sprintf("echo %d > /sys/class/infiniband/$(ls /sys/class/net/%s/device/infiniband)/tc/1/traffic_class", tc, ifName(q))}
				}
				f.Fix = append(f.Fix, fmt.Sprintf("export NCCL_IB_TC=%d   # GPU-initiated (DevX/GDAKI) QPs ignore traffic_class", tc))
				if len(q.PFC.Value) != 1 {
					f.Fix = append(f.Fix, fmt.Sprintf("mlnx_qos -i %s --pfc %s", ifName(q), pfcFlags([]int{target})))
				}
			case pfcOn:
				f = rep.Pass(sub, "%s → priority %d (%s) → PFC on %d: lossless", dscpWhy, prio, prioWhy, prio)
			case ecnKnown && ecn:
				f = rep.Warn(sub, "%s → priority %d, PFC off: RoCE traffic is lossy (ECN only)%s", dscpWhy, prio, elsewhere)
				fix(f, target)
			default:
				cc := "no ECN on it"
				if !ecnKnown {
					cc = "ECN state unread"
				}
				f = rep.Fail(sub, "%s → priority %d, PFC off, %s: RoCE traffic is lossy%s", dscpWhy, prio, cc, elsewhere)
				if q.TrafficClass != nil && q.TrafficClass.Value < 0 {
					f.Message = fmt.Sprintf("%s → priority %d, PFC off: NCCL traffic is lossy%s", dscpWhy, prio, elsewhere)
				}
				fix(f, target)
			}
			if q.Trust.Value == "pcp" && !pfcOn {
				f.Message += "; trust pcp on a routed RoCE v2 fabric classifies by the VLAN tag, which routed packets do not carry"
			}
			e = append(e, ev("priority", strconv.Itoa(prio), prioWhy))
		}
		f.Evidence = e
	}
}

// losslessPrio is the priority RoCE's data uses: the one its DSCP lands
// on, else (the DSCP not in the source) the single PFC priority. onPath
// is false when that priority is known not to be lossless: roce.qos.path
// reports that, and ECN on it is part of its finding.
func losslessPrio(q host.RoCEQoS) (prio int, why string, known, onPath bool) {
	if dscp, dwhy, _, ok := trafficDSCP(q); ok {
		if p, pwhy, ok := q.PrioOf(dscp); ok {
			return p, dwhy + ", " + pwhy, true, q.PFC == nil || slices.Contains(q.PFC.Value, p)
		}
	}
	if q.PFC != nil && len(q.PFC.Value) == 1 {
		return q.PFC.Value[0], "the lossless priority (" + q.PFC.Source + ")", true, true
	}
	return 0, "", false, true
}

func roceECN(rep *check.Reporter, s *host.Snapshot, o Options) {
	for _, q := range roceEntries(s) {
		sub := roceSubject(q)
		prio, why, ok, onPath := losslessPrio(q)
		if !onPath {
			continue // the traffic misses the lossless priority: roce.qos.path's finding
		}
		on, known := ecnOn(q, prio)
		peer, peerPrio, peerOK := ecnPeer(s, q)
		if !ok && peerOK {
			// Which priority RoCE uses here is not shown, but the host's
			// other port runs ECN on one: the config meant for both.
			prio, why, ok = peerPrio, "the priority "+peer+" runs ECN on", true
			on, known = ecnOn(q, prio)
		}
		var f *check.Finding
		switch {
		case q.ECNNotify == nil || q.ECNReact == nil:
			f = rep.Unknown(sub, "the driver exposes no ECN state (inbox mlx5): check with mlnx_qos or the switch")
		case !ok && (len(q.ECNNotify.Value) == 0 || len(q.ECNReact.Value) == 0):
			// Off on every priority: whichever one RoCE uses has none.
			f = rep.Warn(sub, "ECN disabled on every priority (notification point %s, reaction point %s): whichever priority RoCE uses, congestion falls to PFC alone", prioList(q.ECNNotify.Value), prioList(q.ECNReact.Value))
			f.Fix = []string{fmt.Sprintf("echo 1 > /sys/class/net/%s/ecn/roce_np/enable/3", ifName(q)), fmt.Sprintf("echo 1 > /sys/class/net/%s/ecn/roce_rp/enable/3   # the priority RoCE's traffic lands on (3 by convention)", ifName(q))}
		case !ok:
			f = rep.Unknown(sub, "ECN on priorities %s, but which priority RoCE uses is not known", prioList(q.ECNNotify.Value))
		case known && on:
			f = rep.Pass(sub, "ECN on priority %d as notification and reaction point", prio)
		case peerOK:
			// The host's other port runs it: this one missed the config.
			f = rep.Fail(sub, "ECN off on priority %d (%s) while %s runs ECN on priority %d: this port's congestion falls to PFC alone, and its pauses spread", prio, why, peer, peerPrio)
			f.Fix = []string{fmt.Sprintf("echo 1 > /sys/class/net/%s/ecn/roce_np/enable/%d", ifName(q), prio), fmt.Sprintf("echo 1 > /sys/class/net/%s/ecn/roce_rp/enable/%d", ifName(q), prio)}
		default:
			f = rep.Warn(sub, "ECN off on priority %d (%s): congestion falls to PFC alone, and pauses spread", prio, why)
			f.Fix = []string{fmt.Sprintf("echo 1 > /sys/class/net/%s/ecn/roce_np/enable/%d", ifName(q), prio), fmt.Sprintf("echo 1 > /sys/class/net/%s/ecn/roce_rp/enable/%d", ifName(q), prio)}
		}
		f.Evidence = qosEvidence(q)
		if ok {
			f.Evidence = append(f.Evidence, ev("priority judged", strconv.Itoa(prio), why))
		}
	}
}

// ecnPeer is another RoCE port of the host that runs ECN (notification
// and reaction point) on the priority its own RoCE traffic uses, or on
// exactly one priority: evidence of the priority the host's config means
// ECN for.
func ecnPeer(s *host.Snapshot, q host.RoCEQoS) (string, int, bool) {
	for _, o := range s.RoCE {
		if samePort(o, q) || o.ECNNotify == nil || o.ECNReact == nil {
			continue
		}
		if p, _, ok, _ := losslessPrio(o); ok {
			if on, _ := ecnOn(o, p); on {
				return roceSubject(o), p, true
			}
		}
		if len(o.ECNNotify.Value) == 1 && slices.Equal(o.ECNNotify.Value, o.ECNReact.Value) {
			return roceSubject(o), o.ECNNotify.Value[0], true
		}
	}
	return "", 0, false
}

// tcPeer is the traffic class another RoCE port of the host forces onto
// a lossless priority: the value the host's config means for RoCE.
func tcPeer(s *host.Snapshot, q host.RoCEQoS) (int, string, bool) {
	for _, o := range s.RoCE {
		if samePort(o, q) || o.TrafficClass == nil || o.TrafficClass.Value <= 0 || o.PFC == nil {
			continue
		}
		if p, _, ok := o.PrioOf(o.TrafficClass.Value >> 2); ok && slices.Contains(o.PFC.Value, p) {
			return o.TrafficClass.Value, roceSubject(o), true
		}
	}
	return 0, "", false
}

func samePort(a, b host.RoCEQoS) bool {
	return a.Netdev == b.Netdev && a.Device == b.Device && a.Port == b.Port
}

func rocePFCSingle(rep *check.Reporter, s *host.Snapshot, o Options) {
	for _, q := range roceEntries(s) {
		sub := roceSubject(q)
		var f *check.Finding
		switch {
		case q.PFC == nil:
			f = rep.Unknown(sub, "PFC not read")
		case len(q.PFC.Value) > 1:
			f = rep.Warn(sub, "PFC on %d priorities (%s): each takes its own headroom and pauses on its own", len(q.PFC.Value), prioList(q.PFC.Value))
			keep := 3
			if p, _, ok, _ := losslessPrio(host.RoCEQoS{TrafficClass: q.TrafficClass, Trust: q.Trust, DSCPPrio: q.DSCPPrio}); ok {
				keep = p
			}
			f.Fix = []string{fmt.Sprintf("mlnx_qos -i %s --pfc %s", ifName(q), pfcFlags([]int{keep}))}
		default:
			f = rep.Pass(sub, "PFC on %s", prioList(q.PFC.Value))
		}
		if q.PFC != nil {
			f.Evidence = []check.Evidence{ev("PFC priorities", prioList(q.PFC.Value), q.PFC.Source)}
		}
	}
}

func roceCNP(rep *check.Reporter, s *host.Snapshot, o Options) {
	for _, q := range roceEntries(s) {
		sub := roceSubject(q)
		var e []check.Evidence
		cnp, cnpWhy, cnpOK := -1, "", false
		data, dataWhy, dataOK, onPath := losslessPrio(q)
		if !onPath {
			continue // the data misses the lossless priority: roce.qos.path's finding
		}
		switch {
		case q.Trust != nil && q.Trust.Value == "pcp":
			// Under trust pcp the CNP's priority is its 802.1p field.
			if q.CNPPrio != nil {
				cnp, cnpWhy, cnpOK = q.CNPPrio.Value, "cnp_802p_prio under trust pcp", true
				e = append(e, ev("cnp_802p_prio", strconv.Itoa(cnp), q.CNPPrio.Source))
			}
		case q.CNPDSCP != nil:
			e = append(e, ev("cnp_dscp", strconv.Itoa(q.CNPDSCP.Value), q.CNPDSCP.Source))
			cnp, cnpWhy, cnpOK = q.PrioOf(q.CNPDSCP.Value)
		}
		var f *check.Finding
		switch {
		case !cnpOK || !dataOK:
			f = rep.Unknown(sub, "the CNP's DSCP or priority, or the data's priority, was not read")
		case cnp == data:
			f = rep.Warn(sub, "CNPs ride priority %d with the data they are meant to slow (%s)", cnp, cnpWhy)
			f.Fix = fixesWith(rep.Entry().Fixes, "<if>", ifName(q))
		default:
			f = rep.Pass(sub, "CNPs on priority %d (%s), data on %d", cnp, cnpWhy, data)
		}
		if dataOK {
			e = append(e, ev("data priority", strconv.Itoa(data), dataWhy))
		}
		f.Evidence = e
	}
}

// roceQoSSummary is a host's RoCE QoS as one comparable string.
func roceQoSSummary(s *host.Snapshot) string {
	var parts []string
	for _, q := range s.RoCE {
		if q.Empty() {
			continue
		}
		v := func(r *host.Read[string]) string {
			if r == nil {
				return "?"
			}
			return r.Value
		}
		p := func(r *host.Read[[]int]) string {
			if r == nil {
				return "?"
			}
			return prioList(r.Value)
		}
		tc := "?"
		if q.TrafficClass != nil {
			tc = strconv.Itoa(q.TrafficClass.Value)
		}
		part := fmt.Sprintf("trust %s pfc %s ecn %s tclass %s", v(q.Trust), p(q.PFC), p(q.ECNNotify), tc)
		if !slices.Contains(parts, part) {
			parts = append(parts, part)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// roceGIDPorts calls fn for the RoCE ports roce.gid.v2 judges: active
// ones, and ports whose state the source did not show (show_gids prints
// GIDs, not states) — an address missing there is still missing.
func roceGIDPorts(s *host.Snapshot, fn func(d host.RDMADevice, p host.RDMAPort)) {
	for _, d := range s.RDMADevices {
		for _, p := range d.Ports {
			if p.State == portstate.Active || (!p.State.Known() && p.LinkLayer == "Ethernet") {
				fn(d, p)
			}
		}
	}
}

// pauseEntry judges pause counters: storm events in one reading, any
// pause counter rising between two.
var pauseEntry = check.Entry{ID: "roce.pause", Title: "No pause storm; pause counters do not rise between two readings",
	Why:         "Pauses a host keeps sending (tx_prioN_pause rising) mean its receive side cannot drain; pauses it keeps receiving mean the fabric is back-pressuring it. Either spreads congestion to innocent flows, and a storm makes the NIC stop pausing altogether (tx_pause_storm_*_events).",
	Source:      "RDMA reference §5.5 (ethtool -S counters that prove lossless behaviour)",
	Fixes:       []string{"find the congested receiver (the host whose tx_prioN_pause rises)", "enable ECN on the lossless priority so DCQCN slows senders before PFC has to", "check the switch's buffer and headroom on that priority"},
	Needs:       "ethtool -S of each RoCE netdev (run by inventory when installed, or a saved output): two readings to see counters rise",
	UnknownWhen: "never: without ethtool counters the check does not run; one reading only says whether storm events were counted"}

func roceMode(rep *check.Reporter, s *host.Snapshot, o Options) {
	for _, q := range roceEntries(s) {
		if q.RoCEMode == nil {
			continue
		}
		sub := roceSubject(q)
		var f *check.Finding
		if q.RoCEMode.Value == host.GIDTypeRoCEv2 {
			f = rep.Pass(sub, "rdma_cm defaults to %s", q.RoCEMode.Value)
		} else {
			f = rep.Warn(sub, "rdma_cm defaults to %s: its connections do not route", q.RoCEMode.Value)
			dev := q.Device
			if dev == "" && q.Netdev != "" && !strings.Contains(q.Netdev, " ") {
				// The output names the netdev only: the shell finds its device.
				dev = "$(ls /sys/class/net/" + q.Netdev + "/device/infiniband)"
			}
			if dev == "" {
				dev = "DEVICE"
			}
			f.Fix = []string{fmt.Sprintf("cma_roce_mode -d %s -p %d -m 2", dev, max(q.Port, 1))}
		}
		f.Evidence = []check.Evidence{ev("default_roce_mode", q.RoCEMode.Value, q.RoCEMode.Source)}
	}
}

func rocePause(rep *check.Reporter, s *host.Snapshot, o Options) {
	for _, q := range roceEntries(s) {
		if q.Counters == nil {
			continue
		}
		sub := roceSubject(q)
		var storms []string
		for _, k := range []string{"tx_pause_storm_warning_events", "tx_pause_storm_error_events"} {
			if v := q.Counters.Value[k]; v > 0 {
				storms = append(storms, fmt.Sprintf("%s %d", k, v))
			}
		}
		var since []string
		for _, k := range []string{"tx_global_pause", "rx_global_pause", "rx_discards_phy"} {
			if v := q.Counters.Value[k]; v > 0 {
				since = append(since, fmt.Sprintf("%s %d", k, v))
			}
		}
		var f *check.Finding
		switch {
		case len(storms) > 0:
			f = rep.Fail(sub, "pause storm: %s", strings.Join(storms, ", "))
		case len(since) > 0:
			// Global (802.3x) pause stops every priority and excludes PFC;
			// rx_discards_phy are drops for lack of receive buffer.
			f = rep.Warn(sub, "since the counters were cleared: %s (global pause stalls every priority; discards are drops a lossless priority must not have)", strings.Join(since, ", "))
			f.Fix = append([]string{"ethtool -A " + ifName(q) + " rx off tx off   # global pause off, PFC instead: mlnx_qos -i " + ifName(q) + " --pfc 0,0,0,1,0,0,0,0"}, rep.Entry().Fixes...)
		default:
			f = rep.Pass(sub, "no pause storm, no global pause, no physical discards counted (rising pauses need two readings)")
		}
		f.Evidence = []check.Evidence{ev("counters", strconv.Itoa(len(q.Counters.Value))+" pause/discard counters", q.Counters.Source)}
	}
}

// isPause names the counters that count pause frames.
func isPause(name string) bool {
	return strings.HasSuffix(name, "_pause") || strings.HasSuffix(name, "pause_ctrl_phy") || strings.HasSuffix(name, "_storm_error_events") || strings.HasSuffix(name, "_storm_warning_events")
}

// pauseDeltas compares the pause counters of two readings of one host.
func pauseDeltas(name string, a, b *host.Snapshot) []check.Finding {
	var out []check.Finding
	for _, qb := range b.RoCE {
		qa := a.RoCEQoSOf(qb.Netdev)
		if qa == nil || qa.Counters == nil || qb.Counters == nil {
			continue
		}
		out = append(out, PauseRising(name, roceSubject(qb), *qa.Counters, *qb.Counters, b.CollectedAt.Sub(a.CollectedAt).Round(1e9).String())...)
	}
	return out
}

// PauseRising judges two readings of one netdev's pause counters (two
// snapshots, or two ethtool -S outputs in one saved file).
func PauseRising(hostname, subject string, a, b host.Read[map[string]uint64], between string) []check.Finding {
	var rose []string
	var e []check.Evidence
	compared := 0
	for _, k := range slices.Sorted(maps.Keys(b.Value)) {
		y := b.Value[k]
		x, ok := a.Value[k]
		if !ok || !isPause(k) {
			continue
		}
		compared++
		if y > x {
			rose = append(rose, fmt.Sprintf("%s +%d", k, y-x))
			e = append(e, ev(k, fmt.Sprintf("%d → %d", x, y), a.Source+" → "+b.Source))
		}
	}
	rep := pauseEntry.Reporter(hostname)
	switch {
	case compared == 0:
		return nil
	case len(rose) == 0:
		rep.Pass(subject, "no pause counter rose (%d compared, %s apart)", compared, between)
	default:
		rep.Warn(subject, "pause counters rose in %s: %s", between, strings.Join(rose, ", ")).Evidence = e
	}
	return rep.Findings()
}

// shownBy says whether a saved output shows what a RoCE rule is about:
// judging `ethtool -S` says nothing of trust or ECN, rather than a row
// of unknowns for what the tool never prints.
var shownBy = map[string]func(q host.RoCEQoS) bool{
	"roce.qos.path":   func(q host.RoCEQoS) bool { return q.Trust != nil || q.PFC != nil },
	"roce.ecn":        func(q host.RoCEQoS) bool { return q.ECNNotify != nil || q.ECNReact != nil },
	"roce.pfc.single": func(q host.RoCEQoS) bool { return q.PFC != nil },
	"roce.cnp":        func(q host.RoCEQoS) bool { return q.CNPDSCP != nil || q.CNPPrio != nil },
	"roce.pause":      func(q host.RoCEQoS) bool { return q.Counters != nil },
	"roce.mode":       func(q host.RoCEQoS) bool { return q.RoCEMode != nil },
}

// RunRoCE applies the RoCE rules to a snapshot that holds only what a
// saved output showed (judge): the GID tables in it, and each QoS rule
// to the entries that show its inputs.
func RunRoCE(s *host.Snapshot) []check.Finding {
	var out []check.Finding
	for _, r := range Rules {
		if !strings.HasPrefix(r.ID, "roce.") {
			continue
		}
		shown, ok := shownBy[r.ID]
		if !ok {
			out = append(out, r.apply(s, Options{})...)
			continue
		}
		part := *s
		part.RoCE = slices.DeleteFunc(slices.Clone(s.RoCE), func(q host.RoCEQoS) bool { return !shown(q) })
		out = append(out, r.apply(&part, Options{})...)
	}
	check.Sort(out)
	return out
}

// roceMTUPath compares each active RoCE port's active_mtu with the RDMA
// MTU its netdev's MTU allows (linkrate's math).
func roceMTUPath(rep *check.Reporter, s *host.Snapshot, o Options) {
	activePorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		if p.LinkLayer != "Ethernet" {
			return
		}
		var nds []*host.NetDev
		for _, name := range p.NetDevs {
			if n := s.NetDev(name); n != nil {
				nds = append(nds, n)
			}
		}
		if p.ActiveMTU == nil && len(nds) == 0 {
			return // nothing of either side in the source
		}
		var e []check.Evidence
		if p.ActiveMTU != nil {
			e = append(e, ev("active_mtu", strconv.Itoa(p.ActiveMTU.Value), p.ActiveMTU.Source))
		}
		if p.MaxMTU != nil {
			e = append(e, ev("max_mtu", strconv.Itoa(p.MaxMTU.Value), p.MaxMTU.Source))
		}
		if len(nds) == 0 {
			f := rep.Unknown(portSubject(d.Name, p.Port), "active_mtu %d; the netdev's MTU is not in the source, so whether the port carries it is not known", p.ActiveMTU.Value)
			f.Evidence = e
			return
		}
		for _, n := range nds {
			sub := portSubject(d.Name, p.Port) + " (" + n.Name + ")"
			allowed := linkrate.RoCEMTU(n.MTUBytes)
			fe := append(slices.Clone(e), ev("netdev mtu", strconv.Itoa(n.MTUBytes), readAt(s, n.Sources, "mtu")),
				ev("RDMA MTU the netdev allows", strconv.Itoa(allowed), "linkrate.RoCEMTU: the largest IB MTU that fits in the netdev MTU less 96 bytes of headers"))
			var f *check.Finding
			switch a := p.ActiveMTU; {
			case a == nil:
				f = rep.Unknown(sub, "active_mtu not read (ibv_devinfo -v not installed or not captured): netdev MTU %d allows RDMA MTU %d", n.MTUBytes, allowed)
				f.Fix = []string{"ibv_devinfo -v -d " + d.Name + " | grep -E 'active_mtu|max_mtu'"}
			case a.Value < allowed:
				f = rep.Warn(sub, "active_mtu %d below the %d that netdev MTU %d allows: the MTU is not carried end to end (a bond, PF, peer or switch port with a smaller MTU); perftest and NCCL run at %d", a.Value, allowed, n.MTUBytes, a.Value)
				f.Fix = []string{fmt.Sprintf("ip link show %s; set the same MTU (at least %d) on its bond or PF, the peer and every switch port on the path", n.Name, linkrate.NetdevMTUFor(allowed)), "ibv_devinfo -v -d " + d.Name + " | grep active_mtu   # on both ends, after the change"}
			case a.Value > allowed:
				f = rep.Fail(sub, "active_mtu %d above the %d that netdev MTU %d allows: RDMA frames are larger than the Ethernet MTU and are dropped", a.Value, allowed, n.MTUBytes)
				f.Fix = []string{fmt.Sprintf("ip link set %s mtu %d (to keep it: nmcli con modify \"$(nmcli -g GENERAL.CONNECTION device show %s)\" 802-3-ethernet.mtu %d), and the same on the peer and every switch port", n.Name, linkrate.NetdevMTUFor(a.Value), n.Name, linkrate.NetdevMTUFor(a.Value))}
			default:
				f = rep.Pass(sub, "active_mtu %d is what netdev MTU %d allows", a.Value, n.MTUBytes)
			}
			f.Evidence = fe
		}
	})
}

// roceMTU: RoCE MTU = largest IB MTU <= netdev MTU - 96 (iboe_get_mtu).
func roceMTU(rep *check.Reporter, s *host.Snapshot, o Options) {
	roceNetdevs(s, func(name, sub string, n *host.NetDev) {
		rdmaMTU := linkrate.RoCEMTU(n.MTUBytes)
		var f *check.Finding
		if rdmaMTU >= 4096 {
			f = rep.Pass(sub, "netdev MTU %d gives RDMA MTU %d", n.MTUBytes, rdmaMTU)
		} else {
			f = rep.Warn(sub, "netdev MTU %d limits RDMA MTU to %d (4096 needs ≥ 4192)", n.MTUBytes, rdmaMTU)
			f.Fix = []string{fmt.Sprintf("c=$(nmcli -g GENERAL.CONNECTION device show %s); nmcli con modify \"$c\" 802-3-ethernet.mtu 4200 && nmcli con up \"$c\"", name), "ip link set " + name + " mtu 4200   # not persistent", "set the same MTU on the peer and every switch port"}
		}
		f.Evidence = []check.Evidence{ev("mtu", strconv.Itoa(n.MTUBytes), readAt(s, n.Sources, "mtu"))}
	})
}

// roceNetdevs calls fn for every netdev of every active RoCE port.
func roceNetdevs(s *host.Snapshot, fn func(name, subject string, n *host.NetDev)) {
	activePorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		if p.LinkLayer != "Ethernet" {
			return
		}
		for _, name := range p.NetDevs {
			if n := s.NetDev(name); n != nil {
				fn(name, portSubject(d.Name, p.Port)+" ("+name+")", n)
			}
		}
	})
}

func roceGID(rep *check.Reporter, s *host.Snapshot, o Options) {
	// routable counts the RoCE ports that have a RoCE v2 IPv4 GID: one
	// port without one beside others that have it is a port left out of
	// the addressing (a warning), not a host without routed RoCE.
	routable, roce := 0, 0
	roceGIDPorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		if p.LinkLayer != "Ethernet" {
			return
		}
		roce++
		if slices.ContainsFunc(p.GIDs, func(g host.GID) bool { return g.Type == host.GIDTypeRoCEv2 && g.IPv4 != "" }) {
			routable++
		}
	})
	minor := func(f *check.Finding) {
		if routable > 0 && f.Outcome == check.Fail {
			f.Outcome = check.Warn
			f.Message += fmt.Sprintf("; %d of the host's %d RoCE ports have one, so this one is left out of the routed fabric", routable, roce)
		}
	}
	roceGIDPorts(s, func(d host.RDMADevice, p host.RDMAPort) {
		if p.LinkLayer != "Ethernet" {
			return
		}
		sub := portSubject(d.Name, p.Port)
		var v2 *host.GID
		for i, g := range p.GIDs {
			if g.Type == host.GIDTypeRoCEv2 && g.IPv4 != "" {
				v2 = &p.GIDs[i]
				break
			}
		}
		var f *check.Finding
		switch {
		case v2 != nil:
			f = rep.Pass(sub, "RoCE v2 GID index %d for %s: use -x %d / NCCL_IB_GID_INDEX=%d", v2.Index, v2.IPv4, v2.Index, v2.Index)
			f.Evidence = []check.Evidence{ev("gid", fmt.Sprintf("%d %s %s %s", v2.Index, v2.GID, v2.Type, v2.NetDev), readAt(s, p.Sources, fmt.Sprintf("gids/%d", v2.Index)))}
		case p.GIDTableMissing:
			f = rep.Unknown(sub, "the GID table (gids/) is not in the source: cannot tell which GIDs the port has")
		case len(p.GIDs) == 0:
			f = rep.Fail(sub, "no GIDs at all: the port has no usable address")
			f.Fix = gidFixes(rep.Entry(), d, p)
		default:
			f = rep.Fail(sub, "no RoCE v2 GID with an IPv4 address (%d GIDs, none usable for routed RoCE v2)", len(p.GIDs))
			f.Fix = gidFixes(rep.Entry(), d, p)
		}
		minor(f)
	})
}

// gidFixes are roce.gid.v2's fixes for one port: its device, port number
// and netdev filled in.
func gidFixes(e check.Entry, d host.RDMADevice, p host.RDMAPort) []string {
	nd := cmp.Or(strings.Join(p.NetDevs, " "), "the netdev of "+portSubject(d.Name, p.Port))
	return fixesWith(fixesWith(fixesWith(e.Fixes, "<netdev>", nd), "<dev>", d.Name), "<port>", strconv.Itoa(p.Port))
}
