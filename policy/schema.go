package policy

import (
	"bytes"
	_ "embed"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed policy.schema.json
var schemaJSON []byte

// schemaURL names the embedded schema for the validator; nothing is
// fetched from it.
const schemaURL = "urn:fencegw:policy.schema.json"

// JSONSchema returns the JSON Schema (draft 2020-12) of policy files, for
// editors and other tools; `fencegw policy schema` prints it. It describes
// every key the loader accepts, with the compiler's enums, patterns and
// bounds, and leaves to the compiler what only the whole policy can tell
// (an argument named by a template, a resource that is declared).
func JSONSchema() []byte { return bytes.Clone(schemaJSON) }

// compiledSchema is the schema, compiled on first use: only `fencegw policy
// check` validates against it, so the gateway does not pay for it at
// start-up.
var compiledSchema = sync.OnceValues(func() (*policySchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("policy: schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("policy: schema: %w", err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("policy: schema: %w", err)
	}
	return &policySchema{Schema: sch, doc: doc}, nil
})

// policySchema is the compiled schema and its document, where problems
// find the messages and bounds of the keyword that failed.
type policySchema struct {
	*jsonschema.Schema
	doc any
}

var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// at returns the schema object at an absolute schema location such as
// urn:fencegw:policy.schema.json#/$defs/arg/properties/type, or nil.
func (s *policySchema) at(location string) map[string]any {
	_, ptr, _ := strings.Cut(location, "#")
	node := s.doc
	for tok := range strings.SplitSeq(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		if t, err := url.PathUnescape(tok); err == nil {
			tok = t
		}
		tok = pointerUnescaper.Replace(tok)
		switch n := node.(type) {
		case map[string]any:
			node = n[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil
			}
			node = n[i]
		default:
			return nil
		}
	}
	obj, _ := node.(map[string]any)
	return obj
}
