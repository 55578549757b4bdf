package app

import (
	"context"
	"crypto/tls"
	"fmt"
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
	apiserveroptions "k8s.io/apiserver/pkg/server/options"

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
// once the HTTP servers have drained (docs/scheduler.md: "the HTTP server
// drains"): a what-if under way when ctx ends is answered before run
// returns, after which the process exits. run returned while it was still
// running, and the exit cut it off.
func TestRunDrainsRequestsInFlight(t *testing.T) {
	for _, tc := range []struct {
		name string
		// serve sets o or makes sp to serve on, and returns the client
		// and the base URL (from addr, where run logs the plain one).
		serve func(t *testing.T, o *Options, addr <-chan string) (sp *securePort, base func() string, c *http.Client)
	}{
		{name: "plain HTTP", serve: func(t *testing.T, o *Options, addr <-chan string) (*securePort, func() string, *http.Client) {
			o.Address = "127.0.0.1:0"
			return nil, func() string { return "http://" + <-addr }, http.DefaultClient
		}},
		{name: "HTTPS", serve: func(t *testing.T, _ *Options, _ <-chan string) (*securePort, func() string, *http.Client) {
			sp := testSecurePort(t)
			c := &http.Client{Transport: &bearer{next: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, token: "good"}}
			return sp, func() string { return "https://" + sp.info.Listener.Addr().String() }, c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { testDrain(t, tc.serve) })
	}
}

// testSecurePort is an HTTPS port on a loopback address, with a
// self-signed certificate, that authenticates and authorizes as
// fakeAuth.
func testSecurePort(t *testing.T) *securePort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	so := apiserveroptions.NewSecureServingOptions()
	so.Listener, so.ServerCert.CertDirectory = ln, ""
	if err := so.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		t.Fatal(err)
	}
	sp := &securePort{}
	if err := so.ApplyTo(&sp.info); err != nil {
		t.Fatal(err)
	}
	auth := &fakeAuth{}
	sp.authn, sp.authz = refuseAnonymous(auth), auth
	return sp
}

// bearer adds a bearer token to each request.
type bearer struct {
	next  http.RoundTripper
	token string
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// testDrain is TestRunDrainsRequestsInFlight on the server serve sets up.
func testDrain(t *testing.T, serve func(t *testing.T, o *Options, addr <-chan string) (*securePort, func() string, *http.Client)) {
	client := fakeCluster(roomyNode("n0"), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var finished atomic.Bool // the what-if's handler has returned
	o := Options{SchedulerName: "schedq",
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
	sp, baseOf, c := serve(t, &o, addr)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, clients{sched: client, events: client, lease: client}, nil, sp, o, slog.New(addrLog{addr}))
	}()
	base := baseOf()
	for { // until the caches synced: the debug endpoints answer
		resp, err := c.Get(base + "/readyz")
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
		resp, err := c.Post(base+"/debug/whatif", "application/yaml", strings.NewReader(strings.Replace(whatIfPod, "%s", "1", 1)))
		if err == nil {
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("HTTP %d", resp.StatusCode)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		answered <- err
	}()
	<-entered
	cancel() // SIGTERM, with the what-if under way
	hostPort := base[strings.Index(base, "//")+2:]
	for { // until the server shuts down: it listens no more
		select {
		case err := <-done:
			close(release)
			t.Fatalf("run returned (%v) with a what-if under way", err)
		default:
		}
		conn, err := net.Dial("tcp", hostPort)
		if err != nil {
			break
		}
		conn.Close()
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
