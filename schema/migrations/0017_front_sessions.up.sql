-- The sessions of the SQL front (package sqlfront): each backend the
-- front logs in as a client's sql_role, under a key only the front and
-- this table know. fencegw.fence_session fences a transaction of that
-- backend only for a caller that proves it knows the key, so the
-- session's own role, which runs the application's statements, cannot
-- fence, scope or stamp anything by itself. Written by the gateway's
-- role; read by fence_session, as its owner; no other role may read it.
CREATE TABLE fencegw.front_sessions (
    pid        integer     PRIMARY KEY,
    secret     bytea       NOT NULL CHECK (length(secret) = 32),
    role       name        NOT NULL,
    client     text        NOT NULL,
    started_at timestamptz NOT NULL DEFAULT now()
);

-- The gateway roles of an existing installation (every role but the
-- owner that may call fencegw.fence, since migration 16 the mark of one)
-- register and delete the sessions, as `fencegw grants` gives a new one.
DO $migration$
DECLARE
    v_role name;
BEGIN
    FOR v_role IN
        SELECT DISTINCT r.rolname
          FROM pg_proc p, aclexplode(p.proacl) a, pg_roles r
         WHERE p.oid = 'fencegw.fence(text,bigint,bigint,boolean,boolean)'::regprocedure
           AND r.oid = a.grantee AND a.grantee <> p.proowner AND a.privilege_type = 'EXECUTE'
    LOOP
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON fencegw.front_sessions TO %I', v_role);
    END LOOP;
END
$migration$;
