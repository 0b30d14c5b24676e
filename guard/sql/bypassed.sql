-- fencegw.bypassed says whether this transaction declared a bypass with
-- fencegw.bypass: the setting must name a log row of this transaction.
-- Transaction IDs restart in a restored or replicated copy of the
-- database; the start time does not repeat with them.
CREATE OR REPLACE FUNCTION fencegw.bypassed()
RETURNS boolean
LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id text := current_setting('fencegw.bypass', true);
BEGIN
    RETURN v_id ~ '^[0-9]{1,18}$' AND EXISTS (
        SELECT 1 FROM fencegw.bypass_log WHERE id = v_id::bigint AND txid = txid_current() AND at = now());
END
$$;
