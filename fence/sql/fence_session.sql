-- fencegw.fence_session fences the current transaction of a session of
-- the SQL front (package sqlfront) on each of p_resources, with
-- fencegw.fence: at this point of the transaction, in the order given
-- (the front sorts them by key), each raising FG409 if its token is
-- stale. It returns how many fences it advanced.
--
-- Why a function of its own: the session's statements run as the
-- client's sql_role, which has no rights on fencegw.fences, so it can
-- neither run fencegw.fence nor stamp a fence row; this function runs as
-- its owner, and does so only for a caller that presents the secret the
-- front registered for this very backend (fencegw.front_sessions, whose
-- SHA-256 only the owner and the gateway's role can read). The front
-- sends the secret as a bound parameter of its own statement, never to
-- the client, and drops what the server says while it runs; the role's
-- other sessions see the statement's text in pg_stat_activity, not its
-- parameters. A secret is bound to its backend (pg_backend_pid) and role
-- (session_user): one seen by another session fences nothing there.
--
-- The first fence of a transaction replaces fencegw.resource, which the
-- session may have set by hand (harmless: the guard trusts a resource
-- only with this transaction's stamp on its fence row); later ones, of a
-- second SET LOCAL fencegw.tokens, add to it.
CREATE OR REPLACE FUNCTION fencegw.fence_session(p_secret bytea, p_resources text[], p_epochs bigint[], p_revisions bigint[], p_strict boolean[])
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_first boolean := coalesce(current_setting('fencegw.resource', true), '') = '';
BEGIN
    IF p_secret IS NULL OR NOT EXISTS (
           SELECT 1 FROM fencegw.front_sessions s
            WHERE s.pid = pg_backend_pid() AND s.secret = sha256(p_secret) AND s.role = session_user) THEN
        RAISE EXCEPTION USING
            ERRCODE = '42501',
            MESSAGE = 'fencegw: only the SQL front fences a transaction, with SET LOCAL fencegw.tokens';
    END IF;
    IF cardinality(p_resources) IS DISTINCT FROM cardinality(p_epochs)
       OR cardinality(p_resources) IS DISTINCT FROM cardinality(p_revisions)
       OR cardinality(p_resources) IS DISTINCT FROM cardinality(p_strict) THEN
        RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'fencegw.fence_session: one epoch, revision and mode per resource';
    END IF;
    FOR i IN 1 .. cardinality(p_resources) LOOP
        PERFORM fencegw.fence(p_resources[i], p_epochs[i], p_revisions[i], p_strict[i], v_first AND i = 1);
    END LOOP;
    RETURN cardinality(p_resources);
END
$$;
