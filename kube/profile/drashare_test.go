package profile

import (
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestClaimLocksSerialise: a PreBind that locks a claim another holds
// waits until that one unlocks it, whatever other claims either holds;
// once both are done no lock is kept.
func TestClaimLocksSerialise(t *testing.T) {
	l := &claimLocks{}
	first := l.lock([]claimRef{{name: "a", uid: "uid-a"}, {name: "b", uid: "uid-b"}})
	got, done := make(chan struct{}), make(chan struct{})
	go func() {
		unlock := l.lock([]claimRef{{name: "b", uid: "uid-b"}, {name: "c", uid: "uid-c"}})
		close(got)
		unlock()
		close(done)
	}()
	for users(l, "uid-b") < 2 { // the second is waiting for b
		runtime.Gosched()
	}
	select {
	case <-got:
		t.Fatal("b locked twice at once")
	default:
	}
	first()
	<-got
	<-done
	if n := len(l.held); n != 0 {
		t.Fatalf("%d locks kept after every PreBind ended", n)
	}
}

// users is the number of PreBinds holding or waiting for uid's lock.
func users(l *claimLocks, uid string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.held[types.UID(uid)]; c != nil {
		return c.users
	}
	return 0
}
