package cli

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// A mistyped command, subcommand or flag is exit 2 with what was meant;
// missing arguments and required flags are said in rdmalab's words.
func TestTyposExitTwoWithASuggestion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nccl", "jugde", "x"}, `nccl: unknown command "jugde"; did you mean rdmalab nccl judge?`},
		{[]string{"fabric", "scna"}, `did you mean rdmalab fabric scan?`},
		{[]string{"plan", "vsm"}, `did you mean rdmalab plan vms?`},
		{[]string{"doctr"}, `did you mean rdmalab doctor?`},
		{[]string{"doctor", "--snapshto", "x"}, `doctor: unknown flag --snapshto; did you mean --snapshot?`},
		{[]string{"compare"}, `compare: wants 2 argument(s), got 0; usage: rdmalab compare RUN_A RUN_B`},
		{[]string{"design", "frr", "--spines", "2"}, `design frr: missing --dir`},
		{[]string{"explain", "port.stat"}, `did you mean`},
	} {
		out, errOut, code := run(t, c.args...)
		if code != ExitUsage || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "arg(s)") || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 saying %q", c.args, code, out, errOut, c.want)
		}
	}
	// A group named alone still shows its help.
	if out, _, code := run(t, "nccl"); code != ExitOK || !strings.Contains(out, "Available Commands") {
		t.Errorf("rdmalab nccl: exit %d\n%s", code, out)
	}
}

// Help fits the width it is given: no line of any command's help is wider
// than --width 80, examples' commands are continued, never cut.
func TestHelpFitsTheWidth(t *testing.T) {
	var walk func(path []string)
	var o, e strings.Builder
	root := newRoot(&o, &e)
	var paths [][]string
	for _, c := range root.Commands() {
		paths = append(paths, []string{c.Name()})
		for _, s := range c.Commands() {
			paths = append(paths, []string{c.Name(), s.Name()})
		}
	}
	walk = func(path []string) {
		out, _, code := run(t, append(append([]string{}, path...), "--help", "--width", "80")...)
		if code != ExitOK {
			t.Errorf("%v --help: exit %d", path, code)
		}
		for _, l := range strings.Split(out, "\n") {
			if utf8.RuneCountInString(l) > 80 {
				t.Errorf("%v --help: line of %d columns: %q", path, utf8.RuneCountInString(l), l)
			}
		}
	}
	for _, p := range append(paths, []string{}) {
		walk(p)
	}
	// The descriptions' prose is laid out for 80 columns as written: a
	// longer line would be cut by the wrapper mid-paragraph, its tail
	// indented apart from its sentence. (A table row, a term and its
	// description apart by a gap of spaces, wraps under its description.)
	var long func(c *cobra.Command)
	long = func(c *cobra.Command) {
		for _, l := range strings.Split(c.Long, "\n") {
			if utf8.RuneCountInString(l) > 80 && !strings.Contains(strings.TrimLeft(l, " "), "  ") {
				t.Errorf("%s: a line of its description is %d columns: %q", c.CommandPath(), utf8.RuneCountInString(l), l)
			}
		}
		for _, s := range c.Commands() {
			long(s)
		}
	}
	long(root)
}
