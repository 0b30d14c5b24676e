-- An older fence does not know the floor: once rows were pruned below it,
-- dropping it lets tokens at or below it write again to the resources whose
-- rows are gone. Refused then; an operator who accepts that sets the floor
-- back to 1:0 by hand first.
DO $$
DECLARE
    v_epoch    bigint;
    v_revision bigint;
BEGIN
    SELECT epoch, revision INTO v_epoch, v_revision FROM fencegw.fence_floor;
    IF (v_epoch, v_revision) > (1, 0) THEN
        RAISE EXCEPTION 'fencegw: the fence floor is at %:% and fence rows at or below it may have been pruned: without the floor, tokens at or below it would be accepted again', v_epoch, v_revision
            USING HINT = 'keep schema version 13; or, accepting that, run UPDATE fencegw.fence_floor SET epoch = 1, revision = 0 and fencegw migrate force 13, then down again';
    END IF;
END
$$;
DROP FUNCTION IF EXISTS fencegw.raise_fence_floor(bigint, bigint, text);
DROP FUNCTION IF EXISTS fencegw.prune_fences(text, integer);
DROP TABLE fencegw.fence_floor;
