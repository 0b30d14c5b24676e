-- fencegw.transaction_committed says whether a transaction of the
-- session's client named p_key (fencegw.transaction_key) committed: after
-- a COMMIT answered 08007 (outcome unknown), the client asks here, on a
-- new session. A transaction with the key still in flight is waited for
-- first (an insert of the key, taken back), so the answer never changes
-- afterwards: false means it did not commit, and never will.
CREATE OR REPLACE FUNCTION fencegw.transaction_committed(p_key text)
RETURNS boolean
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_client text;
BEGIN
    SELECT s.client INTO v_client FROM fencegw.front_sessions s
     WHERE s.pid = pg_backend_pid() AND s.role = session_user;
    IF v_client IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '42501',
            MESSAGE = 'fencegw.transaction_committed: only a session of the SQL front asks for its client';
    END IF;
    BEGIN
        INSERT INTO fencegw.transaction_keys (client, key) VALUES (v_client, p_key) ON CONFLICT DO NOTHING;
        RAISE EXCEPTION USING ERRCODE = 'FG000'; -- undo the insert: only the wait was wanted
    EXCEPTION WHEN SQLSTATE 'FG000' THEN
        NULL;
    END;
    RETURN EXISTS (SELECT 1 FROM fencegw.transaction_keys k WHERE k.client = v_client AND k.key = p_key);
END
$$;
