package deptest

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestPackageDocs checks that every package has exactly one package comment
// ("// Package x ..." for libraries, any comment for main packages), in one
// of its non-test files.
func TestPackageDocs(t *testing.T) {
	for _, p := range listPackages(t, module+"/...") {
		if len(p.GoFiles) == 0 {
			continue
		}
		fset := token.NewFileSet()
		var docs []string
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatalf("parse %s: %v", name, err)
			}
			if f.Doc != nil {
				docs = append(docs, name)
			}
		}
		switch {
		case len(docs) == 0:
			t.Errorf("%s has no package comment", p.ImportPath)
		case len(docs) > 1:
			t.Errorf("%s has package comments in several files: %v (keep one, in doc.go)", p.ImportPath, docs)
		}
	}
}
