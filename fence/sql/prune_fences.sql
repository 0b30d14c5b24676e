-- fencegw.prune_fences deletes the fence rows at or below the fence floor
-- among the p_limit rows after p_after (by resource), and returns the last
-- resource looked at (NULL past the end: the sweep is done) and how many
-- rows went. Such a row refuses only tokens the floor refuses too, which
-- fencegw.fence applies to a resource without a row. A batch at a time, so
-- that no transaction holds many rows: a writer of a pruned resource waits
-- for the batch's commit, then makes a new row under the floor.
--
-- Called by package fence (fence/floor.go), from the janitor.
CREATE OR REPLACE FUNCTION fencegw.prune_fences(p_after text, p_limit integer)
RETURNS TABLE (last text, pruned bigint)
LANGUAGE sql AS $$
    WITH batch AS (
        SELECT f.resource FROM fencegw.fences f
         WHERE f.resource > p_after ORDER BY f.resource LIMIT p_limit
    ), gone AS (
        DELETE FROM fencegw.fences f USING batch b, fencegw.fence_floor fl
         WHERE f.resource = b.resource AND (f.epoch, f.revision) <= (fl.epoch, fl.revision)
        RETURNING 1
    )
    SELECT (SELECT max(b.resource) FROM batch b), (SELECT count(*) FROM gone);
$$;
