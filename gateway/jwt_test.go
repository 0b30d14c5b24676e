package gateway_test

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/fencegw/fencegw/gateway"
	"github.com/fencegw/fencegw/internal/harness/testjwt"
	"github.com/fencegw/fencegw/jwtauth"
)

const (
	jwtIssuer   = "https://kubernetes.default.svc"
	jwtAudience = "fencegw"
	podSubject  = "system:serviceaccount:billing:billing"
)

// TestJWTClients: a client known by its JWT's subject takes leases and
// writes with a JWT as its bearer credential, a rotated JWT included (its
// tokens are bound to its name, not to one JWT). A JWT that fails a check
// is a 401 naming the check, quoting nothing of it, and writes nothing.
func TestJWTClients(t *testing.T) {
	h := newHarness(t, demoPolicy(t, "monotonic")+`
clients:
  pod:
    jwt: {subject: "`+podSubject+`"}
    operations: [debit, credit]
  other:
    jwt: {subject: "system:serviceaccount:billing:other"}
    operations: [debit, credit]
  opener:
    token_sha256: `+sha256Hex("opener-secret")+`
    operations: [open_account]
`)
	rs, es := testjwt.RSA(t, "rs"), testjwt.EC(t, "es")
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	testjwt.WriteJWKS(t, jwks, rs, es)
	v, err := jwtauth.New(jwtauth.Config{JWKSFile: jwks, Issuer: jwtIssuer, Audience: jwtAudience})
	if err != nil {
		t.Fatal(err)
	}
	gw := h.sibling(func(c *gateway.Config) { c.VerifyJWT = v.Verify })
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	claims := func(set func(jwt.MapClaims)) jwt.MapClaims {
		c := testjwt.Claims(jwtIssuer, jwtAudience, podSubject)
		set(c)
		return c
	}
	podJWT := rs.Sign(t, testjwt.Claims(jwtIssuer, jwtAudience, podSubject))
	r := gw.do(http.MethodPost, "/v1/leases", bearer(podJWT), `{"resource": "account/acct-71", "ttl": 30}`)
	if r.Status != http.StatusCreated {
		t.Fatalf("lease as pod by its JWT: %d %s", r.Status, r.Body)
	}
	var l struct {
		LeaseID string `json:"lease_id"`
		Token   string `json:"token"`
	}
	decodeJSON(t, r.Body, &l)
	defer gw.do(http.MethodDelete, "/v1/leases/"+l.LeaseID, bearer(podJWT), "")

	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: mustMarshalPKIX(t, &rs.Private.(*rsa.PrivateKey).PublicKey)})
	now := time.Now()
	for _, tt := range []struct {
		name   string
		gw     *harness
		jwt    string
		status int
		detail string
	}{
		{"alg none", gw, testjwt.SignWith(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, map[string]any{"kid": "rs"}, claims(func(jwt.MapClaims) {})), 401, "alg none is not accepted"},
		{"HS256 keyed with the RSA key's public bytes", gw, testjwt.SignWith(t, jwt.SigningMethodHS256, rsaPEM, map[string]any{"kid": "rs"}, claims(func(jwt.MapClaims) {})), 401, "alg HS256 does not fit its key"},
		{"unknown kid", gw, testjwt.SignWith(t, es.Method, es.Private, map[string]any{"kid": "retired"}, claims(func(jwt.MapClaims) {})), 401, "JWT key unknown"},
		{"a critical extension", gw, testjwt.SignWith(t, rs.Method, rs.Private, map[string]any{"kid": "rs", "crit": []string{"x"}, "x": 1}, claims(func(jwt.MapClaims) {})), 401, "JWT critical extension not understood"},
		{"bad signature", gw, testjwt.RSA(t, "rs").Sign(t, claims(func(jwt.MapClaims) {})), 401, "JWT signature invalid"},
		{"expired", gw, rs.Sign(t, claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() })), 401, "JWT expired"},
		{"not yet valid", gw, rs.Sign(t, claims(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Hour).Unix() })), 401, "JWT not yet valid"},
		{"wrong audience", gw, rs.Sign(t, claims(func(c jwt.MapClaims) { c["aud"] = "vault" })), 401, "JWT audience wrong"},
		{"wrong issuer", gw, rs.Sign(t, claims(func(c jwt.MapClaims) { c["iss"] = "https://elsewhere" })), 401, "JWT issuer wrong"},
		{"a huge header", gw, testjwt.SignWith(t, rs.Method, rs.Private, map[string]any{"kid": "rs", "pad": strings.Repeat("x", 9000)}, claims(func(jwt.MapClaims) {})), 401, "longer than 8192 bytes"},
		{"naming no client", gw, rs.Sign(t, claims(func(c jwt.MapClaims) { c["sub"] = "system:serviceaccount:x:y" })), 401, "the JWT names no client"},
		{"to a gateway that verifies none", h, podJWT, 401, "this gateway verifies none"},
		{"another client's token", gw, es.Sign(t, claims(func(c jwt.MapClaims) { c["sub"] = "system:serviceaccount:billing:other" })), 403, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hdr := bearer(tt.jwt)
			hdr.Set("Fencing-Token", l.Token)
			before := tt.gw.state()
			r := tt.gw.do(http.MethodPost, "/v1/ops/debit", hdr, debit("acct-71", 1))
			if r.Status != tt.status || !strings.Contains(r.Problem.Detail, tt.detail) {
				t.Fatalf("%d %s, want %d saying %q", r.Status, r.Body, tt.status, tt.detail)
			}
			if after := tt.gw.state(); after != before {
				t.Fatalf("refused request changed state: %s -> %s", before, after)
			}
			for _, part := range strings.Split(tt.jwt, ".") {
				if len(part) > 8 && strings.Contains(string(r.Body), part) {
					t.Fatalf("the problem quotes the JWT: %s", r.Body)
				}
			}
		})
	}
	// A projected token rotates: the next JWT names the same client, whose
	// lease and token are its own.
	rotated := es.Sign(t, claims(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Second).Unix() }))
	hdr := bearer(rotated)
	hdr.Set("Fencing-Token", l.Token)
	if r := gw.do(http.MethodPost, "/v1/ops/debit", hdr, debit("acct-71", 10)); r.Status != http.StatusOK {
		t.Fatalf("debit as pod with its rotated JWT: %d %s", r.Status, r.Body)
	}
	if r := gw.do(http.MethodPost, "/v1/leases/"+l.LeaseID+"/keepalive", bearer(rotated), ""); r.Status != http.StatusOK {
		t.Fatalf("keepalive with the rotated JWT: %d %s", r.Status, r.Body)
	}
	// A bearer token still works beside JWTs.
	if r := gw.do(http.MethodGet, "/v1/leases?resource=account/acct-71", bearer("opener-secret"), ""); r.Status != http.StatusOK {
		t.Fatalf("opener by bearer token: %d %s", r.Status, r.Body)
	}
}

func mustMarshalPKIX(t *testing.T, pub any) []byte {
	t.Helper()
	b, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
