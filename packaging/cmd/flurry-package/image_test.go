package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"golang.org/x/sys/unix"

	"github.com/flurrypt/flurry/packaging/compose"
	"github.com/flurrypt/flurry/packaging/image"
	"github.com/flurrypt/flurry/packaging/internal/testtool"
	"github.com/flurrypt/flurry/packaging/role"
)

func imageRoles() []role.Role {
	var rs []role.Role
	for _, r := range role.All() {
		if r.Image {
			rs = append(rs, r)
		}
	}
	return rs
}

func roleNamed(t *testing.T, name string) role.Role {
	for _, r := range role.All() {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no role %s", name)
	return role.Role{}
}

func spec(r role.Role) image.Spec { return image.Spec{Role: r, Version: testVersion} }

// hostImage returns the image for this machine's platform in r's archive.
func hostImage(t *testing.T, dir string, r role.Role) v1.Image {
	t.Helper()
	layoutDir := t.TempDir()
	f, err := os.Open(filepath.Join(dir, spec(r).ArchiveName()))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(layoutDir, filepath.FromSlash(h.Name))
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
	top, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil || len(m.Manifests) != 1 {
		t.Fatalf("index.json: %v %v", m, err)
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	p := hostPlatform(t)
	for _, d := range im.Manifests {
		if d.Platform.Architecture == p.GOARCH && d.Platform.Variant == p.Variant {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	t.Fatalf("%s: no image for %s", spec(r).ArchiveName(), p.GOARCH)
	return nil
}

// TestImages: each image of the release runs its binary, the release's
// own bytes, as the unprivileged user, with the role's default arguments.
func TestImages(t *testing.T) {
	dir := release(t)
	for _, r := range imageRoles() {
		t.Run(r.Name, func(t *testing.T) {
			img := hostImage(t, dir, r)
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			c := cf.Config
			if c.User != fmt.Sprintf("%d:%d", image.UID, image.GID) || !slices.Equal(c.Entrypoint, []string{"/usr/bin/" + r.Binary()}) ||
				!slices.Equal(c.Cmd, r.ImageArgs) {
				t.Errorf("user %q, entry point %q, arguments %q", c.User, c.Entrypoint, c.Cmd)
			}
			if c.Labels["org.opencontainers.image.revision"] != testCommit || !cf.Created.Time.Equal(testTime) {
				t.Errorf("labels %v, created %v", c.Labels, cf.Created)
			}
			want, err := os.ReadFile(filepath.Join(dir, r.BinaryFile(testVersion, hostPlatform(t))))
			if err != nil {
				t.Fatal(err)
			}
			layers, err := img.Layers()
			if err != nil || len(layers) != 1 {
				t.Fatalf("%d layers, %v", len(layers), err)
			}
			rc, err := layers[0].Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if err != nil {
					t.Fatalf("no usr/bin/%s in the layer: %v", r.Binary(), err)
				}
				if h.Name == "usr/bin/"+r.Binary() {
					if got, _ := io.ReadAll(tr); !bytes.Equal(got, want) {
						t.Error("the image's binary is not the release's")
					}
					break
				}
			}
		})
	}
}

// podman runs rootful podman with storage of its own under dir (vfs, which
// needs no kernel support) and runc: Debian 12's crun refuses a host whose
// cgroups are mixed v1 and v2, as CI's virtual machines are.
type podman struct {
	t    *testing.T
	path string
	dir  string
}

func newPodman(t *testing.T) *podman {
	testtool.NeedRoot(t, "rootful podman")
	path := testtool.Need(t, "podman", "podman")
	testtool.Need(t, "runc", "runc")
	dir, err := os.MkdirTemp("", "flurry-podman-")
	if err != nil {
		t.Fatal(err)
	}
	p := &podman{t: t, path: path, dir: dir}
	t.Cleanup(func() {
		p.cmd("rm", "--all", "--force").Run()
		// conmon runs podman's cleanup of each removed container on its
		// own, which may still write into the storage for a moment after
		// rm returns (t.TempDir's removal failed on that once).
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := os.RemoveAll(dir)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("removing podman's storage: %v", err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return p
}

func (p *podman) cmd(args ...string) *exec.Cmd {
	global := []string{"--root", filepath.Join(p.dir, "root"), "--runroot", filepath.Join(p.dir, "run"),
		"--storage-driver", "vfs", "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file"}
	return exec.Command(p.path, append(global, args...)...)
}

func (p *podman) run(args ...string) string {
	p.t.Helper()
	out, err := p.cmd(args...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// limits are podman run flags that set modest file and process limits,
// at most this process's own: podman's defaults (over a million of each)
// are more than some hosts let a process set, this test's machine among
// them.
func limits(t *testing.T) []string {
	var args []string
	for _, l := range []struct {
		name     string
		resource int
		want     uint64
	}{{"nofile", unix.RLIMIT_NOFILE, 65536}, {"nproc", unix.RLIMIT_NPROC, 4096}} {
		var lim unix.Rlimit
		if err := unix.Getrlimit(l.resource, &lim); err != nil {
			t.Fatal(err)
		}
		n := min(l.want, lim.Max)
		args = append(args, "--ulimit", fmt.Sprintf("%s=%d:%d", l.name, n, n))
	}
	return args
}

// TestImageRuns loads each image into podman and runs it: -version; the
// proxy with no argument, which starts serving Tor's network (in a
// network namespace of its own, so that it reaches nothing) as the
// unprivileged user; and the proxy as the compose file's service says
// (restart policy, host network, read-only, no capability, CPU, memory and
// process limits), with flags added that point it at a broker on loopback,
// which its polls must reach.
func TestImageRuns(t *testing.T) {
	dir := release(t)
	pm := newPodman(t)
	for _, r := range imageRoles() {
		s := spec(r)
		if out := pm.run("load", "--input", filepath.Join(dir, s.ArchiveName())); !strings.Contains(out, "Loaded image: "+s.RefName()) {
			t.Fatalf("podman load %s:\n%s", s.ArchiveName(), out)
		}
		out := pm.run(append(append([]string{"run", "--rm", "--network", "none"}, limits(t)...), s.RefName(), "-version")...)
		if !strings.HasPrefix(out, r.Binary()+" "+testVersion+" commit "+testCommit) {
			t.Errorf("%s -version: %q", s.RefName(), out)
		}
	}
	proxy := spec(roleNamed(t, "proxy"))

	t.Run("default arguments", func(t *testing.T) {
		id := strings.TrimSpace(pm.run(append(append([]string{"run", "--detach", "--network", "none"}, limits(t)...), proxy.RefName())...))
		waitForLog(t, pm.cmd("logs", "--follow", id), `msg="proxy starting" broker=https://snowflake-broker.torproject.net/ relay=wss://snowflake.torproject.net/`)
		if out := pm.run("top", id, "huser"); !strings.Contains(out, strconv.Itoa(image.UID)) {
			t.Errorf("podman top: the proxy does not run as %d:\n%s", image.UID, out)
		}
	})

	t.Run("compose service", func(t *testing.T) {
		project, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
			WorkingDir:  dir,
			ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, compose.FileName)}},
			Environment: types.Mapping{},
		})
		if err != nil {
			t.Fatal(err)
		}
		svc := project.Services["proxy"]
		if svc.Image != proxy.RefName() {
			t.Fatalf("the compose file runs %q, not %q", svc.Image, proxy.RefName())
		}
		lim := svc.Deploy.Resources.Limits
		args := []string{"run", "--detach", "--restart", svc.Restart, "--network", svc.NetworkMode,
			"--cpus", fmt.Sprint(float32(lim.NanoCPUs)), "--memory", fmt.Sprint(int64(lim.MemoryBytes)), "--pids-limit", fmt.Sprint(lim.Pids)}
		if svc.ReadOnly {
			args = append(args, "--read-only")
		}
		for _, c := range svc.CapDrop {
			args = append(args, "--cap-drop", c)
		}
		for _, o := range svc.SecurityOpt {
			args = append(args, "--security-opt", o)
		}
		broker, polls := fakeBroker(t)
		args = append(append(args, limits(t)...), svc.Image)
		args = append(append(args, svc.Command...),
			"-broker", broker.URL+"/", "-relay", strings.Replace(broker.URL, "http:", "ws:", 1)+"/",
			"-allowed-relay-hostname-pattern", "", "-stun", "", "-nat-probe-server", "",
			"-allow-non-tls-relay", "-allow-proxying-to-private-addresses")
		id := strings.TrimSpace(pm.run(args...))
		select {
		case poll := <-polls:
			if !strings.Contains(poll, `"Version":"1.3"`) || !strings.Contains(poll, `"Type":"standalone"`) {
				t.Errorf("the poll: %s", poll)
			}
		case <-time.After(time.Minute):
			logs, _ := pm.cmd("logs", id).CombinedOutput()
			t.Fatalf("no poll from the container within a minute; its log:\n%s", logs)
		}
		inspect := pm.run("inspect", "--format", "{{.HostConfig.RestartPolicy.Name}} {{.HostConfig.ReadonlyRootfs}} {{.HostConfig.Memory}} {{.HostConfig.PidsLimit}}", id)
		if want := fmt.Sprintf("%s true %d %d", svc.Restart, int64(lim.MemoryBytes), lim.Pids); strings.TrimSpace(inspect) != want {
			t.Errorf("podman inspect: %q, want %q", inspect, want)
		}
	})
}
