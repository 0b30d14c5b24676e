-- The nightly reconciliation of the book chapter's opening story: one run
-- per day posts the day's entries into the ledger, then marks the day
-- finished.
CREATE SCHEMA recon;

-- The ledger is append-only and cannot tell one run's entries from
-- another's: an entry is unique only within the run that posted it (its
-- token), as two runs of one day are two sets of postings. So nothing here
-- stops a second run's entries from landing beside the first's; the
-- fence does (see policy.yaml).
CREATE TABLE recon.ledger (
    id           bigserial   PRIMARY KEY,
    day          text        NOT NULL CHECK (day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'),
    entry_no     integer     NOT NULL CHECK (entry_no > 0),
    amount_cents bigint      NOT NULL,
    epoch        bigint      NOT NULL,  -- the token of the run that posted it
    revision     bigint      NOT NULL,
    posted_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (day, epoch, revision, entry_no)
);

-- One row per finished day: the run whose entries the ledger holds.
CREATE TABLE recon.runs (
    day         text        PRIMARY KEY,
    epoch       bigint      NOT NULL,
    revision    bigint      NOT NULL,
    entries     integer     NOT NULL,
    total_cents bigint      NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
