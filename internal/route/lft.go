// Package route turns a fabric's cabling and its switches' linear
// forwarding tables into the path every host-to-host packet takes: for each
// ordered pair of CA ports, the directed links (port → port) it crosses.
// It reads the forwarding tables the standard tools print (ibroute,
// dump_fts/dump_lfts, OpenSM's opensm-lfts.dump) and says honestly which
// links no host traffic can reach and which pairs have no route.
package route

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/host"
)

// LFT is one switch's linear forwarding table: destination LID → out port.
type LFT struct {
	Switch host.GUID `json:"switch_guid"`
	Name   string    `json:"name,omitempty"` // the switch's node description
	// LID is the switch's own LID when the dump says it (0 when it names
	// the switch by directed route).
	LID int `json:"lid,omitempty"`
	// Out maps a destination LID to the port it leaves by (0: the switch
	// itself).
	Out map[int]int `json:"out"`
	// Dest is what the dump says each LID is, when it says.
	Dest map[int]Dest `json:"dest,omitempty"`
}

// Dest is a destination LID as the dump's comment names it.
type Dest struct {
	Type     string    `json:"type"` // "Switch", "Channel Adapter", "Router"
	PortGUID host.GUID `json:"port_guid"`
	Name     string    `json:"name"`
}

// ParseError names the line the LFT parser could not read.
type ParseError struct {
	Line int
	Text string
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("forwarding table dump line %d: %s: %q", e.Line, e.Msg, e.Text)
}

var (
	// ibroute/dump_fts: `Unicast lids [0x0-0x16] of switch Lid 4 guid 0x0000000000200002 (leaf01):`
	// or `... of switch DR path slid 0; dlid 0; 0,1,6 guid 0x... (spine02):`;
	// OpenSM's dump: `Unicast lids [0-22] of switch Lid 1 guid 0x0000000000200000 ('spine01'):`.
	lftHeaderRE = regexp.MustCompile(`^Unicast lids \[[^\]]*\] of switch (.*?)\s*guid (0x[0-9a-fA-F]+) \((.*)\):\s*$`)
	lftLidRE    = regexp.MustCompile(`^Lid (\d+)$`)
	// ibroute: `0x0002 001 : (Channel Adapter portguid 0x0000000000100001: 'node0001')`;
	// OpenSM:  `0x0002 001 # Channel Adapter portguid 0x0000000000100001: 'node0001'`.
	lftEntryRE = regexp.MustCompile(`^0x([0-9a-fA-F]{1,4})\s+(\d{1,3})\s*(?::\s*\((.*)\)|#\s*(.*))?$`)
	lftDestRE  = regexp.MustCompile(`^(Switch|Channel Adapter|Router) portguid (0x[0-9a-fA-F]+): '(.*)'$`)
	lftTailRE  = regexp.MustCompile(`^\d+ (?:valid )?lids dumped\s*$`)
)

// ParseLFTs reads forwarding tables as ibroute, dump_fts (dump_lfts) or
// OpenSM's opensm-lfts.dump print them, any number of switches in a row.
// Tool chatter (ibwarn lines, column headers, dump_lfts' deprecation
// banner) is skipped; a LID line outside a switch block, or one that is not
// `0xLID PORT`, is an error.
func ParseLFTs(r io.Reader) ([]LFT, error) {
	var out []LFT
	var cur *LFT
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if m := lftHeaderRE.FindStringSubmatch(line); m != nil {
			g, err := host.ParseGUID(m[2])
			if err != nil {
				return nil, &ParseError{n, line, err.Error()}
			}
			t := LFT{Switch: g, Name: strings.Trim(m[3], "'"), Out: map[int]int{}}
			if l := lftLidRE.FindStringSubmatch(m[1]); l != nil {
				t.LID, _ = strconv.Atoi(l[1])
			}
			out = append(out, t)
			cur = &out[len(out)-1]
			continue
		}
		if !strings.HasPrefix(line, "0x") {
			if lftTailRE.MatchString(line) {
				cur = nil
			}
			continue // headers, ibwarn, banners, blank lines
		}
		m := lftEntryRE.FindStringSubmatch(line)
		if m == nil {
			return nil, &ParseError{n, line, "not `0xLID PORT`"}
		}
		if cur == nil {
			return nil, &ParseError{n, line, "forwarding entry before any `Unicast lids ... of switch` header"}
		}
		lid, _ := strconv.ParseInt(m[1], 16, 32)
		port, _ := strconv.Atoi(m[2])
		if port > 254 {
			return nil, &ParseError{n, line, "port number above 254"}
		}
		if _, dup := cur.Out[int(lid)]; dup {
			return nil, &ParseError{n, line, "LID listed twice for one switch"}
		}
		cur.Out[int(lid)] = port
		info := m[3] + m[4]
		if d := lftDestRE.FindStringSubmatch(strings.TrimSpace(info)); d != nil {
			g, err := host.ParseGUID(d[2])
			if err != nil {
				return nil, &ParseError{n, line, err.Error()}
			}
			if cur.Dest == nil {
				cur.Dest = map[int]Dest{}
			}
			cur.Dest[int(lid)] = Dest{Type: d[1], PortGUID: g, Name: d[3]}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read forwarding tables: %w", err)
	}
	return out, nil
}

// WriteLFTs writes tables in OpenSM's opensm-lfts.dump form, which
// ParseLFTs reads back to the same tables.
func WriteLFTs(w io.Writer, lfts []LFT) error {
	bw := bufio.NewWriter(w)
	for _, t := range lfts {
		lids := make([]int, 0, len(t.Out))
		for l := range t.Out {
			lids = append(lids, l)
		}
		slices.Sort(lids)
		top := 0
		if len(lids) > 0 {
			top = lids[len(lids)-1]
		}
		fmt.Fprintf(bw, "Unicast lids [0-%d] of switch Lid %d guid %s ('%s'):\n", top, t.LID, t.Switch, t.Name)
		for _, l := range lids {
			if d, ok := t.Dest[l]; ok {
				fmt.Fprintf(bw, "0x%04x %03d # %s portguid %s: '%s'\n", l, t.Out[l], d.Type, d.PortGUID, d.Name)
			} else {
				fmt.Fprintf(bw, "0x%04x %03d\n", l, t.Out[l])
			}
		}
		fmt.Fprintf(bw, "%d lids dumped\n", len(lids))
	}
	return bw.Flush()
}
