package image

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/flurrypt/flurry/packaging/role"
)

var created = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func proxyRole(t *testing.T) role.Role {
	for _, r := range role.All() {
		if r.Name == "proxy" {
			return r
		}
	}
	t.Fatal("no proxy role")
	return role.Role{}
}

// fakeBinaries writes a file per platform into dir, with the given time.
func fakeBinaries(t *testing.T, dir string, mtime time.Time) []Binary {
	var bins []Binary
	for _, p := range role.Platforms() {
		path := filepath.Join(dir, "flurry-proxy-"+p.Arch)
		if err := os.WriteFile(path, []byte("binary for "+p.Arch), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		bins = append(bins, Binary{Platform: p, Path: path})
	}
	return bins
}

// Untar extracts an archive WriteArchive wrote.
func untar(t *testing.T, archive, dir string) {
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(created) {
			t.Errorf("%s: owner %d:%d, time %v", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			err = os.MkdirAll(p, 0o755)
		} else {
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, data, 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestReproducible: the same binaries, in directories of other names and
// with other times, give the same archive, byte for byte.
func TestReproducible(t *testing.T) {
	var archives [][]byte
	for i, mtime := range []time.Time{time.Unix(1700000000, 0), time.Unix(1710000000, 0)} {
		dir := filepath.Join(t.TempDir(), strings.Repeat("x", i+1))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := Spec{Role: proxyRole(t), Version: "0.1.0", Commit: "abc", Created: created, Binaries: fakeBinaries(t, dir, mtime)}
		idx, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, s.ArchiveName())
		if err := WriteArchive(out, idx, s.RefName(), created); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, data)
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Error("two builds of the same binaries differ")
	}
}

// TestImage reads the archive back as an OCI layout and checks the index,
// each platform's manifest and configuration (user, entry point, default
// arguments), and the files of its layer.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	r := proxyRole(t)
	s := Spec{Role: r, Version: "0.1.0", Commit: "abc", Created: created, Binaries: fakeBinaries(t, dir, created)}
	idx, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, s.ArchiveName())
	if err := WriteArchive(archive, idx, s.RefName(), created); err != nil {
		t.Fatal(err)
	}
	layoutDir := filepath.Join(dir, "layout")
	untar(t, archive, layoutDir)
	top, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 || topManifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "localhost/flurry-proxy:0.1.0" ||
		topManifest.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json: %+v", topManifest.Manifests)
	}
	multi, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := multi.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.String())
		if d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: media type %s", d.Platform, d.MediaType)
		}
		img, err := multi.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		checkImage(t, s, d.Platform, img)
	}
	if want := []string{"linux/amd64", "linux/arm64", "linux/arm/v7"}; !slices.Equal(platforms, want) {
		t.Errorf("platforms %v, want %v", platforms, want)
	}
}

func checkImage(t *testing.T, s Spec, p *v1.Platform, img v1.Image) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != p.OS || cf.Architecture != p.Architecture || cf.Variant != p.Variant || !cf.Created.Time.Equal(created) {
		t.Errorf("%s: config says %s/%s/%s, created %v", p, cf.OS, cf.Architecture, cf.Variant, cf.Created)
	}
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/usr/bin/flurry-proxy"}) ||
		!slices.Equal(c.Cmd, []string{"-network", "tor"}) || c.WorkingDir != "/var/lib/flurry-proxy" {
		t.Errorf("%s: user %q, entry point %q, arguments %q, directory %q", p, c.User, c.Entrypoint, c.Cmd, c.WorkingDir)
	}
	if c.Labels["org.opencontainers.image.version"] != "0.1.0" || c.Labels["org.opencontainers.image.revision"] != "abc" {
		t.Errorf("%s: labels %v", p, c.Labels)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%s: %d layers, %v", p, len(layers), err)
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("%s: layer media type %s", p, mt)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	contents := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		contents[h.Name], _ = io.ReadAll(tr)
		if (h.Uid != 0 && h.Uid != UID) || !h.ModTime.Equal(created) {
			t.Errorf("%s %s: owner %d, time %v", p, h.Name, h.Uid, h.ModTime)
		}
	}
	arch := map[string]string{"amd64": "amd64", "arm64": "arm64", "arm": "armv7"}[p.Architecture]
	if h := files["usr/bin/flurry-proxy"]; h == nil || h.Mode != 0o755 || string(contents["usr/bin/flurry-proxy"]) != "binary for "+arch {
		t.Errorf("%s: the binary: %+v %q", p, h, contents["usr/bin/flurry-proxy"])
	}
	if h := files["var/lib/flurry-proxy/"]; h == nil || h.Uid != UID || h.Gid != GID || h.Mode != 0o700 {
		t.Errorf("%s: the home directory: %+v", p, h)
	}
	if !strings.Contains(string(contents["etc/passwd"]), "flurry:x:65532:65532:") {
		t.Errorf("%s: /etc/passwd: %q", p, contents["etc/passwd"])
	}
	if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(contents[caFile]) {
		t.Errorf("%s: no CA certificate in %s", p, caFile)
	}
	for name, h := range files {
		if h.Uid == UID && name != "var/lib/flurry-proxy/" {
			t.Errorf("%s: %s belongs to the unprivileged user", p, name)
		}
	}
}
