package main

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/fencegw/fencegw/jwtauth"
	"github.com/fencegw/fencegw/policy"
)

// jwtFlags say whose JWTs serve trusts: the keys, the issuer and audience,
// and the claim that names the client. They are flags, not policy: the
// policy says who each client is, the same on every replica and in every
// cluster; these are facts of one deployment (which cluster's API server
// issues the tokens, where its keys are mounted), as the TLS files are.
type jwtFlags struct {
	JWKSFile    string
	Issuer      string
	Audience    string
	ClientClaim string
}

func (f *jwtFlags) bind(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.JWKSFile, "jwt-jwks-file", "", "accept JWT bearer credentials (such as Kubernetes projected service account tokens) signed by a key of this JWKS file (RS256, ES256, EdDSA, HS256), read again when it changes; needs --jwt-issuer and --jwt-audience")
	fs.StringVar(&f.Issuer, "jwt-issuer", "", "the iss a JWT must carry, e.g. https://kubernetes.default.svc")
	fs.StringVar(&f.Audience, "jwt-audience", "", "an aud a JWT must carry, e.g. fencegw")
	fs.StringVar(&f.ClientClaim, "jwt-client-claim", "sub", "the JWT claim whose value names the client, held against the policy's jwt: {subject: …}")
	completeFiles(cmd, "jwt-jwks-file", "json")
}

func (f *jwtFlags) check() error {
	if f.JWKSFile == "" && (f.Issuer != "" || f.Audience != "") {
		return fmt.Errorf("%w: --jwt-issuer and --jwt-audience need --jwt-jwks-file", errUsage)
	}
	if f.JWKSFile != "" && (f.Issuer == "" || f.Audience == "") {
		return fmt.Errorf("%w: --jwt-jwks-file needs --jwt-issuer and --jwt-audience: a JWT of any issuer, for any audience, is no proof", errUsage)
	}
	return nil
}

// verifier reads the JWKS file, or returns nil without --jwt-jwks-file. A
// policy of JWT clients needs one. A later change to the file that does
// not load is logged and counted in failures.
func (f *jwtFlags) verifier(pol *policy.Policy, log *slog.Logger, failures *prometheus.CounterVec) (*jwtauth.Verifier, error) {
	if f.JWKSFile == "" {
		if pol.UsesJWT() {
			return nil, fmt.Errorf("%w: the policy knows clients by their JWTs: set --jwt-jwks-file, --jwt-issuer and --jwt-audience", errUsage)
		}
		return nil, nil
	}
	v, err := jwtauth.New(jwtauth.Config{
		JWKSFile: f.JWKSFile, Issuer: f.Issuer, Audience: f.Audience, ClientClaim: f.ClientClaim, Leeway: jwtauth.DefaultLeeway,
		OnReloadError: func(err error) { reloadFailed(log, failures, "jwks", err) },
	})
	if err != nil {
		return nil, fmt.Errorf("--jwt-jwks-file: %w", err)
	}
	if !pol.UsesJWT() {
		log.Warn("--jwt-jwks-file is set, but the policy knows no client by its JWT: every JWT will name no client")
	}
	return v, nil
}
