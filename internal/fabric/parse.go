package fabric

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/host"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/linkrate"
	"github.com/rdmalab/rdmalab/internal/portstate"
)

// ParseError names the line a parser could not read.
type ParseError struct {
	Tool string
	Line int
	Text string
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s output line %d: %s: %q", e.Tool, e.Line, e.Msg, e.Text)
}

var (
	// One port in iblinkinfo's output, default or --line mode:
	//   [0xGUID "desc"] [0xPortGUID] LID PORT[ext] ==( 4X 53.125 Gbps Active/ LinkUp)==> [0xGUID] [LID] PORT[ext] "desc" ( Could be ...)
	// A node sets its own description, so it may hold quotes and this very
	// syntax: a line is split at each "==(" in turn, and a split counts only
	// when the fields no node controls parse on both sides of it, each side
	// anchored at its far end (the left at the line start or the port
	// number, the right at the hint that closes the line).
	linkLeftRE   = lazyre.New(`^\s*(?:(0x[0-9a-fA-F]+)\s+"(.*)"\s+)?(?:(0x[0-9a-fA-F]+)\s+)?(\d+)\s+(\d+)\[[^\]]*\]\s*$`)
	linkRightRE  = lazyre.New(`^\s*(?:(0x[0-9a-fA-F]+)\s+)?(?:(\d+)\s+)?(\d+)?\[[^\]]*\]\s+"(.*)"\s+\(([^()"]*)\)\s*$`)
	linkStateRE  = lazyre.New(`^(?:(\d+X)\s+([\d.]+) Gbps\s+)?([A-Za-z]+)/\s*([A-Za-z]+)$`)
	couldWidthRE = lazyre.New(`Could be (\d+X)`)
	couldSpeedRE = lazyre.New(`Could be ([\d.]+) Gbps`)
	linkHeaderRE = lazyre.New(`^(CA|Switch|Router): (?:(0x[0-9a-fA-F]+) )?(.*):\s*$`)
)

// Unreadable is a line of a tool's output that could not be read: the
// node or link it describes is unknown, for the reason given, and the
// rest of the output still stands.
type Unreadable struct {
	Tool   string `json:"tool"`
	Line   int    `json:"line"`
	Text   string `json:"text"`
	Reason string `json:"reason"`
}

// ParseIBLinkInfo reads iblinkinfo output, default (per-node blocks) or
// --line mode. Node types come from the block headers in default mode and
// are left empty in --line mode; Snapshot.Resolve fills node GUIDs, types
// and far ends (by LID and port in default mode, which prints no far GUID).
// Every line with a link arrow is a port or an Unreadable: none is
// dropped, and none stops the rest being read. A line a node description
// makes ambiguous (it holds a second, forged link) is read only when the
// fields no node controls single out one reading (see resolveReadings);
// otherwise it is Unreadable.
func ParseIBLinkInfo(text string) ([]Port, []Unreadable, error) {
	var curType NodeType
	var curGUID host.GUID
	var curDesc string
	var reads []reading
	var bad []Unreadable
	sc := lineScanner(text)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if trim == "" || strings.HasPrefix(trim, "#") || strings.HasPrefix(trim, "ibwarn:") || trim == "..." {
			continue
		}
		// A block header starts with the node type; no port line does, so a
		// description holding "==(" still reads as a header.
		if m := linkHeaderRE().FindStringSubmatch(trim); m != nil {
			curType, curGUID, curDesc = NodeType(m[1]), 0, m[3]
			if m[2] != "" {
				curGUID, _ = host.ParseGUID(m[2])
			}
			continue
		}
		if !strings.Contains(line, "==(") {
			continue // prompts, banners
		}
		cands, why := readLinkLine(line, curType, curGUID, curDesc)
		if len(cands) == 0 {
			bad = append(bad, Unreadable{"iblinkinfo", n, line, why})
			continue
		}
		reads = append(reads, reading{n, line, cands})
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	out, unsure := resolveReadings(reads)
	bad = append(bad, unsure...)
	slices.SortStableFunc(bad, func(a, b Unreadable) int { return a.Line - b.Line })
	return out, bad, nil
}

// reading is a port line and the ways it reads.
type reading struct {
	n     int
	line  string
	cands []Port
}

// resolveReadings picks each line's reading. A line that reads one way is
// that port. A line a forged description makes read several ways is
// decided by what no description can forge: the far end's own line
// confirming the link (ends swapped, same width, speed and state), then
// the port numbers other lines already hold (each port is printed once),
// then the description the other lines give the node. A line still
// undecided is Unreadable: its port is unknown.
func resolveReadings(reads []reading) ([]Port, []Unreadable) {
	chosen := make([]*Port, len(reads))
	claimed := map[PortKey]int{} // by port GUID (--line mode) and number
	descs := map[host.GUID]map[string]bool{}
	vote := func(g host.GUID, d string) {
		if g.IsZero() {
			return
		}
		if descs[g] == nil {
			descs[g] = map[string]bool{}
		}
		descs[g][d] = true
	}
	choose := func(i int, p Port) {
		chosen[i] = &p
		if !p.PortGUID.IsZero() {
			claimed[PortKey{p.PortGUID, p.Num}] = i
		}
		vote(p.PortGUID, p.NodeDesc)
		if p.Remote != nil {
			vote(p.Remote.PortGUID, p.Remote.NodeDesc)
		}
	}
	for i, r := range reads {
		if len(r.cands) == 1 {
			choose(i, r.cands[0])
		}
	}
	for i, r := range reads {
		if chosen[i] != nil {
			continue
		}
		var confirmed []Port
		for _, c := range r.cands {
			if confirmedByPeer(c, i, reads) {
				confirmed = append(confirmed, c)
			}
		}
		if len(confirmed) == 1 {
			choose(i, confirmed[0])
		}
	}
	for i, r := range reads {
		if chosen[i] != nil {
			continue
		}
		var left []Port
		for _, c := range r.cands {
			if j, taken := claimed[PortKey{c.PortGUID, c.Num}]; taken && j != i && !c.PortGUID.IsZero() {
				continue
			}
			if known := descs[c.PortGUID]; len(known) == 1 && !known[c.NodeDesc] {
				continue
			}
			left = append(left, c)
		}
		if len(left) == 1 {
			choose(i, left[0])
		}
	}
	var out []Port
	var bad []Unreadable
	for i, r := range reads {
		if chosen[i] == nil {
			bad = append(bad, Unreadable{"iblinkinfo", r.n, r.line, fmt.Sprintf("a node description holds iblinkinfo's own link syntax: the line reads %d ways and neither the far end's line nor the other lines tell which is real", len(r.cands))})
			continue
		}
		out = append(out, *chosen[i])
	}
	return out, bad
}

// confirmedByPeer reports whether another line reads as the same link seen
// from its far end: ends swapped, same width, speed and state.
func confirmedByPeer(c Port, self int, reads []reading) bool {
	if c.Remote == nil || c.PortGUID.IsZero() || c.Remote.PortGUID.IsZero() {
		return false
	}
	for j, r := range reads {
		if j == self {
			continue
		}
		for _, d := range r.cands {
			if d.Remote != nil && d.PortGUID == c.Remote.PortGUID && d.Num == c.Remote.Port &&
				d.Remote.PortGUID == c.PortGUID && d.Remote.Port == c.Num &&
				d.Width == c.Width && d.LaneGbps == c.LaneGbps && d.State == c.State && d.PhysState == c.PhysState {
				return true
			}
		}
	}
	return false
}

// readLinkLine returns every reading of one port line (usually one), or
// none and why.
func readLinkLine(line string, curType NodeType, curGUID host.GUID, curDesc string) ([]Port, string) {
	var out []Port
	why := "no \"==( state )==>\" whose both sides read as iblinkinfo's fields"
	for off := 0; ; {
		i := strings.Index(line[off:], "==(")
		if i < 0 {
			break
		}
		i += off
		off = i + 3
		j := strings.Index(line[i:], ")==>")
		if j < 0 {
			break
		}
		j += i
		left := linkLeftRE().FindStringSubmatch(line[:i])
		right := linkRightRE().FindStringSubmatch(line[j+4:])
		if left == nil || right == nil {
			continue
		}
		stateText := strings.TrimSpace(line[i+3 : j])
		st := linkStateRE().FindStringSubmatch(stateText)
		if st == nil {
			why = "cannot read link state " + strconv.Quote(stateText)
			continue
		}
		p := Port{NodeType: curType, NodeGUID: curGUID, NodeDesc: curDesc, State: portstate.ParseState(st[3]), PhysState: portstate.ParsePhys(st[4]), Width: st[1]}
		if left[1] != "" { // --line mode names the node on every line
			p.PortGUID, p.NodeDesc = guid(left[1]), strings.TrimSpace(left[2])
		}
		if left[3] != "" {
			p.PortGUID = guid(left[3])
		}
		if curType == Switch && p.PortGUID.IsZero() {
			p.PortGUID = curGUID
		}
		var err1, err2 error
		p.LID, err1 = strconv.Atoi(left[4])
		p.Num, err2 = strconv.Atoi(left[5])
		if err1 != nil || err2 != nil {
			why = "LID or port number out of range"
			continue
		}
		if st[2] != "" {
			p.LaneGbps, _ = strconv.ParseFloat(st[2], 64)
			if sp, ok := linkrate.SpeedBySignal(st[2]); ok {
				p.Speed = sp.Name
			}
			p.RateGbps = linkrate.IBRateGbps(p.Width, p.Speed)
		}
		if right[3] != "" {
			e := &End{NodeDesc: right[4]}
			e.Port, _ = strconv.Atoi(right[3])
			e.LID, _ = strconv.Atoi(right[2])
			if right[1] != "" {
				e.PortGUID = guid(right[1])
			}
			p.Remote = e
		}
		if w := couldWidthRE().FindStringSubmatch(right[5]); w != nil {
			p.CouldBeWidth = w[1]
		}
		if s := couldSpeedRE().FindStringSubmatch(right[5]); s != nil {
			if sp, ok := linkrate.SpeedBySignal(s[1]); ok {
				p.CouldBeSpeed = sp.Name
			}
			if p.CouldBeSpeed == "" {
				p.CouldBeSpeed = s[1] + " Gbps"
			}
		}
		out = append(out, p)
	}
	return out, why
}

// Topology is a fabric as a topology file describes it: an ibnetdiscover
// output, an ibsim netlist, or a cabling plan.
type Topology struct {
	Nodes []TopoNode `json:"nodes"`
	Links []TopoLink `json:"links"`
	// Unreadable lists comments that could not be read (the link is
	// there, its rate unknown).
	Unreadable []Unreadable `json:"unreadable,omitempty"`
}

// TopoNode is one node of a topology file.
type TopoNode struct {
	ID           string    `json:"id"` // the quoted id ("S-7cfe9003009ce5b0", or ibsim's "Switch1")
	Type         NodeType  `json:"type"`
	Desc         string    `json:"desc"`
	Ports        int       `json:"ports"`
	GUID         host.GUID `json:"guid,omitempty"`
	SysImageGUID host.GUID `json:"sys_image_guid,omitempty"`
	LID          int       `json:"lid,omitempty"`
	VendorID     string    `json:"vendor_id,omitempty"`
	DeviceID     string    `json:"device_id,omitempty"`
}

// TopoEnd is one end of a cable: by node GUID when the file gives one
// (ibnetdiscover), else by node name (a YAML plan, an ibsim netlist).
type TopoEnd struct {
	Node string    `json:"node,omitempty"`
	GUID host.GUID `json:"guid,omitempty"`
	Port int       `json:"port"`
	// PortGUID and LID are what ibnetdiscover says of this end, when it does.
	PortGUID host.GUID `json:"-"`
	LID      int       `json:"-"`
}

func (e TopoEnd) String() string {
	if e.Node == "" {
		return fmt.Sprintf("%s port %d", e.GUID, e.Port)
	}
	return fmt.Sprintf("%s port %d", e.Node, e.Port)
}

// TopoLink is one cable, with the width and speed the file states if any.
type TopoLink struct {
	A     TopoEnd `json:"a"`
	B     TopoEnd `json:"b"`
	Width string  `json:"width,omitempty"`
	Speed string  `json:"speed,omitempty"`
	// Line is where the link was read, for error messages.
	Line int `json:"line,omitempty"`
}

var (
	topoNodeRE = lazyre.New(`^(Switch|Ca|Hca|Rt)\s+(\d+)\s+"([^"]+)"\s*(.*)$`)
	// The comments carry node descriptions, which any node sets: they are
	// read anchored at both ends, the description being everything between
	// the first quote and the last, so no description can move a LID or a
	// rate. A node: `# "desc" enhanced port 0 lid 3 lmc 0`; a port:
	// `# "remote desc" lid 5 4xEDR s=4 w=2`, or on a CA
	// `# lid 4 lmc 0 "remote desc" lid 1 4xEDR`.
	topoNodeCommentRE = lazyre.New(`^#\s*"(.*)"\s*(?:(?:enhanced|base)\s+port\s+0\s+lid\s+(\d+)\s+lmc\s+\d+)?\s*$`)
	topoPortCommentRE = lazyre.New(`^#\s*(?:lid (\d+) lmc \d+\s+)?(?:"(.*)"\s*)?(?:lid (\d+)\s*)?(?:(\d+)x([A-Z][A-Z0-9]*))?((?:\s+\w+=\d+)*)\s*$`)
	topoPortRE        = lazyre.New(`^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s+"([^"]+)"\s*\[(\d+)\](?:\(([0-9a-fA-F]+)\))?(.*)$`)
	topoIDGUIDRE      = lazyre.New(`^[SHR]-([0-9a-fA-F]{1,16})$`)
	promptRE          = lazyre.New(`^\S+[#$] \S`)
	topoGUIDRE        = lazyre.New(`^(switchguid|caguid|rtguid|sysimgguid|vendid|devid)=(0x[0-9a-fA-F]+)(?:\(|\s*$)`)
)

// ParseTopology reads ibnetdiscover's topology output or an ibsim netlist
// (ibsim's relaxed dialect: no GUIDs, "Hca", w=/s=/e= options). Nodes keep
// their GUID (from switchguid=/caguid= or an "S-<guid>" id), vendor and
// device id, and LID; a CA port's own LID comes from its port comment
// (`# lid 12 lmc 0 "switch" lid 3 4xEDR`). Link ends carry the node GUID
// when the file has one, and the node description for display.
func ParseTopology(text string) (*Topology, error) {
	t := &Topology{}
	type rawPort struct {
		local             int
		port, remotePort  int
		localPortGUID     string
		remoteID, comment string
		remotePortGUID    string
		line              int
	}
	var raws []rawPort
	cur := -1
	pending := map[string]string{}
	sc := lineScanner(text)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case promptRE().MatchString(line) || strings.HasPrefix(line, "..."):
			continue // a pasted shell prompt, an elision
		case line == "" || strings.HasPrefix(line, "#"):
			if line == "" {
				cur = -1
			}
			continue
		case topoGUIDRE().MatchString(line):
			m := topoGUIDRE().FindStringSubmatch(line)
			pending[m[1]] = m[2]
			continue
		}
		if m := topoNodeRE().FindStringSubmatch(line); m != nil {
			ports, err := strconv.Atoi(m[2])
			if err != nil {
				return nil, &ParseError{"topology", n, line, "port count out of range"}
			}
			typ := map[string]NodeType{"Switch": Switch, "Ca": CA, "Hca": CA, "Rt": Router}[m[1]]
			node := TopoNode{ID: m[3], Type: typ, Ports: ports, VendorID: pending["vendid"], DeviceID: pending["devid"]}
			nodeLID := ""
			if c := topoNodeCommentRE().FindStringSubmatch(m[4]); c != nil {
				node.Desc, nodeLID = c[1], c[2]
			}
			for _, k := range []string{"switchguid", "caguid", "rtguid"} {
				if g := pending[k]; g != "" {
					node.GUID = guid(g)
				}
			}
			if node.GUID.IsZero() {
				node.GUID = idGUID(node.ID)
			}
			if g := pending["sysimgguid"]; g != "" {
				node.SysImageGUID = guid(g)
			}
			if node.Desc == "" {
				node.Desc = node.ID
			}
			if nodeLID != "" {
				node.LID, _ = strconv.Atoi(nodeLID)
			}
			clear(pending)
			t.Nodes = append(t.Nodes, node)
			cur = len(t.Nodes) - 1
			continue
		}
		if strings.HasPrefix(line, "[") {
			m := topoPortRE().FindStringSubmatch(line)
			if m == nil || cur < 0 {
				return nil, &ParseError{"topology", n, line, "port line outside a node or without a remote \"node\"[port]"}
			}
			rp := rawPort{local: cur, localPortGUID: m[2], remoteID: m[3], remotePortGUID: m[5], comment: m[6], line: n}
			var err1, err2 error
			rp.port, err1 = strconv.Atoi(m[1])
			rp.remotePort, err2 = strconv.Atoi(m[4])
			if err1 != nil || err2 != nil {
				return nil, &ParseError{"topology", n, line, "port number out of range"}
			}
			raws = append(raws, rp)
			continue
		}
		if strings.Contains(line, "=") && !strings.Contains(line, "\"") {
			continue // ibsim's width= and speed= defaults, other settings
		}
		return nil, &ParseError{"topology", n, line, "not a node, port or setting line"}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	byID := map[string]*TopoNode{}
	for i := range t.Nodes {
		byID[t.Nodes[i].ID] = &t.Nodes[i]
	}
	type half struct {
		node host.GUID
		id   string
		port int
	}
	seen := map[[2]half]bool{}
	for _, r := range raws {
		local := t.Nodes[r.local]
		a := TopoEnd{Node: local.Desc, GUID: local.GUID, Port: r.port, LID: local.LID}
		if r.localPortGUID != "" {
			a.PortGUID = guid(r.localPortGUID)
		}
		// CA lines say `# lid 2 lmc 0 "remote" lid 1 4xQDR`: the first lid is the CA port's own.
		// The first '#' starts the comment (a redacted paste may leave
		// "(b83f<redacted>)" before it); descriptions only follow it.
		comment := ""
		if i := strings.Index(r.comment, "#"); i >= 0 {
			comment = strings.TrimSpace(r.comment[i:])
		}
		c := topoPortCommentRE().FindStringSubmatch(comment)
		if c != nil && c[1] != "" {
			a.LID, _ = strconv.Atoi(c[1])
		}
		b := TopoEnd{Node: r.remoteID, Port: r.remotePort}
		if rn := byID[r.remoteID]; rn != nil {
			b.Node, b.GUID, b.LID = rn.Desc, rn.GUID, rn.LID
		} else {
			b.GUID = idGUID(r.remoteID)
		}
		if r.remotePortGUID != "" {
			b.PortGUID = guid(r.remotePortGUID)
		}
		// Real files redact ids, so a port line's own comment
		// (`# "remote desc" lid 5 4xEDR`) names the far end.
		if c != nil && c[2] != "" {
			b.Node = c[2]
		}
		if c != nil && c[3] != "" {
			b.LID, _ = strconv.Atoi(c[3])
		}
		ha, hb := half{a.GUID, local.ID, a.Port}, half{b.GUID, r.remoteID, b.Port}
		if hb.node < ha.node || hb.node == ha.node && (hb.id < ha.id || hb.id == ha.id && hb.port < ha.port) {
			ha, hb = hb, ha
		}
		if seen[[2]half{ha, hb}] {
			continue
		}
		seen[[2]half{ha, hb}] = true
		l := TopoLink{A: a, B: b, Line: r.line}
		if a.Node > b.Node || a.Node == b.Node && a.Port > b.Port {
			l.A, l.B = b, a
		}
		if c != nil && c[4] != "" {
			l.Width, l.Speed = c[4]+"X", c[5]
		} else if c == nil && comment != "" {
			t.Unreadable = append(t.Unreadable, Unreadable{"ibnetdiscover", r.line, comment, "port comment not read as [lid N lmc N] \"desc\" lid N WIDTHxSPEED: the link's rate is unknown"})
		}
		t.Links = append(t.Links, l)
	}
	return t, nil
}

// idGUID reads the GUID ibnetdiscover puts in a node id ("S-7cfe900300a5f7c0").
func idGUID(id string) host.GUID {
	if m := topoIDGUIDRE().FindStringSubmatch(id); m != nil {
		return guid(m[1])
	}
	return 0
}

// PortErrors is one port's counters as ibqueryerrors reports them.
type PortErrors struct {
	NodeDesc string
	GUID     host.GUID
	Port     int
	Counters map[string]uint64
}

var (
	qeNodeRE    = lazyre.New(`^Errors for (?:(0x[0-9a-fA-F]+) )?"(.*)"\s*$`)
	qePortRE    = lazyre.New(`^\s*GUID (0x[0-9a-fA-F]+) port (\d+|ALL):(.*)$`)
	qeCounterRE = lazyre.New(`\[(\w+) == (\d+)`)
)

// ParseIBQueryErrors reads ibqueryerrors output: per port, every counter it
// printed (errors above threshold, plus data counters with --data). The
// "port ALL" summary lines of switches are skipped.
func ParseIBQueryErrors(text string) ([]PortErrors, error) {
	var out []PortErrors
	desc := ""
	sc := lineScanner(text)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if m := qeNodeRE().FindStringSubmatch(line); m != nil {
			desc = m[2]
			continue
		}
		m := qePortRE().FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[2] == "ALL" {
			continue
		}
		pe := PortErrors{NodeDesc: desc, GUID: guid(m[1]), Counters: map[string]uint64{}}
		pe.Port, _ = strconv.Atoi(m[2])
		// "Link info:" ends the counters: the far end's description follows.
		counted, _, _ := strings.Cut(m[3], "Link info:")
		for _, c := range qeCounterRE().FindAllStringSubmatch(counted, -1) {
			v, err := strconv.ParseUint(c[2], 10, 64)
			if err != nil {
				return nil, &ParseError{"ibqueryerrors", n, line, "counter " + c[1] + " is not a number"}
			}
			pe.Counters[c[1]] = v
		}
		if len(pe.Counters) == 0 && strings.TrimSpace(counted) != "" {
			return nil, &ParseError{"ibqueryerrors", n, line, "no [Counter == value] on a port line"}
		}
		out = append(out, pe)
	}
	return out, sc.Err()
}

var sminfoRE = lazyre.New(`sm lid (\d+) sm guid (0x[0-9a-fA-F]+), activity count (\d+) priority (\d+) state (\d+) SMINFO_(\w+)`)

// ParseSMInfo reads `sminfo`'s one line.
func ParseSMInfo(text string) (SM, error) {
	m := sminfoRE().FindStringSubmatch(text)
	if m == nil {
		return SM{}, &ParseError{"sminfo", 1, strings.TrimSpace(text), "not an sminfo line"}
	}
	sm := SM{GUID: guid(m[2]), State: m[6]}
	sm.LID, _ = strconv.Atoi(m[1])
	sm.ActCount, _ = strconv.ParseUint(m[3], 10, 64)
	sm.Priority, _ = strconv.Atoi(m[4])
	return sm, nil
}

var smStates = map[int]string{0: "NOTACTIVE", 1: "DISCOVERING", 2: "STANDBY", 3: "MASTER"}

// ParseSMInfoRecords reads `saquery SMIR`: one record per subnet manager
// the SA knows, master and standby.
func ParseSMInfoRecords(text string) ([]SM, error) {
	var out []SM
	var cur *SM
	sc := lineScanner(text)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		key, val, ok := strings.Cut(line, "...")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimLeft(val, ".")
		switch key {
		case "LID":
			out = append(out, SM{})
			cur = &out[len(out)-1]
			cur.LID, _ = strconv.Atoi(val)
		case "GUID":
			if cur != nil {
				cur.GUID = guid(val)
			}
		case "Priority":
			if cur != nil {
				cur.Priority, _ = strconv.Atoi(val)
			}
		case "ActCount":
			if cur != nil {
				cur.ActCount, _ = strconv.ParseUint(val, 10, 64)
			}
		case "SMState":
			if cur == nil {
				return nil, &ParseError{"saquery SMIR", n, line, "SMState before any LID"}
			}
			v, err := strconv.Atoi(val)
			if err != nil {
				return nil, &ParseError{"saquery SMIR", n, line, "SMState is not a number"}
			}
			cur.State = smStates[v]
		}
	}
	return out, sc.Err()
}

// guid reads a GUID the tools printed; the regular expressions in front
// of it only pass hex, so the one failure left (more than 16 digits) reads
// as zero, an unknown GUID.
func guid(s string) host.GUID {
	g, _ := host.ParseGUID(s)
	return g
}

// lineScanner reads tool output line by line; fabric tools print long
// lines (node descriptions, many counters), so the buffer is 1 MiB.
func lineScanner(text string) *bufio.Scanner {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return sc
}
