package fabric

import (
	"bufio"
	"fmt"
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
	linkinfoRE   = lazyre.New(`^\s*(?:(0x[0-9a-fA-F]+)\s+"\s*(.*?)"\s+)?(?:(0x[0-9a-fA-F]+)\s+)?(\d+)\s+(\d+)\[[^\]]*\]\s+==\(\s*(.*?)\s*\)==>\s*(?:(0x[0-9a-fA-F]+)\s+)?(?:(\d+)\s+)?(\d+)?\[[^\]]*\]\s+"(.*)"\s+\((.*)\)\s*$`)
	linkStateRE  = lazyre.New(`^(?:(\d+X)\s+([\d.]+) Gbps\s+)?([A-Za-z]+)/\s*([A-Za-z]+)$`)
	couldWidthRE = lazyre.New(`Could be (\d+X)`)
	couldSpeedRE = lazyre.New(`Could be ([\d.]+) Gbps`)
	linkHeaderRE = lazyre.New(`^(CA|Switch|Router): (?:(0x[0-9a-fA-F]+) )?(.*):\s*$`)
)

// ParseIBLinkInfo reads iblinkinfo output, default (per-node blocks) or
// --line mode. Node types come from the block headers in default mode and
// are left empty in --line mode; Snapshot.Resolve fills node GUIDs, types
// and far ends (by LID and port in default mode, which prints no far GUID).
// Every line with a link arrow is a port or an error: none is dropped.
func ParseIBLinkInfo(text string) ([]Port, error) {
	var out []Port
	var curType NodeType
	var curGUID host.GUID
	var curDesc string
	sc := lineScanner(text)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if trim == "" || strings.HasPrefix(trim, "#") || strings.HasPrefix(trim, "ibwarn:") || trim == "..." {
			continue
		}
		if m := linkHeaderRE().FindStringSubmatch(trim); m != nil && !strings.Contains(trim, "==(") {
			curType, curGUID, curDesc = NodeType(m[1]), 0, m[3]
			if m[2] != "" {
				curGUID, _ = host.ParseGUID(m[2])
			}
			continue
		}
		m := linkinfoRE().FindStringSubmatch(line)
		if m == nil {
			if strings.Contains(line, "==(") {
				return nil, &ParseError{"iblinkinfo", n, line, "not a port line"}
			}
			continue // prompts, banners
		}
		st := linkStateRE().FindStringSubmatch(m[6])
		if st == nil {
			return nil, &ParseError{"iblinkinfo", n, line, "cannot read link state " + strconv.Quote(m[6])}
		}
		p := Port{NodeType: curType, NodeGUID: curGUID, NodeDesc: curDesc, State: portstate.ParseState(st[3]), PhysState: portstate.ParsePhys(st[4]), Width: st[1]}
		if m[1] != "" { // --line mode names the node on every line
			p.PortGUID, p.NodeDesc = guid(m[1]), strings.TrimSpace(m[2])
		}
		if m[3] != "" {
			p.PortGUID = guid(m[3])
		}
		if curType == Switch && p.PortGUID.IsZero() {
			p.PortGUID = curGUID
		}
		var err error
		if p.LID, err = strconv.Atoi(m[4]); err != nil {
			return nil, &ParseError{"iblinkinfo", n, line, "LID out of range"}
		}
		if p.Num, err = strconv.Atoi(m[5]); err != nil {
			return nil, &ParseError{"iblinkinfo", n, line, "port number out of range"}
		}
		if st[2] != "" {
			p.LaneGbps, _ = strconv.ParseFloat(st[2], 64)
			if sp, ok := linkrate.SpeedBySignal(st[2]); ok {
				p.Speed = sp.Name
			}
			p.RateGbps = linkrate.IBRateGbps(p.Width, p.Speed)
		}
		if m[9] != "" {
			e := &End{NodeDesc: m[10]}
			e.Port, _ = strconv.Atoi(m[9])
			e.LID, _ = strconv.Atoi(m[8])
			if m[7] != "" {
				e.PortGUID = guid(m[7])
			}
			p.Remote = e
		}
		if w := couldWidthRE().FindStringSubmatch(m[11]); w != nil {
			p.CouldBeWidth = w[1]
		}
		if s := couldSpeedRE().FindStringSubmatch(m[11]); s != nil {
			if sp, ok := linkrate.SpeedBySignal(s[1]); ok {
				p.CouldBeSpeed = sp.Name
			}
			if p.CouldBeSpeed == "" {
				p.CouldBeSpeed = s[1] + " Gbps"
			}
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

// Topology is a fabric as a topology file describes it: an ibnetdiscover
// output, an ibsim netlist, or a cabling plan.
type Topology struct {
	Nodes []TopoNode `json:"nodes"`
	Links []TopoLink `json:"links"`
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
	topoNodeRE   = lazyre.New(`^(Switch|Ca|Hca|Rt)\s+(\d+)\s+"([^"]+)"\s*(?:#\s*"([^"]*)"(.*))?`)
	topoPortRE   = lazyre.New(`^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s+"([^"]+)"\s*\[(\d+)\](?:\(([0-9a-fA-F]+)\))?(.*)$`)
	topoLidRE    = lazyre.New(`\blid (\d+)`)
	topoRateRE   = lazyre.New(`\b(\d+)x([A-Z0-9]+)\b`)
	topoQuoteRE  = lazyre.New(`"([^"]*)"\s*(?:lid (\d+))?`)
	topoCALidRE  = lazyre.New(`^\s*#\s*lid (\d+) lmc \d+`)
	topoIDGUIDRE = lazyre.New(`^[SHR]-([0-9a-fA-F]{1,16})$`)
	promptRE     = lazyre.New(`^\S+[#$] \S`)
	topoGUIDRE   = lazyre.New(`^(switchguid|caguid|rtguid|sysimgguid|vendid|devid)=(0x[0-9a-fA-F]+)(?:\(|\s*$)`)
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
			node := TopoNode{ID: m[3], Type: typ, Desc: m[4], Ports: ports, VendorID: pending["vendid"], DeviceID: pending["devid"]}
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
			if l := topoLidRE().FindStringSubmatch(m[5]); l != nil {
				node.LID, _ = strconv.Atoi(l[1])
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
		comment := r.comment
		// CA lines say `# lid 2 lmc 0 "remote" lid 1 4xQDR`: the first lid is the CA port's own.
		if l := topoCALidRE().FindStringSubmatch(comment); l != nil {
			a.LID, _ = strconv.Atoi(l[1])
			comment = comment[len(l[0]):]
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
		if q := topoQuoteRE().FindStringSubmatch(comment); q != nil && q[1] != "" {
			b.Node = q[1]
			if q[2] != "" {
				b.LID, _ = strconv.Atoi(q[2])
			}
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
		if rm := topoRateRE().FindStringSubmatch(comment); rm != nil {
			l.Width, l.Speed = rm[1]+"X", rm[2]
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
		for _, c := range qeCounterRE().FindAllStringSubmatch(m[3], -1) {
			v, err := strconv.ParseUint(c[2], 10, 64)
			if err != nil {
				return nil, &ParseError{"ibqueryerrors", n, line, "counter " + c[1] + " is not a number"}
			}
			pe.Counters[c[1]] = v
		}
		if len(pe.Counters) == 0 && strings.TrimSpace(m[3]) != "" {
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
