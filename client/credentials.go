package client

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/fencegw/fencegw/internal/reload"
	"github.com/fencegw/fencegw/tlsfiles"
)

// TLSFiles name the PEM files of a client of an https:// gateway; each is
// optional.
type TLSFiles struct {
	// CAFile holds the CAs the gateway's certificate must chain to; empty:
	// the system's. Read once.
	CAFile string
	// CertFile and KeyFile are the client's certificate and key, for a
	// gateway that asks for one (mTLS): read again when they change.
	CertFile, KeyFile string
}

// WithTLSFiles speaks TLS 1.2 or newer to the gateway with f's files, over
// a transport of its own (http.DefaultTransport's settings otherwise): it
// replaces a client given by WithHTTPClient before it. A file that does
// not load is the error of every call.
func WithTLSFiles(f TLSFiles) Option {
	return func(c *Client) {
		cfg, err := tlsfiles.Client(tlsfiles.ClientFiles{CAFile: f.CAFile, CertFile: f.CertFile, KeyFile: f.KeyFile}, tlsfiles.Options{})
		if err != nil {
			c.optErr = fmt.Errorf("%w: TLS files: %w", ErrBadOptions, err)
			return
		}
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg
		c.http = &http.Client{Transport: t}
	}
}

// WithBearerFile sends Authorization: Bearer with the contents of the file
// at path (surrounding white space trimmed): a bearer token, or a JWT such
// as a Kubernetes projected service account token, which the kubelet
// replaces before it expires. The file is read again before every request
// (an acquisition, a write, a keepalive) when it has changed; a change
// that cannot be read or is empty keeps the credential before. A file
// missing or empty at first is the error of every call. It overrides
// WithBearerToken.
func WithBearerFile(path string) Option {
	return func(c *Client) {
		f, err := reload.Load([]string{path}, func(b [][]byte) (string, error) {
			return strings.TrimSpace(string(b[0])), nil
		}, reload.Options{Interval: time.Nanosecond})
		if err != nil {
			c.optErr = fmt.Errorf("%w: bearer file: %w", ErrBadOptions, err)
			return
		}
		c.bearerFile = f
	}
}

// bearerToken is the credential to send, "" for none.
func (c *Client) bearerToken() string {
	if c.bearerFile != nil {
		return c.bearerFile.Current()
	}
	return c.bearer
}
