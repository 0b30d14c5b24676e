package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencegw/fencegw/authority"
)

// etcdAccess is how a command gets into etcd beyond its endpoints: TLS
// files and a user. clientConfig reads the files, once, at start.
type etcdAccess struct {
	CACert, Cert, Key  string
	User, PasswordFile string
}

// etcdctlEnv are etcdctl's variables, read after FENCEGW_<FLAG>, so that
// an operator's etcdctl environment works as it is. ETCDCTL_USER is not
// read: it holds a password.
var etcdctlEnv = map[string]string{
	"etcd": "ETCDCTL_ENDPOINTS", "etcd-cacert": "ETCDCTL_CACERT", "etcd-cert": "ETCDCTL_CERT", "etcd-key": "ETCDCTL_KEY",
}

// bindEtcdAccess registers a's flags on fs; with fromEnv their defaults
// come from the environment, as bindBackends' do.
func bindEtcdAccess(cmd *cobra.Command, fs *pflag.FlagSet, a *etcdAccess, fromEnv bool) {
	flag := func(p *string, name, usage string) {
		def, vars := "", []string{envName(name)}
		if v := etcdctlEnv[name]; v != "" {
			vars = append(vars, v)
		}
		if fromEnv {
			def = envOr("", vars...)
			usage += " (" + strings.Join(vars, ", ") + ")"
		} else {
			usage += " (with --etcd only)"
		}
		fs.StringVar(p, name, def, usage)
		showDefault(fs, name, "")
	}
	flag(&a.CACert, "etcd-cacert", "`FILE` of CA certificates (PEM) that verify etcd's server certificate; turns TLS to etcd on")
	flag(&a.Cert, "etcd-cert", "client certificate `FILE` (PEM) for an etcd that wants one (--client-cert-auth), with --etcd-key; turns TLS on")
	flag(&a.Key, "etcd-key", "private key `FILE` (PEM) of --etcd-cert")
	flag(&a.User, "etcd-user", "etcd `USER`, when etcd's auth is on, with --etcd-password-file")
	flag(&a.PasswordFile, "etcd-password-file", "`FILE` holding --etcd-user's password, one line, read once at start")
	for _, name := range []string{"etcd-cacert", "etcd-cert", "etcd-key", "etcd-password-file"} {
		completeFiles(cmd, name, "pem", "crt", "key", "txt")
	}
}

// set reports whether any of a's flags was given.
func (a etcdAccess) set() bool { return a != etcdAccess{} }

// clientConfig reads the files a names into the configuration of a
// client of endpoints. An error names the command cmd, the flag and its
// file, never a password.
func (a etcdAccess) clientConfig(endpoints []string, cmd string) (authority.ClientConfig, error) {
	cc := authority.ClientConfig{Endpoints: endpoints, Username: a.User}
	switch {
	case (a.Cert == "") != (a.Key == ""):
		return cc, fmt.Errorf("%w: %s: --etcd-cert and --etcd-key go together: a certificate and its key", errUsage, cmd)
	case (a.User == "") != (a.PasswordFile == ""):
		return cc, fmt.Errorf("%w: %s: --etcd-user and --etcd-password-file go together", errUsage, cmd)
	}
	if a.CACert != "" || a.Cert != "" {
		for _, ep := range endpoints {
			if strings.HasPrefix(ep, "http://") {
				return cc, fmt.Errorf("%w: %s: --etcd %s is plaintext (http://), but TLS to etcd is on (--etcd-cacert or --etcd-cert): write https:// or HOST:PORT", errUsage, cmd, ep)
			}
		}
		cc.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if a.CACert != "" {
		pem, err := os.ReadFile(a.CACert)
		if err != nil {
			return cc, fmt.Errorf("%s: --etcd-cacert: %w", cmd, err)
		}
		cc.TLS.RootCAs = x509.NewCertPool()
		if !cc.TLS.RootCAs.AppendCertsFromPEM(pem) {
			return cc, fmt.Errorf("%s: --etcd-cacert %s: no PEM certificate in it", cmd, a.CACert)
		}
	}
	if a.Cert != "" {
		pair, err := tls.LoadX509KeyPair(a.Cert, a.Key)
		if err != nil {
			return cc, fmt.Errorf("%s: --etcd-cert %s, --etcd-key %s: %w", cmd, a.Cert, a.Key, err)
		}
		cc.TLS.Certificates = []tls.Certificate{pair}
	}
	if a.PasswordFile != "" {
		data, err := os.ReadFile(a.PasswordFile)
		if err != nil {
			return cc, fmt.Errorf("%s: --etcd-password-file: %w", cmd, err)
		}
		if cc.Password, err = parsePassword(data); err != nil {
			return cc, fmt.Errorf("%s: --etcd-password-file %s: %w", cmd, a.PasswordFile, err)
		}
	}
	return cc, nil
}

// Password file problems; their words never include the file's.
var (
	errPasswordEmpty     = errors.New("no password in it")
	errPasswordMultiline = errors.New("more than one line: want the password alone, a newline after it at most")
)

// parsePassword is the password in a password file: its one line,
// without the line break an editor or `echo` leaves after it.
func parsePassword(data []byte) (string, error) {
	pw := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	switch {
	case pw == "":
		return "", errPasswordEmpty
	case strings.ContainsAny(pw, "\r\n"):
		return "", errPasswordMultiline
	}
	return pw, nil
}
