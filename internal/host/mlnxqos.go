package host

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

var (
	mlnxQosCmdRE  = lazyre.New(`mlnx_qos\s+(?:.*\s)?(?:-i|--interface)[\s=]+(\S+)`)
	qosDeviceRE   = lazyre.New(`configuration for device\s+(\S+)(?:\s*/\s*([A-Za-z0-9_]+))?`)
	dscp2prioRE   = lazyre.New(`^prio:\s*(\d+)\s+dscp:\s*([\d,\s]*)$`)
	qosTCRE       = lazyre.New(`^tc:\s*(\d+)\b`)
	qosTCPrioRE   = lazyre.New(`^priority:\s*(\d+)$`)
	pathValueRE   = lazyre.New(`(/sys/\S+)\s*=\s*(.*)$`)
	cmaRoceTosRE  = lazyre.New(`^cma_roce_tos:\s*(\d+)$`)
	linePrefixRE  = lazyre.New(`^[\s*|│>]*`)
	tmuxCounterRE = lazyre.New(`\s*\[\d+/\d+\]\s*$`)
)

// ErrNoQoS is a text that holds nothing a QoS parser recognises.
var ErrNoQoS = errors.New("no QoS state found")

// SniffMlnxQos reports whether b looks like mlnx_qos output (or a query
// script that prints its lines).
func SniffMlnxQos(b []byte) bool {
	return bytes.Contains(b, []byte("Priority trust state:")) || (bytes.Contains(b, []byte("PFC configuration:")) && bytes.Contains(b, []byte("enabled")))
}

// ParseMlnxQos reads `mlnx_qos -i IF` output: DCBX mode, trust state,
// dscp2prio map, the PFC table, and tc/priority groups; also the "path =
// value" lines of query scripts built around it (ECN enables, CNP DSCP,
// traffic_class) and `cma_roce_tos` output. The interface comes from the
// command line shown (`mlnx_qos -i eth4`, `+ mlnx_qos …` traces) or a
// "configuration for device IF" header; "" when the text never names it.
// When one interface is shown more than once (a script printing after
// each change) the later reading wins. Values are sourced to src and the
// line they were read on.
func ParseMlnxQos(b []byte, src string) ([]RoCEQoS, error) {
	var l qosList
	get, q := l.get, l.current
	section := ""
	var pfcPrios []int
	curTC := 0
	found := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	// A one-line text (a sysfs file) needs no line number in its source.
	numbered := src != "" && bytes.Contains(bytes.TrimSpace(b), []byte("\n"))
	for sc.Scan() {
		n++
		raw := tmuxCounterRE().ReplaceAllString(sc.Text(), "")
		line := strings.TrimSpace(linePrefixRE().ReplaceAllString(raw, ""))
		at := src
		if numbered {
			at = fmt.Sprintf("%s line %d", src, n)
		}
		if m := mlnxQosCmdRE().FindStringSubmatch(line); m != nil {
			get(m[1])
			section = ""
			continue
		}
		if m := qosDeviceRE().FindStringSubmatch(line); m != nil {
			e := get(m[1])
			if m[2] != "" {
				e.Device, e.Port = m[2], 1
			}
			section = ""
			continue
		}
		if strings.HasPrefix(line, "+ ") || strings.HasPrefix(line, "$ ") || strings.HasPrefix(line, "# ") {
			section = "" // another command: what follows is its output
			continue
		}
		// An author's note after the output ("<-- lossless", "# set by
		// the script") is not the format: cut, and named as skipped.
		if v, note := cutNoteAt(line, qosNotes); note != "" {
			line = v
			q().Skipped = append(q().Skipped, fmt.Sprintf("line %d: note %q", n, note))
		}
		key, val, _ := strings.Cut(line, ":")
		switch {
		case strings.HasPrefix(line, "DCBX mode:"):
			q().DCBX = Got(strings.TrimSpace(val), at)
			found, section = true, ""
		case strings.HasPrefix(line, "Priority trust state:"):
			v := strings.ToLower(strings.TrimSpace(val))
			if v != "pcp" && v != "dscp" {
				return nil, fmt.Errorf("line %d: trust state %q: want pcp or dscp", n, v)
			}
			q().Trust = Got(v, at)
			found, section = true, ""
		case strings.HasPrefix(line, "dscp2prio mapping:"):
			q().DSCPPrio = Got(map[int]int{}, at)
			found, section = true, "dscp2prio"
		case section == "dscp2prio" && dscp2prioRE().MatchString(line):
			m := dscp2prioRE().FindStringSubmatch(line)
			p, _ := strconv.Atoi(m[1])
			if p > 7 {
				return nil, fmt.Errorf("line %d: priority %d: want 0-7", n, p)
			}
			for _, d := range strings.FieldsFunc(m[2], func(r rune) bool { return r == ',' || r == ' ' }) {
				v, err := strconv.Atoi(d)
				if err != nil || v > 63 {
					return nil, fmt.Errorf("line %d: DSCP %q: want 0-63", n, d)
				}
				q().DSCPPrio.Value[v] = p
			}
		case strings.HasPrefix(line, "PFC configuration:"):
			found, section, pfcPrios = true, "pfc", nil
		case section == "pfc" && key == line && strings.HasPrefix(line, "priority"):
			pfcPrios = nil
			for _, f := range strings.Fields(line)[1:] {
				p, err := strconv.Atoi(f)
				if err != nil || p > 7 {
					return nil, fmt.Errorf("line %d: priority %q: want 0-7", n, f)
				}
				pfcPrios = append(pfcPrios, p)
			}
		case section == "pfc" && strings.HasPrefix(line, "enabled"):
			f := strings.Fields(line)[1:]
			if pfcPrios == nil {
				pfcPrios = []int{0, 1, 2, 3, 4, 5, 6, 7}
			}
			if len(f) != len(pfcPrios) {
				return nil, fmt.Errorf("line %d: %d PFC flags for %d priorities", n, len(f), len(pfcPrios))
			}
			on := []int{}
			for i, v := range f {
				switch v {
				case "1":
					on = append(on, pfcPrios[i])
				case "0":
				default:
					return nil, fmt.Errorf("line %d: PFC flag %q: want 0 or 1", n, v)
				}
			}
			q().PFC = Got(on, at)
		case qosTCRE().MatchString(line):
			tc, _ := strconv.Atoi(qosTCRE().FindStringSubmatch(line)[1])
			if section != "tc" {
				q().PrioTC = Got([]int{-1, -1, -1, -1, -1, -1, -1, -1}, at)
			}
			section, curTC, found = "tc", tc, true
			continue
		case section == "tc" && qosTCPrioRE().MatchString(line):
			p, _ := strconv.Atoi(qosTCPrioRE().FindStringSubmatch(line)[1])
			if p > 7 {
				return nil, fmt.Errorf("line %d: priority %d: want 0-7", n, p)
			}
			q().PrioTC.Value[p] = curTC
			continue
		case pathValueRE().MatchString(line):
			m := pathValueRE().FindStringSubmatch(line)
			e := q()
			if e.Netdev == "" {
				if nd := netdevOfPath(m[1]); nd != "" {
					e.Netdev = nd
				}
			}
			ok, err := e.SetFromSysfs(m[1], m[2], at)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %w", n, m[1], err)
			}
			found = found || ok
		case cmaRoceTosRE().MatchString(line):
			v, _ := strconv.Atoi(cmaRoceTosRE().FindStringSubmatch(line)[1])
			if v > 255 {
				return nil, fmt.Errorf("line %d: ToS %d: want 0-255", n, v)
			}
			q().DefaultRoCETos = Got(v, at+" (cma_roce_tos)")
			found = true
		}
		if section == "tc" {
			section = "" // a tc group ends at the first other line
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, ErrNoQoS
	}
	return l.readings(), nil
}

// netdevOfPath names the netdev of a /sys/class/net/IF/… path.
func netdevOfPath(p string) string {
	rest, ok := strings.CutPrefix(p, "/sys/class/net/")
	if !ok {
		return ""
	}
	nd, _, _ := strings.Cut(rest, "/")
	return nd
}

// qosList collects a text's readings per netdev in the order it shows
// them; the current one is the netdev named last (an unnamed one until a
// name appears).
type qosList struct {
	out []RoCEQoS
	cur int // index+1 of the current reading; 0: none yet
}

func (l *qosList) get(netdev string) *RoCEQoS {
	i := slices.IndexFunc(l.out, func(q RoCEQoS) bool { return q.Netdev == netdev })
	if i < 0 {
		l.out = append(l.out, RoCEQoS{Netdev: netdev})
		i = len(l.out) - 1
	}
	l.cur = i + 1
	return &l.out[i]
}

func (l *qosList) current() *RoCEQoS {
	if l.cur == 0 {
		return l.get("")
	}
	return &l.out[l.cur-1]
}

// readings drops netdevs the text named but showed nothing of.
func (l *qosList) readings() []RoCEQoS {
	return slices.DeleteFunc(l.out, func(q RoCEQoS) bool { return q.Empty() })
}

// qosNotes mark an author's note in mlnx_qos output, whose own lines hold
// paths (so a note's "#" or "//" needs a space before it).
var qosNotes = []string{"<--", "<-", "←", " #", " //"}
