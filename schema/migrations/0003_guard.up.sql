-- Bypass protection: guard triggers on the tables a policy lists refuse a
-- row write unless it happens inside a gateway write fenced on the row's
-- resource, or inside a transaction that declared an audited bypass.
-- `fencegw guard install` puts the triggers on the tables; this migration
-- only provides what they call.
--
-- What it stops: accidents (a script, a cron job or a service writing the
-- tables directly) and misrouted writes (an operation writing a row of
-- another resource than the one it is fenced on). What it does not: a
-- session that may write the table can set the same transaction-local
-- settings the gateway sets. Privileges are the boundary: revoke
-- INSERT, UPDATE, DELETE and TRUNCATE from every role but the gateway's.

-- Every bypass, committed with the writes it allowed.
CREATE TABLE fencegw.bypass_log (
    id          bigserial   PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    by_session  text        NOT NULL DEFAULT session_user,
    by_role     text        NOT NULL DEFAULT current_user,
    application text        NOT NULL DEFAULT current_setting('application_name'),
    txid        bigint      NOT NULL DEFAULT txid_current(),
    why         text        NOT NULL CHECK (length(btrim(why)) BETWEEN 1 AND 1000)
);

-- bypass lets the rest of the current transaction write guarded tables
-- without a fence, and records who and why. Only roles granted EXECUTE may
-- call it (the migration revokes it from PUBLIC).
CREATE FUNCTION fencegw.bypass(p_why text)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    IF p_why IS NULL OR length(btrim(p_why)) = 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'FG400',
            MESSAGE = 'fencegw.bypass: say why, e.g. SELECT fencegw.bypass(''backfill for ticket 123'')';
    END IF;
    INSERT INTO fencegw.bypass_log (why) VALUES (p_why) RETURNING id INTO v_id;
    PERFORM set_config('fencegw.bypass', v_id::text, true);
    RETURN v_id;
END
$$;
REVOKE EXECUTE ON FUNCTION fencegw.bypass(text) FROM PUBLIC;

-- guard_row is the row trigger. Its arguments spell the row's resource key:
-- 'L' + a literal, or 'C' + a column whose value goes there (the policy's
-- key template with its arguments mapped to columns). An UPDATE must stay
-- within the fenced resource on both sides, so it cannot move a row out of
-- it or into it.
CREATE FUNCTION fencegw.guard_row()
RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_fenced text := current_setting('fencegw.resource', true);
    v_rows   jsonb[];
    v_row    jsonb;
    v_key    text;
    v_part   text;
BEGIN
    IF coalesce(current_setting('fencegw.bypass', true), '') <> '' THEN
        RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
    END IF;
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
        IF v_key IS NULL OR coalesce(v_fenced, '') = '' OR v_key <> v_fenced THEN
            RAISE EXCEPTION USING
                ERRCODE = 'FG403',
                MESSAGE = format('fencegw: %s on %I.%I refused: the row belongs to %s, and this transaction is %s',
                                 TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME, coalesce(v_key, '(a NULL key column)'),
                                 CASE WHEN coalesce(v_fenced, '') = '' THEN 'not a fenced write'
                                      ELSE 'fenced on ' || v_fenced END),
                HINT = 'write through fencegw, or declare a bypass first: SELECT fencegw.bypass(''why'')';
        END IF;
    END LOOP;
    RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
END
$$;

-- guard_truncate is the statement trigger for TRUNCATE, which fires no row
-- triggers: only a bypass may empty a guarded table.
CREATE FUNCTION fencegw.guard_truncate()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('fencegw.bypass', true), '') = '' THEN
        RAISE EXCEPTION USING
            ERRCODE = 'FG403',
            MESSAGE = format('fencegw: TRUNCATE of %I.%I refused: it is guarded', TG_TABLE_SCHEMA, TG_TABLE_NAME),
            HINT = 'declare a bypass first: SELECT fencegw.bypass(''why'')';
    END IF;
    RETURN NULL;
END
$$;
