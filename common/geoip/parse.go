package geoip

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
)

// Limits on input files. Debian's files (2026) are 9.5 MB with 386k ranges
// (IPv4) and 16 MB with 277k ranges (IPv6), lines at most 81 bytes.
const (
	maxFileSize = 64 << 20
	maxRanges   = 4 << 20
	maxLineLen  = 1024     // bytes, without the line's CR LF
	readBufSize = 64 << 10 // more than maxLineLen
)

// Load reads tor's IPv4 and IPv6 geoip files. Either path may be "" to skip
// that family, not both. Errors name the file and, for a bad line, the line
// (as a *LineError).
func Load(v4Path, v6Path string) (*Table, error) {
	if v4Path == "" && v6Path == "" {
		return nil, ErrNoFile
	}
	p := newParser()
	for _, f := range []struct {
		path string
		v6   bool
	}{{v4Path, false}, {v6Path, true}} {
		if f.path == "" {
			continue
		}
		if err := p.parseFile(f.path, f.v6); err != nil {
			return nil, err
		}
	}
	return p.table(), nil
}

func (p *parser) parseFile(path string, v6 bool) error {
	file, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open geoip file: %w", err)
	}
	defer file.Close()
	return p.parse(file, path, v6)
}

// rawRange is one line of a file, as parsed.
type rawRange struct {
	lo, hi  uint128
	country uint16 // index into parser.names; unknownIdx for "??"
	line    int32
}

// parser accumulates the families of one Table.
type parser struct {
	names  []string
	byCode [36 * 36]uint16 // country index by code; 0: not yet seen
	v4, v6 []rawRange      // sorted, validated ranges of each family
	n4, n6 int             // ranges with a known country

	maxFileSize int64 // limits, fields so that tests can lower them
	maxRanges   int
}

func newParser() *parser {
	return &parser{
		names:       []string{""},
		maxFileSize: maxFileSize,
		maxRanges:   maxRanges,
	}
}

// sizeCap fails reads once more than left bytes have been read.
type sizeCap struct {
	r        io.Reader
	left     int64
	exceeded bool
}

func (c *sizeCap) Read(b []byte) (int, error) {
	if int64(len(b)) > c.left+1 {
		b = b[:c.left+1]
	}
	n, err := c.r.Read(b)
	c.left -= int64(n)
	if c.left < 0 {
		c.exceeded = true
		return 0, ErrTooLarge
	}
	return n, err
}

// parse reads one file of one family into p.
func (p *parser) parse(r io.Reader, name string, v6 bool) error {
	capped := &sizeCap{r: r, left: p.maxFileSize}
	br := bufio.NewReaderSize(capped, readBufSize)
	tooLarge := func() error { return fmt.Errorf("%s: %w (limit %d bytes)", name, ErrTooLarge, p.maxFileSize) }
	var ranges []rawRange
	for line := 1; ; line++ {
		// ReadSlice returns a view into br's buffer, valid until the next
		// read: at most readBufSize bytes, and bufio.ErrBufferFull beyond.
		raw, err := br.ReadSlice('\n')
		if capped.exceeded {
			return tooLarge()
		}
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if len(raw) == 0 && err == io.EOF {
			break
		}
		content := bytes.TrimSuffix(bytes.TrimSuffix(raw, []byte{'\n'}), []byte{'\r'})
		if len(content) > maxLineLen {
			return &LineError{File: name, Line: line, Err: fmt.Errorf("%w (limit %d bytes)", ErrLineTooLong, maxLineLen)}
		}
		if text := trimSpace(content); len(text) > 0 && text[0] != '#' {
			rr, err := p.parseLine(text, v6)
			if err != nil {
				return &LineError{File: name, Line: line, Err: err}
			}
			if len(ranges) == p.maxRanges {
				return fmt.Errorf("%s: %w (more than %d ranges)", name, ErrTooLarge, p.maxRanges)
			}
			if len(ranges) == cap(ranges) {
				// Double: append's gentler growth for large slices
				// allocates about five times the final size in total.
				ranges = slices.Grow(ranges, max(len(ranges), 1024))
			}
			rr.line = int32(line)
			ranges = append(ranges, rr)
		}
		if err == io.EOF {
			break
		}
	}
	if len(ranges) == 0 {
		return fmt.Errorf("%s: %w", name, ErrEmpty)
	}
	// Files from geoip-db-tool are sorted; sort others (stably, so that
	// overlap errors name lines in file order).
	if !slices.IsSortedFunc(ranges, compareLow) {
		slices.SortStableFunc(ranges, compareLow)
	}
	// In sorted order with lo <= hi per range, checking neighbours suffices.
	known := 0
	for i, rr := range ranges {
		if i > 0 && !ranges[i-1].hi.less(rr.lo) {
			a, b := ranges[i-1].line, rr.line
			if a > b {
				a, b = b, a
			}
			return &LineError{File: name, Line: int(b), Err: fmt.Errorf("%w: range overlaps line %d", ErrOverlap, a)}
		}
		if rr.country != unknownIdx {
			known++
		}
	}
	if v6 {
		p.v6, p.n6 = ranges, known
	} else {
		p.v4, p.n4 = ranges, known
	}
	return nil
}

func compareLow(a, b rawRange) int {
	if c := cmp.Compare(a.lo.hi, b.lo.hi); c != 0 {
		return c
	}
	return cmp.Compare(a.lo.lo, b.lo.lo)
}

// trimSpace trims spaces, tabs and CRs at both ends.
func trimSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// parseLine parses "LOW,HIGH,CC" (after trimming) of the given family.
func (p *parser) parseLine(text []byte, v6 bool) (rawRange, error) {
	var rr rawRange
	lowText, rest, ok1 := bytes.Cut(text, []byte{','})
	highText, ccText, ok2 := bytes.Cut(rest, []byte{','})
	if !ok1 || !ok2 || bytes.IndexByte(ccText, ',') >= 0 {
		return rr, fmt.Errorf("%w: want LOW,HIGH,CC, got %q", ErrSyntax, text)
	}
	lowText, highText, ccText = trimSpace(lowText), trimSpace(highText), trimSpace(ccText)
	parse := parseV4
	if v6 {
		parse = parseV6
	}
	var err error
	if rr.lo, err = parse(lowText); err != nil {
		return rr, err
	}
	if rr.hi, err = parse(highText); err != nil {
		return rr, err
	}
	if rr.hi.less(rr.lo) {
		return rr, fmt.Errorf("%w: %s > %s", ErrRange, lowText, highText)
	}
	if rr.country, err = p.country(ccText); err != nil {
		return rr, err
	}
	return rr, nil
}

// parseV4 parses a decimal uint32.
func parseV4(b []byte) (uint128, error) {
	if len(b) == 0 || len(b) > 10 {
		return uint128{}, fmt.Errorf("%w: %q is not a decimal IPv4 address", ErrBadAddress, b)
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return uint128{}, fmt.Errorf("%w: %q is not a decimal IPv4 address", ErrBadAddress, b)
		}
		v = v*10 + uint64(c-'0')
	}
	if v > 0xffffffff {
		return uint128{}, fmt.Errorf("%w: %q is above 4294967295", ErrBadAddress, b)
	}
	return uint128{lo: v}, nil
}

// parseV6 parses a textual IPv6 address without zone.
func parseV6(b []byte) (uint128, error) {
	addr, err := netip.ParseAddr(string(b))
	if err != nil || !addr.Is6() || addr.Zone() != "" {
		return uint128{}, fmt.Errorf("%w: %q is not an IPv6 address", ErrBadAddress, b)
	}
	return uint128From(addr), nil
}

// country validates and interns a country code.
func (p *parser) country(b []byte) (uint16, error) {
	if len(b) != 2 {
		return 0, fmt.Errorf("%w: %q is not two characters", ErrBadCountry, b)
	}
	if b[0] == '?' && b[1] == '?' {
		return unknownIdx, nil
	}
	d0, ok0 := codeDigit(b[0])
	d1, ok1 := codeDigit(b[1])
	if !ok0 || !ok1 {
		return 0, fmt.Errorf("%w: %q is not two characters from [A-Z0-9]", ErrBadCountry, b)
	}
	key := d0*36 + d1
	if idx := p.byCode[key]; idx != 0 {
		return idx, nil
	}
	// At most 36*36 codes, so the index fits in uint16.
	idx := uint16(len(p.names))
	p.names = append(p.names, string(b))
	p.byCode[key] = idx
	return idx, nil
}

// codeDigit maps [0-9A-Z] to 0..35.
func codeDigit(c byte) (int, bool) {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0'), true
	case 'A' <= c && c <= 'Z':
		return int(c-'A') + 10, true
	}
	return 0, false
}

// table builds the compact Table from the parsed families.
func (p *parser) table() *Table {
	t := &Table{names: slices.Clip(p.names), n4: p.n4, n6: p.n6}
	if p.v4 != nil {
		starts, country := compact(p.v4, uint128{lo: 0xffffffff})
		t.v4Starts = make([]uint32, len(starts))
		for i, s := range starts {
			t.v4Starts[i] = uint32(s.lo)
		}
		t.v4Country = country
	}
	if p.v6 != nil {
		t.v6Starts, t.v6Country = compact(p.v6, uint128{^uint64(0), ^uint64(0)})
	}
	return t
}

// compact turns sorted, non-overlapping ranges into run boundaries covering
// [0, top]: gaps become unknown runs, adjacent runs of one country merge.
// The first pass counts the runs so that the result is allocated once, at
// its exact size.
func compact(ranges []rawRange, top uint128) ([]uint128, []uint16) {
	n := runs(ranges, top, nil, nil)
	starts, country := make([]uint128, n), make([]uint16, n)
	runs(ranges, top, starts, country)
	return starts, country
}

// runs writes the runs of ranges into starts and country, if not nil, and
// returns their number.
func runs(ranges []rawRange, top uint128, starts []uint128, country []uint16) int {
	// The first run is [0, ...] of unknown country until a range says
	// otherwise.
	n := 1
	lastStart, lastCountry := uint128{}, uint16(unknownIdx)
	if starts != nil {
		starts[0], country[0] = lastStart, lastCountry
	}
	push := func(start uint128, c uint16) {
		switch {
		case lastCountry == c:
			return // continues the current run
		case lastStart == start:
			// Only the initial unknown run at 0 can be replaced (ranges do
			// not overlap), and no run precedes it.
			lastCountry = c
			if country != nil {
				country[n-1] = c
			}
		default:
			if starts != nil {
				starts[n], country[n] = start, c
			}
			n++
			lastStart, lastCountry = start, c
		}
	}
	next := uint128{} // first address after the previous range
	for _, rr := range ranges {
		if next.less(rr.lo) {
			push(next, unknownIdx)
		}
		push(rr.lo, rr.country)
		next = rr.hi.next()
	}
	if ranges[len(ranges)-1].hi != top {
		push(next, unknownIdx)
	}
	return n
}
