package deptest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// forbiddenCalls are package-level identifiers that library code must not
// use: process-killing calls (DESIGN.md: never log.Fatal, os.Exit or panic
// outside cmd/) and process-wide shared state (two brokers must run in one
// test process; embedders must not see us mutate their defaults).
var forbiddenCalls = map[string]map[string]string{
	"log": {
		"Fatal": "return an error", "Fatalf": "return an error", "Fatalln": "return an error",
		"Panic": "return an error", "Panicf": "return an error", "Panicln": "return an error",
		"Print": "use an injected *slog.Logger", "Printf": "use an injected *slog.Logger", "Println": "use an injected *slog.Logger",
	},
	"os": {"Exit": "return an error"},
	"http": {
		"DefaultTransport": "build an own *http.Transport", "DefaultClient": "build an own *http.Client",
		"DefaultServeMux": "build an own *http.ServeMux", "Handle": "register on an own *http.ServeMux",
		"HandleFunc": "register on an own *http.ServeMux", "Get": "use an own *http.Client", "Post": "use an own *http.Client",
	},
	"websocket": {"DefaultDialer": "build an own *websocket.Dialer"},
	"slog":      {"SetDefault": "inject a *slog.Logger instead"},
}

func TestLibrariesAvoidProcessWideCalls(t *testing.T) {
	for _, p := range listPackages(t, module+"/...") {
		if p.Name == "main" {
			continue
		}
		for _, name := range p.GoFiles {
			fset := token.NewFileSet()
			path := filepath.Join(p.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatalf("parse %s: %v", path, err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.SelectorExpr:
					id, ok := n.X.(*ast.Ident)
					if !ok || id.Obj != nil {
						return true
					}
					if why, bad := forbiddenCalls[id.Name][n.Sel.Name]; bad {
						t.Errorf("%s: %s.%s in library code: %s", fset.Position(n.Pos()), id.Name, n.Sel.Name, why)
					}
				case *ast.CallExpr:
					if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "panic" && id.Obj == nil {
						t.Errorf("%s: panic in library code: return an error", fset.Position(n.Pos()))
					}
				}
				return true
			})
		}
	}
}
