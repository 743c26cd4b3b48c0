// Package version tells which Flurry build is running: the version, the
// commit it was built from and the Go release that built it.
//
// A release build stamps Version and Commit with the linker
// (scripts/release.sh):
//
//	go build -ldflags "-X github.com/flurrypt/flurry/common/version.Version=0.1.0 \
//	    -X github.com/flurrypt/flurry/common/version.Commit=<40 hex digits>"
//
// Anything else reports Version "devel" and the Git revision the go command
// recorded when it built from a checkout ("*" after it: the working tree had
// uncommitted changes), or, for `go install …@v0.1.0`, the module version
// and no commit.
package version

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Version and Commit are set only by the linker (-ldflags -X) and never
// written at run time.
var (
	// Version is the release, without a leading "v"; "devel" unless stamped.
	Version = "devel"
	// Commit is the full Git commit hash of the release; empty unless
	// stamped.
	Commit = ""
)

// Info describes the running build.
type Info struct {
	Version  string // "0.1.0", "devel", or the module version of `go install`
	Commit   string // full commit hash, "" when unknown
	Modified bool   // built from a working tree with uncommitted changes
	Go       string // runtime.Version()
	Platform string // GOOS/GOARCH
}

// Get returns the running build's Info.
func Get() Info {
	var settings []debug.BuildSetting
	var mainVersion string
	if bi, ok := debug.ReadBuildInfo(); ok {
		settings, mainVersion = bi.Settings, bi.Main.Version
	}
	return resolve(Version, Commit, mainVersion, settings)
}

// resolve picks the version and commit: the stamped values first, then the
// build's VCS settings, then the module version (only when the build did not
// come from a checkout: inside one the go command derives a pseudo-version
// from the commit, which says nothing a commit hash does not).
func resolve(stampedVersion, stampedCommit, mainVersion string, settings []debug.BuildSetting) Info {
	in := Info{Version: stampedVersion, Commit: stampedCommit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	var rev string
	var modified bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if in.Commit == "" {
		in.Commit, in.Modified = rev, modified
	}
	if in.Version == "" || in.Version == "devel" {
		in.Version = "devel"
		if rev == "" && mainVersion != "" && mainVersion != "(devel)" {
			in.Version = strings.TrimPrefix(mainVersion, "v")
		}
	}
	return in
}

// String returns the version followed, when the commit is known, by its
// first 12 hex digits in parentheses ("0.1.0 (1a2b3c4d5e6f)", "devel
// (1a2b3c4d5e6f*)"): the short form for logs and tor's PT version report.
func String() string { return Get().short() }

func (in Info) short() string {
	if in.Commit == "" {
		return in.Version
	}
	c := in.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if in.Modified {
		c += "*"
	}
	return in.Version + " (" + c + ")"
}

// Line returns what a binary's -version prints: its name, the version, the
// full commit and the Go release and platform, on one line, e.g.
//
//	flurry-proxy 0.1.0 commit 1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b go1.26.8 linux/arm64
func Line(name string) string { return Get().line(name) }

func (in Info) line(name string) string {
	c := in.Commit
	if c == "" {
		c = "unknown"
	} else if in.Modified {
		c += "*"
	}
	return name + " " + in.Version + " commit " + c + " " + in.Go + " " + in.Platform
}
