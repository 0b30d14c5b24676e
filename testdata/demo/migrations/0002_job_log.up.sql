-- The demo's jobs: one row per fenced step of an export batch, a day's
-- settlement or an account's payout, naming the lock or permit slot it
-- was fenced on. Not guarded: a guarded table's rows belong to one
-- resource kind, and a semaphore's slots belong to no row.
CREATE TABLE demo.job_log (
    id        bigserial   PRIMARY KEY,
    resource  text        NOT NULL,
    epoch     bigint      NOT NULL,
    revision  bigint      NOT NULL,
    operation text        NOT NULL,
    at        timestamptz NOT NULL DEFAULT clock_timestamp()
);
