package pgcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// TLS is the server side of TLS for a cluster, from files the caller made
// (a test's certificates). Clients may still connect without TLS: the
// cluster's pg_hba.conf is initdb's, which allows both; sslmode decides.
type TLS struct {
	// CertFile and KeyFile are the server's certificate and private key.
	CertFile, KeyFile string
	// CAFile, if set, verifies the certificates clients present.
	CAFile string
}

// tlsDir holds the cluster's copies of its TLS files.
const tlsDir = "tls"

// installTLS copies t's files into the cluster's folder, owned by the user
// that runs postgres and readable by it alone, and returns the settings
// that turn ssl on with them. Copies, not the files themselves:
// PostgreSQL refuses a key file that others may read, and when the tests
// run as root the server runs as another user, who may not read the
// caller's files at all.
func (c *Cluster) installTLS(t *TLS) (map[string]string, error) {
	dir := filepath.Join(c.dir, tlsDir)
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return nil, fmt.Errorf("install TLS files: %w", err)
	}
	settings := map[string]string{"ssl": "on"}
	files := []struct{ from, to, setting string }{
		{t.CertFile, "server.crt", "ssl_cert_file"},
		{t.KeyFile, "server.key", "ssl_key_file"},
		{t.CAFile, "ca.crt", "ssl_ca_file"},
	}
	owned := []string{dir}
	for _, f := range files {
		if f.from == "" {
			continue
		}
		data, err := os.ReadFile(f.from)
		if err != nil {
			return nil, fmt.Errorf("install TLS files: %w", err)
		}
		to := filepath.Join(dir, f.to)
		if err := os.WriteFile(to, data, 0o600); err != nil {
			return nil, fmt.Errorf("install TLS files: %w", err)
		}
		// WriteFile keeps the mode of a file that already exists.
		if err := os.Chmod(to, 0o600); err != nil {
			return nil, fmt.Errorf("install TLS files: %w", err)
		}
		owned = append(owned, to)
		settings[f.setting] = to
	}
	if err := c.runAs.chown(owned...); err != nil {
		return nil, fmt.Errorf("install TLS files: %w", err)
	}
	return settings, nil
}
