package amp

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"

	"golang.org/x/net/idna"
)

// maxLabel is the longest DNS label.
const maxLabel = 63

// lowerBase32 is RFC 4648 base32 with lowercase letters and no padding.
var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// domainPrefixBasic is the AMP cache URL "basic algorithm": Punycode-decode
// the domain, double every '-', turn every '.' into '-', wrap in "0-…-0" if
// the result has '-' at both positions 3 and 4, Punycode-encode. No IDNA
// mapping (case folding, normalization) is applied, and the length is not
// checked.
func domainPrefixBasic(domain string) (string, error) {
	s, err := idna.ToUnicode(domain)
	if err != nil {
		return "", err
	}
	s = strings.ReplaceAll(s, "-", "--")
	s = strings.ReplaceAll(s, ".", "-")
	if len(s) >= 4 && s[2] == '-' && s[3] == '-' {
		s = "0-" + s + "-0"
	}
	return idna.ToASCII(s)
}

// domainPrefixFallback is the "fallback algorithm": the lowercase unpadded
// base32 of the SHA-256 of the domain's bytes (UTF-8, not Punycode, as the
// AMP project's own implementation does), 52 characters.
func domainPrefixFallback(domain string) string {
	sum := sha256.Sum256([]byte(domain))
	return lowerBase32.EncodeToString(sum[:])
}

// domainPrefix returns the label an AMP cache puts before its own host for
// the publisher domain: the basic algorithm's result if it is a valid DNS
// label, else the fallback.
func domainPrefix(domain string) string {
	if p, err := domainPrefixBasic(domain); err == nil && len(p) <= maxLabel {
		return p
	}
	return domainPrefixFallback(domain)
}

// CacheURL returns the URL at which the AMP cache cacheURL serves the
// publisher URL pub. contentType is the cache's serving type ("c" for a
// document, "i" for an image); Snowflake uses "c".
//
// The result has cacheURL's scheme, user information and port, the host
// <domain prefix of pub's host>.<cacheURL's host>, and the path
// <cacheURL's path>/<contentType>[/s]/<pub's host><pub's path> ("/s" when pub
// is https), with pub's query and fragment.
//
// pub must be http or https with a host, no user information and no port
// other than its scheme's default (which is dropped); cacheURL must have no
// query or fragment.
func CacheURL(pub, cacheURL *url.URL, contentType string) (*url.URL, error) {
	if contentType == "" {
		// It would make an empty path segment, which is no segment.
		return nil, ErrContentType
	}
	var https bool
	switch pub.Scheme {
	case "http":
	case "https":
		https = true
	default:
		return nil, fmt.Errorf("%w: scheme must be http or https", ErrPublisherURL)
	}
	if pub.User != nil {
		return nil, fmt.Errorf("%w: user information not allowed", ErrPublisherURL)
	}
	if port := pub.Port(); port != "" && !(port == "80" && !https) && !(port == "443" && https) {
		return nil, fmt.Errorf("%w: port must be the scheme's default", ErrPublisherURL)
	}
	host := pub.Hostname()
	if host == "" {
		return nil, fmt.Errorf("%w: no host", ErrPublisherURL)
	}
	if cacheURL.RawQuery != "" {
		return nil, fmt.Errorf("%w: query not allowed", ErrCacheURL)
	}
	if cacheURL.Fragment != "" {
		return nil, fmt.Errorf("%w: fragment not allowed", ErrCacheURL)
	}

	resultHost := domainPrefix(host) + "." + cacheURL.Hostname()
	if port := cacheURL.Port(); port != "" {
		resultHost = net.JoinHostPort(resultHost, port)
	}
	segments := []string{"/" + cacheURL.EscapedPath(), url.PathEscape(contentType)}
	if https {
		segments = append(segments, "s")
	}
	segments = append(segments, url.PathEscape(host), pub.EscapedPath())
	rawPath := path.Join(segments...)
	p, err := url.PathUnescape(rawPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCacheURL, err)
	}
	return &url.URL{
		Scheme:   cacheURL.Scheme,
		User:     cacheURL.User,
		Host:     resultHost,
		Path:     p,
		RawPath:  rawPath,
		RawQuery: pub.RawQuery,
		Fragment: pub.Fragment,
	}, nil
}
