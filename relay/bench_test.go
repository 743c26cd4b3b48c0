package relay

import (
	"io"
	"testing"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

// BenchmarkEcho measures the whole relay data path: a Snowflake-style
// client's stream, over one WebSocket, through the relay to a TCP echo
// server and back. One op is 64 KiB echoed.
func BenchmarkEcho(b *testing.B) {
	_, wsURL := startRelay(b, Config{ForwardAddr: echoServer(b), NumTurbotunnel: 1})
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	pconn.dialCarrier(b, wsURL)
	client := newTestClient(b, pconn)
	stream, err := client.smux.OpenStream()
	if err != nil {
		b.Fatal(err)
	}
	defer stream.Close()
	chunk := testPayload(64 << 10)
	buf := make([]byte, len(chunk))
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		errc := make(chan error, 1)
		go func() {
			_, err := stream.Write(chunk)
			errc <- err
		}()
		if _, err := io.ReadFull(stream, buf); err != nil {
			b.Fatal(err)
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
}
