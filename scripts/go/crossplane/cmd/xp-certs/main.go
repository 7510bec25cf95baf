// xp-certs makes certificates the way Crossplane's initializer does
// (internal/initializer, v2.2: cert_generator.go and tls.go), for tests that
// must meet the certificates a real Crossplane has.
//
// The templates copy Crossplane's field values: one subject for the CA and
// every leaf, RSA 2048, PKCS#1 keys, serial 2022, ten years. Because a leaf's
// issuer then equals its subject, crypto/x509 writes no authority key
// identifier into it, and OpenSSL takes the leaf for self-signed: the trap
// the function must not fall into. Dates can be moved to make certificates
// that are expired or not yet valid.
//
//	xp-certs ca   --out DIR                       ca.crt, tls.crt (the same), tls.key
//	xp-certs sign --ca DIR --usage client|server --out DIR [--dns NAME]... [--not-before T] [--not-after T]
//	                                              tls.crt, tls.key and ca.crt (the signer's)
package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Crossplane's pkixName: the subject of its CA and of every certificate it signs.
var crossplaneName = pkix.Name{
	CommonName:   "Crossplane",
	Organization: []string{"Crossplane"},
	Country:      []string{"Earth"},
	Province:     []string{"Earth"},
	Locality:     []string{"Earth"},
}

type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: xp-certs ca|sign [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "ca":
		err = makeCA(os.Args[2:])
	case "sign":
		err = sign(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want ca or sign", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "xp-certs:", err)
	os.Exit(1)
}

func dates(fs *flag.FlagSet, args []string) (notBefore, notAfter time.Time, err error) {
	nb := fs.String("not-before", "", "RFC 3339 start of validity (default now)")
	na := fs.String("not-after", "", "RFC 3339 end of validity (default ten years after the start)")
	if err = fs.Parse(args); err != nil {
		return
	}
	notBefore = time.Now()
	if *nb != "" {
		if notBefore, err = time.Parse(time.RFC3339, *nb); err != nil {
			return
		}
	}
	notAfter = notBefore.AddDate(10, 0, 0)
	if *na != "" {
		notAfter, err = time.Parse(time.RFC3339, *na)
	}
	return
}

// makeCA writes a CA as TLSCertificateGenerator.ensureClientCertificate's caller makes it.
func makeCA(args []string) error {
	fs := flag.NewFlagSet("ca", flag.ContinueOnError)
	out := fs.String("out", "", "directory to write ca.crt, tls.crt and tls.key into")
	notBefore, notAfter, err := dates(fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		return errors.New("ca: --out is required")
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(2022),
		Subject:               crossplaneName,
		Issuer:                crossplaneName,
		DNSNames:              []string{"crossplane-root-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCRLSign | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	key, crt, err := generate(tmpl, nil, nil)
	if err != nil {
		return err
	}
	// Crossplane's CA Secret holds the pair as tls.crt/tls.key; ca.crt is the same certificate.
	return write(*out, map[string][]byte{"tls.key": key, "tls.crt": crt, "ca.crt": crt})
}

// sign writes a leaf as ensureClientCertificate / ensureServerCertificate make it.
func sign(args []string) error {
	fs := flag.NewFlagSet("sign", flag.ContinueOnError)
	caDir := fs.String("ca", "", "directory holding the signer's tls.crt and tls.key")
	usage := fs.String("usage", "", "client or server")
	out := fs.String("out", "", "directory to write tls.crt, tls.key and ca.crt into")
	var dns names
	fs.Var(&dns, "dns", "a DNS name (repeatable)")
	notBefore, notAfter, err := dates(fs, args)
	if err != nil {
		return err
	}
	if *caDir == "" || *out == "" {
		return errors.New("sign: --ca and --out are required")
	}
	var eku x509.ExtKeyUsage
	switch *usage {
	case "client":
		eku = x509.ExtKeyUsageClientAuth
		if len(dns) == 0 {
			// core init: the service account and namespace Crossplane runs as.
			dns = names{"crossplane.crossplane-system"}
		}
	case "server":
		eku = x509.ExtKeyUsageServerAuth
		if len(dns) == 0 {
			return errors.New("sign: a server certificate needs --dns")
		}
	default:
		return fmt.Errorf("sign: --usage is %q; want client or server", *usage)
	}
	caCert, caKey, caPEM, err := load(*caDir)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(2022),
		Subject:               crossplaneName,
		DNSNames:              dns,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  false,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageDataEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{eku},
		BasicConstraintsValid: true,
	}
	key, crt, err := generate(tmpl, caCert, caKey)
	if err != nil {
		return err
	}
	return write(*out, map[string][]byte{"tls.key": key, "tls.crt": crt, "ca.crt": caPEM})
}

// generate is CertGenerator.Generate: a new RSA 2048 key, the certificate
// signed by the parent (or by itself), both PEM-encoded, the key as PKCS#1.
func generate(tmpl, parent *x509.Certificate, parentKey *rsa.PrivateKey) (keyPEM, crtPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	var k, c bytes.Buffer
	if err := pem.Encode(&c, &pem.Block{Type: "CERTIFICATE", Bytes: der}); err != nil {
		return nil, nil, err
	}
	if err := pem.Encode(&k, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}); err != nil {
		return nil, nil, err
	}
	return k.Bytes(), c.Bytes(), nil
}

func load(dir string) (*x509.Certificate, *rsa.PrivateKey, []byte, error) {
	crtPEM, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	if err != nil {
		return nil, nil, nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, "tls.key"))
	if err != nil {
		return nil, nil, nil, err
	}
	cb, _ := pem.Decode(crtPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, nil, fmt.Errorf("%s: tls.crt or tls.key is not PEM", dir)
	}
	crt, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := x509.ParsePKCS1PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, nil, err
	}
	return crt, key, crtPEM, nil
}

func write(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, data := range files {
		// 0644, as a Secret volume mounts its keys by default.
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
