-- The fence only moves forward, whoever connects. The gateway's role
-- changes fencegw.fences and fencegw.fence_floor only through functions
-- that run with their owner's rights and cannot lower them (fence,
-- advance_fence, raise_fence_floor, prune_fences), and may only insert
-- into the audit and the lock history, which functions trim to their
-- retention (trim_rejections, trim_history). `fencegw grants` prints
-- that for a role; this migration moves the roles an earlier `fencegw
-- grants` made, the gateway roles of existing installations: every role
-- but the owner that may write fencegw.fences.
--
-- The functions' bodies are definitions (fence/sql), applied right after
-- the migrations by the same `migrate up`. Here each is made to run as its
-- owner with a pinned search_path, taken from PUBLIC and granted to those
-- roles: those that exist now are altered (so that no write of theirs
-- fails between this migration and the definitions), the others made as
-- placeholders that only raise, which the definitions replace, keeping
-- their grants.
DO $migration$
DECLARE
    v_roles name[];
    v_role  name;
    v_fn    text;
    v_decl  text;
    v_table text;
BEGIN
    SELECT coalesce(array_agg(DISTINCT r.rolname), '{}') INTO v_roles
      FROM pg_class c, aclexplode(c.relacl) a, pg_roles r
     WHERE c.oid = 'fencegw.fences'::regclass AND r.oid = a.grantee AND a.grantee <> c.relowner
       AND a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE');

    FOR v_fn, v_decl IN VALUES
        ('fencegw.fence(text,bigint,bigint,boolean,boolean)',
         '(p_resource text, p_epoch bigint, p_token bigint, p_strict boolean, p_first boolean DEFAULT true) RETURNS bigint'),
        ('fencegw.raise_fence_floor(bigint,bigint,text)',
         '(p_epoch bigint, p_revision bigint, p_identity text) RETURNS TABLE (epoch bigint, revision bigint)'),
        ('fencegw.prune_fences(text,integer)',
         '(p_after text, p_limit integer) RETURNS TABLE (last text, pruned bigint)'),
        ('fencegw.advance_fence(text,bigint,bigint,boolean)',
         '(p_resource text, p_epoch bigint, p_revision bigint, p_dry_run boolean) RETURNS TABLE (before_epoch bigint, before_revision bigint, advanced boolean)'),
        ('fencegw.trim_rejections()', '() RETURNS bigint'),
        ('fencegw.trim_history()', '() RETURNS bigint')
    LOOP
        IF to_regprocedure(v_fn) IS NULL THEN
            EXECUTE format('CREATE FUNCTION %s%s LANGUAGE plpgsql AS $body$ BEGIN RAISE EXCEPTION %L; END $body$',
                           split_part(v_fn, '(', 1), v_decl,
                           'fencegw: ' || split_part(v_fn, '(', 1) || ' is defined by migrate up, after the migrations: run it again');
        END IF;
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = pg_catalog, pg_temp', v_fn);
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', v_fn);
        FOREACH v_role IN ARRAY v_roles LOOP
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', v_fn, v_role);
        END LOOP;
    END LOOP;

    -- No one but the owner writes the fences, the floor, or rewrites the
    -- evidence; TRIGGER too, since a trigger runs inside the functions'
    -- writes.
    REVOKE INSERT, UPDATE, DELETE, TRUNCATE, TRIGGER ON fencegw.fences, fencegw.fence_floor FROM PUBLIC;
    REVOKE UPDATE, DELETE, TRUNCATE, TRIGGER ON fencegw.rejections, fencegw.lock_history FROM PUBLIC;
    FOREACH v_table IN ARRAY ARRAY['fencegw.fences', 'fencegw.fence_floor', 'fencegw.rejections', 'fencegw.lock_history'] LOOP
        FOR v_role IN
            SELECT DISTINCT r.rolname FROM pg_class c, aclexplode(c.relacl) a, pg_roles r
             WHERE c.oid = v_table::regclass AND r.oid = a.grantee AND a.grantee <> c.relowner
        LOOP
            IF v_table IN ('fencegw.fences', 'fencegw.fence_floor') THEN
                EXECUTE format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE, TRIGGER ON %s FROM %I', v_table, v_role);
            ELSE
                EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE, TRIGGER ON %s FROM %I', v_table, v_role);
            END IF;
        END LOOP;
    END LOOP;

    -- The audit's rows take their id and time from the table: a row
    -- inserted now cannot pass for one of the first of an hour past, which
    -- fencegw.trim_rejections keeps. The history's time is the recording
    -- replica's; its id is the table's.
    FOR v_role IN
        SELECT DISTINCT r.rolname FROM pg_class c, aclexplode(c.relacl) a, pg_roles r
         WHERE c.oid = 'fencegw.rejections'::regclass AND r.oid = a.grantee AND a.grantee <> c.relowner
           AND a.privilege_type = 'INSERT'
    LOOP
        EXECUTE format('REVOKE INSERT ON fencegw.rejections FROM %I', v_role);
        EXECUTE format('GRANT INSERT (resource, operation, reason, presented, current, client, request_id, remote_addr, suppressed) ON fencegw.rejections TO %I', v_role);
    END LOOP;
    FOR v_role IN
        SELECT DISTINCT r.rolname FROM pg_class c, aclexplode(c.relacl) a, pg_roles r
         WHERE c.oid = 'fencegw.lock_history'::regclass AND r.oid = a.grantee AND a.grantee <> c.relowner
           AND a.privilege_type = 'INSERT'
    LOOP
        EXECUTE format('REVOKE INSERT ON fencegw.lock_history FROM %I', v_role);
        EXECUTE format('GRANT INSERT (at, resource, event, lease_id, client, token, actor, reason) ON fencegw.lock_history TO %I', v_role);
    END LOOP;
END
$migration$;
