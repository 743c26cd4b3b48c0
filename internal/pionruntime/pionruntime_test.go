package pionruntime

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestApply runs itself in a child process (Apply changes the process's
// runtime) with and without the environment's settings.
func TestApply(t *testing.T) {
	if os.Getenv("PIONRUNTIME_CHILD") == "1" {
		Apply(ClientMaxProcs)
		gc := debug.SetGCPercent(-1)
		os.Stdout.WriteString(strconv.Itoa(gc) + " " + strconv.Itoa(runtime.GOMAXPROCS(0)) + "\n")
		return
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "100 " + strconv.Itoa(ClientMaxProcs)}, // Go's default collector target
		{[]string{"GOGC=400", "GOMAXPROCS=3"}, "400 3"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestApply$")
		cmd.Env = append(os.Environ(), "PIONRUNTIME_CHILD=1", "GOGC=", "GOMAXPROCS=")
		cmd.Env = append(cmd.Env, tc.env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child: %v", err)
		}
		if got := strings.SplitN(string(out), "\n", 2)[0]; got != tc.want {
			t.Errorf("env %v: GOGC and GOMAXPROCS %q, want %q", tc.env, got, tc.want)
		}
	}
}
