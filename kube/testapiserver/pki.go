package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is how long the generated certificates are valid: longer than
// any test run.
const certValidity = 7 * 24 * time.Hour

// pki is one CA, generated at start-up, that signs the API server's serving
// certificate and the client certificate in the kubeconfig. Every API server
// generation reads the same files, so clients keep trusting the server and
// the server keeps accepting the client across restarts.
type pki struct {
	// certDir holds apiserver.crt and apiserver.key, the names
	// kube-apiserver's --cert-dir looks for.
	certDir string
	// caFile is the CA certificate, for --client-ca-file.
	caFile string

	caPEM, clientCertPEM, clientKeyPEM []byte
}

// clientUser and clientGroup are the identity of the kubeconfig's client
// certificate; system:masters may do anything whatever the authorizer.
const (
	clientUser  = "ipvskit-test-admin"
	clientGroup = "system:masters"
)

// newPKI generates the CA and both certificates and writes them under dir.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	now := time.Now()
	caKey, ca, caPEM, err := newCert(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "test-apiserver-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("generate CA: %w", err)
	}
	servingKey, _, servingPEM, err := newCert(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "test-apiserver"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
	}, ca, caKey)
	if err != nil {
		return nil, fmt.Errorf("generate serving certificate: %w", err)
	}
	clientKey, _, clientPEM, err := newCert(&x509.Certificate{
		Subject:     pkix.Name{CommonName: clientUser, Organization: []string{clientGroup}},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, caKey)
	if err != nil {
		return nil, fmt.Errorf("generate client certificate: %w", err)
	}

	p := &pki{
		certDir:       dir,
		caFile:        filepath.Join(dir, "ca.crt"),
		caPEM:         caPEM,
		clientCertPEM: clientPEM,
	}
	servingKeyPEM, err := keyPEM(servingKey)
	if err != nil {
		return nil, err
	}
	if p.clientKeyPEM, err = keyPEM(clientKey); err != nil {
		return nil, err
	}
	for name, data := range map[string][]byte{
		"ca.crt":        caPEM,
		"apiserver.crt": servingPEM,
		"apiserver.key": servingKeyPEM,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return p, nil
}

// newCert makes a P-256 key and a certificate for it from tmpl, signed by
// parent's key, or self-signed when parent is nil.
func newCert(tmpl, parent *x509.Certificate, parentKey crypto.Signer) (*ecdsa.PrivateKey, *x509.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("generate key: %w", err)
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62)); err != nil {
		return nil, nil, nil, fmt.Errorf("generate serial number: %w", err)
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("sign certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parse certificate: %w", err)
	}
	return key, cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// keyPEM encodes key as PEM, the way kube-apiserver and client-go read it.
func keyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}
