package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/kube/sim"
)

// addrLog sends the address of the plain-HTTP listener, as run logs it,
// to addr, and drops every record.
type addrLog struct{ addr chan string }

func (h addrLog) Enabled(context.Context, slog.Level) bool { return true }
func (h addrLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h addrLog) WithGroup(string) slog.Handler            { return h }
func (h addrLog) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "serving plain HTTP") {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "address" {
				h.addr <- a.Value.String()
			}
			return true
		})
	}
	return nil
}

// TestRunDrainsRequestsInFlight: on SIGTERM (ctx ends) run returns only
// once the HTTP server has drained (docs/scheduler.md: "the HTTP server
// drains"): a what-if under way when ctx ends is answered before run
// returns, after which the process exits. run returned while it was still
// running, and the exit cut it off.
func TestRunDrainsRequestsInFlight(t *testing.T) {
	client := fakeCluster(roomyNode("n0"), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var finished atomic.Bool // the what-if's handler has returned
	o := Options{SchedulerName: "schedq", Address: "127.0.0.1:0",
		forecasting: func(fc *forecaster, _ *liveState) {
			state := fc.state
			fc.wait = time.Hour // the request waits for the forecast it starts
			fc.state = func() (*sim.ForecastState, CopyStats) {
				once.Do(func() { close(entered) })
				<-release
				return state()
			}
		},
		wrapServing: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(w, r)
				if r.URL.Path == "/debug/whatif" {
					finished.Store(true)
				}
			})
		},
	}
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, clients{sched: client, events: client, lease: client}, nil, nil, o, slog.New(addrLog{addr}))
	}()
	base := "http://" + <-addr
	for { // until the caches synced: the debug endpoints answer
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		runtime.Gosched()
	}
	answered := make(chan error, 1)
	go func() {
		resp, err := http.Post(base+"/debug/whatif", "application/yaml", strings.NewReader(strings.Replace(whatIfPod, "%s", "1", 1)))
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		answered <- err
	}()
	<-entered
	cancel() // SIGTERM, with the what-if under way
	for {    // until the server shuts down: it listens no more
		select {
		case err := <-done:
			close(release)
			t.Fatalf("run returned (%v) with a what-if under way", err)
		default:
		}
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			break
		}
		c.Close()
		runtime.Gosched()
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if !finished.Load() {
		t.Error("run returned before the what-if under way was answered")
	}
	if err := <-answered; err != nil {
		t.Errorf("the what-if under way at shutdown: %v", err)
	}
}
