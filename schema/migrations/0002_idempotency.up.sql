-- Idempotency keys: the response of a completed write, stored in the same
-- transaction as the write, so a retry with the same key is answered from
-- here and never executed twice. Only committed writes have a row: a failed
-- write changed nothing, and its retry simply runs again.
CREATE TABLE fencegw.idempotency_keys (
    client       text        NOT NULL,  -- '' when the policy declares no clients
    operation    text        NOT NULL,
    key          text        NOT NULL,
    fingerprint  bytea       NOT NULL,  -- SHA-256 of the operation and its arguments
    status       int,
    response     bytea,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (client, operation, key)
);
CREATE INDEX idempotency_keys_created_at ON fencegw.idempotency_keys (created_at);

-- fencegw.claim_key and fencegw.settle_key, which write it, are defined in
-- fence/sql.
