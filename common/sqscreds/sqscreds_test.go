package sqscreds

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// snowflakeValue is what Snowflake v2.14.1's generator (json.Marshal of its
// AwsCreds struct, then base64.StdEncoding) prints for the key below.
const snowflakeValue = "eyJhd3MtYWNjZXNzLWtleS1pZCI6IkFLSUFJT1NGT0ROTjdFWEFNUExFIiwiYXdzLXNlY3JldC1rZXkiOiJ3SmFsclhVdG5GRU1JL0s3TURFTkcvYlB4UmZpQ1lFWEFNUExFS0VZIn0="

var example = Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}

func TestEncodeMatchesSnowflake(t *testing.T) {
	got, err := example.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got != snowflakeValue {
		t.Errorf("Encode = %s, want %s", got, snowflakeValue)
	}
	raw, _ := base64.StdEncoding.DecodeString(got)
	if want := `{"aws-access-key-id":"AKIAIOSFODNN7EXAMPLE","aws-secret-key":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}`; string(raw) != want {
		t.Errorf("JSON = %s, want %s", raw, want)
	}
}

func TestDecode(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	tests := []struct {
		name    string
		in      string
		want    Credentials
		wantErr error
	}{
		{"snowflake value", snowflakeValue, example, nil},
		{"no padding", strings.TrimRight(snowflakeValue, "="), example, nil},
		{"members reversed", b64(`{"aws-secret-key":"s","aws-access-key-id":"k"}`), Credentials{"k", "s"}, nil},
		{"unknown member ignored", b64(`{"aws-access-key-id":"k","aws-secret-key":"s","region":"x"}`), Credentials{"k", "s"}, nil},
		{"spaces", b64(` { "aws-access-key-id" : "k" , "aws-secret-key" : "s" } `), Credentials{"k", "s"}, nil},
		{"empty", "", Credentials{}, ErrInvalid},
		{"not base64", "%%%%", Credentials{}, ErrInvalid},
		{"url alphabet", strings.NewReplacer("/", "_", "+", "-").Replace(b64(`{"aws-access-key-id":"k??>","aws-secret-key":"s"}`)), Credentials{}, ErrInvalid},
		{"not JSON", b64("hello"), Credentials{}, ErrInvalid},
		{"JSON array", b64(`["k","s"]`), Credentials{}, ErrInvalid},
		{"number key", b64(`{"aws-access-key-id":1,"aws-secret-key":"s"}`), Credentials{}, ErrInvalid},
		{"trailing garbage", b64(`{"aws-access-key-id":"k","aws-secret-key":"s"}x`), Credentials{}, ErrInvalid},
		{"null", b64(`null`), Credentials{}, ErrIncomplete},
		{"no secret", b64(`{"aws-access-key-id":"k"}`), Credentials{}, ErrIncomplete},
		{"empty key id", b64(`{"aws-access-key-id":"","aws-secret-key":"s"}`), Credentials{}, ErrIncomplete},
		{"too long", strings.Repeat("A", MaxEncodedLen+4), Credentials{}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.in)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("Decode error = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Decode = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestEncodeIncomplete(t *testing.T) {
	for _, c := range []Credentials{{}, {AccessKeyID: "k"}, {SecretKey: "s"}} {
		if _, err := c.Encode(); !errors.Is(err, ErrIncomplete) {
			t.Errorf("%#v.Encode() error = %v, want ErrIncomplete", c, err)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, c := range []Credentials{example, {"k", "s"}, {"<&>", "\u2028\"\\"}, {strings.Repeat("k", 100), strings.Repeat("s", 200)}} {
		enc, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(enc)
		if err != nil || got != c {
			t.Errorf("Decode(Encode(%#v)) = %#v, %v", c, got, err)
		}
	}
}

func TestStringHidesSecret(t *testing.T) {
	for _, s := range []string{example.String(), fmt.Sprintf("%v", example), fmt.Sprintf("%+v", example), fmt.Sprintf("%#v", example)} {
		if strings.Contains(s, example.SecretKey) {
			t.Errorf("%q shows the secret key", s)
		}
		if !strings.Contains(s, example.AccessKeyID) {
			t.Errorf("%q lacks the access key id", s)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(snowflakeValue)
	f.Add(strings.TrimRight(snowflakeValue, "="))
	f.Add("")
	f.Add("e30=") // {}
	f.Add(base64.StdEncoding.EncodeToString([]byte(`{"aws-access-key-id":"\u0000","aws-secret-key":"\ud800"}`)))
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Decode(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrIncomplete) {
				t.Fatalf("unclassified error %v", err)
			}
			if strings.Contains(err.Error(), s) && len(s) > 8 {
				t.Fatalf("error %q quotes the input", err)
			}
			return
		}
		if c.AccessKeyID == "" || c.SecretKey == "" {
			t.Fatalf("Decode accepted incomplete %#v", c)
		}
		enc, err := c.Encode()
		if err != nil {
			t.Fatalf("Encode of decoded %#v: %v", c, err)
		}
		again, err := Decode(enc)
		if err != nil || again != c {
			t.Fatalf("round trip of %#v: %#v, %v", c, again, err)
		}
	})
}
