// Package image builds Flurry's container images without a container
// daemon, with go-containerregistry: one layer on an empty base ("from
// scratch") holding the static binary in /usr/bin, CA certificates
// (package cacerts), /etc/passwd and /etc/group naming the unprivileged
// user the image runs as, and the copyright file. One image per Linux
// platform, gathered in a multi-platform index and written as an OCI image
// layout in a tar archive, which podman and skopeo read as oci-archive:.
// Every timestamp is the one given and every file's owner and mode are
// fixed, so the same binaries give the same bytes.
package image
