package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/proxy"

	"github.com/flurrypt/flurry/client/internal/proxynet"
	"github.com/flurrypt/flurry/client/internal/socks5udp"
)

// socks5DialTimeout bounds one CONNECT through the SOCKS5 proxy (TCP
// connection to the proxy, greeting and request).
const socks5DialTimeout = 15 * time.Second

// maxCredential is the longest SOCKS5 username or password (RFC 1929).
const maxCredential = 255

// parseSOCKS5Proxy checks a SOCKS5 proxy URL: socks5://[user[:pass]@]host:port
// with nothing after the port. Error texts never repeat the URL (it may
// hold a password).
func parseSOCKS5Proxy(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "socks5" {
		return nil, fmt.Errorf("scheme %q is not supported: only socks5:// is", schemeForLog(u.Scheme))
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return nil, errors.New("no host")
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || port < 1 || port > 65535 {
		return nil, errors.New("a port between 1 and 65535 is required")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("nothing may follow host:port")
	}
	if u.User != nil {
		pass, _ := u.User.Password()
		if n := len(u.User.Username()); n == 0 || n > maxCredential {
			return nil, fmt.Errorf("the username must be 1 to %d bytes", maxCredential)
		}
		if len(pass) > maxCredential {
			return nil, fmt.Errorf("the password must be at most %d bytes", maxCredential)
		}
	}
	return u, nil
}

// schemeForLog keeps a scheme printable and short.
func schemeForLog(s string) string {
	if len(s) > 16 || strings.IndexFunc(s, func(r rune) bool { return r < '!' || r > '~' }) >= 0 {
		return "?"
	}
	return s
}

// isLoopbackHost reports whether host is a loopback IP address or
// "localhost".
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// socks5Setup is what New builds from Config.SOCKS5Proxy.
type socks5Setup struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error) // CONNECT
	net  *proxynet.Net                                                     // UDP ASSOCIATE, for pion and NAT detection
}

// newSOCKS5 builds the CONNECT dialer (golang.org/x/net/proxy) and the UDP
// network of a checked proxy URL.
func newSOCKS5(u *url.URL, cfg Config) (*socks5Setup, error) {
	var auth *proxy.Auth
	var user, pass string
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
		auth = &proxy.Auth{User: user, Password: pass}
	}
	d, err := proxy.SOCKS5("tcp", u.Host, auth, &net.Dialer{Timeout: socks5DialTimeout})
	if err != nil {
		return nil, err
	}
	cd, ok := d.(proxy.ContextDialer)
	if !ok {
		return nil, errors.New("SOCKS5 dialer without DialContext")
	}
	udp, err := socks5udp.New(socks5udp.Config{ProxyAddr: u.Host, Username: user, Password: pass})
	if err != nil {
		return nil, err
	}
	pn, err := proxynet.New(proxynet.Config{SOCKS: udp, AssociateTimeout: cfg.GatherTimeout, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, socks5DialTimeout)
		defer cancel()
		return cd.DialContext(ctx, network, addr)
	}
	return &socks5Setup{dial: dial, net: pn}, nil
}

// CheckSOCKS5Proxy checks that the proxy at proxyURL (see
// Config.SOCKS5Proxy) accepts a UDP ASSOCIATE, as a PT client does before
// it reports PROXY DONE to tor: it makes one association and closes it,
// within 15 s at most.
func CheckSOCKS5Proxy(ctx context.Context, proxyURL string) error {
	ctx, cancel := context.WithTimeout(ctx, socks5DialTimeout)
	defer cancel()
	u, err := parseSOCKS5Proxy(proxyURL)
	if err != nil {
		return fmt.Errorf("%w: SOCKS5 proxy: %w", ErrInvalidConfig, err)
	}
	var user, pass string
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
	}
	c, err := socks5udp.New(socks5udp.Config{ProxyAddr: u.Host, Username: user, Password: pass})
	if err != nil {
		return fmt.Errorf("%w: SOCKS5 proxy: %w", ErrInvalidConfig, err)
	}
	pc, err := c.Associate(ctx)
	if err != nil {
		return fmt.Errorf("%w (it must support UDP ASSOCIATE): %w", ErrProxy, err)
	}
	return pc.Close()
}
