package cli

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rdmalab/rdmalab/internal/lazyre"
	"github.com/rdmalab/rdmalab/internal/report"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A mistyped command or flag is exit 2 with what was meant, in rdmalab's
// own words: cobra prints a group's help and exits 0 for an unknown
// subcommand of a group (rdmalab nccl jugde), suggests nothing for
// subcommands or flags, and says "accepts 2 arg(s), received 0".

// guardGroups makes every command that only groups others refuse an
// unknown subcommand (exit 2, with the nearest names) instead of printing
// its help and succeeding.
func guardGroups(c *cobra.Command) {
	for _, s := range c.Commands() {
		guardGroups(s)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		return unknownCommand(c, args[0])
	}
}

// unknownCommand names the nearest subcommands of c to word.
func unknownCommand(c *cobra.Command, word string) error {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
			names = append(names, s.Aliases...)
		}
	}
	msg := fmt.Sprintf("%sunknown command %q", who(c), word)
	if near := nearest(word, names); len(near) > 0 {
		msg += "; did you mean " + c.CommandPath() + " " + strings.Join(near, " or ") + "?"
	} else {
		msg += "; its commands are " + strings.Join(names, ", ")
	}
	return usageErr("%s", msg)
}

var unknownFlagRE = lazyre.New(`^unknown (?:shorthand )?flag: '?-{0,2}([^' ]+)'?`)

// unknownFlag words pflag's "unknown flag: --snapshto" with the nearest
// flags the command has.
func unknownFlag(c *cobra.Command, err error) (error, bool) {
	m := unknownFlagRE().FindStringSubmatch(err.Error())
	if m == nil {
		return nil, false
	}
	name := m[1]
	var names []string
	add := func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	}
	c.Flags().VisitAll(add)
	c.InheritedFlags().VisitAll(add)
	msg := fmt.Sprintf("%sunknown flag --%s", who(c), name)
	if len(name) == 1 {
		msg = fmt.Sprintf("%sunknown flag -%s", who(c), name)
	}
	if near := nearest(name, names); len(near) > 0 {
		for i := range near {
			near[i] = "--" + near[i]
		}
		msg += "; did you mean " + strings.Join(near, " or ") + "?"
	} else {
		msg += fmt.Sprintf(" (see '%s --help')", c.CommandPath())
	}
	return usageErr("%s", msg), true
}

var columnRE = lazyre.New(`^(\s+\S.*?\S\s{2,})\S`)

var requiredRE = lazyre.New(`^required flag\(s\) (.*) not set$`)

var argsRE = lazyre.New(`^(?:accepts (?:at most |between )?(\d+)(?: and \d+)? arg\(s\), received (\d+)|requires at least (\d+) arg\(s\), only received (\d+)|unknown command "([^"]*)" for "([^"]*)")`)

// plainArgsError words cobra's argument-count errors with the command's
// usage line.
func plainArgsError(ran *cobra.Command, err error) error {
	if ran == nil {
		return nil
	}
	if m := requiredRE().FindStringSubmatch(err.Error()); m != nil {
		names := strings.Split(strings.ReplaceAll(m[1], `"`, ""), ", ")
		for i, n := range names {
			names[i] = "--" + n
			if f := ran.Flags().Lookup(n); f != nil {
				names[i] += ": " + strings.TrimSuffix(strings.TrimSpace(f.Usage), " (required)")
			}
		}
		return usageErr("%smissing %s (see '%s --help')", who(ran), strings.Join(names, "; "), ran.CommandPath())
	}
	m := argsRE().FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	if m[5] != "" {
		return unknownCommand(ran, m[5])
	}
	got := m[2] + m[4]
	want := m[1]
	if m[3] != "" {
		want = "at least " + m[3]
	}
	return usageErr("%swants %s argument(s), got %s; usage: %s (see '%s --help')", who(ran), want, got, ran.UseLine(), ran.CommandPath())
}

// who is "nccl judge: " for a subcommand (the line already starts with
// "rdmalab: "), nothing for the root.
func who(c *cobra.Command) string {
	if !c.HasParent() {
		return ""
	}
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ") + ": "
}

// nearest returns the names within two edits of word, or that start with
// it or contain it, closest first.
func nearest(word string, names []string) []string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, n := range names {
		d := editDistance(strings.ToLower(word), strings.ToLower(n))
		if d <= 2 || (len(word) >= 3 && strings.HasPrefix(n, word)) || (len(word) >= 4 && strings.Contains(n, word)) {
			cs = append(cs, cand{n, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.d - b.d })
	var out []string
	for _, c := range cs {
		if !slices.Contains(out, c.name) && len(out) < 3 {
			out = append(out, c.name)
		}
	}
	return out
}

// editDistance is the Damerau–Levenshtein distance (a swap of two
// neighbouring letters is one edit: scna → scan).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// helpWidth is the width help text wraps to: --width, else the terminal's,
// else $COLUMNS, else 80.
func helpWidth(args []string) int {
	for i, a := range args {
		var v string
		switch {
		case a == "--width" && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(a, "--width="):
			v = strings.TrimPrefix(a, "--width=")
		default:
			continue
		}
		var n int
		if _, err := fmt.Sscan(v, &n); err == nil && n >= 40 {
			return n
		}
	}
	if n, ok := report.TerminalWidth(os.Stdout); ok && n >= 40 {
		return n
	}
	var n int
	if _, err := fmt.Sscan(os.Getenv("COLUMNS"), &n); err == nil && n >= 40 {
		return n
	}
	return 80
}

// wrapHelp makes help and usage wrap to width: the flag lists (pflag wraps
// them itself when asked) and the long descriptions' paragraphs.
func wrapHelp(root *cobra.Command, width int) {
	cobra.AddTemplateFunc("wrappedFlagUsages", func(fs *pflag.FlagSet) string {
		return wrapFlagLines(fs.FlagUsages(), width)
	})
	cobra.AddTemplateFunc("wrapText", func(s string) string { return wrapText(s, width, false) })
	cobra.AddTemplateFunc("wrapExample", func(s string) string { return wrapText(s, width, true) })
	cobra.AddTemplateFunc("wrapShort", func(pad int, s string) string {
		return strings.TrimLeft(wrapText(strings.Repeat(" ", pad+3)+s, width, false), " ")
	})
	h := root.HelpTemplate()
	h = strings.ReplaceAll(h, "{{. | trimTrailingWhitespaces}}", "{{. | trimTrailingWhitespaces | wrapText}}")
	root.SetHelpTemplate(h)
	t := root.UsageTemplate()
	t = strings.ReplaceAll(t, "{{.Example}}", "{{wrapExample .Example}}")
	t = strings.ReplaceAll(t, "{{rpad .Name .NamePadding }} {{.Short}}", "{{rpad .Name .NamePadding }} {{wrapShort .NamePadding .Short}}")
	t = strings.ReplaceAll(t, ".LocalFlags.FlagUsages | trimTrailingWhitespaces", "wrappedFlagUsages .LocalFlags")
	t = strings.ReplaceAll(t, ".InheritedFlags.FlagUsages | trimTrailingWhitespaces", "wrappedFlagUsages .InheritedFlags")
	root.SetUsageTemplate(t)
}

// wrapFlagLines wraps pflag's flag list (one line per flag, or more where
// a usage holds newlines) between words at width, continuation lines under
// the description column.
func wrapFlagLines(usages string, width int) string {
	var b strings.Builder
	col := 0
	for _, line := range strings.Split(strings.TrimRight(usages, " \n"), "\n") {
		// The description starts after the flag's name and type and the
		// padding pflag put there; continuation lines of a usage with a
		// newline already start with spaces.
		if i := strings.Index(strings.TrimLeft(line, " "), "   "); i >= 0 && strings.HasPrefix(strings.TrimLeft(line, " "), "-") {
			lead := len(line) - len(strings.TrimLeft(line, " "))
			j := lead + i
			for j < len(line) && line[j] == ' ' {
				j++
			}
			col = j
		}
		indent := strings.Repeat(" ", col)
		if col == 0 || col > width/2 {
			indent = "        "
		}
		for len(line) > width {
			cut := strings.LastIndex(line[:width+1], " ")
			if cut <= len(indent) {
				break // one word longer than the line: never cut it
			}
			b.WriteString(strings.TrimRight(line[:cut], " ") + "\n")
			line = indent + strings.TrimLeft(line[cut:], " ")
		}
		b.WriteString(line + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// wrapText wraps each line longer than width between words, continuation
// lines indented two more than the line's own indent. An example's command
// is never cut: its comment moves to a line of its own above it, and a
// command still too long is continued with a backslash as a shell reads it.
func wrapText(s string, width int, example bool) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if len(line) <= width {
			out = append(out, line)
			continue
		}
		lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
		if example {
			if i := strings.Index(line, "   #"); i > 0 {
				out = append(out, lead+"# "+strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line[i:]), "#")))
				line = strings.TrimRight(line[:i], " ")
			}
		}
		indent := lead + "  "
		// A two-column line ("  name      what it is") continues under
		// its second column.
		if m := columnRE().FindStringSubmatchIndex(line); m != nil && m[3] < width/2 && !example {
			indent = strings.Repeat(" ", utf8.RuneCountInString(line[:m[3]]))
		}
		for len(line) > width {
			limit := width
			if example {
				limit = width - 2 // room for " \"
			}
			cut := strings.LastIndex(line[:limit+1], " ")
			if cut <= len(indent) {
				break
			}
			if example {
				out = append(out, strings.TrimRight(line[:cut], " ")+" \\")
			} else {
				out = append(out, strings.TrimRight(line[:cut], " "))
			}
			line = indent + strings.TrimLeft(line[cut:], " ")
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}
