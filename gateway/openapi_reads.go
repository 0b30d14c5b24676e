package gateway

import (
	"github.com/fencegw/fencegw/policy"
)

// readPath documents POST /v1/reads/{op} for a read operation.
func readPath(pol *policy.Policy, op *policy.Operation) obj {
	props, required, token := argsAndToken(op)
	return obj{
		"operationId": op.Name,
		"summary":     "The " + op.Name + " read, fenced on " + rolesText(op) + ": its SELECTs, answered only while no newer token has written.",
		"security":    security(pol),
		"parameters":  []any{token},
		"requestBody": obj{"required": true, "content": obj{"application/json": obj{"schema": obj{
			"type": "object", "properties": props, "required": required, "additionalProperties": false,
		}}}},
		"responses": withSQLErrors(pol, withProblems(obj{
			"200": obj{"description": "Read in one snapshot with the fences, none of which is newer than its token; nothing was written.",
				"content": obj{"application/json": obj{"schema": obj{"$ref": "#/components/schemas/ReadResult"}}}},
		}, authProblems(pol, "bad-request", "token-rejected", "token-retired", "unknown-operation", "stale-token", "precondition-failed",
			"too-large", "unsupported-encoding", "token-required", "internal", "unavailable", "authority-halted", "forbidden")...)),
	}
}

// checkPath documents POST /v1/fences/check.
func checkPath(pol *policy.Policy) obj {
	resource := obj{"type": "string", "maxLength": 1024}
	return obj{
		"operationId": "checkFences",
		"summary":     "Is my token still current? Each token is validated as a write's would be and held to its resource's fence, which does not move: 200 when none is older than its fence, 409 stale-token naming the first that is. Nothing is written.",
		"security":    security(pol),
		"parameters": []any{obj{"name": TokenHeader, "in": "header", "required": true,
			"description": "The token of resource, or with resources one per role as an RFC 8941 dictionary: from=\"1:42:…\", to=\"1:57:…\".",
			"schema":      obj{"type": "string", "maxLength": 4096}}},
		"requestBody": obj{"required": true, "content": obj{"application/json": obj{"schema": obj{"oneOf": []any{
			obj{"type": "object", "required": []string{"resource"}, "additionalProperties": false, "properties": obj{"resource": resource}},
			obj{"type": "object", "required": []string{"resources"}, "additionalProperties": false, "properties": obj{"resources": obj{
				"type": "object", "minProperties": 1, "maxProperties": maxCheckRoles, "additionalProperties": resource,
				"propertyNames": obj{"pattern": "^[a-z][a-z0-9_]{0,62}$"}}}},
		}}}}},
		"responses": withProblems(obj{
			"200": obj{"description": "Every token is current.", "content": obj{"application/json": obj{"schema": obj{
				"type": "object", "required": []string{"fences"}, "properties": obj{"fences": obj{"type": "array", "items": readFenceSchema()}}}}}},
		}, authProblems(pol, "bad-request", "token-rejected", "token-retired", "stale-token", "too-large", "unsupported-encoding",
			"token-required", "internal", "unavailable", "authority-halted")...),
	}
}

func readFenceSchema() obj {
	return obj{"type": "object", "required": []string{"resource", "token", "fence"}, "properties": obj{
		"role": obj{"type": "string"}, "resource": obj{"type": "string"},
		"token": obj{"type": "string", "description": "The token presented, E:R."},
		"fence": fenceSeenSchema()}}
}

// fenceSeenSchema is a read's or a check's fence (FenceSeen).
func fenceSeenSchema() obj {
	return obj{"type": []string{"string", "null"}, "description": "The resource's fence as the read saw it, E:R (E:R#P for a permit slot); null for a resource without a fence row (never written, or its row pruned): the token was held to the fence floor."}
}

func readResultSchema() obj {
	return obj{"type": "object", "required": []string{"operation", "statements"}, "properties": obj{
		"operation": obj{"type": "string"},
		"resource":  obj{"type": "string"},
		"token":     obj{"type": "string", "description": "The token presented, E:R."},
		"fence":     fenceSeenSchema(),
		"fences":    obj{"type": "array", "items": readFenceSchema()},
		"statements": obj{"type": "array", "items": obj{"type": "object", "required": []string{"rows_affected"}, "properties": obj{
			"rows_affected": obj{"type": "integer"},
			"rows":          obj{"type": "array", "items": obj{"type": "object"}},
		}}},
	}}
}

// writeNames lists the policy's write operations: those a batch takes.
func writeNames(pol *policy.Policy) []string {
	var out []string
	for _, name := range pol.OperationNames() {
		if !pol.Operations[name].Read {
			out = append(out, name)
		}
	}
	return out
}
