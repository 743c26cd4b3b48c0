package geoip

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"
)

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		file string
		v6   bool
		want error
		line int // 0: not a *LineError
	}{
		{"overlap_geoip", false, ErrOverlap, 3},
		{"unsorted_overlap_geoip", false, ErrOverlap, 3},
		{"badcc_geoip6", true, ErrBadCountry, 3},
		{"reversed_geoip", false, ErrRange, 2},
		{"v6_in_v4_geoip", false, ErrBadAddress, 1},
		{"v4_in_v6_geoip6", true, ErrBadAddress, 1},
		{"quoted_geoip", false, ErrSyntax, 1},
		{"toobig_geoip", false, ErrBadAddress, 2},
		{"empty_geoip", false, ErrEmpty, 0},
		{"missing_geoip", false, fs.ErrNotExist, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := "testdata/bad/" + tt.file
			v4, v6 := path, "testdata/geoip6"
			if tt.v6 {
				v4, v6 = "testdata/geoip", path
			}
			tab, err := Load(v4, v6)
			if err == nil {
				t.Fatalf("Load(%s) = %v, nil; want error", path, tab)
			}
			if tab != nil {
				t.Errorf("Load returned a table with error %v", err)
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Load(%s) = %v; want %v", path, err, tt.want)
			}
			// Every error names the file.
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			var le *LineError
			switch {
			case tt.line == 0 && errors.As(err, &le):
				t.Errorf("error %v is a *LineError", err)
			case tt.line != 0 && !errors.As(err, &le):
				t.Errorf("error %v is not a *LineError", err)
			case tt.line != 0 && (le.Line != tt.line || le.File != path):
				t.Errorf("error at %s:%d; want %s:%d", le.File, le.Line, path, tt.line)
			}
			t.Log(err)
		})
	}
}

func TestParseLineErrors(t *testing.T) {
	tests := []struct {
		name string
		v6   bool
		text string
		want error
	}{
		{"two fields", false, "1,2", ErrSyntax},
		{"four fields", false, "1,2,US,x", ErrSyntax},
		{"no commas", false, "12US", ErrSyntax},
		{"empty low", false, ",2,US", ErrBadAddress},
		{"empty cc", false, "1,2,", ErrBadCountry},
		{"negative", false, "-1,2,US", ErrBadAddress},
		{"plus sign", false, "+1,2,US", ErrBadAddress},
		{"hex", false, "0x10,0x20,US", ErrBadAddress},
		{"dotted quad in v4 file", false, "1.2.3.4,1.2.3.5,US", ErrBadAddress},
		{"above uint32", false, "1,4294967296,US", ErrBadAddress},
		{"eleven digits", false, "1,00000000001,US", ErrBadAddress},
		{"inner space", false, "1 2,3,US", ErrBadAddress},
		{"low above high", false, "5,4,US", ErrRange},
		{"lowercase cc", false, "1,2,us", ErrBadCountry},
		{"mixed case cc", false, "1,2,Us", ErrBadCountry},
		{"three-letter cc", false, "1,2,USA", ErrBadCountry},
		{"one-letter cc", false, "1,2,U", ErrBadCountry},
		{"punctuation cc", false, "1,2,U-", ErrBadCountry},
		{"half unknown cc", false, "1,2,U?", ErrBadCountry},
		{"non-ASCII cc", false, "1,2,\xc3\x9c", ErrBadCountry},
		{"NUL in cc", false, "1,2,U\x00", ErrBadCountry},
		{"v6 bad address", true, "2001:db8::g,2001:db8::ff,US", ErrBadAddress},
		{"v6 zone", true, "fe80::1%eth0,fe80::2,US", ErrBadAddress},
		{"v6 dotted quad", true, "1.2.3.4,1.2.3.5,US", ErrBadAddress},
		{"v6 integer", true, "1,2,US", ErrBadAddress},
		{"v6 low above high", true, "2001:db8::2,2001:db8::1,US", ErrRange},
		{"v6 prefix", true, "2001:db8::/32,2001:db9::,US", ErrBadAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The bad line is line 3, after a comment and a good line.
			good := "1,1,US"
			if tt.v6 {
				good = "::1,::1,US"
			}
			r := strings.NewReader("# comment\n" + good + "\n" + tt.text + "\n")
			var v4, v6 io.Reader = r, nil
			name := "ipv4"
			if tt.v6 {
				v4, v6, name = nil, r, "ipv6"
			}
			_, err := parseReaders(v4, v6)
			if !errors.Is(err, tt.want) {
				t.Fatalf("parseReaders(%q) = %v; want %v", tt.text, err, tt.want)
			}
			var le *LineError
			if !errors.As(err, &le) || le.Line != 3 || le.File != name {
				t.Fatalf("parseReaders(%q) = %v; want a *LineError at %s:3", tt.text, err, name)
			}
		})
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name   string
		v4, v6 string
	}{
		{"digits in cc", "1,2,A1\n3,4,A2\n", ""},
		{"leading zeros", "0001,0002,US\n", ""},
		{"no final newline", "1,2,US", ""},
		{"CRLF", "# c\r\n1,2,US\r\n\r\n", ""},
		{"only unknown ranges", "1,2,??\n", ""},
		{"v6 uppercase hex", "", "2001:DB8::,2001:DB8::FF,DE\n"},
		{"v6 mapped range", "", "::ffff:1.2.3.4,::ffff:1.2.3.5,DE\n"},
		{"whole v4 space", "0,4294967295,US\n", ""},
		{"whole v6 space", "", "::,ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,US\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v4, v6 io.Reader
			if tt.v4 != "" {
				v4 = strings.NewReader(tt.v4)
			}
			if tt.v6 != "" {
				v6 = strings.NewReader(tt.v6)
			}
			p, tab, err := parseRaw(v4, v6)
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstRanges(t, p, tab)
		})
	}
}

func TestParseNoInput(t *testing.T) {
	if _, err := parseReaders(nil, nil); !errors.Is(err, ErrNoFile) {
		t.Errorf("parseReaders(nil, nil) = %v; want ErrNoFile", err)
	}
	if _, err := Load("", ""); !errors.Is(err, ErrNoFile) {
		t.Errorf(`Load("", "") = %v; want ErrNoFile`, err)
	}
	for _, text := range []string{"", "\n\n", "# only a comment\n"} {
		if _, err := parseReaders(strings.NewReader(text), nil); !errors.Is(err, ErrEmpty) {
			t.Errorf("parseReaders(%q) = %v; want ErrEmpty", text, err)
		}
	}
}

// endless is an endless reader of one repeated line.
type endless struct {
	line string
	off  int
}

func (e *endless) Read(b []byte) (int, error) {
	n := 0
	for n < len(b) {
		c := copy(b[n:], e.line[e.off:])
		n += c
		e.off = (e.off + c) % len(e.line)
	}
	return n, nil
}

func TestParseLimits(t *testing.T) {
	t.Run("line too long", func(t *testing.T) {
		text := "1,2,US\n#" + strings.Repeat("x", maxLineLen) + "\n3,4,US\n"
		_, err := parseReaders(strings.NewReader(text), nil)
		var le *LineError
		if !errors.Is(err, ErrLineTooLong) || !errors.As(err, &le) || le.Line != 2 {
			t.Fatalf("Parse = %v; want ErrLineTooLong at line 2", err)
		}
	})
	t.Run("longest line", func(t *testing.T) {
		text := "1,2,US\n#" + strings.Repeat("x", maxLineLen-1) + "\n3,4,US\n"
		if _, err := parseReaders(strings.NewReader(text), nil); err != nil {
			t.Fatalf("Parse = %v; want nil", err)
		}
	})
	t.Run("default file size", func(t *testing.T) {
		// An endless file of comments hits the 64 MiB limit.
		_, err := parseReaders(&endless{line: "# " + strings.Repeat("x", 1000) + "\n"}, nil)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("parseReaders(endless) = %v; want ErrTooLarge", err)
		}
	})
	t.Run("file size", func(t *testing.T) {
		for _, tt := range []struct {
			size int64
			want error
		}{
			{10, ErrTooLarge}, // inside the second line
			{13, ErrTooLarge}, // second line complete without its newline
			{14, nil},         // exactly the file
		} {
			p := newParser()
			p.maxFileSize = tt.size
			err := p.parse(strings.NewReader("1,2,US\n3,4,DE\n"), "ipv4", false)
			if !errors.Is(err, tt.want) {
				t.Errorf("limit %d: parse = %v; want %v", tt.size, err, tt.want)
			}
		}
	})
	t.Run("range count", func(t *testing.T) {
		p := newParser()
		p.maxRanges = 2
		err := p.parse(strings.NewReader("1,2,US\n3,4,DE\n5,6,FR\n"), "ipv4", false)
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("parse = %v; want ErrTooLarge", err)
		}
		p = newParser()
		p.maxRanges = 2
		if err := p.parse(strings.NewReader("1,2,US\n3,4,DE\n# 5,6,FR\n"), "ipv4", false); err != nil {
			t.Errorf("parse = %v; want nil", err)
		}
	})
}

func TestOverlapErrors(t *testing.T) {
	tests := []struct {
		name string
		text string
		line int
	}{
		{"duplicate", "1,5,US\n1,5,US\n", 2},
		{"shared end", "1,5,US\n5,9,DE\n", 2},
		{"contained", "1,9,US\n3,4,DE\n", 2},
		{"contained unsorted", "3,4,DE\n1,9,US\n", 2},
		{"unknown overlaps known", "1,9,US\n3,20,??\n", 2},
		{"single address", "1,9,US\n# x\n9,9,DE\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseReaders(strings.NewReader(tt.text), nil)
			var le *LineError
			if !errors.Is(err, ErrOverlap) || !errors.As(err, &le) || le.Line != tt.line {
				t.Fatalf("parseReaders(%q) = %v; want ErrOverlap at line %d", tt.text, err, tt.line)
			}
		})
	}
}

// parseReaders is Load for readers: v4 in tor's IPv4 format, v6 in tor's IPv6
// format. Either may be nil to skip that family, not both. Errors name the
// input "ipv4" or "ipv6".
func parseReaders(v4, v6 io.Reader) (*Table, error) {
	if v4 == nil && v6 == nil {
		return nil, ErrNoFile
	}
	p := newParser()
	if v4 != nil {
		if err := p.parse(v4, "ipv4", false); err != nil {
			return nil, err
		}
	}
	if v6 != nil {
		if err := p.parse(v6, "ipv6", true); err != nil {
			return nil, err
		}
	}
	return p.table(), nil
}
