package turbotunnel

import "testing"

func TestBufferPool(t *testing.T) {
	const size = 100
	bp := newBufferPool(size)
	if b := bp.get(); len(b) != size || cap(b) != size {
		t.Fatalf("fresh buffer len %d cap %d", len(b), cap(b))
	}
	tests := []struct {
		name   string
		b      []byte
		reused bool
	}{
		{"exact", make([]byte, size), true},
		{"short len, cap size", make([]byte, 3, size), true},
		{"cap 2*size", make([]byte, 0, 2*size), true},
		{"cap below size", make([]byte, size-1), false},
		{"cap above 2*size", make([]byte, 2*size+1), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// sync.Pool may drop items (always possible, frequent
			// under -race), so a reuse must show up within a few
			// tries and a rejected slice must never come back.
			reused := false
			for range 20 {
				if cap(tt.b) > 0 {
					tt.b = tt.b[:1]
					tt.b[0] = 0
				}
				bp.put(tt.b)
				got := bp.get()
				if len(got) != size {
					t.Fatalf("get returned len %d", len(got))
				}
				if cap(tt.b) > 0 && &got[0] == &tt.b[:1][0] {
					reused = true
					break
				}
			}
			if reused != tt.reused {
				t.Fatalf("reused = %v, want %v", reused, tt.reused)
			}
		})
	}
}
