package compose

import (
	"bytes"
	_ "embed"
)

//go:embed compose.yaml
var template []byte

// FileName is the compose file's name in the release.
const FileName = "flurry-proxy-compose.yaml"

// File returns the compose file of a release.
func File(version string) []byte {
	return bytes.ReplaceAll(template, []byte("@VERSION@"), []byte(version))
}
