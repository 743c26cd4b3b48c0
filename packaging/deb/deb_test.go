package deb

import "testing"

func TestVersion(t *testing.T) {
	for in, want := range map[string]string{"0.1.0": "0.1.0", "0.1.0-rc.1": "0.1.0~rc.1", "1.2.3-a-b": "1.2.3~a-b"} {
		if got := Version(in); got != want {
			t.Errorf("Version(%q) = %q, want %q", in, got, want)
		}
	}
}
