-- fencegw.prune_fences deletes the fence rows at or below the fence floor
-- among the p_limit rows after p_after (by resource), and returns the last
-- resource looked at (NULL past the end: the sweep is done) and how many
-- rows went. Such a row refuses only tokens the floor refuses too, which
-- fencegw.fence applies to a resource without a row. A batch at a time, so
-- that no transaction holds many rows: a writer of a pruned resource waits
-- for the batch's commit, then makes a new row under the floor.
--
-- The batch is a range of the primary key, (p_after, last], read and
-- deleted through the index: a sweep costs the rows it visits. (A join of
-- the batch's resources with the table let the planner hash the whole
-- table for every batch, so a sweep grew with the square of the rows.) A
-- row written into the range meanwhile is deleted too if it is at or
-- below the floor: any such row may go.
--
-- It runs with its owner's rights (pinned search_path) for the roles
-- granted it: the gateway's role deletes no fence row but through here,
-- and so none above the floor.
--
-- Called by package fence (fence/floor.go), from the janitor.
CREATE OR REPLACE FUNCTION fencegw.prune_fences(p_after text, p_limit integer)
RETURNS TABLE (last text, pruned bigint)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_epoch    bigint;
    v_revision bigint;
BEGIN
    IF p_after IS NULL OR p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = 'fencegw: prune_fences: wants a resource to start after (the empty string first) and a batch of at least 1';
    END IF;
    SELECT fl.epoch, fl.revision INTO v_epoch, v_revision FROM fencegw.fence_floor fl;
    SELECT max(b.resource) INTO last
      FROM (SELECT f.resource FROM fencegw.fences f
             WHERE f.resource > p_after ORDER BY f.resource LIMIT p_limit) b;
    pruned := 0;
    IF last IS NOT NULL THEN
        -- The rows are locked in key order first, as writers lock fence
        -- rows (canonical order): a DELETE alone locks them in whatever
        -- order its plan reads them (a sequential scan: the heap's), and
        -- met a transaction of several writes in a deadlock.
        PERFORM 1 FROM fencegw.fences f
          WHERE f.resource > p_after AND f.resource <= last
            AND (f.epoch, f.revision) <= (v_epoch, v_revision)
          ORDER BY f.resource FOR UPDATE;
        DELETE FROM fencegw.fences f
         WHERE f.resource > p_after AND f.resource <= last
           AND (f.epoch, f.revision) <= (v_epoch, v_revision);
        GET DIAGNOSTICS pruned = ROW_COUNT;
    END IF;
    RETURN NEXT;
END
$$;
REVOKE EXECUTE ON FUNCTION fencegw.prune_fences(text, integer) FROM PUBLIC;
