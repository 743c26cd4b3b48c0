// Command flurry-deb builds Flurry's Debian packages, one per role, from the
// Linux binaries of a release directory (scripts/release.sh runs it):
//
//	go run . -version 0.1.0 -dir ../out/release/0.1.0
//
// Each package holds the binary in /usr/bin, its copyright and changelog,
// and, for the services, a hardened systemd unit and a default config file
// (/etc/default/flurry-ROLE, a conffile) the unit reads its flags from. No
// service is enabled or started on install: each needs its configuration
// first (docs/install.md, "Debian packages").
package main

import (
	"bytes"
	"compress/gzip"
	"embed"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
)

//go:embed debian
var debian embed.FS

// role is one package.
type role struct {
	name        string // flurry-NAME
	synopsis    string
	description string
	service     bool // ships a systemd unit and /etc/default/flurry-NAME
}

var roles = []role{
	{"broker", "Snowflake-compatible rendezvous broker", "The broker introduces censored clients to volunteer proxies. Snowflake proxies\nand clients use it unchanged.", true},
	{"proxy", "volunteer proxy for censored users", "The proxy relays censored clients' WebRTC connections to a Flurry or Snowflake\nrelay. Run it to help people reach the open internet.", true},
	{"client", "censorship-circumvention client for Tor", "The client is a Tor pluggable transport that reaches Tor through volunteer\nproxies found by a broker; compatible with Snowflake's network.", false},
	{"relay", "WebSocket bridge of Flurry and Snowflake", "The relay takes the proxies' WebSocket connections and hands clients' streams\nto Tor or, standalone, to any TCP service.", true},
	{"natprobe", "NAT probe peer for Flurry and Snowflake proxies", "The NAT probe tells proxies whether their NAT is restricted, by trying a\nWebRTC connection to them from behind a restrictive NAT.", true},
}

// debArch maps the release's GOARCH names to Debian's.
var debArch = map[string]string{"amd64": "amd64", "arm64": "arm64", "armv7": "armhf"}

var versionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)

func main() {
	version := flag.String("version", "", "release version, as the binaries' names have it (0.1.0)")
	dir := flag.String("dir", "", "release directory holding flurry-ROLE-VERSION-linux-ARCH; the packages are written there")
	mtime := flag.Int64("mtime", 0, "modification time of every file in the packages, seconds since 1970 (the commit's time keeps them reproducible)")
	flag.Parse()
	if err := run(*version, *dir, time.Unix(*mtime, 0).UTC()); err != nil {
		fmt.Fprintln(os.Stderr, "flurry-deb:", err)
		os.Exit(1)
	}
}

func run(version, dir string, mtime time.Time) error {
	if !versionPattern.MatchString(version) || dir == "" {
		return errors.New("need -version MAJOR.MINOR.PATCH[-PRE] and -dir")
	}
	built := 0
	for goarch, arch := range debArch {
		for _, r := range roles {
			bin := filepath.Join(dir, fmt.Sprintf("flurry-%s-%s-linux-%s", r.name, version, goarch))
			if _, err := os.Stat(bin); errors.Is(err, os.ErrNotExist) {
				continue
			}
			out, err := build(r, version, arch, bin, dir, mtime)
			if err != nil {
				return fmt.Errorf("flurry-%s %s: %w", r.name, arch, err)
			}
			fmt.Fprintln(os.Stderr, "  ", filepath.Base(out))
			built++
		}
	}
	if built == 0 {
		return fmt.Errorf("no Linux binaries of %s in %s", version, dir)
	}
	return nil
}

// debVersion turns a semantic version into a Debian one: a pre-release
// sorts before the release (0.1.0~rc.1 < 0.1.0).
func debVersion(v string) string {
	for i := range len(v) {
		if v[i] == '-' {
			return v[:i] + "~" + v[i+1:]
		}
	}
	return v
}

// build writes flurry-NAME_VERSION_ARCH.deb into outDir.
func build(r role, version, arch, bin, outDir string, mtime time.Time) (string, error) {
	name := "flurry-" + r.name
	work, err := os.MkdirTemp("", name+"-deb")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	write := func(file string, data []byte) (string, error) {
		p := filepath.Join(work, file)
		return p, os.WriteFile(p, data, 0o644)
	}
	embedded := func(file string) ([]byte, error) { return debian.ReadFile("debian/" + file) }

	copyright, err := embedded("copyright")
	if err != nil {
		return "", err
	}
	copyrightPath, err := write("copyright", copyright)
	if err != nil {
		return "", err
	}
	changelogPath, err := write("changelog.gz", changelog(name, debVersion(version), mtime))
	if err != nil {
		return "", err
	}
	file := func(src, dst string, mode os.FileMode, typ string) *files.Content {
		return &files.Content{Source: src, Destination: dst, Type: typ, FileInfo: &files.ContentFileInfo{Mode: mode, Owner: "root", Group: "root", MTime: mtime}}
	}
	contents := files.Contents{
		file(bin, "/usr/bin/"+name, 0o755, ""),
		file(copyrightPath, "/usr/share/doc/"+name+"/copyright", 0o644, ""),
		file(changelogPath, "/usr/share/doc/"+name+"/changelog.gz", 0o644, ""),
	}
	if r.service {
		for _, f := range []struct{ src, dst, typ string }{
			{r.name + ".service", "/usr/lib/systemd/system/" + name + ".service", ""},
			{r.name + ".default", "/etc/default/" + name, files.TypeConfigNoReplace},
		} {
			data, err := embedded(f.src)
			if err != nil {
				return "", err
			}
			p, err := write(f.src, data)
			if err != nil {
				return "", err
			}
			contents = append(contents, file(p, f.dst, 0o644, f.typ))
		}
	}
	overrides, err := embedded("lintian-overrides")
	if err != nil {
		return "", err
	}
	overridesPath, err := write("lintian-overrides", bytes.ReplaceAll(overrides, []byte("PACKAGE"), []byte(name)))
	if err != nil {
		return "", err
	}
	contents = append(contents, file(overridesPath, "/usr/share/lintian/overrides/"+name, 0o644, ""))

	info := nfpm.WithDefaults(&nfpm.Info{
		Name:          name,
		Arch:          arch,
		Platform:      "linux",
		Version:       debVersion(version),
		VersionSchema: "none",
		Section:       "net",
		Priority:      "optional",
		Maintainer:    "The Flurry authors <flurry@users.noreply.github.com>",
		Description:   r.synopsis + "\n" + r.description,
		Homepage:      "https://github.com/flurrypt/flurry",
		License:       "BSD-3-Clause",
		MTime:         mtime,
		Overridables: nfpm.Overridables{
			Contents: contents,
			Deb:      nfpm.Deb{Compression: "gzip"},
		},
	})
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", err
	}
	pkg, err := nfpm.Get("deb")
	if err != nil {
		return "", err
	}
	out := filepath.Join(outDir, pkg.ConventionalFileName(info))
	f, err := os.Create(out)
	if err != nil {
		return "", err
	}
	if err := pkg.Package(info, f); err != nil {
		f.Close()
		return "", err
	}
	return out, f.Close()
}

// changelog returns a one-entry Debian changelog, gzip-compressed
// reproducibly (no name, the given time).
func changelog(name, version string, mtime time.Time) []byte {
	text := fmt.Sprintf("%s (%s) unstable; urgency=medium\n\n  * Release %s; see CHANGELOG.md in the source.\n\n -- The Flurry authors <flurry@users.noreply.github.com>  %s\n",
		name, version, version, mtime.Format(time.RFC1123Z))
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.ModTime = mtime
	zw.Write([]byte(text))
	zw.Close()
	return b.Bytes()
}
