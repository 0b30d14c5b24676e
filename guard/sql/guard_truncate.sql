-- fencegw.guard_truncate is the statement trigger for TRUNCATE, which fires
-- no row triggers: emptying a guarded table takes a bypass, even inside a
-- fenced write.
CREATE OR REPLACE FUNCTION fencegw.guard_truncate() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT fencegw.bypassed() THEN
        RAISE EXCEPTION USING
            ERRCODE = 'FG403',
            MESSAGE = format('fencegw: TRUNCATE of %I.%I refused: it is guarded', TG_TABLE_SCHEMA, TG_TABLE_NAME),
            HINT = 'declare a bypass first: SELECT fencegw.bypass(''why'')';
    END IF;
    RETURN NULL;
END
$$;
