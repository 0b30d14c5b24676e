-- The keys transactions of the SQL front name themselves by
-- (fencegw.transaction_key), one row per committed transaction, written
-- in the transaction itself: so a row exists exactly when its transaction
-- committed, and fencegw.transaction_committed tells a client whose
-- COMMIT had an unknown outcome (08007) what became of it. Kept for the
-- idempotency retention; the janitor deletes older rows.
CREATE TABLE fencegw.transaction_keys (
    client text        NOT NULL,
    key    text        NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (client, key)
);
