// Package browsertest drives a real headless Chromium (Debian's chromium,
// through chromedp) for tests of pages the project serves: it starts a
// browser with a fresh profile and records everything a page should never
// cause (console output, exceptions, error and warning log entries such as
// Content-Security-Policy violations or failed loads, dialogs).
//
// Tests skip when chromium is not installed (fail under CI=true); .ci/run
// installs it.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/flurrypt/flurry/internal/testkit/testenv"
)

// ChromiumPath is Debian's chromium.
const ChromiumPath = "/usr/bin/chromium"

// New starts a headless chromium with a fresh profile (removed when the
// test ends, with every temporary file the browser made) and returns a tab
// context, and a function returning every problem seen so far (console API
// calls, exceptions, error- and warning-level log entries, dialogs). The
// browser stops when the test ends. New skips the test when chromium is
// not installed. flags are added to the browser's command line.
func New(t *testing.T, flags ...chromedp.ExecAllocatorOption) (context.Context, func() []string) {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		testenv.Missing(t, "skipping the browser test: %s is not installed (apt-get install chromium): %v", ChromiumPath, err)
	}
	// Everything the browser writes stays in the test's directory, which
	// the test removes after the browser has exited (its cleanup was
	// registered first, so it runs last): the profile, and TMPDIR, where
	// Chromium makes its singleton directory (org.chromium.Chromium.*),
	// which it removes only on a clean exit, and the test kills it.
	dir := t.TempDir()
	profile, tmp := filepath.Join(dir, "profile"), filepath.Join(dir, "tmp")
	for _, d := range []string{profile, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	t.Cleanup(cancel)
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(ChromiumPath),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile), // else chromedp makes one in os.TempDir
		chromedp.Env("TMPDIR=" + tmp),
		chromedp.WindowSize(1100, 900),
	}, flags...)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel) // runs before TempDir's cleanup: chromium has exited
	var mu sync.Mutex
	var problems []string
	listener := func(ev any) {
		if p := problem(ev); p != "" {
			mu.Lock()
			problems = append(problems, p)
			mu.Unlock()
		}
	}
	tctx, tcancel := chromedp.NewContext(actx, chromedp.WithListener(listener))
	t.Cleanup(tcancel)
	// Start the browser now, so a failure to start is reported as such.
	if err := chromedp.Do(tctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return tctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// problem describes ev if a page should never cause it, else returns "".
func problem(ev any) string {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range ev.Args {
			args = append(args, string(a.Value)+a.Description)
		}
		return fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " "))
	case *runtime.EventExceptionThrown:
		p := "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			p += " " + ev.ExceptionDetails.Exception.Description
		}
		return p
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
			return fmt.Sprintf("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	case *page.EventJavascriptDialogOpening:
		return "dialog: " + ev.Message
	}
	return ""
}

// Run runs a over ctx and fails the test on error.
func Run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}
