package busface

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/weavehq/weave/bus"
	"github.com/weavehq/weave/bus/bustest"
	"github.com/weavehq/weave/config"
)

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// openNATS opens the bus at url with cfg's bus.nats.* and checks that it
// serves a round trip.
func openNATS(t *testing.T, cfg *config.Config, url string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bustest.Deadline)
	defer cancel()
	cfg.Bus.Backend = "nats"
	b, closeBus, err := Open(ctx, cfg, url)
	if err != nil {
		return err
	}
	defer closeBus()
	if _, err := b.Publish(ctx, bus.Message{Topic: "inbound:x", Payload: json.RawMessage(`{}`)}); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	return nil
}

// TestNATSCredentialKinds: each way of giving weave its NATS credentials
// joins a server that asks for them, and the same server refuses weave
// without them.
func TestNATSCredentialKinds(t *testing.T) {
	user, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := user.PublicKey()
	seed, _ := user.Seed()
	ca, serverCert, serverKey, clientCert, clientKey := testPKI(t)

	cases := []struct {
		name string
		conf string
		set  func(t *testing.T, n *config.NATSConfig)
	}{
		{"token file", `authorization { token: "tok-3f9a-secret" }`, func(t *testing.T, n *config.NATSConfig) {
			n.TokenFile = writeFile(t, "token", "tok-3f9a-secret\n")
		}},
		{"token env", `authorization { token: "tok-3f9a-secret" }`, func(t *testing.T, n *config.NATSConfig) {
			t.Setenv("TEST_NATS_TOKEN", "tok-3f9a-secret")
			n.TokenEnv = "TEST_NATS_TOKEN"
		}},
		{"user and password env", `authorization { users: [{user: weave, password: "pw-77e1-secret"}] }`, func(t *testing.T, n *config.NATSConfig) {
			t.Setenv("TEST_NATS_PASSWORD", "pw-77e1-secret")
			n.User, n.PasswordEnv = "weave", "TEST_NATS_PASSWORD"
		}},
		{"user and password file", `authorization { users: [{user: weave, password: "pw-77e1-secret"}] }`, func(t *testing.T, n *config.NATSConfig) {
			n.User, n.PasswordFile = "weave", writeFile(t, "pw", "pw-77e1-secret\n")
		}},
		{"nkey seed file", fmt.Sprintf(`authorization { users: [{nkey: %q}] }`, pub), func(t *testing.T, n *config.NATSConfig) {
			n.NKeyFile = writeFile(t, "user.nk", string(seed)+"\n")
		}},
		{"tls with a client certificate", fmt.Sprintf(`tls { cert_file: %q, key_file: %q, ca_file: %q, verify: true }`, serverCert, serverKey, ca),
			func(t *testing.T, n *config.NATSConfig) {
				n.CAFile, n.CertFile, n.KeyFile, n.ServerName = ca, clientCert, clientKey, "nats.test"
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := bustest.StartNATSConfig(t, c.conf).URL()
			if err := openNATS(t, config.Default(), url); err == nil {
				t.Fatal("joined without credentials")
			}
			cfg := config.Default()
			c.set(t, &cfg.Bus.NATS)
			if err := openNATS(t, cfg, url); err != nil {
				t.Fatalf("with %s: %v", c.name, err)
			}
		})
	}
}

// TestNATSCredentialMistakes: mistakes in bus.nats.* are named, and no
// message shows a secret.
func TestNATSCredentialMistakes(t *testing.T) {
	t.Setenv("TEST_NATS_TOKEN", "")
	cases := []struct {
		name, want string
		set        func(n *config.NATSConfig)
		url        string
	}{
		{"two kinds", "give one kind only", func(n *config.NATSConfig) {
			n.User, n.PasswordFile, n.TokenFile = "u", writeFile(t, "pw", "p"), writeFile(t, "tok", "t")
		}, ""},
		{"unset variable", "TEST_NATS_TOKEN, which is not set", func(n *config.NATSConfig) { n.TokenEnv = "TEST_NATS_TOKEN" }, ""},
		{"url and keys", "carries credentials and bus.nats.* gives some too", func(n *config.NATSConfig) { n.TokenFile = writeFile(t, "tok", "t") }, "nats://u:url-secret-9@127.0.0.1:1"},
		{"password without user", "both are needed", func(n *config.NATSConfig) { n.PasswordFile = writeFile(t, "pw", "p") }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Default()
			c.set(&cfg.Bus.NATS)
			url := c.url
			if url == "" {
				url = "nats://127.0.0.1:1"
			}
			err := openNATS(t, cfg, url)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open = %v, want %q", err, c.want)
			}
			if strings.Contains(err.Error(), "url-secret-9") {
				t.Errorf("the error shows the URL's password: %v", err)
			}
		})
	}
}

// testPKI writes a CA, a server certificate for nats.test and 127.0.0.1,
// and a client certificate, all signed by the CA, as PEM files.
func testPKI(t *testing.T) (ca, serverCert, serverKey, clientCert, clientKey string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "weave test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	leaf := func(name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			DNSNames: []string{"nats.test"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, _ := x509.MarshalECPrivateKey(k)
		return writeFile(t, name+".pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))),
			writeFile(t, name+".key", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})))
	}
	ca = writeFile(t, "ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})))
	serverCert, serverKey = leaf("server", 2, x509.ExtKeyUsageServerAuth)
	clientCert, clientKey = leaf("client", 3, x509.ExtKeyUsageClientAuth)
	return ca, serverCert, serverKey, clientCert, clientKey
}
