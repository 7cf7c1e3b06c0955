package main

import (
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
)

// tb is the testing.TB-like value StartTestServer wants (ktesting.TB),
// outside of a test: it logs to stderr (without a time stamp: the klog lines
// ktesting's logger writes through Log carry their own), keeps Cleanup functions until the
// generation stops, records Error calls, and exits the program on Fatal,
// FailNow and Skip, since nothing waits for a goroutine to unwind here.
type tb struct {
	tmp string // parent of TempDir's directories
	log *log.Logger

	mu       sync.Mutex
	cleanups []func()
	errs     []error
}

func newTB(tmp string) *tb {
	return &tb{tmp: tmp, log: log.New(os.Stderr, "test-apiserver: ", 0)}
}

// err returns what Error and Errorf recorded.
func (t *tb) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return errors.Join(t.errs...)
}

// runCleanups runs the Cleanup functions, last first, and returns what
// Error and Errorf recorded meanwhile.
func (t *tb) runCleanups() error {
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return t.err()
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		f()
	}
}

func (t *tb) fatal(msg string) {
	t.log.Output(3, "fatal: "+msg)
	os.Exit(1)
}

func (t *tb) fail(msg string) {
	t.log.Output(3, "error: "+msg)
	t.mu.Lock()
	t.errs = append(t.errs, errors.New(msg))
	t.mu.Unlock()
}

func (t *tb) Attr(key, value string) { t.log.Output(2, fmt.Sprintf("attr %s=%s", key, value)) }
func (t *tb) Chdir(dir string) {
	if err := os.Chdir(dir); err != nil {
		t.fatal(err.Error())
	}
}
func (t *tb) Cleanup(f func()) {
	t.mu.Lock()
	t.cleanups = append(t.cleanups, f)
	t.mu.Unlock()
}
func (t *tb) Error(args ...any)                 { t.fail(fmt.Sprint(args...)) }
func (t *tb) Errorf(format string, args ...any) { t.fail(fmt.Sprintf(format, args...)) }
func (t *tb) Fail()                             { t.fail("failed") }
func (t *tb) FailNow()                          { t.fatal("FailNow") }
func (t *tb) Failed() bool                      { return t.err() != nil }
func (t *tb) Fatal(args ...any)                 { t.fatal(fmt.Sprint(args...)) }
func (t *tb) Fatalf(format string, args ...any) { t.fatal(fmt.Sprintf(format, args...)) }
func (t *tb) Helper()                           {}
func (t *tb) Log(args ...any)                   { t.log.Output(2, fmt.Sprint(args...)) }
func (t *tb) Logf(format string, args ...any)   { t.log.Output(2, fmt.Sprintf(format, args...)) }
func (t *tb) Name() string                      { return "test-apiserver" }
func (t *tb) Setenv(key, value string) {
	if err := os.Setenv(key, value); err != nil {
		t.fatal(err.Error())
	}
}
func (t *tb) Skip(args ...any)                 { t.fatal("skip: " + fmt.Sprint(args...)) }
func (t *tb) Skipf(format string, args ...any) { t.fatal("skip: " + fmt.Sprintf(format, args...)) }
func (t *tb) SkipNow()                         { t.fatal("skip") }
func (t *tb) Skipped() bool                    { return false }
func (t *tb) TempDir() string {
	dir, err := os.MkdirTemp(t.tmp, "tb")
	if err != nil {
		t.fatal(err.Error())
	}
	return dir
}
