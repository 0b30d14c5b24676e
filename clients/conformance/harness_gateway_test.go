package conformance_test

import (
	"path/filepath"
	"time"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/client"
	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testcerts"
	"github.com/fencegw/fencegw/internal/harness/testenv"
	"github.com/fencegw/fencegw/internal/harness/testjwt"
	"github.com/fencegw/fencegw/jwtauth"
	"github.com/fencegw/fencegw/schema"
	"github.com/fencegw/fencegw/tlsfiles"
	"net/http"
)

// The scenarios of what happens to the gateway around the client: signing
// keys rotated, a watch's stream cut, TLS and rotating credentials.
func init() {
	harnesses["key-rotation"] = harness{
		steps: map[string]func(*run, map[string]any) map[string]any{
			"holding": func(s *run, _ map[string]any) map[string]any {
				if _, err := s.e.main.auth.RotateKey(s.ctx, 0); err != nil {
					s.t.Errorf("rotate: %v", err)
					return harnessError(err)
				}
				if err := s.e.reloadKeys(s.ctx); err != nil {
					s.t.Errorf("reload: %v", err)
				}
				return nil
			},
			"resigned": func(s *run, _ map[string]any) map[string]any {
				if _, err := s.e.main.auth.RetireKeys(s.ctx, authority.RetireOptions{Keep: 1, Force: true}); err != nil {
					s.t.Errorf("retire: %v", err)
					return harnessError(err)
				}
				if err := s.e.reloadKeys(s.ctx); err != nil {
					s.t.Errorf("reload: %v", err)
				}
				return nil
			},
		},
		check: func(s *run, _ map[string]any) { s.checkFree(s.sc.Params.str("resource")) },
	}

	harnesses["watch-resume"] = harness{
		steps: map[string]func(*run, map[string]any) map[string]any{
			"synced": func(s *run, _ map[string]any) map[string]any {
				pr := s.e.proxy
				pr.setHold(true)
				defer pr.setHold(false)
				if pr.activeWatches() == 0 {
					s.t.Errorf("no watch stream to cut")
				}
				pr.cutWatches()
				for range 2 {
					l, err := s.e.client.Acquire(s.ctx, s.sc.Params.str("resource"), client.AcquireOptions{TTL: 10 * time.Second, Wait: 10 * time.Second})
					if err != nil {
						s.t.Errorf("the harness's lease: %v", err)
						return harnessError(err)
					}
					if err := l.Release(s.ctx); err != nil {
						s.t.Errorf("release: %v", err)
					}
				}
				return nil
			},
		},
		check: func(s *run, _ map[string]any) {
			resumed := false
			for _, r := range s.e.proxy.requests("watch") {
				resumed = resumed || r.LastEventID != ""
			}
			if !resumed {
				s.t.Errorf("no watch request carried Last-Event-ID: the watch did not resume")
			}
		},
	}

	harnesses["tls-bearer-file"] = harness{setup: tlsSetup, steps: map[string]func(*run, map[string]any) map[string]any{
		"refused": func(s *run, _ map[string]any) map[string]any {
			key := s.state["jwt"].(*testjwt.Key)
			testcerts.Replace(s.t, s.state["bearer_file"].(string), []byte(key.Sign(s.t, testjwt.Claims("iss", "fencegw", podSubject))+"\n"))
			return nil
		},
	}}
}

const (
	podSubject = "system:serviceaccount:billing:billing"
	spiffeID   = "spiffe://example.org/billing"
)

// tlsSetup serves the conformance policy over HTTPS on a database of its
// own, with two clients: billing by its certificate (a SPIFFE ID), pod by
// a JWT; the runner gets billing's certificate and a bearer file holding
// pod's JWT, expired.
func tlsSetup(s *run, gw *gatewaySpec, vars map[string]any) {
	t := s.t
	dir := t.TempDir()
	serverCA, clients := testcerts.NewCA(t, "gateway CA"), testcerts.NewCA(t, "clients")
	certFile, keyFile := serverCA.Server(t, "localhost", "127.0.0.1").Write(t, dir, "gw")
	srv, err := tlsfiles.NewServer(tlsfiles.ServerFiles{CertFile: certFile, KeyFile: keyFile,
		ClientCAFile: clients.WriteCA(t, dir, "clients.pem"), ClientCertOptional: true}, tlsfiles.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key := testjwt.EC(t, "k")
	jwks := filepath.Join(dir, "jwks.json")
	testjwt.WriteJWKS(t, jwks, key)
	v, err := jwtauth.New(jwtauth.Config{JWKSFile: jwks, Issuer: "iss", Audience: "fencegw"})
	if err != nil {
		t.Fatal(err)
	}
	dbURL := testenv.NewDatabase(t)
	if err := schema.Up(dbURL, schema.Gateway(), schema.Dir("../../testdata/demo/migrations", "demo_schema_migrations")); err != nil {
		t.Fatal(err)
	}
	pol := conformancePolicy(t) + `
clients:
  billing:
    certificate: {uri: "` + spiffeID + `"}
    operations: [debit, credit]
  pod:
    jwt: {subject: "` + podSubject + `"}
    operations: [debit, credit]
`
	r := s.e.startReplica(t, dbURL, pol, func(c *gateway.Config, hs *http.Server) {
		c.ClientCAs, c.VerifyJWT = srv.ClientCAs, v.Verify
		hs.TLSConfig = srv.Config()
	})
	billingCert, billingKey := clients.Issue(t, testcerts.Leaf{URIs: []string{spiffeID}}).Write(t, dir, "billing")
	expired := testjwt.Claims("iss", "fencegw", podSubject)
	expired["exp"] = time.Now().Add(-time.Hour).Unix()
	bearerFile := filepath.Join(dir, "token")
	testcerts.Replace(t, bearerFile, []byte(key.Sign(t, expired)+"\n"))
	*gw = gatewaySpec{URLs: []string{r.URL}, CAFile: serverCA.WriteCA(t, dir, "gateway-ca.pem"), CertFile: billingCert, KeyFile: billingKey}
	vars["bearer_file"] = bearerFile
	s.state["jwt"], s.state["bearer_file"] = key, bearerFile
}
