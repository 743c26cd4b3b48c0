package geoip

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// copyFile copies a fixture to dst, replacing dst atomically.
func copyFile(tb testing.TB, src, dst string) {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	writeFile(tb, dst, string(b))
}

func writeFile(tb testing.TB, dst, text string) {
	tb.Helper()
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		tb.Fatal(err)
	}
}

func tempDB(tb testing.TB) (db *DB, v4, v6 string) {
	tb.Helper()
	dir := tb.TempDir()
	v4, v6 = filepath.Join(dir, "geoip"), filepath.Join(dir, "geoip6")
	copyFile(tb, "testdata/geoip", v4)
	copyFile(tb, "testdata/geoip6", v6)
	db, err := Open(v4, v6)
	if err != nil {
		tb.Fatal(err)
	}
	return db, v4, v6
}

var (
	googleDNS4 = netip.MustParseAddr("8.8.8.8")
	googleDNS6 = netip.MustParseAddr("2001:4860:4860::8888")
)

func TestDBLookup(t *testing.T) {
	db, _, _ := tempDB(t)
	tests := []struct {
		addr netip.Addr
		want string
	}{
		{googleDNS4, "US"},
		{googleDNS6, "US"},
		{netip.MustParseAddr("::ffff:8.8.8.8"), "US"},
		{netip.MustParseAddr("1.0.8.0"), Unknown},
		{netip.MustParseAddr("1.0.10.1"), Unknown}, // "??" range
		{netip.MustParseAddr("2001:db8:1::1"), Unknown},
		{netip.Addr{}, Unknown},
	}
	for _, tt := range tests {
		if got := db.Lookup(tt.addr); got != tt.want {
			t.Errorf("Lookup(%v) = %q; want %q", tt.addr, got, tt.want)
		}
	}
	var nilDB *DB
	if got := nilDB.Lookup(googleDNS4); got != Unknown {
		t.Errorf("nil DB Lookup = %q; want %q", got, Unknown)
	}
	if nilDB.Table() != nil {
		t.Error("nil DB has a table")
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open("", ""); !errors.Is(err, ErrNoFile) {
		t.Errorf(`Open("", "") = %v; want ErrNoFile`, err)
	}
	if _, err := Open("testdata/geoip", "testdata/bad/badcc_geoip6"); !errors.Is(err, ErrBadCountry) {
		t.Errorf("Open(bad v6) = %v; want ErrBadCountry", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "nope"), ""); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v; want ErrNotExist", err)
	}
}

func TestDBReload(t *testing.T) {
	db, v4, v6 := tempDB(t)
	old := db.Table()

	// A bad file: Reload fails, the old table stays.
	for _, bad := range []struct {
		name, path, text string
		want             error
	}{
		{"bad v4 line", v4, "1,2,US\nnot a range\n", ErrSyntax},
		{"bad v6 country", v6, "::1,::2,usa\n", ErrBadCountry},
		{"empty v4", v4, "", ErrEmpty},
	} {
		t.Run(bad.name, func(t *testing.T) {
			copyFile(t, "testdata/geoip", v4)
			copyFile(t, "testdata/geoip6", v6)
			writeFile(t, bad.path, bad.text)
			if err := db.Reload(); !errors.Is(err, bad.want) {
				t.Fatalf("Reload = %v; want %v", err, bad.want)
			}
			if db.Table() != old {
				t.Fatal("failed Reload replaced the table")
			}
			if got := db.Lookup(googleDNS4); got != "US" {
				t.Fatalf("after failed Reload: Lookup = %q; want US", got)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		copyFile(t, "testdata/geoip", v4)
		if err := os.Remove(v6); err != nil {
			t.Fatal(err)
		}
		if err := db.Reload(); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("Reload = %v; want ErrNotExist", err)
		}
		if db.Table() != old {
			t.Fatal("failed Reload replaced the table")
		}
	})

	// A good new file: Reload swaps it in.
	copyFile(t, "testdata/geoip6", v6)
	writeFile(t, v4, "134744064,134744319,DE\n")
	if err := db.Reload(); err != nil {
		t.Fatalf("Reload = %v", err)
	}
	if got := db.Lookup(googleDNS4); got != "DE" {
		t.Errorf("after Reload: Lookup(8.8.8.8) = %q; want DE", got)
	}
	if got := db.Lookup(netip.MustParseAddr("1.0.0.1")); got != Unknown {
		t.Errorf("after Reload: Lookup(1.0.0.1) = %q; want %q", got, Unknown)
	}
	if got := db.Lookup(googleDNS6); got != "US" {
		t.Errorf("after Reload: Lookup(v6) = %q; want US", got)
	}
}

// TestDBConcurrentReload runs lookups while the files alternate between two
// good versions and a bad one and the DB reloads; run it with -race. Every
// lookup must see one of the good tables, never a mix or nothing.
func TestDBConcurrentReload(t *testing.T) {
	db, v4, _ := tempDB(t)
	versions := []struct {
		text string
		ok   bool
	}{
		{"134744064,134744319,DE\n167772161,167772161,DE\n", true},
		{"134744064,134744319,FR\n167772161,167772161,FR\n", true},
		{"134744064,134744319,FR\n167772161,bad,FR\n", false},
	}
	// The original fixture says US for 8.8.8.8 and EU for 10.0.0.1.
	allowed := map[[2]string]bool{{"US", "EU"}: true, {"DE", "DE"}: true, {"FR", "FR"}: true}
	a, b := googleDNS4, netip.MustParseAddr("10.0.0.1")

	done := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-done:
					if n == 0 {
						errs <- errors.New("reader never ran")
					}
					return
				default:
				}
				tab := db.Table()
				ca, _ := tab.Lookup(a)
				cb, _ := tab.Lookup(b)
				if !allowed[[2]string{ca, cb}] {
					errs <- errors.New("inconsistent table: " + ca + " " + cb)
					return
				}
				if db.Lookup(a) == Unknown {
					errs <- errors.New("DB.Lookup returned unknown during reload")
					return
				}
			}
		})
	}
	for i := range 60 {
		v := versions[i%len(versions)]
		writeFile(t, v4, v.text)
		err := db.Reload()
		if (err == nil) != v.ok {
			t.Errorf("reload %d: Reload = %v; want ok=%v", i, err, v.ok)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDBConcurrentReloads checks that Reload calls from several goroutines
// are safe and leave a good table.
func TestDBConcurrentReloads(t *testing.T) {
	db, _, _ := tempDB(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				if err := db.Reload(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got := db.Lookup(googleDNS4); got != "US" {
		t.Errorf("Lookup = %q; want US", got)
	}
}
