package amp

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/idna"
)

// TestDomainPrefixBasic runs Snowflake's vectors (from the AMP project's
// documentation and tools).
func TestDomainPrefixBasic(t *testing.T) {
	tests := []struct{ domain, want string }{
		{"", ""},
		{"xn--", ""},
		{"...", "---"},
		// No IDNA mapping (case folding, normalization).
		{"b\u00fccher.de", "xn--bcher-de-65a"},
		{"B\u00fccher.de", "xn--Bcher-de-65a"},
		{"bu\u0308cher.de", "xn--bucher-de-hkf"},
		// IDNA 2003 and 2008 differ on these.
		{"faß.de", "xn--fa-de-mqa"},
		{"βόλοσ.com", "xn---com-4ld8c2a6a8e"},
		// 63 and 64 characters: the basic algorithm does not check length.
		{strings.Repeat("a", 63), strings.Repeat("a", 63)},
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
		// https://amp.dev/documentation/guides-and-tutorials/learn/amp-caches-and-cors/amp-cache-urls/#basic-algorithm
		{"example.com", "example-com"},
		{"foo.example.com", "foo-example-com"},
		{"foo-example.com", "foo--example-com"},
		{"xn--57hw060o.com", "xn---com-p33b41770a"},
		{"\u26a1\U0001f60a.com", "xn---com-p33b41770a"},
		{"en-us.example.com", "0-en--us-example-com-0"},
	}
	for _, tt := range tests {
		got, err := domainPrefixBasic(tt.domain)
		if err != nil || got != tt.want {
			t.Errorf("%+q → (%+q, %v), want %+q", tt.domain, got, err, tt.want)
		}
	}
	for _, domain := range []string{"xn---"} {
		if got, err := domainPrefixBasic(domain); err == nil || got != "" {
			t.Errorf("%+q → (%+q, %v), want an error", domain, got, err)
		}
	}
}

// TestDomainPrefixFallback runs Snowflake's vectors (checked by Snowflake
// against the AMP project's cache-url tool).
func TestDomainPrefixFallback(t *testing.T) {
	tests := []struct{ domain, want string }{
		{"", "4oymiquy7qobjgx36tejs35zeqt24qpemsnzgtfeswmrw6csxbkq"},
		{"example.com", "un42n5xov642kxrxrqiyanhcoupgql5lt4wtbkyt2ijflbwodfdq"},
		{"000000000000000000000000000000000000000000000000000000000000.com", "stejanx4hsijaoj4secyecy4nvqodk56kw72whwcmvdbtucibf5a"},
		{"00000000000000000000000000000000000000000000000000000000000a.com", "jdcvbsorpnc3hcjrhst56nfm6ymdpovlawdbm2efyxpvlt4cpbya"},
		{"00000000000000000000000000000000000000000000000000000000000\u03bb.com", "qhzqeumjkfpcpuic3vqruyjswcr7y7gcm3crqyhhywvn3xrhchfa"},
	}
	for _, tt := range tests {
		if got := domainPrefixFallback(tt.domain); got != tt.want {
			t.Errorf("%+q → %+q, want %+q", tt.domain, got, tt.want)
		}
	}
}

// TestDomainPrefix checks that the combined algorithm always gives a valid,
// IDNA-decodable DNS label, falling back when it must.
func TestDomainPrefix(t *testing.T) {
	profile := idna.New(idna.VerifyDNSLength(true), idna.StrictDomainName(true))
	tests := []struct {
		domain   string
		fallback bool
	}{
		{"example.com", false},
		{"\u0314example.com", false},
		{strings.Repeat("a", 63), false},
		{strings.Repeat("a", 64), true},
		{"xn--57hw060o.com", false},
		{"a b c", false},
		{"xn---", true},
		{"000000000000000000000000000000000000000000000000000000000000.com", true},
	}
	for _, tt := range tests {
		got := domainPrefix(tt.domain)
		if strings.Contains(got, ".") {
			t.Errorf("%+q → %+q contains a dot", tt.domain, got)
		}
		if _, err := profile.ToUnicode(got); err != nil {
			t.Errorf("%+q → %+q: %v", tt.domain, got, err)
		}
		if isFallback := got == domainPrefixFallback(tt.domain); isFallback != tt.fallback {
			t.Errorf("%+q → %+q: fallback %v, want %v", tt.domain, got, isFallback, tt.fallback)
		}
	}
}

// TestCacheURL runs Snowflake's vectors (several from Google's AMP cache
// documentation).
func TestCacheURL(t *testing.T) {
	tests := []struct{ pub, cache, contentType, want string }{
		{"http://example.com/", "https://amp.cache/", "c", "https://example-com.amp.cache/c/example.com"},
		{"http://example.com", "https://amp.cache/", "c", "https://example-com.amp.cache/c/example.com"},
		{"https://example.com/", "https://amp.cache/", "c", "https://example-com.amp.cache/c/s/example.com"},
		// The content type is escaped.
		{"http://example.com/", "https://amp.cache/", "/", "https://example-com.amp.cache/%2F/example.com"},
		// The publisher's path, query and fragment are kept, escapes too.
		{"http://example.com/my%2Fpath/index.html?a=1#fragment", "https://amp.cache/", "c", "https://example-com.amp.cache/c/example.com/my%2Fpath/index.html?a=1#fragment"},
		// The cache's scheme, user information, port and path are kept.
		{"http://example.com", "http://cache%2Fuser:cache%40pass@amp.cache:123/with/../../path/..%2f../", "c", "http://cache%2Fuser:cache%40pass@example-com.amp.cache:123/path/..%2f../c/example.com"},
		// Default ports are accepted and dropped.
		{"http://example.com:80/", "https://amp.cache/", "c", "https://example-com.amp.cache/c/example.com"},
		{"https://example.com:443/", "https://amp.cache/", "c", "https://example-com.amp.cache/c/s/example.com"},
		// An empty query on the cache URL is fine.
		{"http://example.com/", "https://amp.cache/?", "c", "https://example-com.amp.cache/c/example.com"},
		// A cache URL without a path.
		{"https://example.com/x", "https://amp.cache", "c", "https://example-com.amp.cache/c/s/example.com/x"},
		// https://developers.google.com/amp/cache/overview
		{"https://example.com/amp_document.html", "https://cdn.ampproject.org/", "c", "https://example-com.cdn.ampproject.org/c/s/example.com/amp_document.html"},
		{"http://example.com/logo.png", "https://cdn.ampproject.org/", "i", "https://example-com.cdn.ampproject.org/i/example.com/logo.png"},
		{"https://example.com/g?value=Hello%20World", "https://cdn.ampproject.org/", "c", "https://example-com.cdn.ampproject.org/c/s/example.com/g?value=Hello%20World"},
		// What a Snowflake client asks for.
		{"https://snowflake-broker.torproject.net/amp/client/0AAAAAAAAAAAA/MS4wCnt9", "https://cdn.ampproject.org/", "c",
			"https://snowflake--broker-torproject-net.cdn.ampproject.org/c/s/snowflake-broker.torproject.net/amp/client/0AAAAAAAAAAAA/MS4wCnt9"},
	}
	for _, tt := range tests {
		got, err := CacheURL(mustParseURL(t, tt.pub), mustParseURL(t, tt.cache), tt.contentType)
		if err != nil || got.String() != tt.want {
			t.Errorf("%q %q %q → (%v, %v), want %q", tt.pub, tt.cache, tt.contentType, got, err, tt.want)
		}
	}

	errs := []struct {
		pub, cache, contentType string
		want                    error
	}{
		{"http://example.com/", "https://amp.cache/", "", ErrContentType},
		{"http:///index.html", "https://amp.cache/", "c", ErrPublisherURL},
		{"//example.com/", "https://amp.cache/", "c", ErrPublisherURL},
		{"ftp://example.com/", "https://amp.cache/", "c", ErrPublisherURL},
		{"http://example.com:443/", "https://amp.cache/", "c", ErrPublisherURL},
		{"https://example.com:80/", "https://amp.cache/", "c", ErrPublisherURL},
		{"https://example.com:8443/", "https://amp.cache/", "c", ErrPublisherURL},
		{"http://user@example.com/", "https://amp.cache/", "c", ErrPublisherURL},
		{"http://user:pass@example.com/", "https://amp.cache/", "c", ErrPublisherURL},
		{"http://example.com/", "https://amp.cache/?a=1", "c", ErrCacheURL},
		{"http://example.com/", "https://amp.cache/#fragment", "c", ErrCacheURL},
	}
	for _, tt := range errs {
		got, err := CacheURL(mustParseURL(t, tt.pub), mustParseURL(t, tt.cache), tt.contentType)
		if !errors.Is(err, tt.want) {
			t.Errorf("%q %q %q → (%v, %v), want %v", tt.pub, tt.cache, tt.contentType, got, err, tt.want)
		}
	}
}

func mustParseURL(tb testing.TB, s string) *url.URL {
	tb.Helper()
	u, err := url.Parse(s)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}
