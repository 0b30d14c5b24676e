-- fencegw.bypass lets the rest of the current transaction write guarded
-- tables without a fence, and records who and why in fencegw.bypass_log.
-- Only roles granted EXECUTE may call it (revoked from PUBLIC below; the
-- grants operators give their roles survive its redefinition). It runs
-- with its owner's rights, so callers need no grant on the log. The
-- setting it makes names its log row, which the triggers look up: setting
-- fencegw.bypass by hand allows nothing.
CREATE OR REPLACE FUNCTION fencegw.bypass(p_why text)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id bigint;
BEGIN
    IF p_why IS NULL OR length(btrim(p_why)) = 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'FG400',
            MESSAGE = 'fencegw.bypass: say why, e.g. SELECT fencegw.bypass(''backfill for ticket 123'')';
    END IF;
    INSERT INTO fencegw.bypass_log (by_user, by_role, application, txid, why)
    VALUES (session_user, current_setting('role'), current_setting('application_name'), txid_current(), p_why)
    RETURNING id INTO v_id;
    PERFORM set_config('fencegw.bypass', v_id::text, true);
    RETURN v_id;
END
$$;
REVOKE EXECUTE ON FUNCTION fencegw.bypass(text) FROM PUBLIC;
