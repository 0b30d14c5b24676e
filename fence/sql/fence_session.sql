-- fencegw.fence_session fences the current transaction of a session of
-- the SQL front (package sqlfront) on each of p_resources, with
-- fencegw.fence: at this point of the transaction, in the order given
-- (the front sorts them by key), each raising FG409 if its token is
-- stale. It returns how many fences it advanced.
--
-- Why a function of its own: the session's statements run as the
-- client's sql_role, which has no rights on fencegw.fences, so it can
-- neither run fencegw.fence nor stamp a fence row; this function runs as
-- its owner, and only for a caller that proves it knows the key the front
-- registered for this very backend (fencegw.front_sessions, which only
-- the owner and the gateway's role can read): p_mac must be
-- sha256(key || sha256(message)), the message this backend's pid and the
-- fences asked for, each resource, epoch, revision and mode (a SHA-256
-- over exactly 64 bytes, a key and a digest, is a MAC: no length can be
-- extended). The key never leaves the front; the MAC goes as a bound
-- parameter of the front's own statement, whose answers the front keeps
-- from the client. Were a MAC seen anyway, it would fence only what it
-- was made for, on this backend: tokens the front already validated for
-- this session's client.
--
-- The first fence of a transaction replaces fencegw.resource, which the
-- session may have set by hand (harmless: the guard trusts a resource
-- only with this transaction's stamp on its fence row); later ones, of a
-- second SET LOCAL fencegw.tokens, add to it.
CREATE OR REPLACE FUNCTION fencegw.fence_session(p_mac bytea, p_resources text[], p_epochs bigint[], p_revisions bigint[], p_strict boolean[])
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_key   bytea;
    v_msg   text := pg_backend_pid()::text;
    v_first boolean := coalesce(current_setting('fencegw.resource', true), '') = '';
BEGIN
    SELECT s.secret INTO v_key FROM fencegw.front_sessions s
     WHERE s.pid = pg_backend_pid() AND s.role = session_user;
    IF cardinality(p_resources) IS DISTINCT FROM cardinality(p_epochs)
       OR cardinality(p_resources) IS DISTINCT FROM cardinality(p_revisions)
       OR cardinality(p_resources) IS DISTINCT FROM cardinality(p_strict) THEN
        v_msg := NULL;
    END IF;
    FOR i IN 1 .. coalesce(cardinality(p_resources), 0) LOOP
        v_msg := v_msg || E'\x1e' || p_resources[i] || E'\x1f' || p_epochs[i] || E'\x1f' || p_revisions[i]
                 || E'\x1f' || CASE WHEN p_strict[i] THEN 't' WHEN NOT p_strict[i] THEN 'f' END;
    END LOOP;
    IF v_key IS NULL OR v_msg IS NULL OR p_mac IS DISTINCT FROM sha256(v_key || sha256(convert_to(v_msg, 'UTF8'))) THEN
        RAISE EXCEPTION USING
            ERRCODE = '42501',
            MESSAGE = 'fencegw: only the SQL front fences a transaction, with SET LOCAL fencegw.tokens';
    END IF;
    FOR i IN 1 .. cardinality(p_resources) LOOP
        PERFORM fencegw.fence(p_resources[i], p_epochs[i], p_revisions[i], p_strict[i], v_first AND i = 1);
    END LOOP;
    RETURN cardinality(p_resources);
END
$$;
