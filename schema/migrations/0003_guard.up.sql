-- Bypass protection: guard triggers on the tables a policy lists refuse a
-- row write unless it happens inside a gateway write fenced on the row's
-- resource, or inside a transaction that declared an audited bypass.
-- `fencegw guard install` puts the triggers on the tables; this migration
-- only provides what they call.
--
-- What it stops: accidents (a script, a cron job or a service writing the
-- tables directly) and misrouted writes (an operation writing a row of
-- another resource than the one it is fenced on). What it does not: a
-- session that may write the table can set the transaction-local setting
-- fencegw.fence sets; the table's owner can disable the triggers; a
-- superuser can skip them (session_replication_role = replica). Privileges
-- are the boundary: revoke INSERT, UPDATE, DELETE and TRUNCATE from every
-- role but the gateway's.

-- Every bypass, committed with the writes it allowed. Only bypass() writes
-- here: it runs with the owner's rights, so callers need no grant on it.
CREATE TABLE fencegw.bypass_log (
    id          bigserial   PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    by_user     text        NOT NULL, -- session_user
    by_role     text        NOT NULL, -- the role taken with SET ROLE, or 'none'
    application text        NOT NULL,
    txid        bigint      NOT NULL,
    why         text        NOT NULL CHECK (length(btrim(why)) BETWEEN 1 AND 1000)
);

-- bypass lets the rest of the current transaction write guarded tables
-- without a fence, and records who and why. Only roles granted EXECUTE may
-- call it (revoked from PUBLIC below). The setting it makes names its log
-- row, which the triggers look up: setting fencegw.bypass by hand allows
-- nothing.
CREATE FUNCTION fencegw.bypass(p_why text)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id bigint;
BEGIN
    IF p_why IS NULL OR length(btrim(p_why)) = 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'FG400',
            MESSAGE = 'fencegw.bypass: say why, e.g. SELECT fencegw.bypass(''backfill for ticket 123'')';
    END IF;
    INSERT INTO fencegw.bypass_log (by_user, by_role, application, txid, why)
    VALUES (session_user, current_setting('role'), current_setting('application_name'), txid_current(), p_why)
    RETURNING id INTO v_id;
    PERFORM set_config('fencegw.bypass', v_id::text, true);
    RETURN v_id;
END
$$;
REVOKE EXECUTE ON FUNCTION fencegw.bypass(text) FROM PUBLIC;

-- bypassed says whether this transaction declared a bypass with bypass():
-- the setting must name a log row of this transaction. Transaction IDs
-- restart in a restored or replicated copy of the database; the start
-- time does not repeat with them.
CREATE FUNCTION fencegw.bypassed()
RETURNS boolean
LANGUAGE plpgsql STABLE
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_id text := current_setting('fencegw.bypass', true);
BEGIN
    RETURN v_id ~ '^[0-9]{1,18}$' AND EXISTS (
        SELECT 1 FROM fencegw.bypass_log WHERE id = v_id::bigint AND txid = txid_current() AND at = now());
END
$$;

-- guard_row is the row trigger, AFTER the row is final (other triggers
-- and generated columns included). Its arguments spell the row's resource
-- key: 'L' + a literal, or 'C' + a column whose value goes there (the
-- policy's key template with its arguments mapped to columns). An UPDATE
-- must stay within the fenced resource on both sides, so it can move a row
-- neither out of it nor into it.
--
-- Both trigger functions run with their owner's rights and a pinned
-- search_path: a writer needs no grant on the fencegw schema to be told
-- FG403, and cannot swap the operators and functions they use.
CREATE FUNCTION fencegw.guard_row()
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
                v_key := v_key || (v_row ->> substr(v_part, 2)); -- NULL makes the key NULL: refused
            END IF;
        END LOOP;
        -- Nested, so the bypass lookup runs only for rows outside the fence.
        IF v_key IS NULL OR coalesce(v_fenced, '') = '' OR v_key <> v_fenced THEN
            IF NOT fencegw.bypassed() THEN
                RAISE EXCEPTION USING
                    ERRCODE = 'FG403',
                    MESSAGE = format('fencegw: %s on %I.%I refused: the row belongs to %s, and this transaction is %s',
                                     TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME, coalesce(v_key, '(a NULL key column)'),
                                     CASE WHEN coalesce(v_fenced, '') = '' THEN 'not a fenced write'
                                          ELSE 'fenced on ' || v_fenced END),
                    HINT = 'write through fencegw, or declare a bypass first: SELECT fencegw.bypass(''why'')';
            END IF;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

-- guard_truncate is the statement trigger for TRUNCATE, which fires no row
-- triggers: emptying a guarded table takes a bypass, even inside a fenced
-- write.
CREATE FUNCTION fencegw.guard_truncate()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
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
