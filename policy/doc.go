// Package policy loads the policy file (resources, operations and their
// typed arguments and SQL), validates it, and compiles it into the form the
// gateway executes: numbered SQL, argument decoders and resource templates.
// The file's JSON Schema (JSONSchema, policy.schema.json) serves editors and
// Check, which `fencegw policy check` runs; the gateway compiles with Parse.
// Builtin parameters bind a write's resource and token; :_token binds E:R,
// never the signature (a capability) that the token came with.
package policy
