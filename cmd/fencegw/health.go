package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/tlsfiles"
)

// healthCommand is `fencegw health URL`: a probe for where no HTTP client
// is at hand (the image is distroless: no shell, no curl), such as a
// container's healthcheck.
func healthCommand() *cobra.Command {
	var o healthOptions
	cmd := &cobra.Command{
		Use:   "health [URL]",
		Short: "exit 0 if a gateway's URL (default its /readyz) answers 2xx, else 1",
		Long: `Asks URL (default http://127.0.0.1:8080/readyz) once and exits 0 when it
answers 2xx, 1 otherwise (any other answer, none within --timeout), saying
why on stderr. For a container's healthcheck: the image has no shell or
HTTP client. An https:// URL is checked against --tls-ca-file (else the
system's CAs), with --tls-cert-file and --tls-key-file for a gateway that
wants a client certificate on its API port (probe --ops-listen instead).`,
		Example: `  fencegw health                                   # http://127.0.0.1:8080/readyz
  fencegw health http://127.0.0.1:9091/livez         # the ops listener
  fencegw health --tls-ca-file ca.crt https://127.0.0.1:8443/readyz`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target := "http://127.0.0.1:8080/readyz"
			if len(args) == 1 {
				target = args[0]
			}
			return runHealth(cmd.Context(), o, target, cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.DurationVar(&o.timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	fs.StringVar(&o.tls.CAFile, "tls-ca-file", "", "CAs the gateway's certificate must chain to (https://)")
	fs.StringVar(&o.tls.CertFile, "tls-cert-file", "", "client certificate, for a gateway that wants one")
	fs.StringVar(&o.tls.KeyFile, "tls-key-file", "", "its key")
	return cmd
}

type healthOptions struct {
	timeout time.Duration
	tls     tlsfiles.ClientFiles
}

// runHealth serves `fencegw health`.
func runHealth(ctx context.Context, o healthOptions, target string, errOut io.Writer) error {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: health: %q: want an http:// or https:// URL", errUsage, target)
	}
	if o.timeout <= 0 {
		return fmt.Errorf("%w: health: --timeout must be positive", errUsage)
	}
	transport := &http.Transport{}
	if u.Scheme == "https" {
		if transport.TLSClientConfig, err = tlsfiles.Client(o.tls, tlsfiles.Options{}); err != nil {
			return fmt.Errorf("%w: health: %w", errUsage, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("%w: health: %w", errUsage, err)
	}
	resp, err := (&http.Client{Transport: transport}).Do(req)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("health: %s: %w", u.Redacted(), err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return &exitError{code: 1, err: fmt.Errorf("health: %s: %s: %s", u.Redacted(), resp.Status, strings.TrimSpace(string(body)))}
	}
	fmt.Fprintf(errOut, "health: %s: %s\n", u.Redacted(), resp.Status)
	return nil
}
