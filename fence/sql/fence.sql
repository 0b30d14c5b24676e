-- fencegw.fence advances the fence of p_resource to (p_epoch, p_token) with
-- ONE conditional statement, or raises SQLSTATE FG409 when the token is
-- older than the fence (or equal, in strict mode). Raising aborts the
-- whole transaction, so nothing of the operation that follows can commit.
-- The row lock taken by the upsert serialises writers of one resource.
--
-- It stamps the fence row with the transaction's ID (xact; updated_at holds
-- its start time, which does not repeat in a restored copy as IDs do): the
-- guard triggers let a row through only if this very transaction advanced
-- its resource's fence, a mark no role that may not call this function can
-- forge.
--
-- fencegw.resource lists the resources the write may touch, one per line
-- (resource keys contain no control characters): an operation with roles
-- or an atomic batch advances several fences. p_first starts a write's
-- list: the first fence of each write replaces what an earlier write of
-- the same transaction left (a coalesced batch runs many writes, each in
-- its own savepoint), the others add to it.
--
-- p_token is the token's revision (the column is fences.revision; a
-- parameter keeps the name it was created with, CREATE OR REPLACE cannot
-- rename it).
--
-- It runs with its owner's rights, with a pinned search_path, and only the
-- roles granted it may call it (`fencegw grants`): the gateway's role
-- holds no INSERT, UPDATE or DELETE on fencegw.fences, so whoever holds
-- its credentials moves a fence only through here, and only forward. Its
-- arguments are checked first: a crafted call is refused (22023) before
-- anything is touched.
--
-- Called by package fence (fence/pipeline.go). Before schema version 5 it
-- took four arguments; that signature is gone.
DROP FUNCTION IF EXISTS fencegw.fence(text, bigint, bigint, boolean);

CREATE OR REPLACE FUNCTION fencegw.fence(p_resource text, p_epoch bigint, p_token bigint, p_strict boolean, p_first boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_writes   bigint;
    v_epoch    bigint;
    v_revision bigint;
BEGIN
    -- A resource key has no control characters: a line break would add a
    -- resource to fencegw.resource that this call does not fence.
    IF p_resource IS NULL OR p_resource = '' OR p_resource ~ '[[:cntrl:]]'
       OR p_epoch IS NULL OR p_epoch < 1 OR p_token IS NULL OR p_token < 1
       OR p_strict IS NULL OR p_first IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = 'fencegw: fence: wants a resource key without control characters, an epoch and a revision of at least 1, and p_strict and p_first';
    END IF;
    -- Guard triggers read this to tell which rows the write may touch.
    IF p_first THEN
        PERFORM set_config('fencegw.resource', p_resource, true);
    ELSE
        PERFORM set_config('fencegw.resource', current_setting('fencegw.resource') || E'\n' || p_resource, true);
    END IF;

    INSERT INTO fencegw.fences AS f (resource, epoch, revision, xact)
    VALUES (p_resource, p_epoch, p_token, pg_current_xact_id())
    ON CONFLICT (resource) DO UPDATE
       SET epoch = EXCLUDED.epoch, revision = EXCLUDED.revision,
           writes = f.writes + 1, updated_at = now(), xact = EXCLUDED.xact
     WHERE (f.epoch, f.revision) < (EXCLUDED.epoch, EXCLUDED.revision)
        OR (NOT p_strict AND (f.epoch, f.revision) = (EXCLUDED.epoch, EXCLUDED.revision))
    RETURNING f.writes INTO v_writes;

    IF NOT FOUND THEN
        -- The upsert locked the conflicting row even though it did not
        -- update it, so this read sees the fence that refused us.
        SELECT f.epoch, f.revision INTO v_epoch, v_revision
          FROM fencegw.fences f WHERE f.resource = p_resource;
        RAISE EXCEPTION USING
            ERRCODE = 'FG409',
            MESSAGE = format('fencegw: stale token %s:%s for %s', p_epoch, p_token, p_resource),
            DETAIL  = format('%s:%s', v_epoch, v_revision);
    END IF;

    -- A new row (writes starts at 1): the resource had none, so it is
    -- fenced at the floor, which refuses a token at or below it in either
    -- mode (the janitor prunes rows at or below the floor, a strict row's
    -- equal token included). Read after the upsert, never before: a row
    -- the janitor deleted let this insert through only once the delete
    -- committed, and the floor it was pruned under committed no later, so
    -- this statement's snapshot sees it. Read before, an old floor and a
    -- row deleted in between would let a pruned row's stale token in.
    IF v_writes = 1 THEN
        SELECT fl.epoch, fl.revision INTO v_epoch, v_revision FROM fencegw.fence_floor fl;
        IF (p_epoch, p_token) <= (v_epoch, v_revision) THEN
            RAISE EXCEPTION USING
                ERRCODE = 'FG409',
                MESSAGE = format('fencegw: stale token %s:%s for %s: at or below the fence floor', p_epoch, p_token, p_resource),
                DETAIL  = format('%s:%s', v_epoch, v_revision);
        END IF;
    END IF;
    RETURN v_writes;
END
$$;
REVOKE EXECUTE ON FUNCTION fencegw.fence(text, bigint, bigint, boolean, boolean) FROM PUBLIC;
