-- Bypass protection: guard triggers on the tables a policy lists refuse a
-- row write unless it happens inside a gateway write fenced on the row's
-- resource, or inside a transaction that declared an audited bypass.
-- `fencegw guard install` puts the triggers on the tables; this migration
-- only provides the log their bypass writes.
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

-- The functions (fencegw.bypass, fencegw.bypassed, fencegw.guard_row,
-- fencegw.guard_truncate) are defined in guard/sql.
