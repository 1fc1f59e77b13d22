package phy

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// ibdiagnet's console summary: ibdiagnet2 prints "-I- Stage Warnings
// Errors Comment" rows; the legacy ibdiagnet 1.x prints a "Stages Status
// Report" whose header is "STAGE Errors Warnings". The header decides the
// column order, never an assumption. -W- and -E- lines are kept with the
// section they were printed in (the banner before them), so a stage's
// count can quote its messages.

var (
	ibdiagBannerRE = lazyre.New(`^-I-{5,}$`)
	ibdiag2RuleRE  = lazyre.New(`^-{10,}$`)
	ibdiagMsgRE    = lazyre.New(`^-([WE])-\s*(.*)$`)
	ibdiagRowRE    = lazyre.New(`^(?:-I-\s+)?(\S.*?)\s{2,}(\d+)\s+(\d+)\s*(.*)$`)
	// The stages table's header line, in either column order.
	ibdiagSniffRE = lazyre.New(`(?mi)^[ \t]*(?:-I-[ \t]+)?Stage[ \t]+(?:Errors[ \t]+Warnings|Warnings[ \t]+Errors)`)
	ibdiagVerRE   = lazyre.New(`(?i)ibdiagnet[\s:]*(?:version\s*)?(\d+\.\d+(?:\.\d+)?)|/ibdiagnet(\d+\.\d+\.\d+)`)
)

// IBDiag is an ibdiagnet run's summary.
type IBDiag struct {
	// Version is the ibdiagnet release when shown ("1.5.7"); Legacy is the
	// ibutils 1.x layout.
	Version string `json:"version,omitempty"`
	Legacy  bool   `json:"legacy"`
	Stages  []Stage
	// Messages are the -W- and -E- lines, in order.
	Messages []Message
	// Log is where ibdiagnet says the full log is.
	Log    string `json:"log,omitempty"`
	Source string `json:"source"`
}

// Stage is one row of the summary.
type Stage struct {
	Name             string
	Errors, Warnings int
	Comment          string `json:",omitempty"`
	Line             int
}

// Message is one -W- or -E- line and its continuation lines.
type Message struct {
	Error   bool
	Text    string
	Section string // the banner it was printed under ("" before any)
	// Context is the -I- line printed just before it ("Subnet: IPv4
	// PKey:0x7fff … rate:10Gbps").
	Context string `json:",omitempty"`
	Line    int
}

// SniffIBDiag reports whether b looks like an ibdiagnet summary.
func SniffIBDiag(b []byte) bool { return ibdiagSniffRE().Match(b) }

// ParseIBDiag reads the stages table and the messages.
func ParseIBDiag(b []byte, name string) (*IBDiag, error) {
	d := &IBDiag{Source: name}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	// Banners come in pairs around a section title: the line after an
	// odd banner is a title.
	section, banner, banners, info, rule := "", -1, 0, "", -1
	errFirst, inTable := false, false
	for sc.Scan() {
		n++
		raw := strings.TrimRight(sc.Text(), " \t\r")
		line := strings.TrimSpace(raw)
		if d.Version == "" {
			if m := ibdiagVerRE().FindStringSubmatch(line); m != nil {
				d.Version = m[1] + m[2]
			}
		}
		switch {
		case line == "":
			inTable = false
			continue
		case ibdiagBannerRE().MatchString(line):
			banner = n
			banners++
			continue
		case ibdiag2RuleRE().MatchString(line):
			// ibdiagnet2: a rule of dashes, then the stage's title.
			rule = n
			continue
		case rule == n-1 && !strings.HasPrefix(line, "-") && !strings.Contains(line, "Status Report"):
			section = line
			continue
		case strings.Contains(line, "Stages Status Report"):
			d.Legacy = true
			continue
		}
		fields := strings.Fields(strings.TrimPrefix(line, "-I-"))
		if len(fields) >= 3 && strings.EqualFold(fields[0], "stage") {
			// The header: which count comes first.
			iw, ie := -1, -1
			for i, f := range fields {
				switch strings.ToLower(f) {
				case "warnings":
					iw = i
				case "errors":
					ie = i
				}
			}
			if iw > 0 && ie > 0 {
				errFirst, inTable = ie < iw, true
			}
			continue
		}
		if inTable {
			if m := ibdiagRowRE().FindStringSubmatch(line); m != nil {
				a, _ := strconv.Atoi(m[2])
				c, _ := strconv.Atoi(m[3])
				st := Stage{Name: m[1], Comment: strings.TrimSpace(m[4]), Line: n}
				if errFirst {
					st.Errors, st.Warnings = a, c
				} else {
					st.Warnings, st.Errors = a, c
				}
				d.Stages = append(d.Stages, st)
				continue
			}
		}
		if m := ibdiagMsgRE().FindStringSubmatch(line); m != nil {
			d.Messages = append(d.Messages, Message{Error: m[1] == "E", Text: m[2], Section: section, Context: info, Line: n})
			continue
		}
		if strings.HasPrefix(line, "-I- ") {
			info = strings.TrimSpace(strings.TrimPrefix(line, "-I- "))
		}
		if strings.HasPrefix(line, "-I- ") && banner == n-1 && banners%2 == 1 {
			section = strings.TrimSpace(strings.TrimPrefix(line, "-I- "))
			continue
		}
		if i := strings.Index(line, "ibdiagnet"); i >= 0 && strings.Contains(line, ".log") {
			for _, f := range strings.Fields(line) {
				if strings.HasSuffix(f, ".log") {
					d.Log = f
				}
			}
		}
		// A continuation of the last message is indented under it.
		if len(d.Messages) > 0 && d.Messages[len(d.Messages)-1].Line == n-1 && strings.HasPrefix(raw, "    ") && !inTable {
			d.Messages[len(d.Messages)-1].Text += " " + line
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(d.Stages) == 0 {
		return nil, fmt.Errorf("no stages table (\"Stages Status Report\" or \"-I- Stage Warnings Errors\" header, then one row per stage)")
	}
	return d, nil
}

// MessagesOf are the messages printed under a stage's section: the
// section whose name shares the stage's words ("IPoIB Subnets Check").
func (d *IBDiag) MessagesOf(st Stage, errors bool) []Message {
	var out []Message
	for _, m := range d.Messages {
		if m.Error == errors && m.Section != "" && sameStage(m.Section, st.Name) {
			out = append(out, m)
		}
	}
	return out
}

func sameStage(section, stage string) bool {
	a, b := strings.ToLower(section), strings.ToLower(stage)
	return strings.Contains(a, b) || strings.Contains(b, a)
}
