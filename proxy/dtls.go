package proxy

import (
	"github.com/pion/transport/v5"
	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/covertdtls"
)

// ConfigureDTLS sets the DTLS part of a proxy's SettingEngine: no
// HelloVerifyRequest when the proxy is the DTLS server (as Snowflake: it
// saves a round trip) and the covert DTLS ClientHello c, returning c's
// Shaper (see covertdtls.Config.Apply). Tests that compare the proxy's
// handshake with a browser's use it to build the same peer.
func ConfigureDTLS(se *webrtc.SettingEngine, c covertdtls.Config) (*covertdtls.Shaper, error) {
	return configureDTLS(se, c, nil)
}

// configureDTLS is ConfigureDTLS on the network n (the host's if nil),
// which covert DTLS may wrap; it sets the SettingEngine's network.
func configureDTLS(se *webrtc.SettingEngine, c covertdtls.Config, n transport.Net) (*covertdtls.Shaper, error) {
	se.SetDTLSInsecureSkipHelloVerify(true)
	return c.Apply(se, n)
}
