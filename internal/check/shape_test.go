package check

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// One rule shape (issue 37): a finding is made only through a Reporter
// bound to a catalog entry, so its id names an entry and its fixes come
// from the catalog or from the rule. This test fails on a Finding built
// field by field outside this package, and on init() registration.
func TestOneRuleShape(t *testing.T) {
	fset := token.NewFileSet()
	var bad []string
	for _, root := range []string{"..", "../../cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "testdata" || path == ".") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
					bad = append(bad, fset.Position(fn.Pos()).String()+": init(): declare rules in the package's exported list, not by registration")
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				cl, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				if isFinding(cl.Type) && len(cl.Elts) > 0 {
					bad = append(bad, fset.Position(cl.Pos()).String()+": check.Finding built field by field: report through the rule's check.Reporter")
				}
				// []check.Finding{{Check: …}}: the elements' type is elided.
				if at, ok := cl.Type.(*ast.ArrayType); ok && isFinding(at.Elt) {
					for _, e := range cl.Elts {
						if inner, ok := e.(*ast.CompositeLit); ok && inner.Type == nil && len(inner.Elts) > 0 {
							bad = append(bad, fset.Position(inner.Pos()).String()+": check.Finding built field by field: report through the rule's check.Reporter")
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// isFinding reports whether a type expression is check.Finding.
func isFinding(e ast.Expr) bool {
	se, ok := e.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	id, ok := se.X.(*ast.Ident)
	return ok && id.Name == "check" && se.Sel.Name == "Finding"
}

func TestReporter(t *testing.T) {
	e := Entry{ID: "port.state", Fixes: []string{"ibportstate <lid> <port> enable"}}
	rep := e.Reporter("node1")
	f := rep.Fail("mlx5_0 port 1", "port %s", "Down")
	f.Evidence = append(f.Evidence, Evidence{What: "state", Value: "Down"})
	rep.Pass("mlx5_0 port 2", "Active")
	rep.On("node2").Warn("mlx5_0 port 1", "100%% of %d", 4)
	fs := rep.Findings()
	if len(fs) != 3 {
		t.Fatalf("%d findings", len(fs))
	}
	if fs[0].Check != "port.state" || fs[0].Host != "node1" || fs[0].Message != "port Down" || len(fs[0].Evidence) != 1 || len(fs[0].Fix) != 1 {
		t.Errorf("fail: %+v", fs[0])
	}
	if fs[1].Fix != nil || fs[1].Outcome != Pass {
		t.Errorf("a pass carries no fix: %+v", fs[1])
	}
	if fs[2].Host != "node2" || fs[2].Message != "100% of 4" || fs[2].Fix[0] != e.Fixes[0] {
		t.Errorf("on: %+v", fs[2])
	}
	fs[0].Fix[0] = "changed"
	if e.Fixes[0] == "changed" {
		t.Error("a finding's fixes alias the catalog's")
	}
}
