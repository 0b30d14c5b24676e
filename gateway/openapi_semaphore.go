package gateway

// The OpenAPI document's parts for a semaphore's observation
// (observesemaphore.go).

func semaphoreStateSchema() obj {
	return obj{"type": "object", "required": []string{"resource", "revision", "permits", "holders", "waiters", "waiting", "transitions"}, "properties": obj{
		"resource": obj{"type": "string", "description": "The semaphore."}, "revision": obj{"type": "integer"},
		"permits": obj{"type": "integer", "minimum": 1, "description": "How many hold it at most: the policy's permits."},
		"holders": obj{"type": "array", "items": obj{"$ref": "#/components/schemas/PermitHolder"}, "description": "The held slots, by permit; a free slot is absent."},
		"waiters": obj{"type": "array", "items": obj{"type": "object", "properties": obj{"value": obj{"type": "string"}}},
			"description": "The first 99 in line that hold no slot, in the order they will be admitted (a place in line is no token): each with the value its lease was asked with."},
		"waiting":     obj{"type": "integer", "description": "Everyone in line holding no slot, shown or not."},
		"truncated":   obj{"type": "boolean", "description": "More wait than are shown."},
		"transitions": obj{"type": "integer", "description": "The grants of every slot so far."}}}
}

func permitHolderSchema() obj {
	return obj{"type": "object", "required": []string{"permit", "resource", "token", "transitions"}, "properties": obj{
		"permit":      obj{"type": "integer", "minimum": 1},
		"resource":    obj{"type": "string", "description": "The slot, <semaphore>#<permit>: the lock and fence the holder's token is for."},
		"token":       obj{"type": "string", "description": "The holder's token without its signature, E:R#<permit>: its place in the slot's order, no capability."},
		"ttl":         obj{"type": "integer", "description": "Seconds left of the holder's lease."},
		"value":       obj{"type": "string"},
		"transitions": obj{"type": "integer", "description": "The slot's grants so far, the holder's included."}}}
}
