-- The outbox example's state. Each table has one writer, which the guard
-- holds it to: the requester of a refund (fenced on refund/{intent})
-- writes the intent and its outbox row; the leader of the row's queue
-- (fenced on outbox/{queue}) records the provider's refund.
CREATE SCHEMA outbox;

-- A refund someone decided to make. epoch and revision are the token of
-- the write that requested it.
CREATE TABLE outbox.intents (
    intent_id    text        PRIMARY KEY,
    amount_cents bigint      NOT NULL CHECK (amount_cents > 0),
    epoch        bigint      NOT NULL,
    revision     bigint      NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- The outbox: the provider call the intent asks for, written in the
-- intent's transaction, so that there is one exactly when there is an
-- intent. The queue names the dispatcher that delivers it.
CREATE TABLE outbox.messages (
    id         bigserial   PRIMARY KEY,
    intent_id  text        NOT NULL UNIQUE REFERENCES outbox.intents,
    queue      text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- A message the provider carried out: its refund, recorded by the
-- queue's dispatcher, or by the sweeper that found the refund made but
-- not recorded. epoch and revision are the recording leader's token.
CREATE TABLE outbox.deliveries (
    message_id   bigint      PRIMARY KEY REFERENCES outbox.messages,
    queue        text        NOT NULL,
    psp_ref      text        NOT NULL,
    via          text        NOT NULL CHECK (via IN ('dispatch', 'sweep')),
    epoch        bigint      NOT NULL,
    revision     bigint      NOT NULL,
    delivered_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- An intent is pending until its message is delivered, then done.
CREATE VIEW outbox.intent_status AS
SELECT i.intent_id, i.amount_cents, m.id AS message_id, m.queue,
       CASE WHEN d.message_id IS NULL THEN 'pending' ELSE 'done' END AS status,
       d.psp_ref, i.requested_at, d.delivered_at
  FROM outbox.intents i
  JOIN outbox.messages m USING (intent_id)
  LEFT JOIN outbox.deliveries d ON d.message_id = m.id;
