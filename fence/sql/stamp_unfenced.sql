-- fencegw.stamp_unfenced stamps the fence row as fencegw.fence does,
-- without the check: `fencegw torture --unsafe-no-fence` and the examples'
-- control runs, which show what happens without fencing, use it so the
-- guard lets them write. It runs with its caller's rights, so it is no way
-- around the guard for a role that cannot write fencegw.fences (the
-- gateway's role cannot: it fences through fencegw.fence); EXECUTE is
-- revoked from PUBLIC, and the gateway's role must not be granted it.
CREATE OR REPLACE FUNCTION fencegw.stamp_unfenced(p_resource text, p_epoch bigint, p_token bigint, p_first boolean)
RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    -- fencegw.resource and the stamp as fencegw.fence leaves them; the
    -- token is not compared, and a fence row that exists is not moved.
    PERFORM set_config('fencegw.resource', CASE WHEN p_first THEN p_resource
        ELSE current_setting('fencegw.resource') || E'\n' || p_resource END, true);
    INSERT INTO fencegw.fences (resource, epoch, revision, xact) VALUES (p_resource, p_epoch, p_token, pg_current_xact_id())
        ON CONFLICT (resource) DO UPDATE SET updated_at = now(), xact = EXCLUDED.xact;
    RETURN 0;
END
$$;
REVOKE EXECUTE ON FUNCTION fencegw.stamp_unfenced(text, bigint, bigint, boolean) FROM PUBLIC;
