package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"dcpi/transport"
)

// CAFile is the certificate of the server's certificate authority, which
// clients verify the server with; copy it to remote hosts with their keys.
func (s *Store) CAFile() string { return filepath.Join(s.dir, "ca.pem") }

func (s *Store) caKeyFile() string { return filepath.Join(s.dir, "ca-key.pem") }

// HasCA says whether the server has made its certificate authority (it
// has listened beyond loopback).
func (s *Store) HasCA() bool {
	_, err := os.Stat(s.CAFile())
	return err == nil
}

// ServerTLS returns the server's TLS configuration: a certificate for
// names (and the loopback addresses, localhost and this machine's host
// name) signed by the store's CA, which is made on first use (ten years)
// and kept. The server's certificate is made anew at each start (one
// year), so a changed listen address needs nothing done.
func (s *Store) ServerTLS(names []string) (*tls.Config, error) {
	ca, caKey, err := loadOrMakeCA(s.CAFile(), s.caKeyFile(), "dcpi cluster CA")
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("auth: tls: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "dcpi nats-server"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if h, err := os.Hostname(); err == nil {
		tmpl.DNSNames = append(tmpl.DNSNames, h)
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			if !ip.IsUnspecified() {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if n != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	if ifs, err := net.InterfaceAddrs(); err == nil {
		// Listening on 0.0.0.0 serves every address the machine has.
		for _, a := range ifs {
			if ipn, ok := a.(*net.IPNet); ok {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ipn.IP)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("auth: tls: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("auth: tls: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	if err := writeSecret(filepath.Join(s.dir, "server.pem"), certPEM); err != nil {
		return nil, err
	}
	if err := writeSecret(filepath.Join(s.dir, "server-key.pem"), keyPEM); err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("auth: tls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

// loadOrMakeCA reads the CA of certFile and keyFile, or makes one named
// name if certFile does not exist.
func loadOrMakeCA(certFile, keyFile, name string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPEM, err := os.ReadFile(certFile)
	if errors.Is(err, fs.ErrNotExist) {
		return makeCA(certFile, keyFile, name)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("auth: tls: %w", err)
	}
	if err := transport.CheckSecretFile(keyFile); err != nil {
		return nil, nil, fmt.Errorf("auth: tls: CA key: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: tls: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("auth: tls: %s or %s is not PEM", certFile, keyFile)
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: tls: %s: %w", certFile, err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: tls: %s: %w", keyFile, err)
	}
	return ca, key, nil
}

func makeCA(certFile, keyFile, name string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: tls: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: tls: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("auth: tls: %w", err)
	}
	if err := writeSecret(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})); err != nil {
		return nil, nil, err
	}
	if err := writeSecret(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		return nil, nil, err
	}
	ca, _ := x509.ParseCertificate(der)
	return ca, key, nil
}

// IsLoopback says whether a listen address is loopback only (no TLS
// needed: only this machine's processes reach it).
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
