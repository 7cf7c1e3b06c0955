package healthcheck

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestFuncTimeout(t *testing.T) {
	ck := check(Func, time.Second)
	ck.Timeout = 20 * time.Millisecond
	ck.Func = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	ev := first(t, netip.AddrPort{}, ck, Down)
	if !errors.Is(ev.Err, context.DeadlineExceeded) {
		t.Errorf("error %v: want context.DeadlineExceeded", ev.Err)
	}
}

func TestFuncPanics(t *testing.T) {
	ck := check(Func, time.Second)
	ck.Func = func(context.Context) error { panic("boom") }
	ev := first(t, netip.AddrPort{}, ck, Down)
	if ev.Err == nil || !strings.Contains(ev.Err.Error(), "panicked: boom") {
		t.Errorf("error %v: want the panic", ev.Err)
	}
}
