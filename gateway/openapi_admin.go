package gateway

import (
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// adminBody is the request body of an operator's verb, with its target's
// properties.
func adminBody(target obj) obj {
	props := obj{
		"reason":  obj{"type": "string", "minLength": 1, "maxLength": maxReasonBytes, "description": "Why, in one line: recorded in the lock history with who asked. Required."},
		"dry_run": obj{"type": "boolean", "default": false, "description": "Show what would happen; change nothing."},
	}
	for k, v := range target {
		props[k] = v
	}
	return obj{"required": true, "content": obj{"application/json": obj{"schema": obj{
		"type": "object", "required": []string{"reason"}, "additionalProperties": false, "properties": props,
	}}}}
}

func adminProblems(pol *policy.Policy, kinds ...string) []string {
	kinds = append(kinds, "bad-request", "unsupported-media-type", "unsupported-encoding", "too-large", "unavailable", "internal")
	if pol.AuthRequired() {
		kinds = append(kinds, "forbidden") // not an operator's client
	}
	return authProblems(pol, kinds...)
}

func revokePath(pol *policy.Policy) obj {
	return obj{
		"operationId": "revokeLease",
		"summary":     "Operator: revoke the lease holding a resource's lock, or a lease by ID, whoever owns it (operations [\"*\"]).",
		"security":    security(pol),
		"requestBody": adminBody(obj{
			"resource":   obj{"type": "string", "minLength": 1, "maxLength": tokens.MaxResourceLen, "description": "Revoke its holder's lease. Give this or lease_id."},
			"lease_id":   obj{"type": "string", "description": "Revoke this lease, holding or waiting."},
			"keep_fence": obj{"type": "boolean", "default": false, "description": "Leave the holder's fence where it is: its token writes until a successor writes. By default the fence moves past the revoked holder's token, as a fence advance does, so its next write is refused."},
		}),
		"responses": withProblems(obj{
			"200": obj{"description": "The lease revoked (with dry_run: that would be).", "content": obj{"application/json": obj{"schema": obj{"type": "object", "required": []string{"lease", "revoked", "dry_run"}, "properties": obj{
				"lease": obj{"type": "object", "properties": obj{
					"lease_id": obj{"type": "string"}, "resource": obj{"type": "string", "description": "The lock or permit slot held or waited for; a semaphore's name for a contender in its line."},
					"token":  obj{"type": "string", "pattern": tokenPattern, "description": "E:R (E:R#P for a permit), unsigned; absent for a contender in a semaphore's line, which has no slot yet."},
					"client": obj{"type": "string"}, "waiting": obj{"type": "boolean"}}},
				"revoked": obj{"type": "boolean"}, "dry_run": obj{"type": "boolean"},
				"fence": obj{"type": "object", "description": "The revoked holder's fence, before and after (with dry_run: would be after); absent with keep_fence or for a lease that held nothing.", "properties": obj{
					"before": obj{"type": []string{"string", "null"}, "pattern": tokenPattern, "description": "The fence found; null for none (never written)."}, "fence": obj{"type": "string", "pattern": tokenPattern}, "advanced": obj{"type": "boolean"}}}}}}}},
		}, adminProblems(pol, "no-lock", "lease-not-found")...),
	}
}

func advancePath(pol *policy.Policy) obj {
	return obj{
		"operationId": "advanceFence",
		"summary":     "Operator: move a resource's fence past every token issued so far; current holders are refused at their next write, waiters and later grants write (operations [\"*\"]).",
		"security":    security(pol),
		"requestBody": adminBody(obj{
			"resource": obj{"type": "string", "minLength": 1, "maxLength": tokens.MaxResourceLen},
		}),
		"responses": withProblems(obj{
			"200": obj{"description": "The fence before and after (with dry_run: would be after); advanced false when it was past already.", "content": obj{"application/json": obj{"schema": obj{"type": "object", "required": []string{"resource", "before", "fence", "advanced", "waiting", "dry_run"}, "properties": obj{
				"resource": obj{"type": "string"}, "before": obj{"type": []string{"string", "null"}, "pattern": tokenPattern, "description": "The fence found; null for none (never written)."}, "fence": obj{"type": "string", "pattern": tokenPattern},
				"advanced": obj{"type": "boolean"}, "holder": obj{"type": "string", "pattern": tokenPattern}, "waiting": obj{"type": "integer"},
				"dry_run": obj{"type": "boolean"}}}}}},
		}, adminProblems(pol)...),
	}
}
