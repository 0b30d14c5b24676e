package gateway

import (
	"encoding/json"

	"github.com/fencegw/fencegw/tokens"
)

// Result is the JSON answer of one applied write (fence renders it, in
// fence/answer.go; these types document it and decode it): for an operation of one
// resource, that resource and the accepted token; for one with roles, a
// fence per role. Statements holds, per statement, the rows affected and,
// for statements with RETURNING or SELECT, the rows.
type Result struct {
	Operation  string            `json:"operation"`
	Resource   string            `json:"resource,omitempty"`
	Token      tokens.Token      `json:"token,omitzero"`
	Fences     []FenceResult     `json:"fences,omitempty"`
	Statements []StatementResult `json:"statements"`
}

// FenceResult is one role's fence in a Result.
type FenceResult struct {
	Role     string       `json:"role"`
	Resource string       `json:"resource"`
	Token    tokens.Token `json:"token"`
}

// StatementResult is the outcome of one statement of the operation.
type StatementResult struct {
	RowsAffected int64           `json:"rows_affected"`
	Rows         json.RawMessage `json:"rows,omitempty"` // as PostgreSQL rendered it
}

// BatchResult is the answer of POST /v1/batch: one Result per write, in
// the order sent.
type BatchResult struct {
	Writes []Result `json:"writes"`
}
