package sqscreds

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// MaxEncodedLen bounds the encoded value Decode accepts, in bytes. Real
// values are about 120 bytes (a 20-character key id, a 40-character secret).
const MaxEncodedLen = 4096

// Credentials is an AWS access key.
type Credentials struct {
	AccessKeyID string `json:"aws-access-key-id"`
	SecretKey   string `json:"aws-secret-key"`
}

// Encode returns the bridge-line value of c: padded standard base64 of its
// JSON form. Both fields must be set.
func (c Credentials) Encode() (string, error) {
	if c.AccessKeyID == "" || c.SecretKey == "" {
		return "", ErrIncomplete
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// String returns the access key id only, so that the secret never reaches
// a log line by accident.
func (c Credentials) String() string {
	return "sqscreds.Credentials{AccessKeyID:" + c.AccessKeyID + ", SecretKey:[redacted]}"
}

// GoString is String, for %#v.
func (c Credentials) GoString() string { return c.String() }

// Decode parses a bridge-line value made by Encode (or Snowflake's
// generator). Padding may be missing.
func Decode(s string) (Credentials, error) {
	if len(s) > MaxEncodedLen {
		return Credentials{}, fmt.Errorf("%w: longer than %d bytes", ErrInvalid, MaxEncodedLen)
	}
	enc := base64.StdEncoding
	if !strings.HasSuffix(s, "=") && len(s)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	raw, err := enc.DecodeString(s)
	if err != nil {
		return Credentials{}, fmt.Errorf("%w: not base64", ErrInvalid)
	}
	var c Credentials
	if err := json.Unmarshal(raw, &c); err != nil {
		// The error text may quote the input: keep it out.
		return Credentials{}, fmt.Errorf("%w: not a JSON credentials object", ErrInvalid)
	}
	if c.AccessKeyID == "" || c.SecretKey == "" {
		return Credentials{}, ErrIncomplete
	}
	return c, nil
}
