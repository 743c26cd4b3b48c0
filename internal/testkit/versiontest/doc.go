// Package versiontest holds no code, only a test that builds every Flurry
// command the way scripts/release.sh does (version and commit stamped with
// -ldflags -X) and checks that each one's -version prints them and exits 0.
package versiontest
