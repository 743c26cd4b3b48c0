// Package version tells which Flurry build is running: the release number,
// and the VCS revision when the binary was built from a Git checkout
// (as Snowflake's -version does: "0.1.0 (1a2b3c4d*)", * for local changes).
package version

import "runtime/debug"

// Release is Flurry's release number.
const Release = "0.1.0"

// String returns Release followed, when the build recorded one, by the
// first 8 hex digits of the VCS revision in parentheses, with a * when the
// working tree had uncommitted changes.
func String() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return Release
	}
	return withRevision(Release, info.Settings)
}

func withRevision(v string, settings []debug.BuildSetting) string {
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
	if len(rev) < 8 {
		return v
	}
	v += " (" + rev[:8]
	if modified {
		v += "*"
	}
	return v + ")"
}
