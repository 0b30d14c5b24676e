-- The keys transactions of the SQL front name themselves by
-- (fencegw.transaction_key), one row per committed transaction, written
-- in the transaction itself: so a row exists exactly when its transaction
-- committed, and fencegw.transaction_committed tells a client whose
-- COMMIT had an unknown outcome (08007) what became of it. Kept for the
-- idempotency retention; the janitor deletes older rows.
CREATE TABLE fencegw.transaction_keys (
    client text        NOT NULL,
    key    text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (client, key)
);

-- The gateway roles of an existing installation (every role but the
-- owner that may call fencegw.fence, since migration 16 the mark of one)
-- read the keys and expire them, as `fencegw grants` gives a new one.
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
        EXECUTE format('GRANT SELECT, DELETE ON fencegw.transaction_keys TO %I', v_role);
    END LOOP;
END
$migration$;
