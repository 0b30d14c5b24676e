package main

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tlsfiles"
)

// tlsFlags are serve's and dev's flags for HTTPS, client certificates and
// the plain listener of probes and scrapers.
type tlsFlags struct {
	CertFile, KeyFile string
	ClientCAFile      string
	ClientAuth        string // require (or "") or optional
	OpsListen         string
	// opsBound, if set, is told the ops listener's address (tests).
	opsBound func(addr string)
}

func (f *tlsFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.CertFile, "tls-cert-file", "", "serve HTTPS (TLS 1.2 or newer) with this PEM certificate, chain included; read again when it changes. Needs --tls-key-file")
	fs.StringVar(&f.KeyFile, "tls-key-file", "", "the PEM private key of --tls-cert-file, read again when it changes (replace the key, then the certificate, each by a rename)")
	fs.StringVar(&f.ClientCAFile, "tls-client-ca-file", "", "ask for client certificates (mTLS) and accept those these PEM CAs issued for client authentication, checked on every request; read again when it changes. Needs --tls-cert-file")
	fs.StringVar(&f.ClientAuth, "tls-client-auth", "require", "with --tls-client-ca-file: require (every request on the API listener comes with a valid certificate) or optional (a certificate presented must be valid; callers without one prove who they are by bearer key or JWT)")
	fs.StringVar(&f.OpsListen, "ops-listen", "", "also serve /livez, /readyz and /metrics, and nothing else, on this address in plain HTTP, for the probes and scrapers beside the process; off by default")
	completeFiles(cmd, "tls-cert-file", "pem", "crt")
	completeFiles(cmd, "tls-key-file", "pem", "key")
	completeFiles(cmd, "tls-client-ca-file", "pem", "crt")
	completeWords(cmd, "tls-client-auth", "require", "optional")
}

func (f *tlsFlags) check() error {
	switch {
	case (f.CertFile == "") != (f.KeyFile == ""):
		return fmt.Errorf("%w: --tls-cert-file and --tls-key-file go together", errUsage)
	case f.ClientCAFile != "" && f.CertFile == "":
		return fmt.Errorf("%w: --tls-client-ca-file needs --tls-cert-file and --tls-key-file: client certificates come over TLS", errUsage)
	case f.ClientAuth != "" && f.ClientAuth != "require" && f.ClientAuth != "optional":
		return fmt.Errorf("%w: --tls-client-auth %q: want require or optional", errUsage, f.ClientAuth)
	}
	return nil
}

// checkPolicy refuses a policy whose clients prove who they are by a
// certificate the gateway would never ask for.
func (f *tlsFlags) checkPolicy(pol *policy.Policy) error {
	if pol.UsesCertificates() && f.ClientCAFile == "" {
		return fmt.Errorf("%w: the policy knows clients by their certificates: set --tls-client-ca-file (and --tls-cert-file, --tls-key-file)", errUsage)
	}
	return nil
}

// scheme is the API listener's URL scheme.
func (f *tlsFlags) scheme() string {
	if f.CertFile != "" {
		return "https"
	}
	return "http"
}

// server loads the TLS files, or returns nil without --tls-cert-file. A
// later change that does not load is logged and counted in failures.
func (f *tlsFlags) server(log *slog.Logger, failures *prometheus.CounterVec) (*tlsfiles.Server, error) {
	if f.CertFile == "" {
		return nil, nil
	}
	s, err := tlsfiles.NewServer(tlsfiles.ServerFiles{
		CertFile: f.CertFile, KeyFile: f.KeyFile, ClientCAFile: f.ClientCAFile, ClientCertOptional: f.ClientAuth == "optional",
	}, tlsfiles.Options{OnReloadError: func(what string, err error) { reloadFailed(log, failures, "tls-"+what, err) }})
	if err != nil {
		return nil, fmt.Errorf("--tls-cert-file, --tls-key-file, --tls-client-ca-file: %w", err)
	}
	return s, nil
}

// newReloadFailures counts the changes to credential files that did not
// load, by file.
func newReloadFailures() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fencegw_credential_reload_failures_total",
		Help: "Changes to the TLS certificate and key, the client CA bundle, the JWKS or the token KEK file that did not load; the files as they were stay in force (see the log).",
	}, []string{"file"})
}

// reloadFailed logs and counts a change to a credential file that did not
// load.
func reloadFailed(log *slog.Logger, failures *prometheus.CounterVec, file string, err error) {
	failures.WithLabelValues(file).Inc()
	log.Error("a changed credential file did not load; the one before stays in force", slog.String("file", file), slog.String("error", err.Error()))
}
