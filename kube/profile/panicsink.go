package profile

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	fwk "k8s.io/kube-scheduler/framework"
)

// The framework runs some plugins on goroutines of its parallelizer
// (workqueue.ParallelizeUntil), even at parallelism 1: Score on every
// node (the framework's RunScorePlugins runs each NormalizeScore there
// too; ScoreNodes runs them on the caller's goroutine, where a panic is
// recovered with its reason), and the PreBind plugins of one group.
// A panic there is out of reach of the caller's recover: the
// parallelizer's goroutine logs it (utilruntime.HandleCrashWithContext)
// and panics again, which ends the process. A panic sink carried in the
// context given to the framework catches such a panic instead: the
// panic handler below records it in the sink and ends that goroutine
// (its piece of work is left undone), and the caller, once the
// framework's call returns, panics again on its own goroutine with
// RepanicIn, where its recovery fails that pod's attempt alone.

// PanicSink records the first panic of a parallelizer's goroutine
// working for a context that carries it (WithPanicSink). Safe for
// concurrent use.
type PanicSink struct {
	mu    sync.Mutex
	first any
	set   bool
	// f names the plugin a panic came from (PanicSite); nil: none.
	f *Framework
	// landed is closed once a panic is recorded: the parallelizer's
	// WaitGroup is done before its goroutine's panic handlers run, so
	// the framework's call may return before the record lands.
	landed chan struct{}
}

type panicSinkKey struct{}

// WithPanicSink returns ctx carrying a new sink, which replaces any sink
// ctx carries already. A panic it records names the plugin of f it came
// from, if f is not nil (PanicSite).
func (f *Framework) WithPanicSink(ctx context.Context) context.Context {
	return context.WithValue(ctx, panicSinkKey{}, &PanicSink{f: f, landed: make(chan struct{})})
}

// RepanicIn panics, on the caller's goroutine, with the first panic a
// parallelizer's goroutine working for ctx recorded in ctx's sink, if
// any. Nothing if ctx carries no sink. With wait (the caller knows a
// piece of the work was left undone, so that a goroutine panicked), it
// first waits for the panic's record to land, or for ctx to be done.
// Without it, a panic whose record lands after the call is missed: the
// goroutine ended all the same, and the process lives.
func RepanicIn(ctx context.Context, wait bool) {
	s, _ := ctx.Value(panicSinkKey{}).(*PanicSink)
	if s == nil {
		return
	}
	if wait {
		select {
		case <-s.landed:
		case <-ctx.Done():
		}
	}
	s.mu.Lock()
	r, set := s.first, s.set
	s.mu.Unlock()
	if set {
		panic(fmt.Sprintf("%v (on the framework's parallelizer)", r))
	}
}

func init() {
	utilruntime.PanicHandlers = append(utilruntime.PanicHandlers, sinkPanic)
}

// sinkPanic is a panic handler of utilruntime: a panic recovered by
// HandleCrashWithContext on a goroutine working for a context with a
// sink is recorded there, and the goroutine ends (runtime.Goexit) instead
// of panicking again. Its deferred calls have run (the parallelizer's
// WaitGroup is done). Other panics go on as before. It runs after
// utilruntime's own handler, which logs the panic with its stack.
func sinkPanic(ctx context.Context, r any) {
	s, _ := ctx.Value(panicSinkKey{}).(*PanicSink)
	if s == nil {
		return
	}
	if name, method, ok := s.f.PanicSite(); ok {
		r = fmt.Sprintf("%v (plugin %s, at %s)", r, name, method)
	}
	s.mu.Lock()
	if !s.set {
		s.first, s.set = r, true
		close(s.landed)
	}
	s.mu.Unlock()
	runtime.Goexit()
}

// ScoredAll reports whether every node of RunScorePlugins' successful
// answer was scored: a node left without its name is one whose Score
// goroutine panicked (WithPanicSink). O(nodes).
func ScoredAll(scores []fwk.NodePluginScores) bool {
	for _, sc := range scores {
		if sc.Name == "" {
			return false
		}
	}
	return true
}
