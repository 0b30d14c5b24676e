-- fencegw.transaction_key names the current transaction of a session of
-- the SQL front p_key, for its client (the session's, as the front
-- registered it in fencegw.front_sessions): the key's row is written in
-- the transaction, so it exists exactly when the transaction committed,
-- which fencegw.transaction_committed reads. A key a committed
-- transaction of the client already has is refused (FG208): a retry
-- under the key of a transaction that did commit cannot commit twice. A
-- transaction in flight with the key makes this one wait for its end.
--
-- It runs as its owner, so the session's role needs no rights on the
-- table; only a session of the front has a client to name keys for.
CREATE OR REPLACE FUNCTION fencegw.transaction_key(p_key text)
RETURNS void
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
            MESSAGE = 'fencegw.transaction_key: only a session of the SQL front names its transactions';
    END IF;
    IF p_key IS NULL OR length(p_key) NOT BETWEEN 1 AND 255 THEN
        RAISE EXCEPTION USING ERRCODE = 'FG400', MESSAGE = 'fencegw.transaction_key: a key is 1 to 255 characters';
    END IF;
    INSERT INTO fencegw.transaction_keys (client, key) VALUES (v_client, p_key) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'FG208',
            MESSAGE = format('fencegw: a transaction with key %s already committed', p_key);
    END IF;
END
$$;
