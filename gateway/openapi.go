package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/fencegw/fencegw/authority"
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// obj is a JSON object of the OpenAPI document, written as a map: the
// document is data about the policy, built once, and a map keeps it close
// to the specification's text.
type obj = map[string]any

// tokenPattern is a fencing token as a lease grants it, E:R:SIGNATURE
// (22 characters of base64url), or E:R where a resource's validation is
// revision; epoch and revision are positive, without leading zeros.
const tokenPattern = `^[1-9][0-9]{0,18}:[1-9][0-9]{0,18}(#[1-9][0-9]{0,3})?(:[A-Za-z0-9_-]{22})?$`

// OpenAPI returns the OpenAPI 3.1 document of the gateway serving pol:
// every operation with its typed arguments and its token headers, the
// batch and lease API, health, and every problem type with its status.
// version is the gateway's build, for the document's info.
func OpenAPI(pol *policy.Policy, version string) ([]byte, error) {
	paths := obj{}
	for _, name := range pol.OperationNames() {
		if op := pol.Operations[name]; op.Read {
			paths["/v1/reads/"+name] = obj{"post": readPath(pol, op)}
		} else {
			paths["/v1/ops/"+name] = obj{"post": operationPath(pol, op)}
		}
	}
	paths["/v1/fences/check"] = obj{"post": checkPath(pol)}
	paths["/v1/batch"] = obj{"post": batchPath(pol)}
	paths["/v1/leases"] = obj{"post": acquirePath(pol), "get": observePath(pol)}
	paths["/v1/leases/{id}/keepalive"] = obj{"post": keepAlivePath(pol)}
	paths["/v1/leases/{id}"] = obj{"delete": releasePath(pol), "patch": setValuePath(pol)}
	paths["/v1/leases/watch"] = obj{"get": watchPath(pol)}
	paths["/v1/admin/leases/revoke"] = obj{"post": revokePath(pol)}
	paths["/v1/admin/fences/advance"] = obj{"post": advancePath(pol)}
	paths["/v1/openapi.json"] = obj{"get": obj{
		"operationId": "openapi", "summary": "This document.", "security": security(pol),
		"responses": withProblems(obj{"200": obj{"description": "The OpenAPI document.", "content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}}, "unauthorized"),
	}}
	paths["/v1/status"] = obj{"get": obj{
		"operationId": "status", "summary": "What the status page (GET /status) shows: the authority's state, fences most recently advanced, locks held, refused writes, bypasses, write and refusal rates.", "security": security(pol),
		"responses": withProblems(obj{"200": obj{"description": "The status; a source that is unavailable is named in sources and its lists are null.", "content": obj{"application/json": obj{"schema": obj{"type": "object"}}}}}, "unauthorized"),
	}}
	paths["/livez"] = obj{"get": obj{"operationId": "livez", "summary": "The process is up.", "security": []any{},
		"responses": obj{"200": obj{"description": "Up."}}}}
	paths["/readyz"] = obj{"get": obj{"operationId": "readyz", "summary": "Ready to write: PostgreSQL, etcd, the schema version and the token authority.", "security": []any{},
		"responses": obj{"200": obj{"description": "Ready."}, "503": obj{"description": "Not ready; the body names the failing dependency."}}}}
	paths["/metrics"] = obj{"get": obj{"operationId": "metrics", "summary": "Prometheus metrics.", "security": []any{},
		"responses": obj{"200": obj{"description": "Prometheus text format.", "content": obj{"text/plain": obj{"schema": obj{"type": "string"}}}}}}}

	components := obj{
		"schemas":    schemas(pol),
		"parameters": parameters(),
	}
	if pol.AuthRequired() {
		components["securitySchemes"] = securitySchemes(pol)
	}
	doc := obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":       "fencegw: " + pol.Source,
			"version":     version,
			"description": "Fenced writes to PostgreSQL: every write carries the fencing token of a lease on its resource, and is applied only if the token is not older than the resource's fence. Errors are RFC 9457 problem documents (application/problem+json).",
		},
		// Relative to where the document is served (OpenAPI 3.1 §4.8.5):
		// the gateway that serves it, whatever its address.
		"servers":    []any{obj{"url": "/", "description": "the gateway serving this document"}},
		"paths":      paths,
		"components": components,
	}
	return json.MarshalIndent(doc, "", "  ")
}

// security is what every /v1 call needs when the policy declares
// clients: one of the ways its clients prove who they are.
func security(pol *policy.Policy) []any {
	alternatives := []any{}
	for _, name := range slices.Sorted(maps.Keys(securitySchemes(pol))) {
		alternatives = append(alternatives, obj{name: []any{}})
	}
	return alternatives
}

// securitySchemes are the ways the policy's clients prove who they are.
func securitySchemes(pol *policy.Policy) obj {
	schemes := obj{}
	if !pol.AuthRequired() {
		return schemes
	}
	if pol.UsesTokens() {
		schemes["bearer"] = obj{"type": "http", "scheme": "bearer",
			"description": "A client's token; the policy holds its SHA-256 (clients)."}
	}
	if pol.UsesJWT() {
		schemes["jwt"] = obj{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
			"description": "A JWT (a Kubernetes pod's projected service account token, say) signed by a key of the gateway's JWKS, of its issuer and audience, unexpired; the policy names the client by the claim the gateway reads (sub by default)."}
	}
	if pol.UsesCertificates() {
		schemes["mutualTLS"] = obj{"type": "mutualTLS",
			"description": "A client certificate for client authentication, issued by a CA of the gateway's --tls-client-ca-file; the policy names the client by one of its URI SANs (a SPIFFE ID), DNS SANs, or its CN."}
	}
	return schemes
}

func operationPath(pol *policy.Policy, op *policy.Operation) obj {
	props, required, token := argsAndToken(op)
	kinds := []string{"bad-request", "token-rejected", "token-retired", "unknown-operation", "stale-token", "deadline-passed", "precondition-failed", "constraint",
		"too-large", "unsupported-encoding", "idempotency-mismatch", "token-required", "internal", "unavailable", "authority-halted"}
	if pol.AuthRequired() {
		kinds = append(kinds, "unauthorized", "forbidden")
	}
	return obj{
		"operationId": op.Name,
		"summary":     "The " + op.Name + " operation, fenced on " + rolesText(op) + ".",
		"security":    security(pol),
		"parameters":  []any{token, obj{"$ref": "#/components/parameters/IdempotencyKey"}, obj{"$ref": "#/components/parameters/NotAfter"}},
		"requestBody": obj{"required": true, "content": obj{"application/json": obj{"schema": obj{
			"type": "object", "properties": props, "required": required, "additionalProperties": false,
		}}}},
		"responses": withSQLErrors(pol, withProblems(obj{
			"200": obj{"description": "Applied: the fence advanced and every statement ran, in one transaction.",
				"headers": obj{ReplayedHeader: obj{"description": "true when the answer is a replay of an earlier attempt with the same Idempotency-Key.", "schema": obj{"type": "string", "enum": []string{"true"}}}},
				"content": obj{"application/json": obj{"schema": obj{"$ref": "#/components/schemas/Result"}}}},
		}, kinds...)),
	}
}

// argsAndToken are op's request body properties, the required ones, and
// its Fencing-Token parameter: one token, or a dictionary of its roles'.
func argsAndToken(op *policy.Operation) (props obj, required []string, token obj) {
	props, required = obj{}, []string{}
	for _, a := range op.Args {
		props[a.Name] = argSchema(a)
		required = append(required, a.Name)
	}
	token = obj{"$ref": "#/components/parameters/FencingToken"}
	if op.Named() {
		var roles []string
		for _, r := range op.Roles {
			roles = append(roles, r.Name)
		}
		token = obj{"name": TokenHeader, "in": "header", "required": true,
			"description": fmt.Sprintf("One token per role, as an RFC 8941 dictionary: %s", exampleRoles(roles)),
			"schema":      obj{"type": "string", "maxLength": 4096}, "example": exampleRoles(roles)}
	}
	return props, required, token
}

func rolesText(op *policy.Operation) string {
	if !op.Named() {
		return "the resource " + op.Roles[0].Template.String()
	}
	out := ""
	for i, r := range op.Roles {
		if i > 0 {
			out += ", "
		}
		out += r.Name + " (" + r.Template.String() + ")"
	}
	return out
}

func exampleRoles(roles []string) string {
	out := ""
	for i, r := range roles {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf(`%s="1:%d:SIGNATURE"`, r, 40+i)
	}
	return out
}

// argSchema is an argument's JSON Schema: its type and the bounds the
// gateway enforces. A string's max_length counts bytes; for the ASCII
// most keys are, that is its length.
func argSchema(a policy.Arg) obj {
	switch a.Type {
	case policy.Integer:
		s := obj{"type": "integer", "format": "int64"}
		if a.Min != nil {
			s["minimum"] = *a.Min
		}
		if a.Max != nil {
			s["maximum"] = *a.Max
		}
		return s
	case policy.Boolean:
		return obj{"type": "boolean"}
	}
	s := obj{"type": "string", "maxLength": a.MaxLength, "description": "At most " + strconv.Itoa(a.MaxLength) + " bytes of UTF-8."}
	if a.Pattern != nil {
		// The gateway matches with Go's RE2; JSON Schema's patterns are
		// ECMA-262. Most simple patterns mean the same in both, but flags
		// and POSIX classes do not parse there: those travel only as
		// x-go-pattern, for the reader.
		re := a.Pattern.String()
		s["x-go-pattern"] = re
		if !strings.Contains(re, "(?") || strings.Count(re, "(?") == strings.Count(re, "(?:") {
			if !strings.Contains(re, "[[:") && !strings.Contains(re, `\p`) && !strings.Contains(re, `\z`) && !strings.Contains(re, `\A`) {
				s["pattern"] = re
			}
		}
	}
	return s
}

func batchPath(pol *policy.Policy) obj {
	return obj{
		"operationId": "batch",
		"summary":     "Up to 100 writes in one transaction, all or nothing.",
		"security":    security(pol),
		"parameters":  []any{obj{"$ref": "#/components/parameters/IdempotencyKey"}, obj{"$ref": "#/components/parameters/NotAfter"}},
		"requestBody": obj{"required": true, "content": obj{"application/json": obj{"schema": obj{
			"type": "object", "required": []string{"writes"}, "additionalProperties": false,
			"properties": obj{"writes": obj{"type": "array", "minItems": 1, "maxItems": 100, "items": obj{
				"type": "object", "required": []string{"operation", "args", "token"}, "additionalProperties": false,
				"properties": obj{
					"operation": obj{"type": "string", "enum": writeNames(pol)},
					"args":      obj{"type": "object", "description": "The operation's arguments, as its own path takes them."},
					"token": obj{"oneOf": []any{
						obj{"type": "string", "pattern": tokenPattern},
						obj{"type": "object", "additionalProperties": obj{"type": "string", "pattern": tokenPattern}, "description": "One token per role."},
					}},
				},
			}}},
		}}}},
		"responses": withSQLErrors(pol, withProblems(obj{
			"200": obj{"description": "Every write applied.", "content": obj{"application/json": obj{"schema": obj{
				"type": "object", "properties": obj{"writes": obj{"type": "array", "items": obj{"$ref": "#/components/schemas/Result"}}}}}}},
		}, authProblems(pol, "bad-request", "token-rejected", "token-retired", "unknown-operation", "stale-token", "deadline-passed", "precondition-failed", "constraint", "forbidden",
			"too-large", "unsupported-media-type", "unsupported-encoding", "idempotency-mismatch", "token-required", "internal", "unavailable", "authority-halted")...)),
	}
}

func acquirePath(pol *policy.Policy) obj {
	return obj{
		"operationId": "acquireLease",
		"summary":     "Take the lock on a resource with a new lease; waiters are granted in arrival order.",
		"security":    security(pol),
		"requestBody": obj{"required": true, "content": obj{"application/json": obj{"schema": obj{
			"type": "object", "required": []string{"resource"}, "additionalProperties": false,
			"properties": obj{
				"resource": obj{"type": "string", "minLength": 1, "maxLength": tokens.MaxResourceLen, "description": "At most " + strconv.Itoa(tokens.MaxResourceLen) + " bytes of UTF-8, no control characters, no space at either end; a name the policy's templates produce (an operation's template from values it accepts, or a lock-only entry of leases:), else 400; and the caller's (its operations write it, or its leases: lists the entry), else 403."},
				"ttl":      obj{"type": "integer", "minimum": int64(authority.MinTTL.Seconds()), "maximum": int64(authority.MaxTTL.Seconds()), "default": 10, "description": "Seconds; count them from when the request was sent."},
				"wait":     obj{"type": "number", "minimum": 0, "maximum": authority.MaxWait.Seconds(), "default": 0, "description": "Seconds to wait for earlier holders."},
				"value":    obj{"type": "string", "maxLength": 4096, "description": "Shown to observers (leader election)."},
				"permits":  obj{"type": "integer", "minimum": 1, "maximum": tokens.MaxPermits, "description": "Optional: the resource is a semaphore of this many permits, as the policy says (else 400). A semaphore grants a free permit slot whether or not it is sent."},
			},
		}}}},
		"responses": withProblems(obj{
			"201": obj{"description": "Granted.", "content": obj{"application/json": obj{"schema": obj{"$ref": "#/components/schemas/Lease"}}}},
		}, leaseProblems(pol)...),
	}
}

func leaseProblems(pol *policy.Policy) []string {
	kinds := authProblems(pol, "bad-request", "unsupported-media-type", "unsupported-encoding", "locked", "lease-not-found", "too-many-leases", "too-large", "unavailable", "authority-halted", "internal")
	if pol.AuthRequired() {
		kinds = append(kinds, "forbidden") // a name outside the caller's scope
	}
	return kinds
}

func observePath(pol *policy.Policy) obj {
	return obj{
		"operationId": "observeLock",
		"summary":     "The holder of a resource's lock and its waiters in grant order (leader observation); of a semaphore, its held slots and its line.",
		"security":    security(pol),
		"parameters": []any{obj{"name": "resource", "in": "query", "required": true, "schema": obj{"type": "string", "minLength": 1, "maxLength": tokens.MaxResourceLen},
			"description": "A lock's name; or a semaphore's (the policy's permits), answered with a SemaphoreState. A semaphore's slot (<semaphore>#<permit>) is the lock it is. The caller's, as for POST /v1/leases and the watch, else 403."}},
		"responses": withProblems(obj{
			"200": obj{"description": "The lock's state, or the semaphore's.", "content": obj{"application/json": obj{"schema": obj{"anyOf": []any{
				obj{"$ref": "#/components/schemas/LockState"}, obj{"$ref": "#/components/schemas/SemaphoreState"}}}}}},
		}, watchProblems(pol)...),
	}
}

func keepAlivePath(pol *policy.Policy) obj {
	return obj{
		"operationId": "keepAliveLease",
		"summary":     "Renew a lease; 404 means it is gone: stop writing.",
		"security":    security(pol),
		"parameters":  []any{obj{"$ref": "#/components/parameters/LeaseID"}},
		"responses": withProblems(obj{
			"200": obj{"description": "Renewed.", "content": obj{"application/json": obj{"schema": obj{"type": "object", "required": []string{"lease_id", "ttl"}, "properties": obj{
				"lease_id": obj{"type": "string"}, "ttl": obj{"type": "integer"},
				"token": obj{"type": "string", "pattern": tokenPattern, "description": "The lease's token, same E:R, signed by the newest signing key: send it from now on, so that retiring the older keys refuses none of your writes. Absent when the gateway cannot sign it again (the epoch changed since the grant); keep the token you have."}}}}}},
		}, authProblems(pol, "bad-request", "lease-not-found", "unavailable", "internal")...),
	}
}

func releasePath(pol *policy.Policy) obj {
	return obj{
		"operationId": "releaseLease",
		"summary":     "Release a lease; the next waiter gets the lock at once.",
		"security":    security(pol),
		"parameters":  []any{obj{"$ref": "#/components/parameters/LeaseID"}},
		"responses": withProblems(obj{
			"204": obj{"description": "Released. The released token still writes until a successor writes (validation: fence): the fence does not move; an operator's revoke cuts a holder off.",
				"headers": obj{ReleasedHeader: obj{"description": "What the released token can still do.", "schema": obj{"type": "string", "enum": []string{ReleasedTokenWrites}}}}},
		}, authProblems(pol, "bad-request", "lease-not-found", "unavailable", "internal")...),
	}
}

// authProblems are the refusals every /v1 call may get when the policy
// declares clients.
func authProblems(pol *policy.Policy, kinds ...string) []string {
	if pol.AuthRequired() {
		kinds = append(kinds, "unauthorized")
	}
	return kinds
}

// withProblems adds the responses of the problem kinds named, grouped by
// status, each listing its kinds.
func withProblems(responses obj, kinds ...string) obj {
	byStatus := map[int][]problemType{}
	for _, k := range kinds {
		t := problemTypeOf(k)
		byStatus[t.Status] = append(byStatus[t.Status], t)
	}
	for status, ts := range byStatus {
		desc := ""
		for i, t := range ts {
			if i > 0 {
				desc += " "
			}
			desc += fmt.Sprintf("`%s`: %s.", t.Kind, t.When)
		}
		responses[strconv.Itoa(status)] = obj{"description": desc,
			"content": obj{"application/problem+json": obj{"schema": obj{"$ref": "#/components/schemas/Problem"}}}}
	}
	return responses
}

// withSQLErrors adds the statuses the policy's sql_errors answer with,
// and the PT class's note.
func withSQLErrors(pol *policy.Policy, responses obj) obj {
	for _, m := range pol.SQLErrorMappings() {
		key := strconv.Itoa(m.Status)
		r, ok := responses[key].(obj)
		if !ok {
			r = obj{"description": "", "content": obj{"application/problem+json": obj{"schema": obj{"$ref": "#/components/schemas/Problem"}}}}
		}
		r["description"] = fmt.Sprintf("%s `%s`: the operation's SQL refused the write (policy sql_errors).", r["description"], m.Kind)
		responses[key] = r
	}
	responses["4XX"] = obj{"description": "`application`: the operation's SQL raised SQLSTATE PTxyz, answered with status xyz and its message.",
		"content": obj{"application/problem+json": obj{"schema": obj{"$ref": "#/components/schemas/Problem"}}}}
	return responses
}

func parameters() obj {
	return obj{
		"FencingToken": obj{"name": TokenHeader, "in": "header", "required": true,
			"description": "The token of your lease on the resource, exactly as the lease granted it: E:R:SIGNATURE (E:R only where the resource's validation is revision).",
			"schema":      obj{"type": "string", "pattern": tokenPattern}, "example": "1:42:nDovfSbkpB1hDtlDl6ntTw"},
		"IdempotencyKey": obj{"name": IdempotencyHeader, "in": "header", "required": false,
			"description": "Makes a retry safe: a completed request with the same key is answered with its stored response. An RFC 8941 string of 1 to 255 printable ASCII characters, without quotes or backslashes inside.",
			"schema":      obj{"type": "string", "pattern": `^("[ !#-\[\]-~]{1,255}"|[ !#-\[\]-~]{1,255})$`}, "example": `"order-7-debit"`},
		"NotAfter": obj{"name": NotAfterHeader, "in": "header", "required": false,
			"description": "The write's business deadline, RFC 3339: it applies only if PostgreSQL's clock has not passed it when its fences are advanced; otherwise 409 deadline-passed, nothing written. At most a year ahead.",
			"schema":      obj{"type": "string", "format": "date-time"}, "example": "2026-12-01T17:00:00Z"},
		"LeaseID": obj{"name": "id", "in": "path", "required": true, "description": "As the lease was granted: lower-case hex without leading zeros.", "schema": obj{"type": "string", "pattern": "^[1-9a-f][0-9a-f]{0,15}$"}},
	}
}

func schemas(pol *policy.Policy) obj {
	kinds := []string{}
	for _, t := range problemTypes {
		kinds = append(kinds, problemTypePrefix+t.Kind)
	}
	for _, m := range pol.SQLErrorMappings() {
		kinds = append(kinds, problemTypePrefix+m.Kind)
	}
	kinds = append(kinds, problemTypePrefix+"application")
	slices.Sort(kinds)
	kinds = slices.Compact(kinds)
	return obj{
		"Problem": obj{"type": "object", "required": []string{"type", "title", "status"}, "properties": obj{
			"type":            obj{"type": "string", "enum": kinds},
			"title":           obj{"type": "string"},
			"status":          obj{"type": "integer"},
			"detail":          obj{"type": "string"},
			"instance":        obj{"type": "string", "description": "urn:fencegw:request:<id>, as in X-Request-Id and the gateway's access log."},
			"resource":        obj{"type": "string"},
			"operation":       obj{"type": "string"},
			"role":            obj{"type": "string"},
			"index":           obj{"type": "integer", "description": "The write of a batch that refused it."},
			"presented_token": obj{"type": "string"},
			"current_token":   obj{"type": "string"},
			"outcome":         obj{"type": "string", "enum": []string{"not-applied", "unknown"}, "description": "On 503: not-applied (retry as is) or unknown (retry only with the same Idempotency-Key)."},
		}},
		"Result": obj{"type": "object", "required": []string{"operation", "statements"}, "properties": obj{
			"operation": obj{"type": "string"},
			"resource":  obj{"type": "string"},
			"token":     obj{"type": "string", "description": "The accepted token, E:R."},
			"fences": obj{"type": "array", "items": obj{"type": "object", "properties": obj{
				"role": obj{"type": "string"}, "resource": obj{"type": "string"}, "token": obj{"type": "string"}}}},
			"statements": obj{"type": "array", "items": obj{"type": "object", "required": []string{"rows_affected"}, "properties": obj{
				"rows_affected": obj{"type": "integer"},
				"rows":          obj{"type": "array", "items": obj{"type": "object"}},
			}}},
		}},
		"ReadResult": readResultSchema(),
		"Lease": obj{"type": "object", "required": []string{"lease_id", "resource", "token", "ttl"}, "properties": obj{
			"lease_id": obj{"type": "string"}, "resource": obj{"type": "string", "description": "The resource the token is for: a semaphore's permit slot, <semaphore>#<permit>, for a permit."},
			"token": obj{"type": "string", "pattern": tokenPattern}, "ttl": obj{"type": "integer"},
			"permit":  obj{"type": "integer", "minimum": 1, "description": "A semaphore's permit: the slot granted."},
			"permits": obj{"type": "integer", "minimum": 1, "description": "A semaphore's permit: how many the semaphore has."}}},
		"LockState": obj{"type": "object", "properties": obj{
			"resource": obj{"type": "string"}, "revision": obj{"type": "integer"},
			"holder":  obj{"oneOf": []any{obj{"type": "null"}, obj{"$ref": "#/components/schemas/Contender"}}},
			"waiters": obj{"type": "array", "items": obj{"$ref": "#/components/schemas/Contender"}},
			"waiting": obj{"type": "integer"}, "truncated": obj{"type": "boolean"},
			"transitions": obj{"type": "integer", "description": "The lock's grants so far, the holder's included."}}},
		"SemaphoreState": semaphoreStateSchema(),
		"PermitHolder":   permitHolderSchema(),
		"WatchEvent":     watchEventSchema(),
		"Contender": obj{"type": "object", "properties": obj{
			"token": obj{"type": "string"}, "ttl": obj{"type": "integer"}, "value": obj{"type": "string"}}},
	}
}

// handleOpenAPI serves GET /v1/openapi.json: the document of the policy
// this gateway runs, built on the first call.
func (g *Gateway) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := g.openapi()
	if err != nil {
		g.writeProblem(w, r, fmt.Errorf("gateway: OpenAPI document: %w", err), problemScope{})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(doc)
}
