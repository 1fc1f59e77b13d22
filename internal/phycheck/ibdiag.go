package phycheck

import (
	"fmt"
	"strings"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/phy"
)

var (
	groupRateRE = lazyre.New(`(?i)Suboptimal rate for group.*?member rate:\s*([\d.]+)\s*Gbps.*?group-rate:\s*([\d.]+)\s*Gbps`)
	pkeyRE      = lazyre.New(`PKey:\s*(0x[0-9a-fA-F]+)`)
)

// ibRateCode is the IBA rate enumeration OpenSM's partitions.conf takes
// as rate= (PathRecord/MCMemberRecord rate), for the group rates an IPoIB
// fix may name.
var ibRateCode = map[string]int{"2.5": 2, "10": 3, "30": 4, "5": 5, "20": 6, "40": 7, "60": 8, "80": 9, "120": 10, "14": 11, "56": 12, "112": 13, "168": 14, "25": 15, "100": 16, "200": 17, "300": 18, "28": 19, "50": 20, "400": 21, "600": 22}

// IBDiag judges an ibdiagnet summary: each stage's errors fail and
// warnings warn, quoting the messages printed under it; the stages with
// nothing found are one pass.
func IBDiag(d *phy.IBDiag) []check.Finding {
	var fs []check.Finding
	var clean []string
	for _, st := range d.Stages {
		src := fmt.Sprintf("%s line %d", d.Source, st.Line)
		counts := fmt.Sprintf("%d error(s), %d warning(s)", st.Errors, st.Warnings)
		if st.Errors == 0 && st.Warnings == 0 {
			clean = append(clean, st.Name)
			continue
		}
		out := check.Warn
		msgs := d.MessagesOf(st, false)
		if st.Errors > 0 {
			out = check.Fail
			msgs = append(d.MessagesOf(st, true), msgs...)
		}
		var texts []string
		ev := []check.Evidence{{What: st.Name, Value: counts, Source: src}}
		fix := []string{logFix(d)}
		for _, m := range msgs {
			texts = append(texts, m.Text)
			ev = append(ev, check.Evidence{What: kind(m), Value: m.Text, Source: fmt.Sprintf("%s line %d", d.Source, m.Line)})
			if g := groupRateRE().FindStringSubmatch(m.Text); g != nil {
				pk := "the partition's"
				if k := pkeyRE().FindStringSubmatch(m.Context); k != nil {
					pk = "PKey " + k[1] + "'s"
				}
				line := fmt.Sprintf("in OpenSM's partitions.conf give %s ipoib group the members' rate", pk)
				if code, ok := ibRateCode[g[1]]; ok {
					line = fmt.Sprintf("in OpenSM's partitions.conf give %s ipoib group rate=%d (%s Gb/s, the lowest member's), e.g. %s, ipoib, rate=%d : ALL=full; then restart opensm", pk, code, g[1], partitionOf(m.Context), code)
				}
				fix = []string{line}
			}
		}
		what := strings.Join(texts, "; ")
		if what == "" {
			what = "the messages are in " + orDefault(d.Log, "ibdiagnet's log")
		}
		f := CheckIBDiagStage.Reporter("").New(out, "ibdiagnet stage "+st.Name, "%s: %s: %s (%s)", st.Name, counts, what, srcIBDiag)
		f.Evidence = ev
		if f.Fix != nil { // a failure or warning: the stage's own fix
			f.Fix = fix
		}
		fs = append(fs, f)
	}
	if len(clean) > 0 {
		fs = append(fs, CheckIBDiagStage.Reporter("").New(check.Pass, "ibdiagnet stages", "%d stage(s) found no errors or warnings: %s", len(clean), strings.Join(clean, ", ")))
	}
	check.Sort(fs)
	return fs
}

func kind(m phy.Message) string {
	if m.Error {
		return "-E-"
	}
	return "-W-"
}

// partitionOf is the partitions.conf name=pkey of the message's PKey:
// the default partition is "Default=0x7fff"; others keep their name.
func partitionOf(ctx string) string {
	k := pkeyRE().FindStringSubmatch(ctx)
	switch {
	case k == nil:
		return "<partition>=<pkey>"
	case strings.EqualFold(k[1], "0x7fff") || strings.EqualFold(k[1], "0xffff"):
		return "Default=0x7fff"
	}
	return "<its name>=" + k[1]
}

func logFix(d *phy.IBDiag) string {
	if d.Log != "" {
		return "read the stage's -E-/-W- lines in " + d.Log
	}
	return "read the stage's -E-/-W- lines in ibdiagnet's log"
}
