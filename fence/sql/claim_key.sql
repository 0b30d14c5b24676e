-- fencegw.claim_key reserves (client, operation, key) for this transaction.
-- A concurrent holder of the same key makes the INSERT wait until it
-- commits or aborts, so two requests with one key never both execute. It
-- raises FG208 when a completed response exists (replay it) and FG422 when
-- the key was used for a different request. Keys older than p_retention
-- are forgotten and may be reused. Called by package fence (fence/tx.go).
CREATE OR REPLACE FUNCTION fencegw.claim_key(p_client text, p_operation text, p_key text, p_fingerprint bytea, p_retention interval)
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
