package phy

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/lazyre"
)

// `ethtool --show-fec <if>` prints "FEC parameters for <if>:", the
// supported/configured encodings and the active one; with -I newer
// ethtool adds block statistics (corrected_blocks, uncorrectable_blocks,
// corrected_bits, perhaps per lane). Pastes carry prompts, sudo's
// password prompt and comments: those lines are skipped and named.

var (
	fecHeadRE  = lazyre.New(`^FEC parameters for (\S+?):?$`)
	fecRowRE   = lazyre.New(`^(Supported/Configured|Configured|Supported|Active) FEC encodings?:\s*(.*)$`)
	fecStatRE  = lazyre.New(`^(corrected_blocks|uncorrectable_blocks|corrected_bits)\s*:\s*(\d+)`)
	fecLaneRE  = lazyre.New(`^Lane\s+(\d+)\s*:\s*(\d+)`)
	fecSniffRE = lazyre.New(`(?m)^[ \t]*FEC parameters for \S+[ \t]*\r?\n[ \t]*(?:Supported/Configured|Configured|Supported|Active) FEC encoding`)
)

// SniffShowFEC reports whether b looks like `ethtool --show-fec` output.
func SniffShowFEC(b []byte) bool {
	return fecSniffRE().Match(b)
}

// ParseShowFEC reads every `ethtool --show-fec` block in b.
func ParseShowFEC(b []byte, name string) ([]Port, error) {
	var out []Port
	var skipped []string
	host := ""
	stat := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if m := fecHeadRE().FindStringSubmatch(line); m != nil {
			out = append(out, Port{Netdev: m[1], Host: host, Tool: "ethtool --show-fec", Source: fmt.Sprintf("%s line %d", name, n), FEC: &FEC{}})
			stat = ""
			continue
		}
		if len(out) > 0 {
			p := &out[len(out)-1]
			if m := fecRowRE().FindStringSubmatch(line); m != nil {
				modes := strings.Fields(m[2])
				switch m[1] {
				case "Active":
					p.FEC.Active = m[2]
					p.FEC.Kind = ClassifyFEC(m[2])
				case "Supported":
					p.FEC.Supported = modes
				default:
					p.FEC.Configured = modes
				}
				continue
			}
			if m := fecStatRE().FindStringSubmatch(line); m != nil {
				v, _ := parseCount(m[2])
				if p.Counters == nil {
					p.Counters = &Counters{Window: WindowUnknown}
				}
				switch m[1] {
				case "corrected_blocks":
					p.Counters.CorrectedBlocks = u64(v)
				case "uncorrectable_blocks":
					p.Counters.Uncorrectable = u64(v)
				case "corrected_bits":
					p.Counters.CorrectedBits = u64(v)
				}
				stat = m[1]
				continue
			}
			if fecLaneRE().MatchString(line) && stat != "" || line == "Statistics:" {
				continue
			}
		}
		if m := promptHostRE().FindStringSubmatch(line); m != nil && m[1] != "" {
			host = m[1]
		}
		skipped = append(skipped, fmt.Sprintf("line %d", n))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no \"FEC parameters for <if>:\" block")
	}
	for i := range out {
		if out[i].Host == "" {
			out[i].Host = host
		}
	}
	if len(skipped) > 0 {
		out[0].Skipped = append(out[0].Skipped, "not ethtool output (prompts, sudo, comments): "+strings.Join(skipped, ", "))
	}
	return out, nil
}
