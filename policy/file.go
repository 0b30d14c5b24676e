package policy

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize bounds a policy file; a larger one is certainly a mistake.
const MaxFileSize = 1 << 20

// The YAML shape of a policy file. Unknown keys are errors, so a typo such
// as "expect_row" cannot silently drop a safety check.
type fileDoc struct {
	Kinds map[string]fileKind `yaml:"kinds"`
	// Resources is the former name of Kinds, deprecated (words.go).
	Resources  map[string]fileKind      `yaml:"resources" deprecated:"kinds"`
	Operations map[string]fileOperation `yaml:"operations"`
	Clients    map[string]fileClient    `yaml:"clients"`
	Guarded    map[string]fileGuarded   `yaml:"guarded_tables"`
	SQLErrors  map[string]fileSQLError  `yaml:"sql_errors"`
	Leases     map[string]string        `yaml:"leases"` // lock-only lease names: entry -> template
}

type fileKind struct {
	Template string `yaml:"template"`
	// Key is the former name of Template, deprecated (words.go).
	Key        string `yaml:"key" deprecated:"template"`
	Compare    string `yaml:"compare"`
	Validation string `yaml:"validation"`
	LockDelay  string `yaml:"lock_delay"`
	MaxHold    string `yaml:"max_hold"`
	Coalesce   *bool  `yaml:"coalesce"` // nil: on
	// GroupCommit nil: the gateway's setting.
	GroupCommit *bool `yaml:"group_commit"`
	// Permits nil: an exclusive lock; N: a semaphore of N permits.
	Permits *int `yaml:"permits"`
}

type fileOperation struct {
	Access string `yaml:"access"` // "write" (the default) or "read"
	// Kind is the former name of Access, deprecated (words.go).
	Kind       string             `yaml:"kind" deprecated:"access"`
	Resource   string             `yaml:"resource"`
	Resources  map[string]string  `yaml:"resources"` // role -> template over the arguments
	Args       map[string]fileArg `yaml:"args"`
	Statements []fileStatement    `yaml:"statements"`
}

type fileArg struct {
	Type      string `yaml:"type"`
	MaxLength *int   `yaml:"max_length"`
	Pattern   string `yaml:"pattern"`
	Min       *int64 `yaml:"min"`
	Max       *int64 `yaml:"max"`
}

type fileStatement struct {
	SQL        string `yaml:"sql"`
	ExpectRows *int64 `yaml:"expect_rows"`
}

// Load reads and compiles the policy file at path.
func Load(path string) (*Policy, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// readFile reads at most one byte more than MaxFileSize, for Parse to
// refuse a larger file.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: load: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("policy: load %s: %w", path, err)
	}
	return data, nil
}

// Parse compiles a policy from data; name is used in error messages.
func Parse(name string, data []byte) (*Policy, error) {
	if len(data) > MaxFileSize {
		return nil, &Error{File: name, Problems: []Problem{{Message: fmt.Sprintf("file is larger than %d bytes", MaxFileSize)}}}
	}
	var doc fileDoc
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: name, Problems: []Problem{{Message: "file is empty"}}}
		}
		return nil, &Error{File: name, Problems: yamlProblems(err)}
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &Error{File: name, Problems: []Problem{{Message: "more than one YAML document: a policy is one document"}}}
	}
	if ps := fractions(data); len(ps) > 0 {
		return nil, &Error{File: name, Problems: ps}
	}
	p, err := compile(name, &doc)
	if err != nil {
		return nil, err
	}
	p.digest = sha256.Sum256(data)
	return p, nil
}

// fractions lists the numbers with a fraction in data where a whole
// number is wanted (permits: 2.5), which decoding into doc cut short.
func fractions(data []byte) []Problem {
	var node yaml.Node
	if err := yaml.Unmarshal(data, &node); err != nil {
		return nil // decoded into a fileDoc already: cannot fail
	}
	return readPolicyValue(&node).fractions
}
