-- The refund worker's state: one row per refund intent, claimed before the
-- payment provider is called, and a ledger of recorded refunds.
CREATE SCHEMA refund;

-- An intent goes pending -> done, never back: claim_refund inserts it,
-- record_refund finishes it with the provider's reference. epoch and
-- revision are the fencing token of the write that last changed the row.
CREATE TABLE refund.intents (
    intent_id    text        PRIMARY KEY,
    amount_cents bigint      NOT NULL CHECK (amount_cents > 0),
    status       text        NOT NULL CHECK (status IN ('pending', 'done')),
    psp_ref      text,
    epoch        bigint      NOT NULL,
    revision     bigint      NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- A done intent names the provider's refund; a pending one cannot yet.
    CHECK ((status = 'done') = (psp_ref IS NOT NULL))
);

-- One row per recorded refund. Deliberately no unique constraint on
-- intent_id: that there is one row per intent is what the example proves
-- of record_refund (pending -> done, fenced), not what a constraint forces.
CREATE TABLE refund.ledger (
    id           bigserial   PRIMARY KEY,
    intent_id    text        NOT NULL REFERENCES refund.intents,
    amount_cents bigint      NOT NULL,
    psp_ref      text        NOT NULL,
    epoch        bigint      NOT NULL,
    revision     bigint      NOT NULL,
    recorded_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
