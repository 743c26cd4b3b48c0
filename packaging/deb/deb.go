package deb

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"

	"github.com/flurrypt/flurry/packaging/manpage"
	"github.com/flurrypt/flurry/packaging/role"
)

//go:embed debian
var debian embed.FS

// Spec says what to build.
type Spec struct {
	Role    role.Role
	Version string // the release's, 0.1.0 or 0.1.0-rc.1
	Arch    string // Debian's: amd64, arm64, armhf
	Binary  string // path of the binary
	ManPage []byte // roff, uncompressed
	MTime   time.Time
}

// Paths of what a package installs.
func BinaryPath(r role.Role) string  { return "/usr/bin/" + r.Binary() }
func ManPagePath(r role.Role) string { return "/usr/share/man/man1/" + r.Binary() + ".1.gz" }
func UnitPath(r role.Role) string    { return "/usr/lib/systemd/system/" + r.Binary() + ".service" }
func DefaultsPath(r role.Role) string {
	return "/etc/default/" + r.Binary()
}

// Version turns a semantic version into a Debian one: a pre-release sorts
// before the release (0.1.0~rc.1 < 0.1.0).
func Version(v string) string {
	for i := range len(v) {
		if v[i] == '-' {
			return v[:i] + "~" + v[i+1:]
		}
	}
	return v
}

// Build writes flurry-NAME_VERSION_ARCH.deb into outDir and returns its
// path.
func Build(s Spec, outDir string) (string, error) {
	name := s.Role.Binary()
	work, err := os.MkdirTemp("", name+"-deb")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	write := func(file string, data []byte, mode os.FileMode) (string, error) {
		p := filepath.Join(work, file)
		return p, os.WriteFile(p, data, mode)
	}
	// embedded returns a file of debian/, PACKAGE replaced by the name.
	embedded := func(file string) ([]byte, error) {
		data, err := debian.ReadFile("debian/" + file)
		return bytes.ReplaceAll(data, []byte("PACKAGE"), []byte(name)), err
	}
	file := func(src, dst string, mode os.FileMode, typ string) *files.Content {
		return &files.Content{Source: src, Destination: dst, Type: typ, FileInfo: &files.ContentFileInfo{Mode: mode, Owner: "root", Group: "root", MTime: s.MTime}}
	}

	generated := []struct {
		name, dst string
		data      []byte
	}{
		{"copyright", "/usr/share/doc/" + name + "/copyright", role.Copyright},
		{"changelog.gz", "/usr/share/doc/" + name + "/changelog.gz", changelog(name, Version(s.Version), s.MTime)},
		{"manpage.gz", ManPagePath(s.Role), manpage.Gzip(s.ManPage)},
	}
	contents := files.Contents{file(s.Binary, BinaryPath(s.Role), 0o755, "")}
	for _, g := range generated {
		p, err := write(g.name, g.data, 0o644)
		if err != nil {
			return "", err
		}
		contents = append(contents, file(p, g.dst, 0o644, ""))
	}
	embeddedFiles := []struct{ src, dst, typ string }{{"lintian-overrides", "/usr/share/lintian/overrides/" + name, ""}}
	if s.Role.Service {
		embeddedFiles = append(embeddedFiles,
			struct{ src, dst, typ string }{s.Role.Name + ".service", UnitPath(s.Role), ""},
			struct{ src, dst, typ string }{s.Role.Name + ".default", DefaultsPath(s.Role), files.TypeConfigNoReplace})
	}
	for _, f := range embeddedFiles {
		data, err := embedded(f.src)
		if err != nil {
			return "", err
		}
		p, err := write(f.src, data, 0o644)
		if err != nil {
			return "", err
		}
		contents = append(contents, file(p, f.dst, 0o644, f.typ))
	}

	var scripts nfpm.Scripts
	if s.Role.Service {
		postinst := "postinst"
		if s.Role.StartOnInstall {
			postinst = "postinst-start"
		}
		for _, sc := range []struct {
			src string
			dst *string
		}{{postinst, &scripts.PostInstall}, {"prerm", &scripts.PreRemove}, {"postrm", &scripts.PostRemove}} {
			data, err := embedded(sc.src)
			if err != nil {
				return "", err
			}
			if *sc.dst, err = write(sc.src, data, 0o755); err != nil {
				return "", err
			}
		}
	}

	info := nfpm.WithDefaults(&nfpm.Info{
		Name:          name,
		Arch:          s.Arch,
		Platform:      "linux",
		Version:       Version(s.Version),
		VersionSchema: "none",
		Section:       "net",
		Priority:      "optional",
		Maintainer:    "The Flurry authors <flurry@users.noreply.github.com>",
		Description:   s.Role.Synopsis + "\n" + s.Role.Description,
		Homepage:      "https://github.com/flurrypt/flurry",
		License:       "BSD-3-Clause",
		MTime:         s.MTime,
		Overridables: nfpm.Overridables{
			Contents: contents,
			Scripts:  scripts,
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
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression) // a valid level: no error
	zw.ModTime = mtime
	zw.Write([]byte(text)) // a bytes.Buffer: no error
	zw.Close()
	return b.Bytes()
}
