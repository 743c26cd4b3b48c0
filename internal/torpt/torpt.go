package torpt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"

	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"

	"github.com/flurrypt/flurry/common/safelog"
	"github.com/flurrypt/flurry/common/version"
)

// Method is the transport name tor knows Flurry by: Snowflake's.
const Method = "snowflake"

// Managed reports whether tor started the process as a managed transport
// (TOR_PT_MANAGED_TRANSPORT_VER is set).
func Managed() bool { return os.Getenv("TOR_PT_MANAGED_TRANSPORT_VER") != "" }

// StateDir is the directory tor gives the transport for its state
// (TOR_PT_STATE_LOCATION), or "" outside tor. It may not exist yet.
func StateDir() string { return os.Getenv("TOR_PT_STATE_LOCATION") }

// MakeStateDir creates StateDir if it does not exist yet and returns it; it
// fails outside tor.
func MakeStateDir() (string, error) {
	dir := StateDir()
	if dir == "" {
		return "", errors.New("no state directory: tor sets TOR_PT_STATE_LOCATION")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	return dir, nil
}

// ExitOnStdinClose calls stop once stdin closes, if tor asks for that
// (TOR_PT_EXIT_ON_STDIN_CLOSE=1): tor closes a transport's stdin when it
// wants the transport gone.
func ExitOnStdinClose(stop func()) {
	if os.Getenv("TOR_PT_EXIT_ON_STDIN_CLOSE") != "1" {
		return
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
}

// ClientSetup reads tor's client environment (pt.ClientSetup) and reports
// the program's name and version to tor.
func ClientSetup(program string) (pt.ClientInfo, error) {
	info, err := pt.ClientSetup(nil)
	if err != nil {
		return info, fmt.Errorf("pluggable-transport client setup: %w", err)
	}
	pt.ReportVersion(program, version.String())
	return info, nil
}

// UpstreamProxy answers the proxy tor asks the client to send all of its
// traffic through (TOR_PT_PROXY: torrc's Socks5Proxy and friends). As
// Snowflake, only SOCKS5 is taken, and only once check has accepted it
// (PROXY DONE); otherwise tor hears PROXY-ERROR and UpstreamProxy returns
// the error. It returns the proxy's URL, or "" if tor set none.
func UpstreamProxy(ctx context.Context, info pt.ClientInfo, check func(ctx context.Context, proxyURL string) error) (string, error) {
	if info.ProxyURL == nil {
		return "", nil
	}
	if info.ProxyURL.Scheme != "socks5" {
		return "", pt.ProxyError(fmt.Sprintf("proxy scheme %q is not supported: a socks5 proxy with UDP ASSOCIATE is needed (torrc Socks5Proxy)", printableScheme(info.ProxyURL.Scheme)))
	}
	u := info.ProxyURL.String()
	if err := check(ctx, u); err != nil {
		_ = pt.ProxyError(safelog.Scrub(err.Error()))
		return "", err
	}
	pt.ProxyDone()
	return u, nil
}

// printableScheme keeps a URL scheme printable and short for a message to
// tor.
func printableScheme(s string) string {
	if len(s) > 16 || strings.IndexFunc(s, func(r rune) bool { return r < '!' || r > '~' || r == '"' }) >= 0 {
		return "?"
	}
	return s
}

// ClientListen opens a SOCKS listener on 127.0.0.1 for every method tor
// asks for that is Method, and tells tor (CMETHOD, or CMETHOD-ERROR for
// another method or a failed listen), then CMETHODS DONE. It returns the
// listeners, none if no listener could be opened.
func ClientListen(methods []string, log *slog.Logger) []net.Listener {
	var listeners []net.Listener
	for _, name := range methods {
		if name != Method {
			_ = pt.CmethodError(name, "no such method")
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			_ = pt.CmethodError(name, err.Error())
			continue
		}
		listeners = append(listeners, ln)
		pt.Cmethod(name, "socks5", ln.Addr())
		log.Info("listening", "method", name, "addr", ln.Addr().String())
	}
	pt.CmethodsDone()
	return listeners
}

// ServerSetup reads tor's server environment (pt.ServerSetup), reports the
// program's name and version, and returns the bind addresses of Method,
// answering SMETHOD-ERROR for every other method. When tor asks for no
// Method, it sends SMETHODS DONE and returns an error.
func ServerSetup(program string) (pt.ServerInfo, []pt.Bindaddr, error) {
	info, err := pt.ServerSetup(nil)
	if err != nil {
		return info, nil, fmt.Errorf("pluggable-transport server setup: %w", err)
	}
	pt.ReportVersion(program, version.String())
	var ours []pt.Bindaddr
	for _, b := range info.Bindaddrs {
		if b.MethodName != Method {
			_ = pt.SmethodError(b.MethodName, "no such method")
			continue
		}
		ours = append(ours, b)
	}
	if len(ours) == 0 {
		pt.SmethodsDone()
		return info, nil, errors.New("tor asked for no " + Method + " transport")
	}
	return info, ours, nil
}

// ServerListen listens on each bind address and tells tor (SMETHOD, or
// SMETHOD-ERROR for a failed listen, which is also logged), then SMETHODS
// DONE. As Snowflake's server, the SMETHOD arguments say tls=yes or tls=no
// and name each TLS hostname. It returns the listeners, none if every
// listen failed.
func ServerListen(binds []pt.Bindaddr, tls bool, hostnames []string, log *slog.Logger) []net.Listener {
	args := pt.Args{}
	if tls {
		args.Add("tls", "yes")
		for _, h := range hostnames {
			args.Add("hostname", h)
		}
	} else {
		args.Add("tls", "no")
	}
	var listeners []net.Listener
	for _, b := range binds {
		ln, err := net.ListenTCP("tcp", b.Addr)
		if err != nil {
			_ = pt.SmethodError(b.MethodName, "listen failed")
			log.Error("listen", "err", err)
			continue
		}
		pt.SmethodArgs(b.MethodName, ln.Addr(), args)
		listeners = append(listeners, ln)
	}
	pt.SmethodsDone()
	return listeners
}

// ClientFailed tells tor that Method failed after ClientSetup, instead of
// ClientListen: CMETHOD-ERROR (IP addresses removed), then CMETHODS DONE.
func ClientFailed(err error) {
	_ = pt.CmethodError(Method, safelog.Scrub(err.Error()))
	pt.CmethodsDone()
}

// ServerFailed tells tor that Method failed after ServerSetup, instead of
// ServerListen: SMETHOD-ERROR with msg, then SMETHODS DONE.
func ServerFailed(msg string) {
	_ = pt.SmethodError(Method, msg)
	pt.SmethodsDone()
}

// LogNotice sends a message to tor's log (a LOG line at severity notice),
// with IP addresses removed.
func LogNotice(msg string) { pt.Log(pt.LogSeverityNotice, safelog.Scrub(msg)) }
