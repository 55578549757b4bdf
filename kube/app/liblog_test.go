package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(sub string) (n int, all string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(line, sub) {
			n++
		}
	}
	return n, l.b.String()
}

// routeKlog sends klog to h for the test, as the command does before
// app.Run routes it through the rate limit.
func routeKlog(t *testing.T, h slog.Handler) {
	klog.SetSlogLogger(slog.New(h))
	t.Cleanup(klog.ClearLogger)
}

// TestEventBroadcasterOutageIsQuiet: in a 3-minute API server outage
// (every write of an event fails with a transport error), with an event a
// second, client-go's broadcaster retries each event every ~10 s and logs
// each failure; through the library logger, that is a line or two, and a
// summary that counts the rest. (Virtual time: testing/synctest.)
func TestEventBroadcasterOutageIsQuiet(t *testing.T) {
	out := &lockedBuffer{}
	raw := slog.NewTextHandler(out, nil)
	routeKlog(t, raw)
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		client.PrependReactor("*", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
		})
		ctx, cancel := context.WithCancel(t.Context())
		lib, quiet := libraryLogger(raw)
		done := make(chan struct{})
		go func() { quiet.run(ctx); close(done) }()
		b, err := startEvents(ctx, client, lib)
		if err != nil {
			t.Fatal(err)
		}
		rec := b.NewRecorder(scheme.Scheme, "schedq")
		for i := range 180 {
			p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: fmt.Sprintf("p%d", i), UID: "u"}}
			rec.Eventf(p, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "no room")
			time.Sleep(time.Second)
		}
		cancel()
		b.Shutdown()
		<-done
		synctest.Wait()
	})
	n, all := out.lines("level=ERROR")
	if n > 4 {
		t.Fatalf("%d ERROR lines in a 3-minute outage, want at most 4:\n%.3000s", n, all)
	}
	if s, _ := out.lines("suppressed="); s == 0 {
		t.Fatalf("no line counts the suppressed repeats:\n%.3000s", all)
	}
	t.Logf("%d ERROR lines in 3 virtual minutes", n)
}

// TestLibraryLogsRateLimited: an error the delegated authentication
// reports every ~45 s (a CA it cannot find) through klog's
// utilruntime.HandleError is logged once per libraryQuiet, with the count
// of the repeats; another error is not held back by it.
func TestLibraryLogsRateLimited(t *testing.T) {
	out := &lockedBuffer{}
	raw := slog.NewTextHandler(out, nil)
	synctest.Test(t, func(t *testing.T) {
		lib, quiet := libraryLogger(raw)
		klog.SetLogger(lib)
		defer klog.ClearLogger()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { quiet.run(ctx); close(done) }()
		missing := errors.New(`"client-ca::kube-system::extension-apiserver-authentication::requestheader-client-ca-file" failed with : missing content for CA bundle`)
		for range 40 { // 30 minutes
			utilruntime.HandleError(missing)
			time.Sleep(45 * time.Second)
		}
		utilruntime.HandleError(errors.New("something else"))
		cancel()
		<-done
	})
	n, all := out.lines("missing content for CA bundle")
	if n > 30/5+1 {
		t.Fatalf("%d lines about the missing CA in 30 minutes, want at most one per %v:\n%s", n, libraryQuiet, all)
	}
	if s, _ := out.lines("suppressed="); s == 0 {
		t.Fatalf("no line counts the suppressed repeats:\n%s", all)
	}
	if m, _ := out.lines("something else"); m != 1 {
		t.Fatalf("another error was logged %d times, want once:\n%s", m, all)
	}
}
