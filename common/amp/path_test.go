package amp

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// TestDecodePath runs Snowflake's TestDecodePath vectors (the error texts
// are Snowflake's too).
func TestDecodePath(t *testing.T) {
	tests := []struct {
		path    string
		want    string
		wantErr error
		errText string
	}{
		{"", "", ErrMissingFormat, "missing format indicator"},
		{"0", "", ErrMissingData, "missing data"},
		{"0foobar", "", ErrMissingData, "missing data"},
		{"/0/YWJj", "", ErrUnknownFormat, "unknown format indicator '/'"},
		{"1/YWJj", "", ErrUnknownFormat, "unknown format indicator '1'"},
		{"0/YWJj=", "", ErrPathData, ""},
		{"0/YW+j", "", ErrPathData, ""},
		{"0/Y", "", ErrPathData, ""},

		{"0/", "", nil, ""},
		{"0foobar/", "", nil, ""},
		{"0/YWJj", "abc", nil, ""},
		{"0///YWJj", "abc", nil, ""},
		{"0foobar/YWJj", "abc", nil, ""},
		{"0/foobar/YWJj", "abc", nil, ""},
		{"0/_-8", "\xff\xef", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := DecodePath(tt.path)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || (tt.errText != "" && err.Error() != tt.errText) {
					t.Fatalf("%+q → error %v, want %v (%q)", tt.path, err, tt.wantErr, tt.errText)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("%+q → (%+q, %v), want %+q", tt.path, got, err, tt.want)
			}
		})
	}
}

// TestPathRoundTrip is Snowflake's, plus the shape of the encoding.
func TestPathRoundTrip(t *testing.T) {
	for _, data := range []string{"", "\x00", "/", "hello world", "1.0\n{\"offer\":\"x\"}", strings.Repeat("\xff", 1000)} {
		p := EncodePath([]byte(data))
		if len(p) != encodedPathLen(len(data)) || p[0] != '0' || p[13] != '/' || strings.ContainsAny(p, "+=?#%") || strings.Count(p, "/") != 1 {
			t.Errorf("%+q encoded as %q", data, p)
		}
		got, err := DecodePath(p)
		if err != nil || string(got) != data {
			t.Errorf("%+q round-tripped to (%+q, %v)", data, got, err)
		}
	}
	if a, b := EncodePath(nil), EncodePath(nil); a == b {
		t.Errorf("two encodings share the cache-buster %q", a)
	}
}

// encodedPathLen is the length of EncodePath(data) for len(data) = n: the
// format indicator, the cache buster, a slash and the data, in base64url.
func encodedPathLen(n int) int {
	return 2 + base64.RawURLEncoding.EncodedLen(cacheBusterBytes) + base64.RawURLEncoding.EncodedLen(n)
}
