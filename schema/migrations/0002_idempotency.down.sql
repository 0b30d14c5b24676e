-- The functions that write the table go with it; the next up defines them
-- again.
DROP FUNCTION IF EXISTS fencegw.claim_key(text, text, text, bytea, interval);
DROP FUNCTION IF EXISTS fencegw.settle_key(text, text, text, bytea, interval, int, bytea);
DROP TABLE IF EXISTS fencegw.idempotency_keys;
