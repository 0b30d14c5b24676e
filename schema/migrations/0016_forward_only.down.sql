-- Back to schema version 15's privileges: the roles that may call
-- fencegw.fence (the gateway roles) write the fences, the floor, the
-- audit and the history themselves again, as `fencegw grants` of that
-- version granted; the functions run with their caller's rights and
-- anyone may call them; the functions version 15 did not have go. A
-- binary of version 15 defines its functions again at its next up.
DO $migration$
DECLARE
    v_roles name[] := '{}';
    v_role  name;
    v_fn    text;
BEGIN
    IF to_regprocedure('fencegw.fence(text,bigint,bigint,boolean,boolean)') IS NOT NULL THEN
        SELECT coalesce(array_agg(DISTINCT r.rolname), '{}') INTO v_roles
          FROM pg_proc p, aclexplode(p.proacl) a, pg_roles r
         WHERE p.oid = 'fencegw.fence(text,bigint,bigint,boolean,boolean)'::regprocedure
           AND r.oid = a.grantee AND a.grantee <> p.proowner;
    END IF;
    FOREACH v_role IN ARRAY v_roles LOOP
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON fencegw.fences TO %I', v_role);
        EXECUTE format('GRANT SELECT, UPDATE ON fencegw.fence_floor TO %I', v_role);
        EXECUTE format('GRANT SELECT, INSERT, DELETE ON fencegw.rejections TO %I', v_role);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON fencegw.lock_history TO %I', v_role);
    END LOOP;
    FOREACH v_fn IN ARRAY ARRAY['fencegw.fence(text,bigint,bigint,boolean,boolean)',
                                'fencegw.raise_fence_floor(bigint,bigint,text)', 'fencegw.prune_fences(text,integer)'] LOOP
        IF to_regprocedure(v_fn) IS NOT NULL THEN
            EXECUTE format('ALTER FUNCTION %s SECURITY INVOKER RESET search_path', v_fn);
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', v_fn);
        END IF;
    END LOOP;
END
$migration$;
DROP FUNCTION IF EXISTS fencegw.advance_fence(text, bigint, bigint, boolean);
DROP FUNCTION IF EXISTS fencegw.trim_rejections();
DROP FUNCTION IF EXISTS fencegw.trim_history();
