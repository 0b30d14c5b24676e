-- fencegw.raise_fence_floor raises the fence floor (fencegw.fence_floor)
-- to p_epoch:p_revision, which the caller read from etcd as below every
-- token a live lease holds or may be granted (authority.Etcd.TokenFloor),
-- and returns the floor. It never lowers it, and raises it only for the
-- etcd the authority record vouches for: the record's newest epoch is
-- p_epoch, its etcd identity p_identity, and the floor stays at or below
-- the highest revision recorded in it. An etcd the gateways do not trust
-- (another cluster, a restored copy) cannot move the floor, which would
-- refuse every token of the real one until its revisions caught up.
--
-- It runs with its owner's rights (pinned search_path) for the roles
-- granted it: the gateway's role cannot UPDATE fencegw.fence_floor, so
-- the floor moves only here, and only up. A NULL argument moves nothing
-- (the WHERE is not true; least() alone would skip a NULL).
--
-- Called by package fence (fence/floor.go), from the janitor.
CREATE OR REPLACE FUNCTION fencegw.raise_fence_floor(p_epoch bigint, p_revision bigint, p_identity text)
RETURNS TABLE (epoch bigint, revision bigint)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    UPDATE fencegw.fence_floor fl
       SET epoch = a.epoch, revision = least(p_revision, a.max_revision), raised_at = now()
      FROM (SELECT au.epoch, au.identity, au.max_revision
              FROM fencegw.authority au ORDER BY au.epoch DESC LIMIT 1) a
     WHERE a.epoch = p_epoch AND a.identity = p_identity AND p_revision IS NOT NULL AND p_revision >= 0
       AND (fl.epoch, fl.revision) < (a.epoch, least(p_revision, a.max_revision));
    SELECT fl.epoch, fl.revision FROM fencegw.fence_floor fl;
$$;
REVOKE EXECUTE ON FUNCTION fencegw.raise_fence_floor(bigint, bigint, text) FROM PUBLIC;
