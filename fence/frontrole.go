package fence

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fencegw/fencegw/outcome"
)

// ErrFrontRole is wrapped by *FrontRoleError.
var ErrFrontRole = outcome.New("fence: a role the SQL front must not log in as", outcome.Refused)

// FrontRoleError says why a client's sql_role may not run sessions of the
// SQL front: what it could do that would let its own statements past
// the fence, or what it lacks to be fenced at all.
type FrontRoleError struct {
	Role    string
	Reasons []string
}

func (e *FrontRoleError) Error() string {
	return fmt.Sprintf("fence: the SQL front does not log in as role %s: %s", e.Role, strings.Join(e.Reasons, "; "))
}

func (e *FrontRoleError) Unwrap() error { return ErrFrontRole }

// checkFrontRoleSQL asks what role $1 may do, as the gateway's role
// (current_user) sees it, given the guarded tables $2. Every
// privilege is asked with the role's memberships (has_*_privilege,
// pg_has_role's MEMBER), so a grant to a role it may SET ROLE to counts.
const checkFrontRoleSQL = `
SELECT r.rolsuper,
       r.rolcreaterole,
       pg_has_role(r.oid, current_user, 'MEMBER'),
       pg_has_role(r.oid, n.nspowner, 'MEMBER'),
       has_schema_privilege(r.oid, 'fencegw', 'CREATE'),
       pg_has_role(r.oid, 'pg_read_server_files', 'MEMBER') OR pg_has_role(r.oid, 'pg_write_server_files', 'MEMBER')
         OR pg_has_role(r.oid, 'pg_execute_server_program', 'MEMBER'),
       NOT has_schema_privilege(r.oid, 'fencegw', 'USAGE'),
       has_table_privilege(r.oid, 'fencegw.fences', 'INSERT, UPDATE, DELETE, TRUNCATE'),
       has_table_privilege(r.oid, 'fencegw.front_sessions', 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE'),
       has_table_privilege(r.oid, 'fencegw.bypass_log', 'INSERT, UPDATE, DELETE, TRUNCATE')
         OR has_table_privilege(r.oid, 'fencegw.transaction_keys', 'INSERT, UPDATE, DELETE, TRUNCATE'),
       has_function_privilege(r.oid, 'fencegw.bypass(text)', 'EXECUTE'),
       has_function_privilege(r.oid, 'fencegw.stamp_unfenced(text, bigint, bigint, boolean)', 'EXECUTE'),
       coalesce((SELECT string_agg(t.name, ', ' ORDER BY t.name) FROM unnest($2::text[]) t(name)
                  WHERE to_regclass(t.name) IS NOT NULL
                    AND (pg_has_role(r.oid, (SELECT c.relowner FROM pg_class c WHERE c.oid = to_regclass(t.name)), 'MEMBER')
                         OR has_table_privilege(r.oid, to_regclass(t.name), 'TRIGGER'))), '')
  FROM pg_roles r, pg_namespace n
 WHERE r.rolname = $1 AND n.nspname = 'fencegw'`

// CheckFrontRole refuses role as a client's sql_role (*FrontRoleError)
// if it could get a row of a guarded table past the guard by itself,
// or could not be fenced: a superuser; a role that may create roles
// (and grant itself any); a member of the gateway's role or of the
// fencegw schema's owner; one that may read the server's files (its
// log) or run its programs; one that may create in that schema, write its
// fences, sessions, bypass log or transaction keys, declare a bypass or
// stamp a fence
// without the check; one that owns a guarded table or may put triggers
// on it (TRIGGER runs its code inside others' writes); and one without
// USAGE on schema fencegw, which fencing needs. db is the gateway's
// connection; ctx bounds the one query.
func CheckFrontRole(ctx context.Context, db DB, role string, guarded []string) error {
	var (
		super, createRole, gateway, schemaOwner, create, files, noUsage bool
		fences, sessions, bypassLog, bypass, stamp                      bool
		tables                                                          string
	)
	err := db.QueryRow(ctx, checkFrontRoleSQL, role, guarded).Scan(&super, &createRole, &gateway, &schemaOwner, &create, &files, &noUsage,
		&fences, &sessions, &bypassLog, &bypass, &stamp, &tables)
	if errors.Is(err, pgx.ErrNoRows) {
		return &FrontRoleError{Role: role, Reasons: []string{"no such role"}}
	}
	if err != nil {
		return fmt.Errorf("%w: check role %s for the SQL front: %w", ErrUnavailable, role, err)
	}
	var why []string
	for _, c := range []struct {
		bad    bool
		reason string
	}{
		{super, "it is a superuser"},
		{createRole, "it may create roles (CREATEROLE), and so grant itself the gateway's"},
		{gateway, "it is a member of the gateway's role"},
		{schemaOwner, "it is a member of the owner of schema fencegw"},
		{create, "it may create objects in schema fencegw"},
		{files, "it may read or write the server's files or run its programs (pg_read_server_files and the like): its log, the key"},
		{fences, "it may write fencegw.fences"},
		{sessions, "it may read or write fencegw.front_sessions"},
		{bypassLog, "it may write fencegw.bypass_log or fencegw.transaction_keys"},
		{bypass, "it may declare a bypass (EXECUTE on fencegw.bypass)"},
		{stamp, "it may stamp fences unchecked (EXECUTE on fencegw.stamp_unfenced)"},
		{tables != "", "it owns, or may put triggers on, guarded tables: " + tables},
		{noUsage, "it lacks USAGE on schema fencegw, which fencing needs: GRANT USAGE ON SCHEMA fencegw TO " + pgx.Identifier{role}.Sanitize()},
	} {
		if c.bad {
			why = append(why, c.reason)
		}
	}
	if len(why) > 0 {
		return &FrontRoleError{Role: role, Reasons: why}
	}
	return nil
}
