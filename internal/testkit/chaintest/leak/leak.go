// Package leak checks tests for leaked goroutines, ignoring kcp-go's
// process-wide ones: its timer scheduler and packet post-processing
// workers start with the first KCP connection and never stop. It stands
// apart from chaintest, which starts the roles, so that the roles' own
// tests can use it too.
package leak

import (
	"testing"

	"go.uber.org/goleak"
)

// ignore lists kcp-go's background goroutines. They are matched anywhere
// in the stack: a worker parked in a select or channel receive has a
// runtime function on top.
var ignore = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/xtaci/kcp-go/v5.(*TimedSched).sched"),
	goleak.IgnoreAnyFunction("github.com/xtaci/kcp-go/v5.(*TimedSched).run"),
	goleak.IgnoreAnyFunction("github.com/xtaci/kcp-go/v5.postProcessWorker"),
}

// VerifyTestMain runs the package's tests, then fails if goroutines other
// than kcp-go's are left. Call it from TestMain.
func VerifyTestMain(m *testing.M) { goleak.VerifyTestMain(m, ignore...) }

// VerifyNone fails tb if goroutines other than kcp-go's are running.
func VerifyNone(tb testing.TB) {
	tb.Helper()
	goleak.VerifyNone(tb, ignore...)
}
