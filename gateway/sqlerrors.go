package gateway

import (
	"errors"
	"fmt"

	"github.com/fencegw/fencegw/fence"
	"github.com/fencegw/fencegw/internal/clip"
	"github.com/fencegw/fencegw/policy"
)

// maxSQLMessage bounds an application's message in a problem's detail.
const maxSQLMessage = 1024

// applicationError is an SQLSTATE a policy statement raised that the
// policy's sql_errors (or the PT class) turn into a problem of the
// application's choosing.
type applicationError struct {
	mapping policy.SQLErrorMapping
	sql     *fence.SQLError
	err     error
}

func (e *applicationError) Error() string { return e.err.Error() }
func (e *applicationError) Unwrap() error { return e.err }

// mapSQLError wraps err in an applicationError if it carries a statement's
// SQLSTATE that the policy maps; otherwise it returns err as it is (and an
// unmapped SQLSTATE is an internal error, its message in the log only).
func (g *Gateway) mapSQLError(err error) error {
	var se *fence.SQLError
	if !errors.As(err, &se) {
		return err
	}
	m, ok := g.cfg.Policy.SQLError(se.Code)
	if !ok {
		return err
	}
	return &applicationError{mapping: m, sql: se, err: err}
}

// setApplication fills p from an applicationError.
func (p *Problem) setApplication(app *applicationError) {
	p.setCustom(app.mapping.Status, app.mapping.Kind, "Refused by the application")
	p.Detail = fmt.Sprintf("the operation's SQL refused the write (SQLSTATE %s); nothing was written", app.sql.Code)
	if app.mapping.Message {
		p.Detail = clip.String(app.sql.Message, maxSQLMessage)
	}
}
