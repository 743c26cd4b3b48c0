package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// stdlib is govulncheck's module name for the standard library.
const stdlib = "stdlib"

// message is one object of govulncheck's JSON stream; only the fields the
// gate reads.
type message struct {
	Config *struct {
		GoVersion string `json:"go_version"`
	} `json:"config"`
	Finding *finding `json:"finding"`
}

type finding struct {
	OSV          string  `json:"osv"`
	FixedVersion string  `json:"fixed_version"`
	Trace        []frame `json:"trace"`
}

// frame is one step of a finding's trace; the first is the vulnerable
// module, package or function itself.
type frame struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Package  string `json:"package"`
	Function string `json:"function"`
}

// Levels of a finding, in increasing order of evidence.
const (
	levelRequired = iota // the module is in the build list
	levelImported        // a vulnerable package is imported
	levelCalled          // a vulnerable function is reachable
)

var levelNames = [...]string{"required", "imported", "called"}

// vuln is one OSV entry as it affects one module, at the highest level
// any of its findings reached.
type vuln struct {
	osv, module, version, fixed string
	level                       int
}

// gate reads govulncheck's JSON from r, writes its verdict to w and reports
// whether the gate fails.
func gate(r io.Reader, w io.Writer) (failed bool, err error) {
	vulns, goVersion, err := read(r)
	if err != nil {
		return false, err
	}
	var newestGo string
	for _, v := range vulns {
		switch {
		case v.module == stdlib:
			fmt.Fprintf(w, "warning: standard library %s: %s (%s), fixed in go%s\n",
				goVersion, v.osv, levelNames[v.level], strings.TrimPrefix(v.fixed, "v"))
			if newestGo == "" || compareVersions(v.fixed, newestGo) > 0 {
				newestGo = v.fixed
			}
		case v.fixed == "":
			fmt.Fprintf(w, "warning: %s@%s: %s (%s), no fixed version yet\n", v.module, v.version, v.osv, levelNames[v.level])
		default:
			fmt.Fprintf(w, "FAIL: %s@%s: %s (%s), fixed in %s: go get %s@%s\n",
				v.module, v.version, v.osv, levelNames[v.level], v.fixed, v.module, v.fixed)
			failed = true
		}
	}
	if newestGo != "" {
		fmt.Fprintf(w, "warning: release builds need go%s or later (this machine has %s)\n",
			strings.TrimPrefix(newestGo, "v"), goVersion)
	}
	if len(vulns) == 0 {
		fmt.Fprintln(w, "no known vulnerabilities")
	}
	return failed, nil
}

// read decodes the stream into one vuln per OSV entry and module, sorted
// by module then OSV ID, and returns the Go version govulncheck ran with.
func read(r io.Reader) ([]vuln, string, error) {
	dec := json.NewDecoder(r)
	byKey := make(map[[2]string]*vuln)
	goVersion := ""
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, "", fmt.Errorf("reading govulncheck output: %w", err)
		}
		if m.Config != nil {
			goVersion = m.Config.GoVersion
		}
		f := m.Finding
		if f == nil {
			continue
		}
		if len(f.Trace) == 0 || f.OSV == "" {
			return nil, "", fmt.Errorf("finding without OSV ID or trace: %+v", f)
		}
		top := f.Trace[0]
		level := levelRequired
		switch {
		case top.Function != "":
			level = levelCalled
		case top.Package != "":
			level = levelImported
		}
		key := [2]string{top.Module, f.OSV}
		if v, ok := byKey[key]; ok {
			v.level = max(v.level, level)
			continue
		}
		byKey[key] = &vuln{osv: f.OSV, module: top.Module, version: top.Version, fixed: f.FixedVersion, level: level}
	}
	// A stream without its config message is not govulncheck's (or was cut
	// short before it began): no findings would then mean nothing.
	if goVersion == "" {
		return nil, "", errors.New("no govulncheck config message in the input")
	}
	vulns := make([]vuln, 0, len(byKey))
	for _, v := range byKey {
		vulns = append(vulns, *v)
	}
	slices.SortFunc(vulns, func(a, b vuln) int {
		return cmp.Or(strings.Compare(a.module, b.module), strings.Compare(a.osv, b.osv))
	})
	return vulns, goVersion, nil
}

// compareVersions compares two versions of the form vMAJOR.MINOR.PATCH
// (govulncheck writes Go releases that way too); a missing or non-numeric
// part counts as 0.
func compareVersions(a, b string) int {
	pa := strings.Split(strings.TrimPrefix(a, "v"), ".")
	pb := strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := range max(len(pa), len(pb)) {
		if c := cmp.Compare(versionPart(pa, i), versionPart(pb, i)); c != 0 {
			return c
		}
	}
	return 0
}

func versionPart(parts []string, i int) int {
	if i >= len(parts) {
		return 0
	}
	n, _ := strconv.Atoi(parts[i])
	return n
}
