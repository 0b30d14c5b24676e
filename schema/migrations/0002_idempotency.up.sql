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

-- claim_key reserves (client, operation, key) for this transaction. A
-- concurrent holder of the same key makes the INSERT wait until it commits
-- or aborts, so two requests with one key never both execute. It raises
-- FG208 when a completed response exists (replay it) and FG422 when the key
-- was used for a different request. Keys older than p_retention are
-- forgotten and may be reused.
CREATE FUNCTION fencegw.claim_key(p_client text, p_operation text, p_key text, p_fingerprint bytea, p_retention interval)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_fingerprint bytea;
BEGIN
    INSERT INTO fencegw.idempotency_keys AS k (client, operation, key, fingerprint)
    VALUES (p_client, p_operation, p_key, p_fingerprint)
    ON CONFLICT (client, operation, key) DO UPDATE
       SET fingerprint = EXCLUDED.fingerprint, status = NULL, response = NULL, created_at = now()
     WHERE k.created_at < now() - p_retention;
    IF FOUND THEN
        RETURN;
    END IF;
    SELECT k.fingerprint INTO v_fingerprint
      FROM fencegw.idempotency_keys k
     WHERE (k.client, k.operation, k.key) = (p_client, p_operation, p_key);
    IF v_fingerprint <> p_fingerprint THEN
        RAISE EXCEPTION USING ERRCODE = 'FG422',
            MESSAGE = format('fencegw: idempotency key %s of %s was used with different arguments', p_key, p_operation);
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'FG208',
        MESSAGE = format('fencegw: idempotency key %s of %s already completed', p_key, p_operation);
END
$$;
