package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flurrypt/flurry/netlab/censor"
)

// censorPrograms maps the names -censor accepts to constructors of censor
// programs. The censor programs of package censor register here.
var censorPrograms = map[string]func() censor.Program{}

// censorProgram builds the programs named in names and composes them in
// order, or fails on the first unknown name.
func censorProgram(names []string) (censor.Program, error) {
	if len(names) == 0 {
		return nil, errors.New("no censor program named")
	}
	progs := make([]censor.Program, 0, len(names))
	for _, name := range names {
		mk, ok := censorPrograms[name]
		if !ok {
			known := make([]string, 0, len(censorPrograms))
			for k := range censorPrograms {
				known = append(known, k)
			}
			slices.Sort(known)
			list := strings.Join(known, ", ")
			if list == "" {
				list = "none yet"
			}
			return nil, fmt.Errorf("unknown censor program %q (known: %s)", name, list)
		}
		progs = append(progs, mk())
	}
	if len(progs) == 1 {
		return progs[0], nil
	}
	return censor.Chain(progs...), nil
}
