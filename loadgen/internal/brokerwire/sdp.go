package brokerwire

// The session descriptions every simulated client offers and every simulated
// proxy answers: real pion/webrtc descriptions with host candidates on
// 127.0.0.1 only, the Snowflake v2.14.1 vectors of messages/testdata
// (sdp-offer.json and sdp-answer.json), serialized as Snowflake serializes
// them. A broker validates them as session descriptions and requires
// "a=candidate" in the answer; nobody ever connects to the candidates.
const (
	FixedOffer  = `{"type":"offer","sdp":"v=0\r\no=- 7207834799972382898 1795978629 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=msid-semantic:WMS *\r\na=fingerprint:sha-256 E6:19:09:28:58:5F:E3:26:C7:18:13:B6:08:8D:49:E9:72:10:E7:5F:09:DB:B4:CD:51:71:56:D3:14:22:05:9B\r\na=extmap-allow-mixed\r\na=group:BUNDLE 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=setup:actpass\r\na=mid:0\r\na=sendrecv\r\na=sctp-port:5000\r\na=max-message-size:1073741823\r\na=ice-ufrag:YOnMbdqrylXCBgky\r\na=ice-pwd:IYWuAAHWDdajDPbUHlaNagGbuaidIqxw\r\na=candidate:2878742611 1 udp 2130706431 127.0.0.1 44161 typ host ufrag YOnMbdqrylXCBgky\r\na=candidate:2878742611 2 udp 2130706431 127.0.0.1 44161 typ host ufrag YOnMbdqrylXCBgky\r\na=end-of-candidates\r\n"}`
	FixedAnswer = `{"type":"answer","sdp":"v=0\r\no=- 5155291659056158857 1795978629 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=msid-semantic:WMS *\r\na=fingerprint:sha-256 D1:36:FD:D6:1C:DE:5A:23:A5:70:D8:0F:DF:84:6F:3C:F8:33:6F:A0:5C:1F:48:48:DE:F9:5A:8D:B9:8B:97:58\r\na=extmap-allow-mixed\r\na=group:BUNDLE 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=setup:active\r\na=mid:0\r\na=sendrecv\r\na=sctp-port:5000\r\na=max-message-size:1073741823\r\na=ice-ufrag:prKVWSvurnjSPPEa\r\na=ice-pwd:RCYtOhyWubRWbiJhzTEoRmKOfNJSbMlM\r\na=candidate:2878742611 1 udp 2130706431 127.0.0.1 52901 typ host ufrag prKVWSvurnjSPPEa\r\na=candidate:2878742611 2 udp 2130706431 127.0.0.1 52901 typ host ufrag prKVWSvurnjSPPEa\r\na=end-of-candidates\r\n"}`
)
