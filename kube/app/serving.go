package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	cliflag "k8s.io/component-base/cli/flag"
	netutils "k8s.io/utils/net"
)

// DefaultSecurePort is the default HTTPS port of /metrics, /debug/queue
// and the health endpoints.
const DefaultSecurePort = 10351

// ServingOptions configure the HTTPS endpoints: their requests are
// authenticated (TokenReview, client certificates) and authorized
// (SubjectAccessReview) by the API server, as kube-scheduler's are, except
// /healthz, /readyz and /livez, which are open. (Options.Address is the
// plain-HTTP alternative, for development on loopback only.)
type ServingOptions struct {
	// Secure is the HTTPS port. BindPort 0 (or nil) turns it off. Without
	// a certificate, a self-signed one is made in memory.
	Secure *apiserveroptions.SecureServingOptions
	// Authentication and Authorization delegate to the API server. Their
	// kubeconfig defaults to the scheduler's --kubeconfig.
	Authentication *apiserveroptions.DelegatingAuthenticationOptions
	Authorization  *apiserveroptions.DelegatingAuthorizationOptions
}

// NewServingOptions returns the defaults: HTTPS on 0.0.0.0:10351.
func NewServingOptions() *ServingOptions {
	o := &ServingOptions{
		Secure:         apiserveroptions.NewSecureServingOptions(),
		Authentication: apiserveroptions.NewDelegatingAuthenticationOptions(),
		Authorization:  apiserveroptions.NewDelegatingAuthorizationOptions(),
	}
	o.Secure.BindPort = DefaultSecurePort
	o.Secure.ServerCert.CertDirectory = "" // in memory: the root filesystem may be read-only
	o.Secure.ServerCert.PairName = "schedq"
	// A cluster without the front-proxy configuration (no requestheader
	// CA) still authenticates tokens.
	o.Authentication.TolerateInClusterLookupFailure = true
	o.Authorization.AlwaysAllowPaths = healthPaths
	return o
}

var healthPaths = []string{"/healthz", "/readyz", "/livez"}

// AddFlags adds k8s.io/apiserver's secure serving, authentication and
// authorization flags.
func (o *ServingOptions) AddFlags(fs *pflag.FlagSet) {
	o.Secure.AddFlags(fs)
	o.Authentication.AddFlags(fs)
	o.Authorization.AddFlags(fs)
}

// validate checks the HTTPS flags before anything connects: the port's
// range (a negative port is refused, not taken for off), the options' own
// checks, that the certificate and its key load as a pair, and that the
// other files named exist and load as what they are named for (a CA
// bundle, a kubeconfig). O(1), and reads only the files named.
func (o *ServingOptions) validate() []error {
	if o == nil || o.Secure == nil {
		return nil
	}
	var errs []error
	if p := o.Secure.BindPort; p < 0 || p > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port: %d is not a port from 1 to 65535 (0: off)", p))
	} else {
		errs = append(errs, o.Secure.Validate()...)
	}
	errs = append(errs, o.tlsSettings()...)
	errs = append(errs, o.certKey()...)
	errs = append(errs, o.limits()...)
	files := map[string]string{} // flag: file
	if a := o.Authentication; a != nil {
		errs = append(errs, a.Validate()...)
		files["authentication-kubeconfig"], files["client-ca-file"] = a.RemoteKubeConfigFile, a.ClientCert.ClientCA
		files["requestheader-client-ca-file"] = a.RequestHeader.ClientCAFile
	}
	if a := o.Authorization; a != nil {
		errs = append(errs, a.Validate()...)
		files["authorization-kubeconfig"] = a.RemoteKubeConfigFile
	}
	for _, flag := range slices.Sorted(maps.Keys(files)) {
		if files[flag] == "" {
			continue
		}
		if _, err := os.Stat(files[flag]); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flag, err))
		} else if err := checkInputFile(files[flag], MaxInputFileBytes); err != nil {
			errs = append(errs, fmt.Errorf("--%s %s: %w", flag, files[flag], err))
		} else if err := servingFileLoads(flag, files[flag]); err != nil {
			errs = append(errs, fmt.Errorf("--%s %s: %w", flag, files[flag], err))
		}
	}
	return errs
}

// servingFileLoads checks that the file of flag is what the HTTPS port
// will read it as when it starts, after the API server was contacted: a
// CA bundle holds a PEM certificate, a kubeconfig gives a client
// configuration.
func servingFileLoads(flag, path string) error {
	if strings.HasSuffix(flag, "-kubeconfig") {
		cfg, err := clientcmd.LoadFromFile(path)
		if err != nil {
			return err
		}
		_, err = clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if _, err := certutil.ParseCertsPEM(b); err != nil {
		return fmt.Errorf("no PEM certificate in it: %w", err)
	}
	return nil
}

// certKey checks that --tls-cert-file and --tls-private-key-file come
// together and load as a pair, and are not given with --cert-dir, which
// they make ignored.
func (o *ServingOptions) certKey() []error {
	ck := o.Secure.ServerCert.CertKey
	var errs []error
	dir := o.Secure.ServerCert.CertDirectory
	switch {
	case dir != "" && (ck.CertFile != "" || ck.KeyFile != ""):
		errs = append(errs, errors.New("--cert-dir: not with --tls-cert-file and --tls-private-key-file, which give the certificate: it would be ignored"))
	case dir != "" && o.Secure.BindPort > 0:
		if err := checkCertDir(dir, o.Secure.ServerCert.PairName); err != nil {
			errs = append(errs, fmt.Errorf("--cert-dir %s: %w", dir, err))
		}
	}
	return append(errs, o.certKeyPair()...)
}

// checkCertDir checks, before anything connects, what the HTTPS port's
// start will do with --cert-dir dir (k8s.io/apiserver's
// MaybeDefaultWithSelfSignedCerts, after the API server was contacted):
// read the pair (pair.crt, pair.key) if either is there, so both must
// be and load as a pair; else make a self-signed one and write it there,
// creating dir, so dir must be a directory, or not there yet under one,
// where a file can be created (tried with a file made and removed in the
// nearest directory there is; none is created).
func checkCertDir(dir, pair string) error {
	crt, key := filepath.Join(dir, pair+".crt"), filepath.Join(dir, pair+".key")
	_, crtErr := os.Stat(crt)
	_, keyErr := os.Stat(key)
	switch {
	case crtErr == nil && keyErr == nil:
		if err := checkPair(crt, key); err != nil {
			return err
		}
		if _, err := tls.LoadX509KeyPair(crt, key); err != nil {
			return fmt.Errorf("%s, %s: %w", crt, key, err)
		}
		return nil
	case crtErr == nil:
		return fmt.Errorf("%s without %s: the certificate and its key are read as a pair", crt, key)
	case keyErr == nil:
		return fmt.Errorf("%s without %s: the certificate and its key are read as a pair", key, crt)
	}
	near := dir
	for {
		st, err := os.Stat(near)
		if err == nil && !st.IsDir() {
			if near == dir {
				return errors.New("not a directory")
			}
			return fmt.Errorf("%s is not a directory", near)
		}
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		up := filepath.Dir(near)
		if up == near {
			return err
		}
		near = up
	}
	probe, err := os.CreateTemp(near, ".schedq-probe-*")
	if err != nil {
		if pe := new(fs.PathError); errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("the self-signed certificate cannot be written: no file can be created in %s: %w", near, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// checkPair is checkInputFile for a certificate and its key, each named
// in the error.
func checkPair(crt, key string) error {
	for _, f := range []string{crt, key} {
		if err := checkInputFile(f, MaxInputFileBytes); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

// certKeyPair checks that --tls-cert-file and --tls-private-key-file
// come together, are regular files of at most MaxInputFileBytes
// (checkInputFile) and load as a pair.
func (o *ServingOptions) certKeyPair() []error {
	ck := o.Secure.ServerCert.CertKey
	switch {
	case ck.CertFile == "" && ck.KeyFile == "":
		return nil
	case ck.CertFile == "":
		return []error{errors.New("--tls-private-key-file: needs --tls-cert-file, the certificate of the key")}
	case ck.KeyFile == "":
		return []error{errors.New("--tls-cert-file: needs --tls-private-key-file, the key of the certificate")}
	}
	var errs []error
	for _, f := range []struct{ flag, path string }{{"tls-cert-file", ck.CertFile}, {"tls-private-key-file", ck.KeyFile}} {
		if err := checkInputFile(f.path, MaxInputFileBytes); err != nil {
			errs = append(errs, fmt.Errorf("--%s %s: %w", f.flag, f.path, err))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if _, err := tls.LoadX509KeyPair(ck.CertFile, ck.KeyFile); err != nil {
		return []error{fmt.Errorf("--tls-cert-file %q, --tls-private-key-file %q: %w", ck.CertFile, ck.KeyFile, err)}
	}
	return nil
}

// limits refuses the negative numbers that k8s.io/apiserver's options
// take without a check: a stream limit, and the webhook caches' TTLs.
func (o *ServingOptions) limits() []error {
	var errs []error
	if n := o.Secure.HTTP2MaxStreamsPerConnection; n < 0 {
		errs = append(errs, fmt.Errorf("--http2-max-streams-per-connection: must not be negative, got %d (0: Go's default)", n))
	}
	ttls := map[string]time.Duration{} // flag: TTL
	if a := o.Authentication; a != nil {
		ttls["authentication-token-webhook-cache-ttl"] = a.CacheTTL
	}
	if a := o.Authorization; a != nil {
		ttls["authorization-webhook-cache-authorized-ttl"] = a.AllowCacheTTL
		ttls["authorization-webhook-cache-unauthorized-ttl"] = a.DenyCacheTTL
	}
	for _, flag := range slices.Sorted(maps.Keys(ttls)) {
		if d := ttls[flag]; d < 0 {
			errs = append(errs, fmt.Errorf("--%s: must not be negative, got %v", flag, d))
		}
	}
	return errs
}

// tlsSettings checks the TLS flags that the HTTPS port would otherwise
// read only when it starts, after the API server was contacted: the
// minimum version, the cipher suites, the curves, and that each SNI
// certificate loads with its key.
func (o *ServingOptions) tlsSettings() []error {
	var errs []error
	if _, err := cliflag.TLSVersion(o.Secure.MinTLSVersion); err != nil {
		errs = append(errs, fmt.Errorf("--tls-min-version: %w", err))
	}
	if _, err := cliflag.TLSCipherSuites(o.Secure.CipherSuites); err != nil {
		errs = append(errs, fmt.Errorf("--tls-cipher-suites: %w", err))
	}
	if _, err := cliflag.TLSCurvePreferences(o.Secure.CurvePreferences); err != nil {
		errs = append(errs, fmt.Errorf("--tls-curve-preferences: %w", err))
	}
	for _, k := range o.Secure.SNICertKeys {
		if err := checkPair(k.CertFile, k.KeyFile); err != nil {
			errs = append(errs, fmt.Errorf("--tls-sni-cert-key %s,%s: %w", k.CertFile, k.KeyFile, err))
		} else if _, err := tls.LoadX509KeyPair(k.CertFile, k.KeyFile); err != nil {
			errs = append(errs, fmt.Errorf("--tls-sni-cert-key %s,%s: %w", k.CertFile, k.KeyFile, err))
		}
	}
	return errs
}

// portTaken refuses a plain-HTTP address (a valid loopback host:port)
// whose port the HTTPS port also listens on, on all addresses or on the
// same one: the second listener would fail, after the API server had been
// contacted.
func (o *ServingOptions) portTaken(addr string) error {
	if o == nil || o.Secure == nil || o.Secure.BindPort <= 0 {
		return nil
	}
	host, port, _ := net.SplitHostPort(addr)
	if port != strconv.Itoa(o.Secure.BindPort) {
		return nil
	}
	bind := o.Secure.BindAddress
	if ip := netutils.ParseIPSloppy(host); bind == nil || bind.IsUnspecified() || bind.Equal(ip) || host == "localhost" && bind.IsLoopback() {
		return fmt.Errorf("--address %s and --secure-port %d (on --bind-address %v) listen on one port: give --secure-port=0, or another port to either", addr, o.Secure.BindPort, bind)
	}
	return nil
}

// checkLoopback refuses a plain-HTTP address that is not on loopback.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := netutils.ParseIPSloppy(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--address %q: plain HTTP serves /metrics and /debug/queue without authentication, so it must be a loopback address (127.0.0.1 or ::1); use --secure-port for anything else", addr)
	}
	return nil
}

// securePort is the configured HTTPS endpoint, ready to serve.
type securePort struct {
	info  *server.SecureServingInfo
	authn authenticator.Request
	authz authorizer.Authorizer
}

// prepare validates the options and opens the listeners' configuration:
// errors here name the flag and stop the start-up.
func (o *ServingOptions) prepare(kubeconfig string) (*securePort, error) {
	if o == nil || o.Secure == nil || (o.Secure.BindPort <= 0 && o.Secure.Listener == nil) {
		return nil, nil
	}
	var errs []error
	errs = append(errs, o.Secure.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := o.defaultCert(time.Now()); err != nil {
		return nil, fmt.Errorf("self-signed serving certificate: %w", err)
	}
	if o.Authentication.RemoteKubeConfigFile == "" {
		o.Authentication.RemoteKubeConfigFile = kubeconfig
	}
	if o.Authorization.RemoteKubeConfigFile == "" {
		o.Authorization.RemoteKubeConfigFile = kubeconfig
	}
	p := &securePort{}
	if err := o.Secure.ApplyTo(&p.info); err != nil {
		return nil, fmt.Errorf("--secure-port %d: %w", o.Secure.BindPort, err)
	}
	var authn server.AuthenticationInfo
	if err := o.Authentication.ApplyTo(&authn, p.info, nil); err != nil {
		p.info.Listener.Close()
		return nil, fmt.Errorf("delegated authentication: %w", err)
	}
	var authz server.AuthorizationInfo
	if err := o.Authorization.ApplyTo(&authz); err != nil {
		p.info.Listener.Close()
		return nil, fmt.Errorf("delegated authorization: %w", err)
	}
	p.authn, p.authz = refuseAnonymous(authn.Authenticator), authz.Authorizer
	return p, nil
}

// defaultCert gives the HTTPS port a self-signed certificate if it has
// none: with no --tls-cert-file, --tls-private-key-file or --cert-dir, one
// made in memory (selfSignedCert, for the bind address too if one is
// given); with --cert-dir, or --tls-cipher-suites that name no ECDSA
// suite (TLS 1.2 could then not use an ECDSA key), k8s.io/apiserver's
// (RSA), read from --cert-dir or made and written there if set, else
// kept in memory.
func (o *ServingOptions) defaultCert(now time.Time) error {
	sc := &o.Secure.ServerCert
	if sc.CertKey.CertFile != "" || sc.CertKey.KeyFile != "" || sc.GeneratedCert != nil {
		return nil
	}
	ecdsaSuite := len(o.Secure.CipherSuites) == 0
	for _, cs := range o.Secure.CipherSuites {
		ecdsaSuite = ecdsaSuite || strings.Contains(cs, "_ECDSA_")
	}
	if sc.CertDirectory != "" || !ecdsaSuite {
		return o.Secure.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{netutils.ParseIPSloppy("127.0.0.1")})
	}
	var ips []net.IP
	if b := o.Secure.BindAddress; b != nil && !b.IsUnspecified() {
		ips = append(ips, b)
	}
	gen, err := selfSignedCert(now, ips)
	if err != nil {
		return err
	}
	sc.GeneratedCert = gen
	return nil
}

// refuseAnonymous makes an anonymous request unauthenticated: the
// delegating authenticator lets anonymous requests through to the
// authorizer, and an API server whose authorizer allows everything would
// then let anyone read /metrics and /debug/queue.
func refuseAnonymous(a authenticator.Request) authenticator.Request {
	return authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
		resp, ok, err := a.AuthenticateRequest(req)
		if ok && resp.User.GetName() == user.Anonymous {
			return nil, false, nil
		}
		return resp, ok, err
	})
}

// guarded serves the health paths as they are and every other path behind
// authentication and authorization.
func guarded(h http.Handler, authn authenticator.Request, authz authorizer.Authorizer) http.Handler {
	resolver := &apirequest.RequestInfoFactory{}
	protected := genericapifilters.WithAuthorization(h, authz, scheme.Codecs)
	protected = genericapifilters.WithAuthentication(protected, authn, genericapifilters.Unauthorized(scheme.Codecs), nil, nil)
	protected = genericapifilters.WithRequestInfo(protected, resolver)
	protected = genericfilters.WithPanicRecovery(protected, resolver)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range healthPaths {
			if r.URL.Path == p {
				h.ServeHTTP(w, r)
				return
			}
		}
		protected.ServeHTTP(w, r)
	})
}

// serve serves h on the HTTPS port until ctx ends. The returned function
// waits, once ctx has ended, for the server to drain: its requests under
// way are answered, for at most servingDrain.
func (p *securePort) serve(ctx context.Context, h http.Handler, log *slog.Logger) (wait func(), err error) {
	stopped, _, err := p.info.Serve(guarded(h, p.authn, p.authz), servingDrain, ctx.Done())
	if err != nil {
		return nil, fmt.Errorf("secure serving: %w", err)
	}
	log.Info("serving HTTPS", "address", p.info.Listener.Addr().String())
	return func() { <-stopped }, nil
}

// servingDrain bounds how long a server that stops waits for the
// requests under way.
const servingDrain = 5 * time.Second

// serveInsecure serves h on plain HTTP until ctx ends. The returned
// function waits, once ctx has ended, for the server to drain, as
// securePort.serve's does.
func serveInsecure(ctx context.Context, listen func(string) (net.Listener, error), addr string, h http.Handler, log *slog.Logger) (wait func(), err error) {
	if listen == nil {
		listen = func(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
	}
	ln, err := listen(addr)
	if err != nil {
		return nil, fmt.Errorf("--address %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http", "err", err)
		}
	}()
	stopped := make(chan struct{})
	context.AfterFunc(ctx, func() {
		defer close(stopped)
		sctx, cancel := context.WithTimeout(context.Background(), servingDrain)
		defer cancel()
		srv.Shutdown(sctx)
	})
	log.Warn("serving plain HTTP without authentication (development only)", "address", ln.Addr().String())
	return func() { <-stopped }, nil
}
