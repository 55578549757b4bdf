package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// selfSignedValidity is how long the self-signed serving certificate is
// valid, from an hour before it is made (a clock a little behind still
// accepts it): a year, as k8s.io/apiserver's.
const selfSignedValidity = 365 * 24 * time.Hour

// selfSignedCert makes the HTTPS port's in-memory certificate when none
// is given: one self-signed certificate with an ECDSA P-256 key, for
// localhost, 127.0.0.1 and ips. k8s.io/apiserver's default
// (MaybeDefaultWithSelfSignedCerts) makes two 2048-bit RSA keys instead,
// a certificate authority's and the certificate's: 0.1-0.3 s of CPU at
// every start (6.5% of schedq's CPU in compare-e2e's basic, 5,000 pods),
// where this takes well under a millisecond. Clients that check the
// certificate trust it itself (there is no authority to trust).
func selfSignedCert(now time.Time, ips []net.IP) (dynamiccertificates.CertKeyContentProvider, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("localhost@%d", now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           append([]net.IP{net.IPv4(127, 0, 0, 1)}, ips...),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return dynamiccertificates.NewStaticCertKeyContent("self-signed serving certificate", certPEM, keyPEM)
}
