-- fencegw.advance_fence moves the fence of p_resource up to
-- p_epoch:p_revision for an operator, so that every token below it is
-- refused from the next write on, and returns the fence it had and
-- whether it moved (with p_dry_run, whether it would). A fence at or past
-- it is left as it is: a fence never goes back. It takes the row's lock,
-- as a write does, so a write in flight commits before it or is judged
-- against the new fence.
--
-- A resource without a fence row is fenced at the fence floor (it had
-- that fence); its row is made at the new fence, with no write counted,
-- unless the floor is at or past it already. Without the row, a token no
-- write has spent yet (a holder that has not written, a lease that
-- expired before writing) would make the row itself at its first write.
--
-- It runs with its owner's rights (pinned search_path) for the roles
-- granted it: the gateway's role holds no UPDATE on fencegw.fences, so an
-- operator's advance, like a write, can only raise a fence.
--
-- Called by package fence (fence/advance.go).
CREATE OR REPLACE FUNCTION fencegw.advance_fence(p_resource text, p_epoch bigint, p_revision bigint, p_dry_run boolean)
RETURNS TABLE (before_epoch bigint, before_revision bigint, advanced boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_resource IS NULL OR p_resource = '' OR p_resource ~ '[[:cntrl:]]'
       OR p_epoch IS NULL OR p_epoch < 1 OR p_revision IS NULL OR p_revision < 1 OR p_dry_run IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = 'fencegw: advance_fence: wants a resource key without control characters, an epoch and a revision of at least 1, and p_dry_run';
    END IF;
    SELECT f.epoch, f.revision INTO before_epoch, before_revision
      FROM fencegw.fences f WHERE f.resource = p_resource FOR UPDATE;
    IF NOT FOUND THEN
        SELECT fl.epoch, fl.revision INTO before_epoch, before_revision FROM fencegw.fence_floor fl;
    END IF;
    advanced := (before_epoch, before_revision) < (p_epoch, p_revision);
    IF advanced AND NOT p_dry_run THEN
        -- A write that made the row since the read above is raised too,
        -- never lowered.
        INSERT INTO fencegw.fences AS f (resource, epoch, revision, writes)
        VALUES (p_resource, p_epoch, p_revision, 0)
        ON CONFLICT (resource) DO UPDATE SET epoch = EXCLUDED.epoch, revision = EXCLUDED.revision, updated_at = now()
         WHERE (f.epoch, f.revision) < (EXCLUDED.epoch, EXCLUDED.revision);
    END IF;
    RETURN NEXT;
END
$$;
REVOKE EXECUTE ON FUNCTION fencegw.advance_fence(text, bigint, bigint, boolean) FROM PUBLIC;
