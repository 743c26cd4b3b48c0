package deptest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The one way a main declares its flags (docs/design.md, "Thin mains"): a
// flag.FlagSet of its own made with flag.NewFlagSet(name,
// flag.ContinueOnError), each flag bound with a Var function (StringVar,
// IntVar, Func, TextVar, ...) to the library's Config or an options
// struct. These calls break it.
var otherFlagStyles = map[string]string{
	"String": "bind with StringVar", "Int": "bind with IntVar", "Int64": "bind with Int64Var",
	"Uint": "bind with UintVar", "Uint64": "bind with Uint64Var", "Bool": "bind with BoolVar",
	"Float64": "bind with Float64Var", "Duration": "bind with DurationVar",
}

// otherFlagStylesOnPackage are flag package functions that use the
// process-wide flag.CommandLine.
var otherFlagStylesOnPackage = map[string]bool{
	"Parse": true, "CommandLine": true, "Usage": true, "Var": true, "Func": true, "Args": true, "NArg": true,
	"StringVar": true, "IntVar": true, "BoolVar": true, "DurationVar": true, "Float64Var": true,
}

// maxMainLines bounds a main.go: flags live in flags.go, everything else in
// libraries.
const maxMainLines = 170

func TestMainsOneFlagStyle(t *testing.T) {
	for _, p := range listPackages(t, module+"/...") {
		if p.Name != "main" {
			continue
		}
		rel, _ := filepath.Rel(moduleRoot(t), p.Dir)
		for _, name := range p.GoFiles {
			path := filepath.Join(p.Dir, name)
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				id, ok := sel.X.(*ast.Ident)
				if !ok {
					return true
				}
				if id.Name == "flag" && id.Obj == nil && otherFlagStylesOnPackage[sel.Sel.Name] {
					t.Errorf("%s: flag.%s: declare flags on a flag.NewFlagSet of the command's own", fset.Position(sel.Pos()), sel.Sel.Name)
				}
				if why, bad := otherFlagStyles[sel.Sel.Name]; bad && (id.Name == "fs" || id.Name == "flag" && id.Obj == nil) {
					t.Errorf("%s: %s.%s returns a pointer: %s", fset.Position(sel.Pos()), id.Name, sel.Sel.Name, why)
				}
				return true
			})
			if name == "main.go" {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(string(b), "\n"); n > maxMainLines {
					t.Errorf("%s is %d lines, more than %d: move what is not flags into a library", filepath.Join(rel, name), n, maxMainLines)
				}
			}
		}
	}
}

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
