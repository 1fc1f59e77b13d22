package check

import "fmt"

// Reporter is the one way a rule reports, as go/analysis's Pass.Report: it
// is bound to the rule's catalog entry, so a finding's id always names an
// entry (and `rdmalab explain` finds it), and a failure or warning carries
// the catalog's fixes unless the rule gives specific ones (Fix on the
// returned finding, naming the real device, port or LID).
//
// A rule is its Entry plus a function taking a *Reporter; the packages keep
// their own input types (a host snapshot, a fabric, a run's records) and
// create the reporter with Entry.Reporter. No other code builds a Finding
// with its fields (TestOneRuleShape fails on one).
type Reporter struct {
	entry Entry
	host  string
	out   *[]*Finding
}

// Reporter returns a reporter for this entry's check about host ("" for a
// finding about the fabric, a run or the fleet).
func (e Entry) Reporter(host string) *Reporter {
	return &Reporter{entry: e, host: host, out: new([]*Finding)}
}

// On returns a reporter for the same check and the same findings about
// another host (fleet rules report each odd host).
func (r *Reporter) On(host string) *Reporter {
	return &Reporter{entry: r.entry, host: host, out: r.out}
}

// Entry is the catalog entry the reporter is bound to.
func (r *Reporter) Entry() Entry { return r.entry }

// Report records a finding of the bound check about subject and returns it
// so the rule can add evidence or specific fixes. The pointer stays valid
// until Findings is called.
func (r *Reporter) Report(o Outcome, subject, format string, a ...any) *Finding {
	f := r.New(o, subject, format, a...)
	*r.out = append(*r.out, &f)
	return &f
}

// New is a finding of the bound check that is not recorded: for a rule
// that weighs several candidate findings and returns one, or for a helper
// that returns a finding to its rule. Report is the usual way.
func (r *Reporter) New(o Outcome, subject, format string, a ...any) Finding {
	msg := format
	if len(a) > 0 {
		msg = fmt.Sprintf(format, a...)
	}
	f := Finding{Check: r.entry.ID, Outcome: o, Host: r.host, Subject: subject, Message: msg}
	if o == Fail || o == Warn {
		f.Fix = append([]string(nil), r.entry.Fixes...)
	}
	return f
}

// Fail, Warn, Unknown and Pass are Report with that outcome.
func (r *Reporter) Fail(subject, format string, a ...any) *Finding {
	return r.Report(Fail, subject, format, a...)
}

// Warn reports a warning; see Report.
func (r *Reporter) Warn(subject, format string, a ...any) *Finding {
	return r.Report(Warn, subject, format, a...)
}

// Unknown reports that the input held no evidence either way; see Report.
func (r *Reporter) Unknown(subject, format string, a ...any) *Finding {
	return r.Report(Unknown, subject, format, a...)
}

// Pass reports a pass; see Report.
func (r *Reporter) Pass(subject, format string, a ...any) *Finding {
	return r.Report(Pass, subject, format, a...)
}

// Findings is everything reported through this reporter and those made
// from it by On, in order.
func (r *Reporter) Findings() []Finding {
	out := make([]Finding, 0, len(*r.out))
	for _, f := range *r.out {
		out = append(out, *f)
	}
	return out
}
