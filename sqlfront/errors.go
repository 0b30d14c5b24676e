package sqlfront

import (
	"errors"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgproto3"
)

// The SQLSTATEs the front answers with itself. A driver reads them as it
// reads PostgreSQL's: FG409 and FG403 are the gateway's own class, raised
// by PostgreSQL too when the fence or the guard refuses.
const (
	codeStale       = "FG409" // a token older than the fence: nothing of the transaction commits
	codeRefused     = "FG403" // a token the authority refused, a resource the client may not fence
	codeBadTokens   = "FG400" // fencegw.tokens or fencegw.* used otherwise than the front reads them
	codeUnavailable = "40001" // the authority could not be asked: nothing written, retry the transaction
	codeUnknown     = "08007" // transaction_resolution_unknown: the commit may or may not have happened
	codeLost        = "08006" // connection_failure: the backend is gone, nothing committed
	codeUnsupported = "0A000" // feature_not_supported: COPY, LISTEN, a fast-path call
	codeProtocol    = "08P01" // protocol_violation
	codeTooMany     = "53300" // too_many_connections
	codeAuth        = "28000" // invalid_authorization_specification
	codePassword    = "28P01" // invalid_password
	codeNoDatabase  = "3D000" // invalid_catalog_name
	codeAborted     = "25P02" // in_failed_sql_transaction
	codeIdle        = "57P05" // idle_session_timeout
	codeIdleInTx    = "25P03" // idle_in_transaction_session_timeout
	codeShutdown    = "57P01" // admin_shutdown
	codeTooLarge    = "54000" // program_limit_exceeded
	codeNoTurn      = "53000" // insufficient_resources: no turn in time, nothing sent
	codeCancelled   = "57014" // query_canceled
)

// sqlError is an answer of the front's own: an ErrorResponse it sends,
// and, if fatal, the end of the session.
type sqlError struct {
	Code, Message, Detail, Hint string
	Fatal                       bool
}

func (e *sqlError) Error() string { return "sqlfront: " + e.Code + ": " + e.Message }

// response is the ErrorResponse e is answered with.
func (e *sqlError) response() *pgproto3.ErrorResponse {
	sev := "ERROR"
	if e.Fatal {
		sev = "FATAL"
	}
	return &pgproto3.ErrorResponse{Severity: sev, SeverityUnlocalized: sev, Code: e.Code, Message: e.Message, Detail: e.Detail, Hint: e.Hint}
}

// fatal is a FATAL sqlError: the session ends after it.
func fatal(code, message string) *sqlError {
	return &sqlError{Code: code, Message: message, Fatal: true}
}

// refusal is an ERROR sqlError: the statement, and its transaction, fail.
func refusal(code, message, hint string) *sqlError {
	return &sqlError{Code: code, Message: message, Hint: hint}
}

// clientWentAway says err is the client's connection ending (closed,
// cut mid-frame, or closed by the front): nothing to tell it.
func clientWentAway(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// asSQLError returns err as an sqlError if it is one.
func asSQLError(err error) (*sqlError, bool) {
	var se *sqlError
	ok := errors.As(err, &se)
	return se, ok
}
