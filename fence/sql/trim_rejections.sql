-- fencegw.trim_rejections deletes what the rejection audit does not keep,
-- and returns how many rows went: the rows of a (reason, client) past its
-- newest 1,000, unless among the first 10 of their hour within 7 days;
-- and every row of a client past the 256 refused most recently, per
-- reason. Rows recorded before clients were (client NULL) are one client.
-- (fence.MaxRejections, FirstRejectionsKept, FirstsKeptFor and
-- MaxAuditClients name these numbers in Go; fence/audit.go says why.)
--
-- The numbers are written here, not passed: it runs with its owner's
-- rights (pinned search_path) for the roles granted it, and the gateway's
-- role, which may only insert into fencegw.rejections, must not choose
-- how much of the evidence goes. The rows it inserts take their id and
-- time from the table (it may not set them), so the first rows of an hour
-- past stay the first.
--
-- Called by package fence (fence/audit.go), from the janitor.
CREATE OR REPLACE FUNCTION fencegw.trim_rejections()
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_deleted bigint;
BEGIN
    WITH r AS (
        SELECT id, at, reason,
               row_number() OVER (PARTITION BY reason, client ORDER BY id DESC) AS newest,
               row_number() OVER (PARTITION BY reason, client, date_trunc('hour', at) ORDER BY id) AS nth_in_hour,
               max(id) OVER (PARTITION BY reason, client) AS client_last
          FROM fencegw.rejections
    ), ranked AS (
        SELECT id, at, newest, nth_in_hour, dense_rank() OVER (PARTITION BY reason ORDER BY client_last DESC) AS client_rank
          FROM r
    )
    DELETE FROM fencegw.rejections WHERE id IN (
        SELECT id FROM ranked
         WHERE client_rank > 256
            OR (newest > 1000 AND NOT (nth_in_hour <= 10 AND at > now() - interval '7 days')));
    GET DIAGNOSTICS v_deleted = ROW_COUNT;
    RETURN v_deleted;
END
$$;
REVOKE EXECUTE ON FUNCTION fencegw.trim_rejections() FROM PUBLIC;
