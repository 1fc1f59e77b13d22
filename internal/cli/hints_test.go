package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/check"
	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/rdmalab/rdmalab/internal/testhost"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every hint rdmalab prints names a command and flags that exist: an
// "rdmalab X --flag" in a fix or message has X with --flag, and a bare
// "--flag" is a flag of some rdmalab command. Checked over every catalog
// fix and every finding doctor and judge give on the examples and on the
// shared captures.
func TestEveryHintNamesAFlagThatExists(t *testing.T) {
	var o, e strings.Builder
	root := newRoot(&o, &e)
	all := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) { all[f.Name] = true })
		c.PersistentFlags().VisitAll(func(f *pflag.Flag) { all[f.Name] = true })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	cmdRE := regexp.MustCompile(`rdmalab((?: [a-z][a-z-]*)+)((?: [^;'"()]*)?)`)
	flagRE := regexp.MustCompile(`(?:^|[\s(\[,"'])--([a-z][a-z0-9.-]*[a-z0-9])\b`)
	hintRE := regexp.MustCompile(`(?:\b(?:give|pass|with|list[^.;]*? with|rerun with|add) |\b(?:bench|doctor|judge|fabric check|report|nccl judge|nccl run|compare|inventory) )--([a-z][a-z0-9.-]*[a-z0-9])\b`)
	checkText := func(where, s string) {
		for _, m := range cmdRE.FindAllStringSubmatch(s, -1) {
			words := strings.Fields(m[1])
			if top, _, err := root.Find(words[:1]); err != nil || top == root {
				continue // prose: "rdmalab judges …"
			}
			c, _, err := root.Find(words)
			if err != nil || c == root {
				t.Errorf("%s: %q names no rdmalab command", where, "rdmalab"+m[1])
				continue
			}
			for _, f := range flagRE.FindAllStringSubmatch(m[0], -1) {
				if c.Flags().Lookup(f[1]) == nil && c.InheritedFlags().Lookup(f[1]) == nil {
					t.Errorf("%s: %q: %s has no --%s", where, m[0], c.CommandPath(), f[1])
				}
			}
		}
		// A flag rdmalab tells the user to give ("give --expect-ports …",
		// "bench --retest") is one of its own.
		for _, f := range hintRE.FindAllStringSubmatch(s, -1) {
			if !all[f[1]] {
				t.Errorf("%s: --%s is no flag of any rdmalab command: %q", where, f[1], s)
			}
		}
	}
	for _, c := range rules.Catalogs() {
		for _, e := range c.Entries {
			for _, f := range e.Fixes {
				checkText("catalog "+e.ID, f)
			}
			checkText("catalog "+e.ID+" needs", e.Needs)
			checkText("catalog "+e.ID+" unknown-when", e.UnknownWhen)
		}
	}
	findings := func(where string, fs []check.Finding) {
		for _, f := range fs {
			checkText(where+" "+f.Check, f.Message)
			for _, x := range f.Fix {
				checkText(where+" "+f.Check+" fix", x)
			}
		}
	}
	for _, name := range []string{"seed000-epyc", "r730-qdr", "hgx-h200"} {
		out, _, _ := run(t, "doctor", "--snapshot", "example:"+name, "-o", "json")
		findings("doctor "+name, decodeFindings(t, out))
	}
	shared := testhost.SharedTestdata(t)
	filepath.WalkDir(shared, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".md") {
			return nil
		}
		out, _, code := run(t, "judge", "-o", "json", p)
		if code == ExitUsage {
			return nil // not a saved output judge reads
		}
		rel, _ := filepath.Rel(shared, p)
		findings("judge "+rel, decodeFindings(t, out))
		return nil
	})
}

// decodeFindings reads the findings of an envelope.
func decodeFindings(t *testing.T, out string) []check.Finding {
	t.Helper()
	var d struct {
		Findings []check.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("not an envelope: %v\n%.300s", err, out)
	}
	return d.Findings
}
