package turbotunnel

import (
	"testing"
	"time"

	"github.com/xtaci/smux"
)

// TestSmuxConfigs checks that both ends' smux configurations are ones smux
// accepts, carry the shared parameters, and are fresh copies that a caller
// may change without touching the other end's.
func TestSmuxConfigs(t *testing.T) {
	for _, tt := range []struct {
		name             string
		config           func() *smux.Config
		keepAliveTimeout time.Duration
		streamBuffer     int
	}{
		{"client", ClientSmuxConfig, ClientKeepAliveTimeout, ClientStreamBuffer},
		{"relay", RelaySmuxConfig, RelayKeepAliveTimeout, StreamBuffer},
	} {
		c := tt.config()
		if err := smux.VerifyConfig(c); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if c.Version != SmuxVersion || c.MaxStreamBuffer != tt.streamBuffer ||
			c.KeepAliveInterval != KeepAliveInterval || c.KeepAliveTimeout != tt.keepAliveTimeout {
			t.Errorf("%s: %+v", tt.name, c)
		}
		c.Version = 1
		if tt.config().Version != SmuxVersion {
			t.Errorf("%s: changing a returned config changed the next one", tt.name)
		}
	}
}
