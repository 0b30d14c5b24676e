-- The guard's mark becomes one a writing role cannot forge. Until now the
-- triggers trusted fencegw.resource, a setting any session may set. Now a
-- row passes only if this very transaction advanced the fence of the row's
-- resource: fence() stamps the fence row with the transaction's ID, and
-- the triggers look for that stamp. Writing fencegw.fences takes privileges
-- on the fencegw schema that only the gateway's role holds, so a role that
-- may write the business tables, and nothing in fencegw, cannot pass.
--
-- fencegw.resource stays: it narrows the rows a write may touch to its own
-- resources (a batch advances many fences, each write touches its own).
--
-- A transaction ID is unique within one cluster but restarts in a copy
-- restored with pg_dump; its start time, which updated_at holds, does not
-- repeat with it. The stamp is both.
ALTER TABLE fencegw.fences ADD COLUMN xact xid8;

CREATE OR REPLACE FUNCTION fencegw.fence(p_resource text, p_epoch bigint, p_token bigint, p_strict boolean, p_first boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_writes bigint;
    v_epoch  bigint;
    v_token  bigint;
BEGIN
    -- Guard triggers read this to tell which rows the write may touch.
    IF p_first THEN
        PERFORM set_config('fencegw.resource', p_resource, true);
    ELSE
        PERFORM set_config('fencegw.resource', current_setting('fencegw.resource') || E'\n' || p_resource, true);
    END IF;

    INSERT INTO fencegw.fences AS f (resource, epoch, token, xact)
    VALUES (p_resource, p_epoch, p_token, pg_current_xact_id())
    ON CONFLICT (resource) DO UPDATE
       SET epoch = EXCLUDED.epoch, token = EXCLUDED.token,
           writes = f.writes + 1, updated_at = now(), xact = EXCLUDED.xact
     WHERE (f.epoch, f.token) < (EXCLUDED.epoch, EXCLUDED.token)
        OR (NOT p_strict AND (f.epoch, f.token) = (EXCLUDED.epoch, EXCLUDED.token))
    RETURNING f.writes INTO v_writes;

    IF NOT FOUND THEN
        -- The upsert locked the conflicting row even though it did not
        -- update it, so this read sees the fence that refused us.
        SELECT f.epoch, f.token INTO v_epoch, v_token
          FROM fencegw.fences f WHERE f.resource = p_resource;
        RAISE EXCEPTION USING
            ERRCODE = 'FG409',
            MESSAGE = format('fencegw: stale token %s:%s for %s', p_epoch, p_token, p_resource),
            DETAIL  = format('%s:%s', v_epoch, v_token);
    END IF;
    RETURN v_writes;
END
$$;

-- stamp_unfenced stamps the fence row as fence() does, without the check:
-- `fencegw torture --unsafe-no-fence` and the examples' control runs, which
-- show what happens without fencing, use it so the guard lets them write.
-- It runs with its caller's rights, so it is no way around the guard for
-- a role that cannot write fencegw.fences.
CREATE FUNCTION fencegw.stamp_unfenced(p_resource text, p_epoch bigint, p_token bigint, p_first boolean)
RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    IF p_first THEN
        PERFORM set_config('fencegw.resource', p_resource, true);
    ELSE
        PERFORM set_config('fencegw.resource', current_setting('fencegw.resource') || E'\n' || p_resource, true);
    END IF;
    INSERT INTO fencegw.fences AS f (resource, epoch, token, xact)
    VALUES (p_resource, p_epoch, p_token, pg_current_xact_id())
    ON CONFLICT (resource) DO UPDATE SET updated_at = now(), xact = EXCLUDED.xact;
    RETURN 0;
END
$$;
REVOKE EXECUTE ON FUNCTION fencegw.stamp_unfenced(text, bigint, bigint, boolean) FROM PUBLIC;

-- guard_row as in migration 0005, but a row passes only when its resource
-- is one the write may touch and this transaction stamped its fence. The
-- fence row stays locked by the transaction that stamped it, so the stamp
-- cannot change under the trigger; a savepoint rolled back takes its stamp
-- with it.
CREATE OR REPLACE FUNCTION fencegw.guard_row()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_fenced text := current_setting('fencegw.resource', true);
    v_rows   jsonb[];
    v_row    jsonb;
    v_key    text;
    v_part   text;
    v_scoped boolean;
BEGIN
    v_rows := CASE TG_OP
        WHEN 'INSERT' THEN ARRAY[to_jsonb(NEW)]
        WHEN 'DELETE' THEN ARRAY[to_jsonb(OLD)]
        ELSE ARRAY[to_jsonb(OLD), to_jsonb(NEW)]
    END;
    FOREACH v_row IN ARRAY v_rows LOOP
        v_key := '';
        FOREACH v_part IN ARRAY TG_ARGV LOOP
            IF left(v_part, 1) = 'L' THEN
                v_key := v_key || substr(v_part, 2);
            ELSE
                v_key := v_key || (v_row ->> substr(v_part, 2)); -- NULL makes the key NULL: refused
            END IF;
        END LOOP;
        v_scoped := v_key IS NOT NULL AND coalesce(v_fenced, '') <> ''
                    AND (v_key = v_fenced OR v_key = ANY (string_to_array(v_fenced, E'\n')));
        -- Nested, so the bypass lookup runs only for rows outside the fence.
        IF NOT v_scoped OR NOT EXISTS (
               SELECT 1 FROM fencegw.fences
                WHERE resource = v_key AND xact = pg_current_xact_id() AND updated_at = now()) THEN
            IF NOT fencegw.bypassed() THEN
                RAISE EXCEPTION USING
                    ERRCODE = 'FG403',
                    MESSAGE = format('fencegw: %s on %I.%I refused: the row belongs to %s, and this transaction is %s',
                                     TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME, coalesce(v_key, '(a NULL key column)'),
                                     CASE WHEN coalesce(v_fenced, '') = '' THEN 'not a fenced write'
                                          WHEN v_scoped THEN 'not a fenced write of it (fencegw.resource was set by hand)'
                                          ELSE 'fenced on ' || replace(v_fenced, E'\n', ', ') END),
                    HINT = 'write through fencegw, or declare a bypass first: SELECT fencegw.bypass(''why'')';
            END IF;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;
