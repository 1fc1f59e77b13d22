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

// The three dialects' lines, read by hand rather than by regexp: a dump of
// a 4,096-HCA fabric has over half a million of them.
//
// ibroute/dump_fts: `Unicast lids [0x0-0x16] of switch Lid 4 guid 0x0000000000200002 (leaf01):`
// or `... of switch DR path slid 0; dlid 0; 0,1,6 guid 0x... (spine02):`;
// OpenSM's dump: `Unicast lids [0-22] of switch Lid 1 guid 0x0000000000200000 ('spine01'):`.
// Entries: ibroute `0x0002 001 : (Channel Adapter portguid 0x0000000000100001: 'node0001')`,
// OpenSM `0x0002 001 # Channel Adapter portguid 0x0000000000100001: 'node0001'`.
// A table ends with `22 lids dumped` (`21 valid lids dumped` from ibroute).

// ParseLFTs reads forwarding tables as ibroute, dump_fts (dump_lfts) or
// OpenSM's opensm-lfts.dump print them, any number of switches in a row.
// Tool chatter (ibwarn lines, column headers, dump_lfts' deprecation
// banner) is skipped; a LID line outside a switch block, or one that is not
// `0xLID PORT`, is an error. It streams: one line in memory at a time, and
// destination names and types are interned (every switch's table names
// every CA again).
func ParseLFTs(r io.Reader) ([]LFT, error) {
	var out []LFT
	cur, curSize := -1, 0
	names := map[string]string{}
	intern := func(b string) string {
		if s, ok := names[b]; ok {
			return s
		}
		s := strings.Clone(b)
		names[s] = s
		return s
	}
	br := bufio.NewReaderSize(r, 1<<16)
	n := 0
	for {
		raw, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			return nil, &ParseError{n + 1, string(raw[:80]), "line longer than 64 KiB"}
		}
		if len(raw) == 0 && err != nil {
			if err == io.EOF {
				break
			}
			return nil, fmt.Errorf("read forwarding tables: %w", err)
		}
		n++
		line := strings.TrimSpace(string(raw)) // one small copy per line
		if t, ok, perr := parseHeader(line); ok {
			if perr != "" {
				return nil, &ParseError{n, line, perr}
			}
			t.Name = intern(t.Name)
			// Tables of one dump are alike: size this one like the last,
			// never by the header's LID range, which input could inflate.
			if len(out) > 0 {
				curSize = len(out[len(out)-1].Out)
				t.Out = make(map[int]int, curSize)
			}
			out = append(out, t)
			cur = len(out) - 1
			continue
		}
		if !strings.HasPrefix(line, "0x") {
			if isTail(line) {
				cur = -1
			}
			continue // headers, ibwarn, banners, blank lines
		}
		lid, port, info, ok := parseEntry(line)
		if !ok {
			return nil, &ParseError{n, line, "not `0xLID PORT`"}
		}
		if cur < 0 {
			return nil, &ParseError{n, line, "forwarding entry before any `Unicast lids ... of switch` header"}
		}
		if port > 254 {
			return nil, &ParseError{n, line, "port number above 254"}
		}
		t := &out[cur]
		if _, dup := t.Out[lid]; dup {
			return nil, &ParseError{n, line, "LID listed twice for one switch"}
		}
		t.Out[lid] = port
		if d, ok, derr := parseDest(info); ok {
			if derr != "" {
				return nil, &ParseError{n, line, derr}
			}
			if t.Dest == nil {
				t.Dest = make(map[int]Dest, curSize)
			}
			d.Name = intern(d.Name)
			t.Dest[lid] = d
		}
		if err == io.EOF {
			break
		}
	}
	return out, nil
}

// parseHeader reads `Unicast lids [..] of switch <how> guid 0xHEX (<name>):`.
// ok is false when the line is no header; msg says what is wrong with a
// header whose GUID does not parse.
func parseHeader(line string) (t LFT, ok bool, msg string) {
	rest, found := strings.CutPrefix(line, "Unicast lids [")
	if !found {
		return t, false, ""
	}
	i := strings.IndexByte(rest, ']')
	if i < 0 {
		return t, false, ""
	}
	rest, found = strings.CutPrefix(rest[i+1:], " of switch ")
	if !found || !strings.HasSuffix(rest, "):") {
		return t, false, ""
	}
	// the first `guid 0xHEX (` decides where the switch's address ends
	for off := 0; ; {
		j := strings.Index(rest[off:], "guid 0x")
		if j < 0 {
			return t, false, ""
		}
		j += off
		k := j + len("guid 0x")
		for k < len(rest) && isHex(rest[k]) {
			k++
		}
		if k > j+len("guid 0x") && strings.HasPrefix(rest[k:], " (") && k+2 <= len(rest)-2 {
			g, err := host.ParseGUID(rest[j+len("guid ") : k])
			if err != nil {
				return t, true, err.Error()
			}
			how := strings.TrimRight(rest[:j], spaces)
			t = LFT{Switch: g, Name: strings.Trim(rest[k+2:len(rest)-2], "'"), Out: map[int]int{}}
			if l, found := strings.CutPrefix(how, "Lid "); found && allDigits(l) {
				t.LID, _ = strconv.Atoi(l)
			}
			return t, true, ""
		}
		off = j + 1
	}
}

// parseEntry reads `0xLID PORT`, optionally followed by ` : (info)` or
// ` # info`: 1 to 4 hex digits, white space, 1 to 3 decimal digits.
func parseEntry(line string) (lid, port int, info string, ok bool) {
	s := line[2:]
	i := 0
	for i < len(s) && i < 5 && isHex(s[i]) {
		i++
	}
	if i == 0 || i > 4 || i == len(s) || !isSpace(s[i]) {
		return 0, 0, "", false
	}
	l, _ := strconv.ParseInt(s[:i], 16, 32)
	s = strings.TrimLeft(s[i:], spaces)
	j := 0
	for j < len(s) && j < 4 && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == 0 || j > 3 {
		return 0, 0, "", false
	}
	port, _ = strconv.Atoi(s[:j])
	s = strings.TrimLeft(s[j:], spaces)
	switch {
	case s == "":
	case s[0] == ':':
		s = strings.TrimLeft(s[1:], spaces)
		if len(s) < 2 || s[0] != '(' || s[len(s)-1] != ')' {
			return 0, 0, "", false
		}
		info = s[1 : len(s)-1]
	case s[0] == '#':
		info = s[1:]
	default:
		return 0, 0, "", false
	}
	return int(l), port, info, true
}

// parseDest reads `<type> portguid 0xHEX: '<name>'`; ok is false when the
// comment says something else (it is then ignored, as before).
func parseDest(info string) (d Dest, ok bool, msg string) {
	info = strings.TrimSpace(info)
	for i, prefix := range destPrefixes {
		rest, found := strings.CutPrefix(info, prefix)
		if !found {
			continue
		}
		ty := destTypes[i]
		k := 0
		for k < len(rest) && isHex(rest[k]) {
			k++
		}
		name, found := strings.CutPrefix(rest[k:], ": '")
		if k == 0 || !found || !strings.HasSuffix(name, "'") {
			return d, false, ""
		}
		g, err := host.ParseGUID("0x" + rest[:k])
		if err != nil {
			return d, true, err.Error()
		}
		return Dest{Type: ty, PortGUID: g, Name: name[:len(name)-1]}, true, ""
	}
	return d, false, ""
}

var (
	destTypes    = []string{"Switch", "Channel Adapter", "Router"}
	destPrefixes = []string{"Switch portguid 0x", "Channel Adapter portguid 0x", "Router portguid 0x"}
)

// isTail is `N lids dumped` or `N valid lids dumped`.
func isTail(line string) bool {
	i := 0
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	if i == 0 {
		return false
	}
	rest := strings.TrimPrefix(line[i:], " ")
	if len(rest) == len(line[i:]) {
		return false
	}
	rest = strings.TrimPrefix(rest, "valid ")
	return strings.TrimRight(rest, spaces) == "lids dumped"
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// spaces are what the tools put between fields (RE2's \s).
const spaces = " \t\n\f\r"

func isSpace(c byte) bool { return strings.IndexByte(spaces, c) >= 0 }

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
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
