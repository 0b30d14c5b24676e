-- fencegw.guard_row is the row trigger `fencegw guard install` puts on the
-- tables a policy guards (guard/guard.go), AFTER the row is final (other
-- triggers and generated columns included). Its arguments spell the row's
-- resource key: 'L' + a literal, or 'C' + a column whose value goes there
-- (the policy's key template with its arguments mapped to columns).
--
-- A row passes when its resource is one the write may touch
-- (fencegw.resource, which fencegw.fence sets) and this transaction
-- stamped its fence, or when the transaction declared a bypass. The fence
-- row stays locked by the transaction that stamped it, so the stamp cannot
-- change under the trigger; a savepoint rolled back takes its stamp with
-- it. An UPDATE must stay within the write's resources on both sides, so
-- it can move a row neither out of them nor into them.
--
-- Both trigger functions run with their owner's rights and a pinned
-- search_path: a writer needs no grant on the fencegw schema to be told
-- FG403, and cannot swap the operators and functions they use. Triggers
-- depend on them: they are replaced, never dropped and created again.
CREATE OR REPLACE FUNCTION fencegw.guard_row() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
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
