package main

import (
	"os"
	"path/filepath"

	"github.com/flurrypt/flurry/common/tunnelseal"
)

// defaultRelayKeyFile is where the relay keeps its sealing key: under tor,
// in the transport's state directory; standalone, nowhere (sealed carriers
// off unless -relay-key-file is given).
func defaultRelayKeyFile() string {
	if dir := os.Getenv("TOR_PT_STATE_LOCATION"); dir != "" {
		return filepath.Join(dir, "flurry-relay-key")
	}
	return ""
}

// loadRelayKey reads the relay key from path, creating it on first start,
// and returns it with its public key in bridge-line form.
func loadRelayKey(path string) (tunnelseal.PrivateKey, string, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return tunnelseal.PrivateKey{}, "", err
		}
	}
	key, err := tunnelseal.LoadOrCreateKeyFile(path)
	if err != nil {
		return key, "", err
	}
	pub, err := key.Public()
	if err != nil {
		return key, "", err
	}
	return key, pub.String(), nil
}
