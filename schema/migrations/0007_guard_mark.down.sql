-- Back to the forgeable mark: the guard_row and fence of migration 0005.
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
                v_key := v_key || (v_row ->> substr(v_part, 2));
            END IF;
        END LOOP;
        IF v_key IS NULL OR coalesce(v_fenced, '') = ''
           OR (v_key <> v_fenced AND NOT v_key = ANY (string_to_array(v_fenced, E'\n'))) THEN
            IF NOT fencegw.bypassed() THEN
                RAISE EXCEPTION USING
                    ERRCODE = 'FG403',
                    MESSAGE = format('fencegw: %s on %I.%I refused: the row belongs to %s, and this transaction is %s',
                                     TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME, coalesce(v_key, '(a NULL key column)'),
                                     CASE WHEN coalesce(v_fenced, '') = '' THEN 'not a fenced write'
                                          ELSE 'fenced on ' || replace(v_fenced, E'\n', ', ') END),
                    HINT = 'write through fencegw, or declare a bypass first: SELECT fencegw.bypass(''why'')';
            END IF;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;
DROP FUNCTION fencegw.stamp_unfenced(text, bigint, bigint, boolean);

CREATE OR REPLACE FUNCTION fencegw.fence(p_resource text, p_epoch bigint, p_token bigint, p_strict boolean, p_first boolean DEFAULT true)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_writes bigint;
    v_epoch  bigint;
    v_token  bigint;
BEGIN
    IF p_first THEN
        PERFORM set_config('fencegw.resource', p_resource, true);
    ELSE
        PERFORM set_config('fencegw.resource', current_setting('fencegw.resource') || E'\n' || p_resource, true);
    END IF;

    INSERT INTO fencegw.fences AS f (resource, epoch, token)
    VALUES (p_resource, p_epoch, p_token)
    ON CONFLICT (resource) DO UPDATE
       SET epoch = EXCLUDED.epoch, token = EXCLUDED.token,
           writes = f.writes + 1, updated_at = now()
     WHERE (f.epoch, f.token) < (EXCLUDED.epoch, EXCLUDED.token)
        OR (NOT p_strict AND (f.epoch, f.token) = (EXCLUDED.epoch, EXCLUDED.token))
    RETURNING f.writes INTO v_writes;

    IF NOT FOUND THEN
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

ALTER TABLE fencegw.fences DROP COLUMN xact;
