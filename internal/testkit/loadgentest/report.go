package loadgentest

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"reflect"
	"testing"
)

// CheckReport checks that a result survives JSON, prints a table and
// draws a well-formed SVG, with lines if wantPlots.
func CheckReport(t *testing.T, res any, writeTable func(io.Writer), writeSVG func(io.Writer) error, wantPlots bool) {
	t.Helper()
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		t.Fatal(err)
	}
	back := reflect.New(reflect.TypeOf(res))
	if err := json.Unmarshal(js.Bytes(), back.Interface()); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	js2, err := json.MarshalIndent(back.Elem().Interface(), "", "  ")
	if err != nil || !bytes.Equal(bytes.TrimSpace(js.Bytes()), js2) {
		t.Fatalf("JSON does not round-trip:\n%s\n%s", js.String(), js2)
	}
	var table bytes.Buffer
	writeTable(&table)
	if table.Len() == 0 {
		t.Fatal("empty table")
	}
	t.Logf("table:%s", table.String())
	var svg bytes.Buffer
	if err := writeSVG(&svg); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&svg)
	polylines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	if (polylines > 0) != wantPlots {
		t.Fatalf("SVG has %d lines, want lines: %v", polylines, wantPlots)
	}
}
