package amp

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzArmorDecoder feeds arbitrary pages to the decoder: it must not panic,
// must report armor problems as ErrArmor or ErrArmorVersion, and must give
// back what the encoder armored.
func FuzzArmorDecoder(f *testing.F) {
	for _, s := range []string{
		"<pre>0aGVsbG8gd29ybGQK</pre>",
		"<pre>0QQ==</pre><pre>Qg==</pre>",
		"blah <pre>0aGVsb<p>G8gd29</p>ybGQK</pre>",
		"<pre>0aGVsb<pre>G8gd29</pre>ybGQK</pre>",
		"<!-- <pre>0aGVsbG8gd29ybGQK</pre> --><pre>0</pre>",
		"<pre>0aGVsbG8gd29ybGQK",
		"</pre>",
		string(Armor([]byte(`{"answer":"x"}`))),
		string(Armor(bytes.Repeat([]byte{0xa5}, 25000))),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, page []byte) {
		dec, err := NewArmorDecoder(bytes.NewReader(page))
		if err == nil {
			_, err = io.ReadAll(dec)
		}
		if err != nil && !errors.Is(err, ErrArmor) && !errors.Is(err, ErrArmorVersion) {
			t.Fatalf("unclassified error %v", err)
		}
		// Whatever the input, armoring it round-trips.
		back, err := decodeArmor(string(Armor(page)))
		if err != nil || !bytes.Equal(back, page) {
			t.Fatalf("round trip: %d bytes, %v", len(back), err)
		}
	})
}

// FuzzDecodePath checks that DecodePath never panics, classifies its errors
// and inverts EncodePath.
func FuzzDecodePath(f *testing.F) {
	for _, s := range []string{"", "0", "0/", "0/YWJj", "0///YWJj", "0foobar/YWJj", "/0/YWJj", "0/YWJj=", "0/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		_, err := DecodePath(path)
		if err != nil && !errors.Is(err, ErrMissingFormat) && !errors.Is(err, ErrUnknownFormat) &&
			!errors.Is(err, ErrMissingData) && !errors.Is(err, ErrPathData) {
			t.Fatalf("unclassified error %v", err)
		}
		back, err := DecodePath(EncodePath([]byte(path)))
		if err != nil || string(back) != path {
			t.Fatalf("round trip: (%q, %v)", back, err)
		}
	})
}
