package app

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"

	"github.com/schedq/schedq/kube/sim"
)

// memListener is a listener in memory: each dial is one end of a
// net.Pipe, the other accepted. Its goroutines block on channels only,
// so a server on it runs in a synctest bubble, where synctest.Wait tells
// when everything has settled. closed is closed once it listens no
// more.
type memListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newMemListener() *memListener {
	return &memListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr is a TCP address, as the secure serving options require.
func (l *memListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 443} }

// dial connects to the listener, whatever the address; it is refused
// once the listener is closed.
func (l *memListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, s := net.Pipe()
	client, server := newBufConn(c), newBufConn(s)
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, errors.New("connection refused: the listener is closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// bufConn is one end of a net.Pipe whose writes do not wait for the
// other end to read, as a TCP connection's do not while its buffer has
// room: over a bare pipe, two ends that each close with a TLS
// close_notify wait for each other until their write deadlines, which a
// shutdown then waits for. A goroutine of its own writes to the pipe,
// and closes it once Close has been called and what was written before
// has been sent (or the other end has closed).
type bufConn struct {
	net.Conn
	mu     sync.Mutex
	closed bool
	out    chan []byte // to the writer; closed by Close
}

func newBufConn(c net.Conn) *bufConn {
	b := &bufConn{Conn: c, out: make(chan []byte, 64)}
	go func() {
		defer c.Close()
		for p := range b.out {
			if _, err := c.Write(p); err != nil {
				for range b.out { // the other end closed: drop the rest
				}
			}
		}
	}()
	return b
}

func (b *bufConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, net.ErrClosed
	}
	b.out <- bytes.Clone(p)
	return len(p), nil
}

// Close sends what was written, then closes the pipe; meanwhile what
// the other end sends is read and dropped, as a closed socket's kernel
// does, so that its writer does not wait for a reader that is gone.
func (b *bufConn) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		close(b.out)
		b.Conn.SetReadDeadline(time.Time{})
		go io.Copy(io.Discard, b.Conn) // until either end of the pipe is closed
	}
	return nil
}

// SetDeadline sets the read deadline: writes do not wait.
func (b *bufConn) SetDeadline(t time.Time) error { return b.Conn.SetReadDeadline(t) }

func (b *bufConn) SetWriteDeadline(time.Time) error { return nil }

// TestRunDrainsRequestsInFlight: on SIGTERM (ctx ends) run returns only
// once the HTTP servers have drained (docs/scheduler.md: "the HTTP server
// drains"): a what-if under way when ctx ends is answered before run
// returns, after which the process exits. run returned while it was still
// running, and the exit cut it off. The servers listen in memory, in a
// synctest bubble: synctest.Wait tells when the start-up and the
// shutdown have gone as far as they can, where the test polled /readyz
// and dialled the port in a loop.
func TestRunDrainsRequestsInFlight(t *testing.T) {
	for _, tc := range []struct {
		name string
		// serve sets o or makes sp to serve on ln, and returns the base
		// URL and the transport's TLS configuration and token, if any.
		serve func(t *testing.T, o *Options, ln *memListener) (sp *securePort, base string, tlsConfig *tls.Config, token string)
	}{
		{name: "plain HTTP", serve: func(t *testing.T, o *Options, ln *memListener) (*securePort, string, *tls.Config, string) {
			o.Address = "in memory"
			o.listen = func(string) (net.Listener, error) { return ln, nil }
			return nil, "http://schedq", nil, ""
		}},
		{name: "HTTPS", serve: func(t *testing.T, _ *Options, ln *memListener) (*securePort, string, *tls.Config, string) {
			return testSecurePort(t, ln), "https://schedq", &tls.Config{InsecureSkipVerify: true}, "good"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testDrain(t, tc.serve) })
		})
	}
}

// testSecurePort is an HTTPS port on ln, with a self-signed certificate,
// that authenticates and authorizes as fakeAuth.
func testSecurePort(t *testing.T, ln net.Listener) *securePort {
	t.Helper()
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

// testDrain is TestRunDrainsRequestsInFlight on the server serve sets
// up. Call it in a synctest bubble. The what-if is held twice: in its
// forecast's copy of the state (release), which run's shutdown also
// waits for, a bounded time, and then after its handler has returned
// (finish), which only the servers' drain waits for.
func testDrain(t *testing.T, serve func(t *testing.T, o *Options, ln *memListener) (*securePort, string, *tls.Config, string)) {
	client := fakeCluster(roomyNode("n0"), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	entered, release, finish := make(chan struct{}), make(chan struct{}), make(chan struct{})
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
					<-finish
					finished.Store(true)
				}
			})
		},
	}
	ln := newMemListener()
	sp, base, tlsConfig, token := serve(t, &o, ln)
	transport := &http.Transport{DialContext: ln.dial, TLSClientConfig: tlsConfig}
	var c http.Client
	c.Transport = transport
	if token != "" {
		c.Transport = &bearer{next: transport, token: token}
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, clients{sched: client, events: client, lease: client}, nil, sp, o, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	time.Sleep(time.Second) // virtual: the start-up's sync polls pass
	synctest.Wait()
	resp, err := c.Get(base + "/readyz")
	if err != nil {
		t.Fatalf("/readyz after start-up: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz after start-up: HTTP %d, want 200 (the caches synced)", resp.StatusCode)
	}
	answered := make(chan error, 1)
	answer := sync.OnceValue(func() error { return <-answered })
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
	synctest.Wait()
	select {
	case <-ln.closed: // the server shuts down: it listens no more
	default:
		t.Error("the server still listens after ctx ended")
	}
	var releaseOnce, finishOnce sync.Once
	releaseIt := func() { releaseOnce.Do(func() { close(release) }) }
	finishIt := func() { finishOnce.Do(func() { close(finish) }) }
	defer func() { // all ended before the bubble does, if the test fails first
		releaseIt()
		finishIt()
		answer()
		transport.CloseIdleConnections()
	}()
	returned := func(when string) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("run returned (%v) %s", err, when)
		default:
		}
	}
	returned("with a what-if under way")
	releaseIt() // its forecast ends: what else of the shutdown waited for it goes on
	synctest.Wait()
	returned("before the what-if under way was answered")
	finishIt()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if !finished.Load() {
		t.Error("run returned before the what-if under way was answered")
	}
	if err := answer(); err != nil {
		t.Errorf("the what-if under way at shutdown: %v", err)
	}
}
