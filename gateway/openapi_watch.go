package gateway

import (
	"github.com/fencegw/fencegw/policy"
	"github.com/fencegw/fencegw/tokens"
)

// The OpenAPI document's parts for watches and value updates (watch.go,
// setvalue.go).

func watchPath(pol *policy.Policy) obj {
	name := obj{"type": "string", "minLength": 1, "maxLength": tokens.MaxResourceLen}
	return obj{
		"operationId": "watchLocks",
		"summary":     "Follow a lock, every lock under a prefix, or every lock, as Server-Sent Events: the state, then every grant, value change and end.",
		"description": "Each event's data is a WatchEvent; its SSE event name is its type. Changes and `synced` carry their etcd revision as the SSE id: resume with `Last-Event-ID` to get every change after it, without the state. `relist` says etcd compacted past that revision: what the client knew is void, and the state follows again. Comments (`: heartbeat`) keep idle streams open through proxies; an id with no data (progress) moves the client's last event id on. A client that falls far behind is cut off, and resumes.",
		"security":    security(pol),
		"parameters": []any{
			obj{"name": "resource", "in": "query", "required": false, "schema": name, "description": "The lock to follow (a semaphore's name follows each of its slots); or prefix, or all: one of them. The caller's, as for POST /v1/leases, else 403."},
			obj{"name": "prefix", "in": "query", "required": false, "schema": name, "description": "Follow every lock whose name starts with it; every key of the policy that may produce such a name must be the caller's, else 403."},
			obj{"name": "all", "in": "query", "required": false, "schema": obj{"type": "string", "enum": []string{"true"}}, "description": "Follow every lock (the status page does); only for a client that may read GET /v1/status (operations [\"*\"]), else 403. Its state costs one etcd read per lock held."},
			obj{"name": "Last-Event-ID", "in": "header", "required": false, "schema": obj{"type": "string", "pattern": "^[1-9][0-9]*$"}, "description": "Resume after this event id; one etcd has not issued is 400."},
		},
		"responses": withProblems(obj{
			"200": obj{"description": "The stream.", "content": obj{"text/event-stream": obj{"schema": obj{"$ref": "#/components/schemas/WatchEvent"}}}},
		}, watchProblems(pol)...),
	}
}

// watchProblems are the refusals of following or observing a lock: a
// name outside the caller's scope is forbidden.
func watchProblems(pol *policy.Policy) []string {
	kinds := authProblems(pol, "bad-request", "unavailable", "internal")
	if pol.AuthRequired() {
		kinds = append(kinds, "forbidden")
	}
	return kinds
}

func setValuePath(pol *policy.Policy) obj {
	return obj{
		"operationId": "setLeaseValue",
		"summary":     "Publish a new value of the lock the lease holds (a leader's address, its term's metadata); observers and watchers see it.",
		"security":    security(pol),
		"parameters":  []any{obj{"$ref": "#/components/parameters/LeaseID"}},
		"requestBody": obj{"required": true, "content": obj{"application/json": obj{"schema": obj{
			"type": "object", "required": []string{"value"}, "additionalProperties": false,
			"properties": obj{"value": obj{"type": "string", "maxLength": 4096}},
		}}}},
		"responses": withProblems(obj{
			"204": obj{"description": "Published."},
		}, authProblems(pol, "bad-request", "lease-not-found", "unsupported-media-type", "too-large", "unavailable", "authority-halted", "internal")...),
	}
}

func watchEventSchema() obj {
	return obj{"type": "object", "required": []string{"type", "revision", "transitions"}, "properties": obj{
		"type": obj{"type": "string", "enum": []string{"state", "synced", "granted", "value", "released", "expired", "revoked", "ended", "relist"},
			"description": "ended: a lease whose end etcd no longer knows the cause of."},
		"resource":    obj{"type": "string", "description": "The lock (a semaphore's slot) the event is of; absent in synced and relist, which are of the stream, not of a lock."},
		"revision":    obj{"type": "integer", "description": "etcd's revision of the change (of the state for state and synced; of the compaction for relist)."},
		"holder":      obj{"oneOf": []any{obj{"type": "null"}, obj{"$ref": "#/components/schemas/Contender"}}, "description": "The holder, or the lease that ended; null in a state: the lock is free."},
		"transitions": obj{"type": "integer", "description": "The lock's grants so far."},
		"permit":      obj{"type": "integer", "minimum": 1, "description": "In a semaphore's watch: the slot the event is of (resource names it; the holder's token carries it, E:R#k). Absent otherwise."},
	}}
}
