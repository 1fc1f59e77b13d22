package cli

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmalab/rdmalab/internal/rules"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var updateChecks = flag.Bool("update-checks", false, "rewrite docs/checks.md from the catalogs")

// checkIDRE is what a check id looks like: dotted lower-case words.
var checkIDRE = regexp.MustCompile(`^[a-z][a-z0-9]*(\.[a-z0-9][a-z0-9-]*)+$|^memlock$`)

// usedCheckIDs collects every check id the code under root reports, by
// syntax (no type checking, so it is quick and sees every package):
//   - a string literal in a Check: or ID: field of a composite literal;
//   - a string literal assigned to a variable or constant whose name is
//     id or ends in ID;
//   - a string literal passed to a function or closure of the same package
//     whose parameter at that position is called id;
//   - a string literal passed in the same call as an outcome constant
//     (check.Fail, check.Warn, check.Unknown, check.Pass).
//
// It returns each id with the first place it is used.
func usedCheckIDs(t *testing.T, root string) map[string]string {
	t.Helper()
	used := map[string]string{}
	fset := token.NewFileSet()
	dirs := map[string][]*ast.File{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.Contains(p, "/testdata/") || strings.Contains(p, "/testhost/") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		dirs[filepath.Dir(p)] = append(dirs[filepath.Dir(p)], f)
		return nil
	})
	lit := func(e ast.Expr) (string, bool) {
		b, ok := e.(*ast.BasicLit)
		if !ok || b.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(b.Value)
		return s, err == nil && checkIDRE.MatchString(s)
	}
	add := func(e ast.Expr) {
		if s, ok := lit(e); ok {
			if _, seen := used[s]; !seen {
				used[s] = fset.Position(e.Pos()).String()
			}
		}
	}
	isID := func(name string) bool { return name == "id" || name == "check_" || strings.HasSuffix(name, "ID") }
	isOutcome := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return false
		}
		x, ok := sel.X.(*ast.Ident)
		return ok && x.Name == "check" && slices.Contains([]string{"Fail", "Warn", "Unknown", "Pass"}, sel.Sel.Name)
	}
	for _, files := range dirs {
		// The parameter names of the package's functions and closures.
		params := map[string][]string{}
		names := func(ft *ast.FuncType) []string {
			var out []string
			for _, f := range ft.Params.List {
				if len(f.Names) == 0 {
					out = append(out, "")
				}
				for _, n := range f.Names {
					out = append(out, n.Name)
				}
			}
			return out
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl:
					params[n.Name.Name] = names(n.Type)
				case *ast.AssignStmt:
					for i, r := range n.Rhs {
						if fl, ok := r.(*ast.FuncLit); ok && i < len(n.Lhs) {
							if id, ok := n.Lhs[i].(*ast.Ident); ok {
								params[id.Name] = names(fl.Type)
							}
						}
					}
				}
				return true
			})
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.KeyValueExpr:
					if k, ok := n.Key.(*ast.Ident); ok && (k.Name == "Check" || k.Name == "ID") {
						add(n.Value)
					}
				case *ast.AssignStmt:
					for i, l := range n.Lhs {
						if id, ok := l.(*ast.Ident); ok && isID(id.Name) && i < len(n.Rhs) {
							add(n.Rhs[i])
						}
					}
				case *ast.ValueSpec:
					for i, id := range n.Names {
						if isID(id.Name) && i < len(n.Values) {
							add(n.Values[i])
						}
					}
				case *ast.CallExpr:
					name := ""
					switch fn := n.Fun.(type) {
					case *ast.Ident:
						name = fn.Name
					case *ast.SelectorExpr:
						name = fn.Sel.Name
					}
					ps := params[name]
					outcome := slices.ContainsFunc(n.Args, isOutcome)
					for i, a := range n.Args {
						if outcome || (i < len(ps) && isID(ps[i])) {
							add(a)
						}
					}
				}
				return true
			})
		}
	}
	return used
}

// Every check id reported anywhere in the tree is in a catalog: a rule
// cannot be added without saying what it needs, when it is unknown and
// how to fix what it finds (docs/checks.md is made from the catalogs).
func TestEveryCheckIDInACatalog(t *testing.T) {
	known := map[string]bool{}
	for _, c := range catalogs() {
		for _, e := range c.Entries {
			if known[e.ID] {
				t.Errorf("%s is in two catalogs", e.ID)
			}
			known[e.ID] = true
		}
	}
	used := usedCheckIDs(t, "..")
	var ids []string
	for id := range used {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if !known[id] {
			t.Errorf("%s (%s) is in no catalog", id, used[id])
		}
	}
	if len(used) < 50 {
		t.Errorf("only %d check ids found in the tree: the collector lost its way", len(used))
	}
}

// catalogs is every package's catalog: the production list.
func catalogs() []rules.Catalog { return rules.Catalogs() }

// docs/checks.md is every catalog, generated:
// go test ./internal/cli -run TestChecksDoc -update-checks.
func TestChecksDoc(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Checks\n\nEvery check rdmalab reports, generated from the packages' catalogs (`go test ./internal/cli -run TestChecksDoc -update-checks`).\n")
	b.WriteString("Outcomes: `fail` (exit 1), `warn`, `unknown` (inputs could not be read: never reported as pass), `pass`.\n")
	b.WriteString(verdictContract)
	b.WriteString("Each check says what it needs to be sure and what makes it say unknown instead. A test fails on a check id the code reports that no catalog holds.\n\n")
	for _, c := range catalogs() {
		fmt.Fprintf(&b, "- [%s](#%s): %s\n", c.Name, c.Name, c.Command)
	}
	for _, c := range catalogs() {
		fmt.Fprintf(&b, "\n# %s\n\n%s.\n\n| id | checks |\n|---|---|\n", c.Name, c.Command)
		for _, e := range c.Entries {
			fmt.Fprintf(&b, "| [`%s`](#%s) | %s |\n", e.ID, strings.ReplaceAll(e.ID, ".", ""), e.Title)
		}
		for _, e := range c.Entries {
			if e.Title == "" || e.Why == "" || e.Needs == "" || e.UnknownWhen == "" {
				t.Errorf("%s: a catalog entry says its title, why, what it needs and when it is unknown", e.ID)
			}
			fmt.Fprintf(&b, "\n## %s\n\n**%s.** %s\n\n", e.ID, e.Title, e.Why)
			fmt.Fprintf(&b, "- Needs: %s\n- Unknown when: %s\n- Source: %s\n", e.Needs, e.UnknownWhen, e.Source)
			if e.Decides {
				b.WriteString("- Decides: an unknown here leaves the command's question open: the run is unproven (exit 3)\n")
			}
			for _, f := range e.Fixes {
				fmt.Fprintf(&b, "- Fix: %s\n", f)
			}
		}
	}
	const path = "../../docs/checks.md"
	if *updateChecks {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != b.String() {
		t.Errorf("docs/checks.md is out of date: go test ./internal/cli -run TestChecksDoc -update-checks (%v)", err)
	}
}

// One flag pair names the expected link on every command that takes one;
// the old spellings still parse but are hidden from help.
func TestExpectFlagsOneSpelling(t *testing.T) {
	var o, e strings.Builder
	root := newRoot(&o, &e)
	for _, path := range [][]string{{"doctor"}, {"judge"}, {"bench"}, {"nccl", "judge"}, {"fabric", "check"}, {"slurm", "health"}} {
		c, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		if c.Flags().Lookup("expect-rate") == nil {
			t.Errorf("%v has no --expect-rate", path)
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if slices.Contains([]string{"rate", "nic-rate", "fabric-rate", "expect-layer", "layer", "link-layer"}, f.Name) && !f.Hidden {
				t.Errorf("%v shows --%s in its help: the name is --expect-rate / --expect-link-layer", path, f.Name)
			}
		})
	}
}

// A command's examples pass only flags it has (judge once told users to
// pass --nic-rate, which only nccl judge had).
func TestHelpNamesOnlyItsFlags(t *testing.T) {
	var o, e strings.Builder
	root := newRoot(&o, &e)
	flagRE := regexp.MustCompile(`(?:^|[\s(\[,"'])--([a-z][a-z0-9.-]*[a-z0-9])`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		// Only the examples that run this very command: a parent's help
		// may name its subcommands' flags, and tools have flags of their own.
		for _, line := range strings.Split(c.Example, "\n") {
			i := strings.Index(line, c.CommandPath()+" ")
			if i < 0 || c.HasSubCommands() {
				continue
			}
			rest := line[i:]
			if j := strings.Index(rest, "|"); j >= 0 {
				rest = rest[:j]
			}
			for _, m := range flagRE.FindAllStringSubmatch(rest, -1) {
				if c.Flags().Lookup(m[1]) == nil && c.InheritedFlags().Lookup(m[1]) == nil && m[1] != "help" {
					t.Errorf("%s: its example passes --%s, which it does not have", c.CommandPath(), m[1])
				}
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// verdictContract heads docs/checks.md: what every judging command holds to.
const verdictContract = `
## The verdict contract

1. Evidence of a fault in the input is a finding (fail, or warn where the fault is minor) whose message states the
   belief it rests on ("all 7 ports of this host's MT4131 NICs are down"). A check says unknown only when the input
   holds no evidence either way.
2. Every judging command answers one central question and ends with one verdict, the same in its text (the last
   line, ` + "`verdict: …`" + `), its JSON (` + "`verdict`" + ` in the envelope), the HTML report, the NHC line and the exit code:
   - **failed** (exit 1): a check failed;
   - **unproven** (exit 3, Nagios UNKNOWN): nothing failed, but a check marked *Decides* below is unknown, or
     nothing passed at all; the verdict names the input or flag that would answer it;
   - **healthy** (exit 0): something passed, nothing failed, no deciding check is unknown. Unknowns on other
     checks are listed to read; they do not decide.
   Exit 2 means the command could not run (bad flag, unreadable input); 130/143 an interrupt.
3. The questions: doctor, are the RDMA ports meant to carry traffic up at their rate, and is the host ready?
   judge, does this output show a healthy result? fabric check, is every link at its rate under one master
   subnet manager? bench, does every measured direction carry what its link can? nccl judge/run, did the
   collective complete, correct, over RDMA, at the bandwidth the NICs carry? compare, did anything get worse?
   report, is the cluster ready? plan check, are these VMs placed as the host's topology needs?
4. Structure is read from content, never from file names; tool semantics decide fatal from harmless.
5. Judgement is against the physical ceiling first, then against peers through a centre no minority can move;
   a value above ~105% of a ceiling is a measurement error, never good; inf, NaN and absurd values fail.
`
