package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"dcpi/transport/natstest"
)

// writeCert makes a certificate signed by parent (self-signed when parent
// is nil) and writes it and its key as PEM files.
func writeCert(t *testing.T, dir, name string, isCA bool, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IsCA:         isCA, BasicConstraintsValid: true,
	}
	signer, signKey := tmpl, key
	if parent != nil {
		signer, signKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return cert, key, certFile, keyFile
}

// TestConnectMutualTLS runs a NATS server that requires TLS with client
// certificates, as an external cluster configured by nats.ca, nats.cert
// and nats.key would, and publishes a batch through it; without the
// client certificate the connection is refused.
func TestConnectMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, caFile, _ := writeCert(t, dir, "ca", true, nil, nil)
	_, _, srvCert, srvKey := writeCert(t, dir, "server", false, ca, caKey)
	_, _, cliCert, cliKey := writeCert(t, dir, "client", false, ca, caKey)

	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: srvCert, KeyFile: srvKey, CaFile: caFile, Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	tc.MinVersion = tls.VersionTLS12
	url := natstest.StartServer(t, natstest.Options{TLS: tc}).URL()

	nc, err := Connect(ConnConfig{URLs: []string{url}, Name: "tls-test", CAFile: caFile, CertFile: cliCert, KeyFile: cliKey})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := EnsureStream(ctx, js, 1); err != nil {
		t.Fatalf("over mutual TLS: %v", err)
	}
	if !nc.TLSRequired() {
		t.Error("connection does not report TLS")
	}

	// Without a client certificate the server refuses the handshake.
	bad, err := nats.Connect(url, nats.RootCAs(caFile), nats.Timeout(2*time.Second))
	if err == nil {
		bad.Close()
		t.Fatal("connected without a client certificate")
	}
}
