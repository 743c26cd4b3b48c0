package broker

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
)

// FuzzParseFastHead checks that every head the fast path accepts is one
// net/http reads the same way: a POST to the same endpoint with the same
// Content-Length and Snowflake-NAT-Type, so that taking it off net/http
// changes nothing; and that the fast path waits for more of a head only
// where net/http would wait too, so that it never leaves unanswered (or
// answers late) what net/http answers at once, such as a head whose lines
// end in a bare LF. What it hands over, net/http reads as ever.
func FuzzParseFastHead(f *testing.F) {
	for _, seed := range []string{
		"POST /proxy HTTP/1.1\r\nHost: broker\r\nContent-Length: 2\r\n\r\n{}",
		"POST /client HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: 10\r\nSnowflake-NAT-Type: restricted\r\nAccept-Encoding: gzip\r\n\r\n",
		"POST /answer HTTP/1.1\r\nhost: [::1]:80\r\ncontent-length: 0\r\nconnection: Keep-Alive\r\n\r\n",
		"POST /answer HTTP/1.1\r\nHost: b\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		"POST /proxy HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET /proxy HTTP/1.1\r\nHost: b\r\n\r\n",
		"POST /proxy HTTP/1.1\r\nHost: b\r\n Content-Length: 1\r\n\r\n",
		"POST /proxy HTTP/1.1\r\nHost: b\r\nContent-Length : 1\r\n\r\n",
		"POST /answer HTTP/1.1\r\nHost: b\r\nContent-Length: 0\r\nX-Forwarded-For: 192.0.2.1, 10.0.0.1\r\nx-forwarded-for: 10.0.0.2\r\nForwarded: for=\"[2001:db8::1]\"\r\n\r\n",
		// Bare LF line ends, alone and mixed with CRLF, complete or not.
		"POST /proxy HTTP/1.1\nHost: b\nContent-Length: 2\n\n{}",
		"POST /proxy HTTP/1.1\r\nHost: b\nContent-Length: 2\r\n\r\n{}",
		"POST /proxy HTTP/1.1\r\nHost: b\r\nContent-Length: 2\r\n\n{}",
		"POST /proxy HTTP/1.1\r\nHost: b\r\nContent-Length: 2\n\r\n{}",
		"POST /client HTTP/1.1\nHost: b\n",
		"POST /answer HTTP/1.1\r\nHost: b\r\nContent-Length: 6\r\n\nab\r\n\r\n",
		"POST /answer HTTP/1.1\r\nHost: b\r\nBad Line\r\n",
		"POST /answer HTTP/1.1\r\nHost: b\r",
		"POST /ans",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, res := parseFastHead(data)
		if res == fastIncomplete {
			// net/http reads a head line by line, a line ending at LF;
			// it must still be waiting after the complete ones.
			lines := data[:bytes.LastIndexByte(data, '\n')+1]
			_, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(lines)))
			if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
				t.Fatalf("waits for more of %q, which net/http reads: %v", data, err)
			}
			return
		}
		if res != fastOK {
			return
		}
		if req.headLen > len(data) || req.headLen > maxFastHead {
			t.Fatalf("head length %d of %d bytes", req.headLen, len(data))
		}
		hr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data[:req.headLen])))
		if err != nil {
			t.Fatalf("accepted %q, which net/http refuses: %v", data[:req.headLen], err)
		}
		switch {
		case hr.Method != http.MethodPost, hr.URL.Path != fastPaths[req.endpoint], hr.RequestURI != fastPaths[req.endpoint]:
			t.Fatalf("%q: net/http reads %s %s", data[:req.headLen], hr.Method, hr.RequestURI)
		case hr.ContentLength != int64(req.bodyLen):
			t.Fatalf("%q: Content-Length %d, net/http %d", data[:req.headLen], req.bodyLen, hr.ContentLength)
		case hr.Close, hr.ProtoMajor != 1 || hr.ProtoMinor != 1:
			t.Fatalf("%q: net/http reads close=%v, HTTP/%d.%d", data[:req.headLen], hr.Close, hr.ProtoMajor, hr.ProtoMinor)
		}
		kept := map[string][]string{}
		for _, f := range req.kept[:req.nKept] {
			kept[f.name] = append(kept[f.name], string(f.value))
		}
		for _, name := range keptNames {
			if got, want := kept[name], hr.Header[name]; !slices.Equal(got, want) {
				t.Fatalf("%q: %s %q, net/http %q", data[:req.headLen], name, got, want)
			}
		}
	})
}
