package cli

import (
	"bufio"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docs/architecture.md's rule, enforced: imports point up the page. Every
// package imports only rdmalab packages listed above it (so foundations,
// listed first, import only each other, and nothing imports a package
// listed after it); cli imports anything, and only cmd/rdmalab imports
// cli. Test files are free (they use testhost, listed last).
func TestImportsPointUpThePage(t *testing.T) {
	const module = "github.com/rdmalab/rdmalab/"
	doc, err := os.Open("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer doc.Close()
	order := map[string]int{}
	pathRE := regexp.MustCompile(`^((?:internal|cmd|examples)[a-z0-9/]*?)/\s`)
	sc := bufio.NewScanner(doc)
	for sc.Scan() {
		if m := pathRE.FindStringSubmatch(sc.Text() + " "); m != nil {
			if _, dup := order[m[1]]; !dup {
				order[m[1]] = len(order)
			}
		}
	}
	if len(order) < 20 {
		t.Fatalf("found %d packages in docs/architecture.md's plan: the parser lost its way", len(order))
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel("../..", filepath.Dir(p))
		pkg := filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		at, listed := order[pkg]
		if !listed {
			// TestArchitectureNamesEveryPackage reports it.
			return nil
		}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if !strings.HasPrefix(path, module) {
				continue
			}
			dep := strings.TrimPrefix(path, module)
			checked++
			switch {
			case dep == "internal/cli":
				if pkg != "cmd/rdmalab" {
					t.Errorf("%s imports internal/cli: nothing but cmd/rdmalab may", p)
				}
			case pkg == "internal/cli" || pkg == "cmd/rdmalab":
			case order[dep] >= at:
				t.Errorf("%s (%s) imports %s, which docs/architecture.md lists below it: move the code or the line, and keep the page true", p, pkg, dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Errorf("only %d imports checked", checked)
	}
}

// No built binary is tracked (a 6.3 MB cluster.test once was, despite
// .gitignore): every file git tracks is checked for an executable's magic
// number (ELF, Mach-O, PE) and for the executable bit on a non-script.
func TestNoBuiltBinaryTracked(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "ls-files", "-s", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	magics := [][]byte{{0x7f, 'E', 'L', 'F'}, {0xcf, 0xfa, 0xed, 0xfe}, {0xfe, 0xed, 0xfa, 0xcf}, {'M', 'Z'}}
	n := 0
	for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		n++
		f, err := os.Open(filepath.Join("../..", path))
		if err != nil {
			continue // deleted in the work tree
		}
		head := make([]byte, 4)
		k, _ := f.Read(head)
		f.Close()
		for _, m := range magics {
			if k >= len(m) && string(head[:len(m)]) == string(m) {
				t.Errorf("%s is a built binary: git rm --cached it (it is built, not kept)", path)
			}
		}
		if strings.HasPrefix(meta, "100755") && !(k >= 2 && head[0] == '#' && head[1] == '!') {
			t.Errorf("%s is executable but not a script", path)
		}
	}
	if n < 100 {
		t.Errorf("only %d tracked files listed", n)
	}
}
