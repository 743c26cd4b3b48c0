package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/flurrypt/flurry/packaging/cacerts"
	"github.com/flurrypt/flurry/packaging/role"
)

// UID and GID are the unprivileged user and group the images run as
// (65532, "nonroot" in distroless images, outside any range Debian
// allocates).
const (
	UID = 65532
	GID = 65532
)

// caFile is where Go's crypto/x509 looks first on Linux.
const caFile = "etc/ssl/certs/ca-certificates.crt"

// Binary is one platform's binary of the role.
type Binary struct {
	Platform role.Platform
	Path     string
}

// Spec says what to build.
type Spec struct {
	Role     role.Role
	Version  string
	Commit   string // the source's commit, a label; may be empty
	Created  time.Time
	Binaries []Binary
}

// RefName is the name the OCI layout gives the image: podman load names
// the image it loads after it.
func (s Spec) RefName() string {
	return "localhost/" + s.Role.Binary() + ":" + s.Version
}

// ArchiveName is the release's file name of the image archive,
// flurry-NAME-VERSION-oci.tar.
func (s Spec) ArchiveName() string {
	return s.Role.Binary() + "-" + s.Version + "-oci.tar"
}

// Build returns the multi-platform index of the role's images, one per
// binary.
func Build(s Spec) (v1.ImageIndex, error) {
	if len(s.Binaries) == 0 {
		return nil, fmt.Errorf("%s: no binaries", s.Role.Binary())
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range s.Binaries {
		img, err := platformImage(s, b)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", s.Role.Binary(), b.Platform.Arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{
				OS: "linux", Architecture: b.Platform.GOARCH, Variant: b.Platform.Variant,
			}},
		})
	}
	return idx, nil
}

func platformImage(s Spec, b Binary) (v1.Image, error) {
	bin, err := os.ReadFile(b.Path)
	if err != nil {
		return nil, err
	}
	rootfs, err := layerTar(s, bin)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(rootfs)), nil
	}, tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: s.Created.UTC()}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   created,
			CreatedBy: "flurry-package: " + s.Role.Binary() + " " + s.Version + ", CA certificates, user " + fmt.Sprint(UID),
		},
	})
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = "linux", b.Platform.GOARCH, b.Platform.Variant
	cf.Created = created
	home := "/var/lib/" + s.Role.Binary()
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: []string{"/usr/bin/" + s.Role.Binary()},
		Cmd:        s.Role.ImageArgs,
		Env:        []string{"PATH=/usr/bin", "HOME=" + home},
		WorkingDir: home,
		Labels:     labels(s),
	}
	if s.Role.KeepsState {
		cf.Config.Volumes = map[string]struct{}{home: {}}
	}
	return mutate.ConfigFile(img, cf)
}

// labels are the OCI annotation keys of image-spec, as config labels.
func labels(s Spec) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       s.Role.Binary(),
		"org.opencontainers.image.description": s.Role.Synopsis,
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.created":     s.Created.UTC().Format(time.RFC3339),
		"org.opencontainers.image.source":      "https://github.com/flurrypt/flurry",
		"org.opencontainers.image.licenses":    "BSD-3-Clause",
	}
	if s.Commit != "" {
		l["org.opencontainers.image.revision"] = s.Commit
	}
	return l
}

// copyrightCA is the copyright stanza of the CA certificates, appended to
// the Flurry copyright file in the image.
const copyrightCA = `
Files: etc/ssl/certs/ca-certificates.crt
Copyright: Mozilla Foundation and the certificate authorities
License: MPL-2.0
Comment: The root certificates of Mozilla's NSS trust store, as carried by
 golang.org/x/crypto/x509roots/fallback/bundle. The text of the Mozilla Public
 License 2.0 is at https://mozilla.org/MPL/2.0/.
`

// layerTar returns the image's file system as an uncompressed tar.
func layerTar(s Spec, bin []byte) ([]byte, error) {
	name := s.Role.Binary()
	type entry struct {
		path string
		mode int64
		uid  int
		data []byte // nil: a directory
	}
	dir := func(path string, mode int64) entry { return entry{path: path + "/", mode: mode} }
	file := func(path string, mode int64, data []byte) entry { return entry{path: path, mode: mode, data: data} }
	home := "var/lib/" + name
	entries := []entry{
		dir("etc", 0o755),
		file("etc/group", 0o644, fmt.Appendf(nil, "root:x:0:\nflurry:x:%d:\n", GID)),
		file("etc/passwd", 0o644, fmt.Appendf(nil, "root:x:0:0:root:/root:/usr/sbin/nologin\nflurry:x:%d:%d:Flurry:/%s:/usr/sbin/nologin\n", UID, GID, home)),
		dir("etc/ssl", 0o755),
		dir("etc/ssl/certs", 0o755),
		file(caFile, 0o644, cacerts.PEM()),
		dir("tmp", 0o1777),
		dir("usr", 0o755),
		dir("usr/bin", 0o755),
		file("usr/bin/"+name, 0o755, bin),
		dir("usr/share", 0o755),
		dir("usr/share/doc", 0o755),
		dir("usr/share/doc/"+name, 0o755),
		file("usr/share/doc/"+name+"/copyright", 0o644, append(slices.Clip(role.Copyright), copyrightCA...)),
		dir("var", 0o755),
		dir("var/lib", 0o755),
		{path: home + "/", mode: 0o700, uid: UID},
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.path, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: s.Created.UTC(), Format: tar.FormatPAX}
		if e.uid == UID {
			h.Gid = GID
		}
		if strings.HasSuffix(e.path, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteArchive writes idx as an OCI image layout whose index names it
// refName, in a tar archive at path: every entry owned by root, with mtime
// and in a fixed order.
func WriteArchive(path string, idx v1.ImageIndex, refName string, mtime time.Time) error {
	dir, err := os.MkdirTemp("", "flurry-oci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": refName,
	})); err != nil {
		return err
	}
	var paths []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && path != dir {
			paths = append(paths, path)
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.Sort(paths)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		fi, err := os.Stat(p)
		if err != nil {
			f.Close()
			return err
		}
		h := &tar.Header{Name: rel, Mode: 0o644, ModTime: mtime.UTC(), Typeflag: tar.TypeReg, Size: fi.Size(), Format: tar.FormatPAX}
		if fi.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = rel+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			f.Close()
			return err
		}
		if !fi.IsDir() {
			data, err := os.ReadFile(p)
			if err == nil {
				_, err = tw.Write(data)
			}
			if err != nil {
				f.Close()
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
