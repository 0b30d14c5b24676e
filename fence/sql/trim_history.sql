-- fencegw.trim_history deletes what the lock history does not keep, and
-- returns how many rows went: events older than 30 days, and those of a
-- resource past its newest 1,000 (fence.MaxHistory and HistoryKeptFor
-- name these numbers in Go).
--
-- The numbers are written here, not passed: it runs with its owner's
-- rights (pinned search_path) for the roles granted it, and the gateway's
-- role, which may only insert into fencegw.lock_history, must not choose
-- how much of the history goes.
--
-- Called by package fence (fence/audit.go), from the janitor.
CREATE OR REPLACE FUNCTION fencegw.trim_history()
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_deleted bigint;
BEGIN
    DELETE FROM fencegw.lock_history WHERE at < now() - interval '30 days' OR id IN (
        SELECT id FROM (
            SELECT id, row_number() OVER (PARTITION BY resource ORDER BY id DESC) AS newest
              FROM fencegw.lock_history) ranked
         WHERE newest > 1000);
    GET DIAGNOSTICS v_deleted = ROW_COUNT;
    RETURN v_deleted;
END
$$;
REVOKE EXECUTE ON FUNCTION fencegw.trim_history() FROM PUBLIC;
