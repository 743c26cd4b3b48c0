// Command flurry-package makes the release's packages from the Linux
// binaries of a release directory (scripts/release.sh runs it):
//
//	go run ./cmd/flurry-package -version 0.1.0 -dir ../out/release/0.1.0 -mtime 1764547200
//
// It writes, beside the binaries, a Debian package per role and
// architecture (package deb) with a manual page made from the binary's -h
// (package manpage), a container image archive per role that has one
// (package image) with every architecture in it, and the compose file for
// volunteers (package compose). -h is read from the binaries of this
// machine's architecture, which must be in the directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"time"

	"github.com/flurrypt/flurry/packaging/compose"
	"github.com/flurrypt/flurry/packaging/deb"
	"github.com/flurrypt/flurry/packaging/image"
	"github.com/flurrypt/flurry/packaging/manpage"
	"github.com/flurrypt/flurry/packaging/role"
)

// docsURL is where the manual pages send a reader for more.
const docsURL = "https://github.com/flurrypt/flurry/tree/main/docs"

var versionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

func main() {
	version := flag.String("version", "", "release version, as the binaries' names have it (0.1.0)")
	dir := flag.String("dir", "", "release directory holding flurry-ROLE-VERSION-linux-ARCH; the packages are written there")
	mtime := flag.Int64("mtime", 0, "time of every file in the packages and images, seconds since 1970 (the commit's time keeps them reproducible)")
	commit := flag.String("commit", "", "the source's commit, recorded in the images' labels")
	flag.Parse()
	if err := run(*version, *dir, *commit, time.Unix(*mtime, 0).UTC()); err != nil {
		fmt.Fprintln(os.Stderr, "flurry-package:", err)
		os.Exit(1)
	}
}

func run(version, dir, commit string, mtime time.Time) error {
	if !versionPattern.MatchString(version) || dir == "" {
		return errors.New("need -version MAJOR.MINOR.PATCH[-PRE] and -dir")
	}
	built := 0
	for _, r := range role.All() {
		var bins []image.Binary
		for _, p := range role.Platforms() {
			path := filepath.Join(dir, r.BinaryFile(version, p))
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				continue
			} else if err != nil {
				return err
			}
			bins = append(bins, image.Binary{Platform: p, Path: path})
		}
		if len(bins) == 0 {
			continue
		}
		page, err := manPage(r, version, dir, mtime)
		if err != nil {
			return err
		}
		for _, b := range bins {
			out, err := deb.Build(deb.Spec{Role: r, Version: version, Arch: b.Platform.DebianArch, Binary: b.Path, ManPage: page, MTime: mtime}, dir)
			if err != nil {
				return fmt.Errorf("%s %s: %w", r.Binary(), b.Platform.DebianArch, err)
			}
			fmt.Fprintln(os.Stderr, "  ", filepath.Base(out))
			built++
		}
		if !r.Image {
			continue
		}
		spec := image.Spec{Role: r, Version: version, Commit: commit, Created: mtime, Binaries: bins}
		idx, err := image.Build(spec)
		if err != nil {
			return err
		}
		if err := image.WriteArchive(filepath.Join(dir, spec.ArchiveName()), idx, spec.RefName(), mtime); err != nil {
			return fmt.Errorf("%s: %w", spec.ArchiveName(), err)
		}
		fmt.Fprintln(os.Stderr, "  ", spec.ArchiveName())
	}
	if built == 0 {
		return fmt.Errorf("no Linux binaries of %s in %s", version, dir)
	}
	if err := os.WriteFile(filepath.Join(dir, compose.FileName), compose.File(version), 0o644); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "  ", compose.FileName)
	return nil
}

// manPage makes r's manual page from the -h of its binary for this
// machine's architecture.
func manPage(r role.Role, version, dir string, mtime time.Time) ([]byte, error) {
	for _, p := range role.Platforms() {
		if p.GOARCH != runtime.GOARCH || runtime.GOOS != "linux" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		help, err := manpage.Help(ctx, filepath.Join(dir, r.BinaryFile(version, p)), r.Binary())
		if err != nil {
			return nil, fmt.Errorf("manual page: %w", err)
		}
		return manpage.Roff(manpage.Page{
			Name: r.Binary(), Section: "1", Synopsis: r.Synopsis, Description: r.Description,
			Version: version, Date: mtime, SeeAlso: docsURL,
		}, help)
	}
	return nil, fmt.Errorf("manual page of %s: made from -h of the binary for this machine, linux/%s, which the release does not build", r.Binary(), runtime.GOARCH)
}
