package fabric

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/linkrate"
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
	linkinfoRE   = regexp.MustCompile(`^\s*(?:(0x[0-9a-fA-F]+)\s+"\s*(.*?)"\s+)?(?:(0x[0-9a-fA-F]+)\s+)?(\d+)\s+(\d+)\[[^\]]*\]\s+==\(\s*(.*?)\s*\)==>\s*(?:(0x[0-9a-fA-F]+)\s+)?(?:(\d+)\s+)?(\d+)?\[[^\]]*\]\s+"(.*)"\s+\((.*)\)\s*$`)
	linkStateRE  = regexp.MustCompile(`^(?:(\d+X)\s+([\d.]+) Gbps\s+)?([A-Za-z]+)/\s*([A-Za-z]+)$`)
	couldWidthRE = regexp.MustCompile(`Could be (\d+X)`)
	couldSpeedRE = regexp.MustCompile(`Could be ([\d.]+) Gbps`)
	linkHeaderRE = regexp.MustCompile(`^(CA|Switch|Router): (?:(0x[0-9a-fA-F]+) )?(.*):\s*$`)
)

// ParseIBLinkInfo reads iblinkinfo output, default (per-node blocks) or
// --line mode. Node types come from the block headers in default mode and
// are left empty in --line mode (the scan fills them from ibnetdiscover).
func ParseIBLinkInfo(text string) ([]Port, error) {
	var out []Port
	var curType, curGUID, curDesc string
	sc := lineScanner(text)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if trim == "" || strings.HasPrefix(trim, "#") || strings.HasPrefix(trim, "ibwarn:") || trim == "..." {
			continue
		}
		if m := linkHeaderRE.FindStringSubmatch(trim); m != nil {
			curType, curGUID, curDesc = m[1], m[2], m[3]
			continue
		}
		m := linkinfoRE.FindStringSubmatch(line)
		if m == nil {
			if strings.Contains(line, "==(") {
				return nil, &ParseError{"iblinkinfo", n, line, "not a port line"}
			}
			continue // prompts, banners
		}
		st := linkStateRE.FindStringSubmatch(m[6])
		if st == nil {
			return nil, &ParseError{"iblinkinfo", n, line, "cannot read link state " + strconv.Quote(m[6])}
		}
		p := Port{NodeType: curType, NodeGUID: curGUID, NodeDesc: curDesc, State: st[3], PhysState: st[4], Width: st[1]}
		if m[1] != "" { // --line mode names the node on every line
			p.PortGUID, p.NodeDesc = normGUID(m[1]), strings.TrimSpace(m[2])
		}
		if m[3] != "" {
			p.PortGUID = normGUID(m[3])
		}
		if curGUID != "" {
			p.NodeGUID = normGUID(curGUID)
		}
		p.LID, _ = strconv.Atoi(m[4])
		p.Num, _ = strconv.Atoi(m[5])
		if st[2] != "" {
			p.LaneGbps, _ = strconv.ParseFloat(st[2], 64)
			if sp, ok := linkrate.SpeedBySignal(st[2]); ok {
				p.Speed = sp.Name
			}
			p.RateGbps = linkrate.IBRateGbps(p.Width, p.Speed)
		}
		if m[9] != "" && m[10] != "" {
			e := &End{NodeDesc: m[10]}
			e.Port, _ = strconv.Atoi(m[9])
			e.LID, _ = strconv.Atoi(m[8])
			if m[7] != "" {
				e.GUID = normGUID(m[7])
			}
			p.Remote = e
		}
		if w := couldWidthRE.FindStringSubmatch(m[11]); w != nil {
			p.CouldBeWidth = w[1]
		}
		if s := couldSpeedRE.FindStringSubmatch(m[11]); s != nil {
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
	ID    string `json:"id"` // the quoted id ("S-7cfe9003009ce5b0", or ibsim's "Switch1")
	Type  string `json:"type"`
	Desc  string `json:"desc"`
	Ports int    `json:"ports"`
	GUID  string `json:"guid,omitempty"`
	LID   int    `json:"lid,omitempty"`
}

// TopoEnd is one end of a cable, by node description and port.
type TopoEnd struct {
	Node string `json:"node"`
	Port int    `json:"port"`
}

func (e TopoEnd) String() string { return fmt.Sprintf("%s port %d", e.Node, e.Port) }

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
	topoNodeRE  = regexp.MustCompile(`^(Switch|Ca|Hca|Rt)\s+(\d+)\s+"([^"]+)"\s*(?:#\s*"([^"]*)"(.*))?`)
	topoPortRE  = regexp.MustCompile(`^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?\s+"([^"]+)"\s*\[(\d+)\](?:\(([0-9a-fA-F]+)\))?(.*)$`)
	topoLidRE   = regexp.MustCompile(`\blid (\d+)`)
	topoRateRE  = regexp.MustCompile(`\b(\d+)x([A-Z0-9]+)\b`)
	topoQuoteRE = regexp.MustCompile(`"([^"]*)"`)
	promptRE    = regexp.MustCompile(`^\S+[#$] \S`)
	topoGUIDRE  = regexp.MustCompile(`^(?:switchguid|caguid|rtguid)=(0x[0-9a-fA-F]+)`)
)

// ParseTopology reads ibnetdiscover's topology output or an ibsim netlist
// (ibsim's relaxed dialect: no GUIDs, "Hca", w=/s=/e= options). Nodes are
// named by their description when the file gives one, else by their id, so
// a file and a live scan compare by what people call the nodes.
func ParseTopology(text string) (*Topology, error) {
	t := &Topology{}
	type rawPort struct {
		local             *TopoNode
		port, remotePort  int
		remoteID, comment string
		line              int
	}
	var raws []rawPort
	var cur *TopoNode
	guid := ""
	sc := lineScanner(text)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case promptRE.MatchString(line) || strings.HasPrefix(line, "..."):
			continue // a pasted shell prompt, an elision
		case line == "" || strings.HasPrefix(line, "#"):
			if line == "" {
				cur = nil
			}
			continue
		case topoGUIDRE.MatchString(line):
			guid = normGUID(topoGUIDRE.FindStringSubmatch(line)[1])
			continue
		}
		if m := topoNodeRE.FindStringSubmatch(line); m != nil {
			ports, _ := strconv.Atoi(m[2])
			typ := map[string]string{"Switch": "Switch", "Ca": "CA", "Hca": "CA", "Rt": "Router"}[m[1]]
			node := TopoNode{ID: m[3], Type: typ, Desc: m[4], Ports: ports, GUID: guid}
			if node.Desc == "" {
				node.Desc = node.ID
			}
			if l := topoLidRE.FindStringSubmatch(m[5]); l != nil {
				node.LID, _ = strconv.Atoi(l[1])
			}
			guid = ""
			t.Nodes = append(t.Nodes, node)
			cur = &t.Nodes[len(t.Nodes)-1]
			continue
		}
		if strings.HasPrefix(line, "[") {
			m := topoPortRE.FindStringSubmatch(line)
			if m == nil || cur == nil {
				return nil, &ParseError{"topology", n, line, "port line outside a node or without a remote \"node\"[port]"}
			}
			rp := rawPort{local: cur, remoteID: m[3], comment: m[6], line: n}
			rp.port, _ = strconv.Atoi(m[1])
			rp.remotePort, _ = strconv.Atoi(m[4])
			raws = append(raws, rp)
			continue
		}
		if strings.Contains(line, "=") && !strings.Contains(line, "\"") {
			continue // vendid=, devid=, sysimgguid=, ibsim's width= and speed= defaults
		}
		return nil, &ParseError{"topology", n, line, "not a node, port or setting line"}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// The description of an id; real files redact ids, so a port line's own
	// comment (`# "remote desc" lid 5 4xEDR`) wins when it has one.
	descOf := map[string]string{}
	for _, nd := range t.Nodes {
		descOf[nd.ID] = nd.Desc
	}
	seen := map[[2]TopoEnd]bool{}
	for _, r := range raws {
		remote := descOf[r.remoteID]
		if remote == "" {
			remote = r.remoteID
		}
		// CA lines say `# lid 2 lmc 0 "remote" lid 1 4xQDR`; switch lines `# "remote" lid 1 4xQDR`.
		if q := topoQuoteRE.FindStringSubmatch(r.comment); q != nil && q[1] != "" {
			remote = q[1]
		}
		a, b := TopoEnd{r.local.Desc, r.port}, TopoEnd{remote, r.remotePort}
		key := [2]TopoEnd{a, b}
		if b.Node < a.Node || (b.Node == a.Node && b.Port < a.Port) {
			key = [2]TopoEnd{b, a}
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		l := TopoLink{A: key[0], B: key[1], Line: r.line}
		if rm := topoRateRE.FindStringSubmatch(r.comment); rm != nil {
			l.Width, l.Speed = rm[1]+"X", rm[2]
		}
		t.Links = append(t.Links, l)
	}
	return t, nil
}

// PortErrors is one port's counters as ibqueryerrors reports them.
type PortErrors struct {
	NodeDesc string
	GUID     string
	Port     int
	Counters map[string]uint64
}

var (
	qeNodeRE    = regexp.MustCompile(`^Errors for (?:(0x[0-9a-fA-F]+) )?"(.*)"\s*$`)
	qePortRE    = regexp.MustCompile(`^\s*GUID (0x[0-9a-fA-F]+) port (\d+|ALL):(.*)$`)
	qeCounterRE = regexp.MustCompile(`\[(\w+) == (\d+)`)
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
		if m := qeNodeRE.FindStringSubmatch(line); m != nil {
			desc = m[2]
			continue
		}
		m := qePortRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if m[2] == "ALL" {
			continue
		}
		pe := PortErrors{NodeDesc: desc, GUID: normGUID(m[1]), Counters: map[string]uint64{}}
		pe.Port, _ = strconv.Atoi(m[2])
		for _, c := range qeCounterRE.FindAllStringSubmatch(m[3], -1) {
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

var sminfoRE = regexp.MustCompile(`sm lid (\d+) sm guid (0x[0-9a-fA-F]+), activity count (\d+) priority (\d+) state (\d+) SMINFO_(\w+)`)

// ParseSMInfo reads `sminfo`'s one line.
func ParseSMInfo(text string) (SM, error) {
	m := sminfoRE.FindStringSubmatch(text)
	if m == nil {
		return SM{}, &ParseError{"sminfo", 1, strings.TrimSpace(text), "not an sminfo line"}
	}
	sm := SM{GUID: normGUID(m[2]), State: m[6]}
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
				cur.GUID = normGUID(val)
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

// normGUID writes a GUID as 0x + 16 hex digits, so every tool's spelling
// (0x200000, 0x0000000000200000) compares equal.
func normGUID(s string) string {
	s = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "0x")
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return "0x" + s
	}
	return fmt.Sprintf("0x%016x", v)
}

// lineScanner reads tool output line by line; fabric tools print long
// lines (node descriptions, many counters), so the buffer is 1 MiB.
func lineScanner(text string) *bufio.Scanner {
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return sc
}
