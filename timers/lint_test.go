package timers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTimersPurity checks the package's rules (doc.go) on its non-test
// files: imports only from the standard library and record, no goroutines,
// and the wall clock read in clock.go only.
func TestTimersPurity(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if strings.Contains(first, ".") && path != "github.com/joinery/joinery/record" {
				t.Errorf("%s imports %s: timers imports only the standard library and record", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: go statement at %v: timers starts no goroutines", name, fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && name != "clock.go" {
					switch n.Sel.Name {
					case "Now", "Since", "Until", "Sleep", "After", "AfterFunc", "NewTimer", "NewTicker", "Tick":
						t.Errorf("%s: time.%s at %v: only clock.go reads the clock", name, n.Sel.Name, fset.Position(n.Pos()))
					}
				}
			}
			return true
		})
	}
}
