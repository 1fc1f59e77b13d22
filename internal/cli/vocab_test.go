package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// vocabulary is the one meaning of each flag name that more than one
// command takes, or that once meant several things (docs/cli.md lists
// them): its value type and a word its help must hold.
var vocabulary = map[string]struct{ typ, word string }{
	"output":            {"format", "table or json"},
	"snapshot":          {"stringArray", "snapshot"},
	"fabric":            {"string", "fabric"},
	"root":              {"string", "root"},
	"cluster":           {"string", "cluster file"},
	"dir":               {"string", "directory"},
	"results":           {"string", "results log"},
	"rounds":            {"string", "round file"},
	"rounds-format":     {"string", "clusterkit"},
	"expect-rate":       {"string", "rate"},
	"expect-link-layer": {"string", "InfiniBand"},
	"topology":          {"string", "cabling"},
	"threshold":         {"stringArray", "COUNTER=N"},
	"timeout":           {"duration", ""},
	"interval":          {"duration", ""},
	"test":              {"stringArray", ""},
	"nodes":             {"int", "nodes"},
}

// retired names: old spellings that must stay hidden aliases, never a
// visible flag of any command again.
var retired = []string{"out", "hosts", "format", "layer", "nic-rate", "expect-layer"}

// Every command's flags, walked: one name has one value type everywhere
// (the vocabulary's, where it has an entry, with its word in the help);
// every hidden flag is an old spelling of a flag its command has; retired
// names are never shown. Hidden commands (the bench agent, release) are
// internal interfaces and not walked.
func TestFlagVocabulary(t *testing.T) {
	var o, e strings.Builder
	root := newRoot(&o, &e)
	types := map[string]map[string][]string{} // name → type → commands
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		path := strings.TrimPrefix(c.CommandPath(), "rdmalab ")
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				newName, ok := strings.CutPrefix(f.Usage, "old spelling of --")
				if !ok || c.Flags().Lookup(newName) == nil || c.Flags().Lookup(newName).Hidden {
					t.Errorf("%s --%s is hidden but is no old spelling of a flag it shows (usage %q)", path, f.Name, f.Usage)
				}
				return
			}
			if slices.Contains(retired, f.Name) {
				t.Errorf("%s shows --%s, a retired name (docs/cli.md)", path, f.Name)
			}
			if types[f.Name] == nil {
				types[f.Name] = map[string][]string{}
			}
			types[f.Name][f.Value.Type()] = append(types[f.Name][f.Value.Type()], path)
			if v, ok := vocabulary[f.Name]; ok {
				if f.Value.Type() != v.typ {
					t.Errorf("%s --%s is a %s; the name means a %s everywhere (docs/cli.md)", path, f.Name, f.Value.Type(), v.typ)
				}
				if !strings.Contains(f.Usage, v.word) {
					t.Errorf("%s --%s: its help %q does not say %q, what the name means everywhere", path, f.Name, f.Usage, v.word)
				}
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	for name, byType := range types {
		if len(byType) > 1 {
			t.Errorf("--%s has %d value types: %v; one name means one thing (docs/cli.md)", name, len(byType), byType)
		}
	}

	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name := range vocabulary {
		if !strings.Contains(string(doc), "`--"+name) {
			t.Errorf("docs/cli.md does not list --%s", name)
		}
	}
	for _, name := range retired {
		if !strings.Contains(string(doc), "`--"+name+"`") {
			t.Errorf("docs/cli.md does not list the retired --%s", name)
		}
	}
}

// Old spellings still work, silently: the value reaches the new flag and
// nothing extra is printed.
func TestOldSpellingsStillParse(t *testing.T) {
	for _, args := range [][]string{
		{"fabric", "check", "--fabric", "example:qdr-lab"},
		{"exporter", "--fabric", "--phy", "--help"},
		{"bench", "schedule", "--format", "superbench", "--help"},
		{"report", "--out", "x.html", "--help"},
	} {
		_, errOut, code := run(t, args...)
		if code == ExitUsage || strings.Contains(errOut, "deprecated") || strings.Contains(errOut, "old spelling") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	var o, e strings.Builder
	root := newRoot(&o, &e)
	c, _, _ := root.Find([]string{"exporter"})
	if err := c.ParseFlags([]string{"--fabric"}); err != nil || c.Flags().Lookup("collector.fabric").Value.String() != "true" {
		t.Errorf("exporter --fabric (a bool, no value) did not set --collector.fabric: %v", err)
	}
}

// A flag typed repeatable for one name everywhere, where a command takes
// one value, refuses a second with exit 2 naming it.
func TestRepeatableNameOneValue(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"judge", "--snapshot", "example:seed000-epyc", "--snapshot", "example:hgx-h200", "-"}, "--snapshot: one host"},
		{[]string{"bench", "--cluster", "c.yaml", "--test", "ib_write_bw", "--test", "ib_read_bw"}, "--test: a bench run measures one test"},
	} {
		_, errOut, code := run(t, c.args...)
		if code != ExitUsage || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q", c.args, code, errOut, c.want)
		}
	}
}
