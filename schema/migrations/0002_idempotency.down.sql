DROP FUNCTION IF EXISTS fencegw.claim_key(text, text, text, bytea, interval);
DROP TABLE IF EXISTS fencegw.idempotency_keys;
