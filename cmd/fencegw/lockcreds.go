package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/fencegw/fencegw/client"
)

// lockCredentials are how `fencegw lock` proves who it is to the gateway
// and checks the gateway's certificate: files, never a credential on the
// command line.
type lockCredentials struct {
	caFile, certFile, keyFile string
	bearerFile                string
}

func (c *lockCredentials) bind(flags *pflag.FlagSet) {
	flags.StringVar(&c.caFile, "tls-ca-file", envOr("", "FENCEGW_TLS_CA_FILE"), "for an https:// gateway: the PEM CAs its certificate must chain to, instead of the system's (FENCEGW_TLS_CA_FILE)")
	flags.StringVar(&c.certFile, "tls-cert-file", envOr("", "FENCEGW_TLS_CERT_FILE"), "the PEM client certificate for a gateway that asks for one (mTLS); read again when it changes (FENCEGW_TLS_CERT_FILE)")
	flags.StringVar(&c.keyFile, "tls-key-file", envOr("", "FENCEGW_TLS_KEY_FILE"), "the PEM private key of --tls-cert-file (FENCEGW_TLS_KEY_FILE)")
	flags.StringVar(&c.bearerFile, "bearer-file", envOr("", "FENCEGW_BEARER_FILE"), "a file holding the bearer token or JWT (a Kubernetes projected service account token), read again before every request, as the kubelet rotates it (FENCEGW_BEARER_FILE)")
	for _, name := range []string{"tls-ca-file", "tls-cert-file", "tls-key-file", "bearer-file"} {
		showDefault(flags, name, "")
	}
}

// options are the client's options for these credentials, and bearer, the
// token of FENCEGW_BEARER_TOKEN.
func (c *lockCredentials) options(bearer string) ([]client.Option, error) {
	switch {
	case (c.certFile == "") != (c.keyFile == ""):
		return nil, fmt.Errorf("%w: lock: --tls-cert-file and --tls-key-file go together", errUsage)
	case c.bearerFile != "" && bearer != "":
		return nil, fmt.Errorf("%w: lock: FENCEGW_BEARER_TOKEN and --bearer-file both set: say one", errUsage)
	}
	opts := []client.Option{client.WithBearerToken(bearer)}
	if c.caFile != "" || c.certFile != "" {
		opts = append(opts, client.WithTLSFiles(client.TLSFiles{CAFile: c.caFile, CertFile: c.certFile, KeyFile: c.keyFile}))
	}
	if c.bearerFile != "" {
		opts = append(opts, client.WithBearerFile(c.bearerFile))
	}
	return opts, nil
}

// env passes the credential files on to the command, as FENCEGW_URL is:
// its own writes go to the same gateway.
func (c *lockCredentials) env() []string {
	var env []string
	for _, kv := range [][2]string{
		{"FENCEGW_TLS_CA_FILE", c.caFile}, {"FENCEGW_TLS_CERT_FILE", c.certFile},
		{"FENCEGW_TLS_KEY_FILE", c.keyFile}, {"FENCEGW_BEARER_FILE", c.bearerFile},
	} {
		if kv[1] != "" {
			env = append(env, kv[0]+"="+kv[1])
		}
	}
	return env
}

// unauthorizedHint says what to look at when the gateway answered 401.
func (c *lockCredentials) unauthorizedHint(bearer string) string {
	switch {
	case c.bearerFile != "":
		return "the credential in --bearer-file was refused"
	case bearer != "":
		return "the bearer token in FENCEGW_BEARER_TOKEN was refused"
	case c.certFile != "":
		return "the certificate of --tls-cert-file was refused; or set FENCEGW_BEARER_TOKEN or --bearer-file"
	}
	return "set FENCEGW_BEARER_TOKEN to this client's bearer token, or --bearer-file, or --tls-cert-file and --tls-key-file"
}
