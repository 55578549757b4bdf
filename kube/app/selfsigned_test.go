package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDefaultCert: without a certificate, the HTTPS port's is made in
// memory with an ECDSA P-256 key (two RSA keys took 0.1-0.3 s of CPU at
// each start), and verifies, trusted as itself, for localhost, 127.0.0.1
// and the bind address from an hour before it was made to a year after;
// --cert-dir keeps k8s.io/apiserver's certificate, written there, and
// --tls-cipher-suites without an ECDSA suite its RSA one in memory; given
// files are left alone.
func TestDefaultCert(t *testing.T) {
	now := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		set     func(o *ServingOptions, dir string)
		inMem   bool
		hosts   []string
		ecdsa   bool // an ECDSA P-256 key (else RSA, k8s.io/apiserver's)
		written bool
		given   bool // given.crt and given.key are in the directory, and stay as they were
	}{
		{name: "in memory", set: func(*ServingOptions, string) {}, inMem: true, hosts: []string{"localhost", "127.0.0.1"}, ecdsa: true},
		{name: "in memory, a bind address", set: func(o *ServingOptions, _ string) { o.Secure.BindAddress = net.ParseIP("10.0.0.7") },
			inMem: true, hosts: []string{"localhost", "127.0.0.1", "10.0.0.7"}, ecdsa: true},
		{name: "in memory, an ECDSA cipher suite among others", set: func(o *ServingOptions, _ string) {
			o.Secure.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}
		}, inMem: true, hosts: []string{"localhost"}, ecdsa: true},
		{name: "in memory, RSA cipher suites only", set: func(o *ServingOptions, _ string) {
			o.Secure.CipherSuites = []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}
		}, inMem: true, hosts: []string{"localhost"}},
		{name: "cert dir", set: func(o *ServingOptions, dir string) { o.Secure.ServerCert.CertDirectory = dir }, written: true},
		{name: "files given", set: func(o *ServingOptions, dir string) {
			o.Secure.ServerCert.CertKey.CertFile = filepath.Join(dir, "given.crt")
			o.Secure.ServerCert.CertKey.KeyFile = filepath.Join(dir, "given.key")
		}, given: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := NewServingOptions()
			dir := t.TempDir()
			given := map[string]string{"given.crt": "a certificate of the user's", "given.key": "its key"}
			if c.given {
				for name, content := range given {
					if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			c.set(o, dir)
			if err := o.defaultCert(now); err != nil {
				t.Fatal(err)
			}
			for name, content := range given {
				if !c.given {
					break
				}
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != content {
					t.Fatalf("%s: %q, %v after defaultCert, want it left as given", name, b, err)
				}
			}
			gen := o.Secure.ServerCert.GeneratedCert
			if (gen != nil) != c.inMem {
				t.Fatalf("a certificate in memory: %v, want %v", gen != nil, c.inMem)
			}
			_, err := os.Stat(filepath.Join(dir, "schedq.crt"))
			if written := err == nil; written != c.written {
				t.Fatalf("a certificate written in the directory: %v, want %v", written, c.written)
			}
			if !c.inMem {
				return
			}
			certPEM, keyPEM := gen.CurrentCertKeyContent()
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			if key, ok := pair.PrivateKey.(*ecdsa.PrivateKey); c.ecdsa && (!ok || key.Curve != elliptic.P256()) {
				t.Fatalf("key %T, want ECDSA P-256", pair.PrivateKey)
			}
			if _, ok := pair.PrivateKey.(*rsa.PrivateKey); !c.ecdsa && !ok {
				t.Fatalf("key %T, want RSA for the cipher suites", pair.PrivateKey)
			}
			if !c.ecdsa {
				return
			}
			cert, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			roots := x509.NewCertPool()
			roots.AddCert(cert)
			for _, at := range []time.Time{now.Add(-time.Hour), now, now.Add(364 * 24 * time.Hour)} {
				for _, h := range c.hosts {
					if _, err := cert.Verify(x509.VerifyOptions{DNSName: h, Roots: roots, CurrentTime: at}); err != nil {
						t.Errorf("%s at %v: %v", h, at, err)
					}
				}
			}
			for _, at := range []time.Time{now.Add(-time.Hour - time.Second), now.Add(366 * 24 * time.Hour)} {
				if _, err := cert.Verify(x509.VerifyOptions{DNSName: "localhost", Roots: roots, CurrentTime: at}); err == nil {
					t.Errorf("valid at %v", at)
				}
			}
			if _, err := cert.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: roots, CurrentTime: now}); err == nil {
				t.Error("valid for example.com")
			}
		})
	}
}
