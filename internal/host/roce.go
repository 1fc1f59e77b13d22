package host

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// Read is one value and where it was read: a sysfs or configfs path, or a
// command ("mlnx_qos -i eth4", "dcb -j pfc show dev eth4"). A nil *Read is
// unknown: the value was not read, and no default stands in for it.
type Read[T any] struct {
	Value  T      `json:"value"`
	Source string `json:"source"`
}

// Got is a read value.
func Got[T any](v T, source string) *Read[T] { return &Read[T]{Value: v, Source: source} }

// RoCEQoS is what decides the path a RoCE netdev's packets take: the DSCP
// they carry, the priority the NIC's trust mode gives them, and whether
// that priority is lossless (PFC) or congestion-controlled (ECN), with the
// counters that show it working. One entry per netdev; Device and Port
// name its RDMA port when known.
type RoCEQoS struct {
	Netdev string `json:"netdev"`
	Device string `json:"rdma_device,omitempty"`
	Port   int    `json:"rdma_port,omitempty"`
	// DCBX is who owns the DCB settings: "OS controlled" or "Firmware controlled".
	DCBX *Read[string] `json:"dcbx,omitempty"`
	// Trust is how received packets are given a priority: "pcp" or "dscp".
	Trust *Read[string] `json:"trust,omitempty"`
	// DSCPPrio maps a DSCP (0-63) to its priority; only the DSCPs the
	// source listed are present.
	DSCPPrio *Read[map[int]int] `json:"dscp_prio,omitempty"`
	// PFC lists the priorities with PFC on (lossless); empty is "none".
	PFC *Read[[]int] `json:"pfc,omitempty"`
	// PrioTC maps priority (index) to traffic class.
	PrioTC *Read[[]int] `json:"prio_tc,omitempty"`
	// ECNNotify and ECNReact list the priorities with ECN enabled as the
	// notification point (marks seen, CNPs sent) and the reaction point
	// (rate cut on CNPs).
	ECNNotify *Read[[]int] `json:"ecn_roce_np,omitempty"`
	ECNReact  *Read[[]int] `json:"ecn_roce_rp,omitempty"`
	// CNPDSCP and CNPPrio are what the NIC's CNPs carry.
	CNPDSCP *Read[int] `json:"cnp_dscp,omitempty"`
	CNPPrio *Read[int] `json:"cnp_prio,omitempty"`
	// TrafficClass is the port's forced traffic class byte (DSCP<<2|ECN)
	// for every QP (MLNX_OFED tc/<port>/traffic_class); nil when not read,
	// Value -1 when the file is there but nothing is forced.
	TrafficClass *Read[int] `json:"traffic_class,omitempty"`
	// DefaultRoCETos is rdma_cm's default ToS byte (configfs); it applies
	// to rdma_cm connections only, which NCCL does not use.
	DefaultRoCETos *Read[int] `json:"default_roce_tos,omitempty"`
	// RoCEMode is rdma_cm's default RoCE mode ("RoCE v2", "IB/RoCE v1").
	RoCEMode *Read[string] `json:"default_roce_mode,omitempty"`
	// Counters are the pause, discard and per-priority counters of
	// `ethtool -S` (names as the driver prints them).
	Counters *Read[map[string]uint64] `json:"counters,omitempty"`
	// Skipped names what a saved output held that is not the format
	// (an author's "<-- note", a stray word), by line, so a finding says
	// what it did not read.
	Skipped []string `json:"skipped,omitempty"`
}

// Merge fills q's unknown values from o (o's netdev must be q's).
func (q *RoCEQoS) Merge(o RoCEQoS) {
	fill(&q.DCBX, o.DCBX)
	fill(&q.Trust, o.Trust)
	fill(&q.DSCPPrio, o.DSCPPrio)
	fill(&q.PFC, o.PFC)
	fill(&q.PrioTC, o.PrioTC)
	fill(&q.ECNNotify, o.ECNNotify)
	fill(&q.ECNReact, o.ECNReact)
	fill(&q.CNPDSCP, o.CNPDSCP)
	fill(&q.CNPPrio, o.CNPPrio)
	fill(&q.TrafficClass, o.TrafficClass)
	fill(&q.DefaultRoCETos, o.DefaultRoCETos)
	fill(&q.RoCEMode, o.RoCEMode)
	fill(&q.Counters, o.Counters)
	q.Skipped = append(q.Skipped, o.Skipped...)
	if q.Device == "" {
		q.Device, q.Port = o.Device, o.Port
	}
}

func fill[T any](dst **Read[T], src *Read[T]) {
	if *dst == nil && src != nil {
		*dst = src
	}
}

// Empty reports whether nothing was read.
func (q RoCEQoS) Empty() bool {
	return q.DCBX == nil && q.Trust == nil && q.DSCPPrio == nil && q.PFC == nil && q.PrioTC == nil &&
		q.ECNNotify == nil && q.ECNReact == nil && q.CNPDSCP == nil && q.CNPPrio == nil &&
		q.TrafficClass == nil && q.DefaultRoCETos == nil && q.RoCEMode == nil && q.Counters == nil
}

// PrioOf is the priority the NIC gives a received packet with DSCP d:
// under trust dscp, the DSCP map (a DSCP the source did not list keeps
// the firmware default d>>3, said in the second result); under trust pcp
// the VLAN tag decides, and untagged RoCE v2 lands on priority 0.
func (q RoCEQoS) PrioOf(d int) (prio int, why string, ok bool) {
	if q.Trust == nil {
		return 0, "", false
	}
	switch q.Trust.Value {
	case "pcp":
		return 0, "trust pcp: an untagged routed packet gets priority 0 whatever its DSCP", true
	case "dscp":
		if q.DSCPPrio != nil {
			if p, ok := q.DSCPPrio.Value[d]; ok {
				return p, "trust dscp, map " + q.DSCPPrio.Source, true
			}
		}
		return d >> 3, "trust dscp, the default map (DSCP>>3)", true
	}
	return 0, "", false
}

// SetFromSysfs applies one QoS file's content, by its path, to q: the one
// interpretation of the MLNX_OFED and inbox files, shared by the live
// reader and the parsers of query scripts that print "path = value". It
// reports whether the path is one it knows. Values are sourced to src
// ("" for the path itself; a parser passes the line that printed it).
func (q *RoCEQoS) SetFromSysfs(path, content, src string) (bool, error) {
	at := func(p string) string {
		if src == "" {
			return p
		}
		return src + " (" + p + ")"
	}
	v := strings.TrimSpace(content)
	base := path[strings.LastIndex(path, "/")+1:]
	parent := strings.TrimSuffix(path, "/"+base)
	switch {
	case strings.HasSuffix(path, "/qos/trust"):
		if v != "pcp" && v != "dscp" {
			return true, fmt.Errorf("trust %q: want pcp or dscp", v)
		}
		q.Trust = Got(v, at(path))
	case strings.HasSuffix(path, "/qos/dscp2prio"), strings.HasSuffix(path, "/qos/pfc"):
		// MLNX_OFED prints these as mlnx_qos does.
		p, err := ParseMlnxQos([]byte(v), at(path))
		if err != nil {
			return true, err
		}
		if len(p) > 0 {
			p[0].Netdev = q.Netdev
			q.Merge(p[0])
		}
	case strings.HasSuffix(parent, "/ecn/roce_np/enable"), strings.HasSuffix(parent, "/ecn/roce_rp/enable"):
		prio, err := strconv.Atoi(base)
		if err != nil || prio < 0 || prio > 7 {
			return true, fmt.Errorf("priority %q: want 0-7", base)
		}
		on, err := strconv.Atoi(v)
		if err != nil || (on != 0 && on != 1) {
			return true, fmt.Errorf("%q: want 0 or 1", v)
		}
		dst := &q.ECNNotify
		if strings.Contains(parent, "roce_rp") {
			dst = &q.ECNReact
		}
		if *dst == nil {
			*dst = Got([]int{}, at(parent))
		}
		if on == 1 && !slices.Contains((*dst).Value, prio) {
			(*dst).Value = append((*dst).Value, prio)
			slices.Sort((*dst).Value)
		}
	case strings.HasSuffix(path, "/ecn/roce_np/cnp_dscp"):
		n, err := byteValue(v, 63)
		if err != nil {
			return true, err
		}
		q.CNPDSCP = Got(n, at(path))
	case strings.HasSuffix(path, "/ecn/roce_np/cnp_802p_prio"):
		n, err := byteValue(v, 7)
		if err != nil {
			return true, err
		}
		q.CNPPrio = Got(n, at(path))
	case base == "traffic_class":
		tc, err := ParseTrafficClass(v)
		if err != nil {
			return true, err
		}
		q.TrafficClass = Got(tc, at(path))
	case base == "default_roce_tos":
		n, err := byteValue(v, 255)
		if err != nil {
			return true, err
		}
		q.DefaultRoCETos = Got(n, at(path))
	case base == "default_roce_mode":
		q.RoCEMode = Got(v, at(path))
	default:
		return false, nil
	}
	return true, nil
}

// ParseTrafficClass reads tc/<port>/traffic_class: "Global tclass=106"
// (MLNX_OFED), a bare number, or nothing (-1: not forced).
func ParseTrafficClass(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return -1, nil
	}
	if _, after, ok := strings.Cut(s, "tclass="); ok {
		s = strings.Fields(after + " ")[0]
	}
	return byteValue(s, 255)
}

func byteValue(s string, max int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > max {
		return 0, fmt.Errorf("%q: want 0-%d", s, max)
	}
	return n, nil
}

// RoCEQoSOf returns the entry for netdev, or nil.
func (s *Snapshot) RoCEQoSOf(netdev string) *RoCEQoS {
	i := slices.IndexFunc(s.RoCE, func(q RoCEQoS) bool { return q.Netdev == netdev })
	if i < 0 {
		return nil
	}
	return &s.RoCE[i]
}

// AddRoCEQoS merges q into the entry for its netdev, adding one if none.
func (s *Snapshot) AddRoCEQoS(q RoCEQoS) {
	if e := s.RoCEQoSOf(q.Netdev); e != nil {
		e.Merge(q)
		return
	}
	s.RoCE = append(s.RoCE, q)
}

// DSCP names RFC 4594 / iproute2 symbolic DSCP names.
var dscpNames = map[string]int{"default": 0, "be": 0, "ef": 46, "va": 44, "le": 1}

// ParseDSCP reads a DSCP as a number (decimal or 0x hex) or a name (CS0-7,
// AF11-AF43, EF, VA, LE), case-insensitively.
func ParseDSCP(s string) (int, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	if n, ok := dscpNames[l]; ok {
		return n, nil
	}
	if rest, ok := strings.CutPrefix(l, "cs"); ok && len(rest) == 1 && rest[0] >= '0' && rest[0] <= '7' {
		return int(rest[0]-'0') * 8, nil
	}
	if rest, ok := strings.CutPrefix(l, "af"); ok && len(rest) == 2 && rest[0] >= '1' && rest[0] <= '4' && rest[1] >= '1' && rest[1] <= '3' {
		return int(rest[0]-'0')*8 + int(rest[1]-'0')*2, nil
	}
	n, err := strconv.ParseInt(l, 0, 16)
	if err != nil || n < 0 || n > 63 {
		return 0, fmt.Errorf("DSCP %q: want 0-63 or a name (AF31, CS6, EF)", s)
	}
	return int(n), nil
}

var (
	cmaRoceModeCmdRE = lazyre.New(`\bcma_roce_mode\s+(?:.*\s)?-d\s+(\S+)(?:.*\s-p\s+(\d+))?`)
	ibdev2netdevRE   = lazyre.New(`^(\S+)\s+port\s+(\d+)\s+==>\s+(\S+)`)
	roceModeRE       = lazyre.New(`^(RoCE v2|IB/RoCE v1|RoCE v1)$`)
)

// SniffCMARoCEMode reports whether b shows cma_roce_mode.
//
// Both a command and an answer on a line of its own: prose that mentions
// the command (a README, notes) is not its output.
func SniffCMARoCEMode(b []byte) bool {
	if !cmaRoceModeCmdRE().Match(b) {
		return false
	}
	for line := range bytes.Lines(b) {
		if roceModeRE().Match(bytes.TrimSpace(linePrefixRE().ReplaceAll(line, nil))) {
			return true
		}
	}
	return false
}

// ParseCMARoCEMode reads `cma_roce_mode -d DEV [-p N]` commands and their
// one-line answers, with `ibdev2netdev` lines naming each device's netdev.
// An answer that follows more than one unanswered command cannot be tied
// to a device: that is an error, not a guess.
func ParseCMARoCEMode(b []byte, src string) ([]RoCEQoS, error) {
	var out []RoCEQoS
	netdev := map[string]string{}
	type cmd struct {
		dev  string
		port int
	}
	var pending []cmd
	sc := bufio.NewScanner(bytes.NewReader(b))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(linePrefixRE().ReplaceAllString(sc.Text(), ""))
		if m := ibdev2netdevRE().FindStringSubmatch(line); m != nil {
			netdev[m[1]] = m[3]
			continue
		}
		if m := cmaRoceModeCmdRE().FindStringSubmatch(line); m != nil {
			p := 1
			if m[2] != "" {
				p, _ = strconv.Atoi(m[2])
			}
			pending = append(pending, cmd{m[1], p})
			continue
		}
		if !roceModeRE().MatchString(line) {
			continue
		}
		if len(pending) != 1 {
			return nil, fmt.Errorf("line %d: %q answers %d cma_roce_mode commands: cannot tell which device it is", n, line, len(pending))
		}
		c := pending[0]
		pending = nil
		out = append(out, RoCEQoS{Netdev: netdev[c.dev], Device: c.dev, Port: c.port,
			RoCEMode: Got(line, fmt.Sprintf("%s line %d (cma_roce_mode -d %s -p %d)", src, n, c.dev, c.port))})
	}
	if len(out) == 0 {
		return nil, ErrNoQoS
	}
	return out, nil
}

// LosslessClass is the traffic class byte that lands RoCE traffic on the
// port's one lossless (PFC) priority, and that priority: the forced
// traffic_class when it already does, else the priority's AFx1 DSCP
// (26 for priority 3) that the DSCP map sends there, with ECT(0) set
// (DSCP<<2 | 2: 106). ok is false unless trust and a single PFC
// priority were read.
func (q RoCEQoS) LosslessClass() (tclass, prio int, why string, ok bool) {
	if q.Trust == nil || q.PFC == nil || len(q.PFC.Value) != 1 {
		return 0, 0, "", false
	}
	prio = q.PFC.Value[0]
	if q.TrafficClass != nil && q.TrafficClass.Value >= 0 {
		if p, _, ok := q.PrioOf(q.TrafficClass.Value >> 2); ok && p == prio {
			return q.TrafficClass.Value, prio, fmt.Sprintf("the port's traffic_class %d (DSCP %d → priority %d, PFC on: %s)", q.TrafficClass.Value, q.TrafficClass.Value>>2, prio, q.PFC.Source), true
		}
	}
	for _, d := range append([]int{prio*8 + 2}, dscpsOf(q, prio)...) {
		if p, _, ok := q.PrioOf(d); ok && (p == prio || q.Trust.Value == "pcp") {
			return d<<2 | 2, prio, fmt.Sprintf("DSCP %d → priority %d under trust %s, the one PFC priority (%s); ECT(0) set for ECN", d, prio, q.Trust.Value, q.PFC.Source), true
		}
	}
	return 0, 0, "", false
}

func dscpsOf(q RoCEQoS, prio int) []int {
	var out []int
	if q.DSCPPrio != nil {
		for d := 0; d < 64; d++ {
			if p, ok := q.DSCPPrio.Value[d]; ok && p == prio {
				out = append(out, d)
			}
		}
	}
	return out
}
