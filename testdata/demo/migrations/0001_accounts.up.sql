-- The demo application's schema: the seed chapter's ledger.
CREATE SCHEMA demo;

CREATE TABLE demo.accounts (
    id            text   PRIMARY KEY,
    balance_cents bigint NOT NULL CHECK (balance_cents >= 0)
);

INSERT INTO demo.accounts (id, balance_cents)
SELECT 'acct-' || i, 1000 FROM generate_series(1, 100) AS i;

-- One row per applied write, in commit order of the resource (the fence
-- row lock serialises writers of one account), so tests can check that
-- tokens never went backwards.
CREATE TABLE demo.write_log (
    id           bigserial   PRIMARY KEY,
    resource     text        NOT NULL,
    epoch        bigint      NOT NULL,
    revision     bigint      NOT NULL,
    operation    text        NOT NULL,
    account      text        NOT NULL,
    amount_cents bigint      NOT NULL,
    at           timestamptz NOT NULL DEFAULT clock_timestamp()
);
