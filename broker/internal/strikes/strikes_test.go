package strikes

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// clock is a fake clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func newTable(t testing.TB, cfg Config) *Table {
	t.Helper()
	tab, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestKey(t *testing.T) {
	tab := newTable(t, Config{})
	key := func(s string) uint64 { return tab.Key(netip.MustParseAddr(s)) }
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"same IPv4", "192.0.2.1", "192.0.2.1", true},
		{"other IPv4 in the /24", "192.0.2.1", "192.0.2.2", false},
		{"IPv4-mapped IPv6 is IPv4", "192.0.2.1", "::ffff:192.0.2.1", true},
		{"same IPv6 /64", "2001:db8:1:2::1", "2001:db8:1:2:aaaa:bbbb:cccc:dddd", true},
		{"other IPv6 /64", "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"zone dropped", "fe80::1%eth0", "fe80::2", true},
		{"IPv4 is not its IPv6 /64", "0.0.0.1", "::1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := key(tt.a), key(tt.b)
			if a == 0 || b == 0 {
				t.Fatalf("zero key: %x %x", a, b)
			}
			if (a == b) != tt.same {
				t.Errorf("Key(%s) = %x, Key(%s) = %x, same = %v, want %v", tt.a, a, tt.b, b, a == b, tt.same)
			}
		})
	}
	t.Run("invalid", func(t *testing.T) {
		inv := tab.Key(netip.Addr{})
		if inv == 0 || inv != tab.Key(netip.Addr{}) {
			t.Errorf("Key(invalid) = %x, not a fixed non-zero key", inv)
		}
		if inv == key("::") || inv == key("::ffff:0.0.0.0") {
			t.Error("the invalid address shares a key with ::/64 or 0.0.0.0")
		}
	})
	t.Run("seeded per table", func(t *testing.T) {
		other := newTable(t, Config{})
		if other.Key(netip.MustParseAddr("192.0.2.1")) == key("192.0.2.1") {
			t.Error("two tables give an address the same key")
		}
	})
}

// TestLifetime checks when a strike stops counting: strikes are recorded at
// offsets from the table's creation and counted at later ones (Period 1 h,
// generations of 30 min starting at 0).
func TestLifetime(t *testing.T) {
	const m = time.Minute
	tests := []struct {
		name   string
		adds   []time.Duration
		checks map[time.Duration]int
	}{
		{"at start", []time.Duration{0}, map[time.Duration]int{0: 1, 29 * m: 1, 30 * m: 1, 59*m + 59*time.Second: 1, 60 * m: 0, 5 * 60 * m: 0}},
		{"late in a generation lasts just over half", []time.Duration{29 * m}, map[time.Duration]int{29 * m: 1, 59 * m: 1, 60 * m: 0}},
		{"at a boundary lasts the whole period", []time.Duration{30 * m}, map[time.Duration]int{30 * m: 1, 89 * m: 1, 90 * m: 0}},
		{"both generations add up", []time.Duration{10 * m, 20 * m, 40 * m}, map[time.Duration]int{20 * m: 2, 40 * m: 3, 60 * m: 1, 90 * m: 0}},
		{"idle for long forgets all", []time.Duration{0, 1 * m}, map[time.Duration]int{3 * 60 * m: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Each check runs on a fresh table replaying the adds, so that
			// the order of map iteration does not matter.
			for at, want := range tt.checks {
				c := newClock()
				t0 := c.Now()
				tab := newTable(t, Config{Now: c.Now})
				k := tab.Key(netip.MustParseAddr("198.51.100.7"))
				for _, a := range tt.adds {
					if a > at {
						break
					}
					c.set(t0.Add(a))
					tab.Add(k)
				}
				c.set(t0.Add(at))
				if got := tab.Count(k); got != want {
					t.Errorf("count at %v = %d, want %d", at, got, want)
				}
			}
		})
	}
}

func TestAddReturnsCount(t *testing.T) {
	c := newClock()
	tab := newTable(t, Config{Now: c.Now, Period: 2 * time.Second})
	k := tab.Key(netip.MustParseAddr("198.51.100.7"))
	for i := 1; i <= 3; i++ {
		if got := tab.Add(k); got != i {
			t.Errorf("Add #%d = %d", i, got)
		}
	}
	c.set(c.Now().Add(time.Second)) // into the next generation
	if got := tab.Add(k); got != 4 {
		t.Errorf("Add after a rotation = %d, want 4 (3 previous + 1)", got)
	}
	if got := tab.Len(); got != 2 {
		t.Errorf("Len = %d, want 2 (the key in both generations)", got)
	}
}

func TestZeroKey(t *testing.T) {
	tab := newTable(t, Config{})
	if got := tab.Add(0); got != 0 {
		t.Errorf("Add(0) = %d", got)
	}
	if got := tab.Count(0); got != 0 {
		t.Errorf("Count(0) = %d", got)
	}
	if got := tab.Len(); got != 0 {
		t.Errorf("Len after Add(0) = %d", got)
	}
}

func TestClockBackwards(t *testing.T) {
	c := newClock()
	t0 := c.Now()
	tab := newTable(t, Config{Now: c.Now})
	k := tab.Key(netip.MustParseAddr("198.51.100.7"))
	tab.Add(k)
	c.set(t0.Add(-time.Hour))
	if got := tab.Count(k); got != 1 {
		t.Errorf("count after the clock went back = %d, want 1", got)
	}
	c.set(t0.Add(time.Hour))
	if got := tab.Count(k); got != 0 {
		t.Errorf("count an hour after the strike = %d, want 0", got)
	}
}

func TestMaxEntries(t *testing.T) {
	c := newClock()
	t0 := c.Now()
	tab := newTable(t, Config{Now: c.Now, MaxEntries: 2})
	keys := make([]uint64, 4)
	for i := range keys {
		keys[i] = tab.Key(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}))
	}
	tab.Add(keys[0])
	tab.Add(keys[1])
	if got := tab.Add(keys[2]); got != 0 {
		t.Errorf("Add of a third key into a full generation = %d, want 0", got)
	}
	if got := tab.Add(keys[0]); got != 2 {
		t.Errorf("Add of a known key into a full generation = %d, want 2", got)
	}
	if got := tab.Dropped(); got != 1 {
		t.Errorf("Dropped = %d, want 1", got)
	}
	// The next generation has room again; the previous one still counts.
	c.set(t0.Add(DefaultPeriod / 2))
	if got := tab.Add(keys[2]); got != 1 {
		t.Errorf("Add in the next generation = %d, want 1", got)
	}
	tab.Add(keys[3])
	if got := tab.Len(); got != 4 {
		t.Errorf("Len = %d, want 4 (2 per generation)", got)
	}
	if got := tab.Count(keys[0]); got != 2 {
		t.Errorf("Count of a previous-generation key = %d, want 2", got)
	}
}

func TestConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"negative period":  {Period: -time.Second},
		"negative entries": {MaxEntries: -1},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("New = %v, want ErrInvalidConfig", err)
			}
		})
	}
	// A period of 1 ns still works (generations of at least 1 ns).
	c := newClock()
	tab := newTable(t, Config{Period: 1, Now: c.Now})
	k := tab.Key(netip.MustParseAddr("198.51.100.7"))
	tab.Add(k)
	c.set(c.Now().Add(2))
	if got := tab.Count(k); got != 0 {
		t.Errorf("count after the period = %d", got)
	}
}

func TestConcurrent(t *testing.T) {
	tab := newTable(t, Config{})
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			k := tab.Key(netip.AddrFrom4([4]byte{198, 51, 100, byte(w % 2)}))
			for range each {
				tab.Add(k)
				tab.Count(k)
			}
		})
	}
	wg.Wait()
	for i := range 2 {
		k := tab.Key(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}))
		if got := tab.Count(k); got != workers/2*each {
			t.Errorf("count of key %d = %d, want %d", i, got, workers/2*each)
		}
	}
}

// TestPollPathAllocs checks that what a proxy poll calls does not allocate.
func TestPollPathAllocs(t *testing.T) {
	tab := newTable(t, Config{})
	addrs := []netip.Addr{netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("fe80::1%eth0")}
	for _, a := range addrs {
		tab.Add(tab.Key(a))
	}
	for _, a := range addrs {
		t.Run(a.String(), func(t *testing.T) {
			if n := testing.AllocsPerRun(100, func() { tab.Count(tab.Key(a)) }); n != 0 {
				t.Errorf("Key+Count allocate %v times", n)
			}
		})
	}
}

func BenchmarkCount(b *testing.B) {
	tab := newTable(b, Config{})
	addrs := make([]netip.Addr, 1024)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)})
		if i%2 == 0 {
			tab.Add(tab.Key(addrs[i]))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		tab.Count(tab.Key(addrs[i%len(addrs)]))
		i++
	}
}

func BenchmarkAdd(b *testing.B) {
	tab := newTable(b, Config{})
	keys := make([]uint64, 1024)
	for i := range keys {
		keys[i] = tab.Key(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, byte(i >> 8), byte(i)}))
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		tab.Add(keys[i%len(keys)])
		i++
	}
}

func ExampleTable() {
	tab, err := New(Config{})
	if err != nil {
		panic(err)
	}
	proxy := tab.Key(netip.MustParseAddr("2001:db8::1"))
	tab.Add(proxy) // its match went unanswered
	// Another address of the same /64 is the same proxy.
	fmt.Println(tab.Count(tab.Key(netip.MustParseAddr("2001:db8::2"))))
	// Output: 1
}
