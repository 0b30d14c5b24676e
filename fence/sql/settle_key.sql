-- fencegw.settle_key makes a final refusal of a keyed request the outcome
-- of its key, so that no other attempt with that key can commit afterwards.
--
-- Why: a keyed request may be refused (a token the authority no longer
-- vouches for, a stale token, a failed precondition) while an earlier
-- attempt with the same key is still on its way: holding its claim in an
-- open transaction, or not yet claimed at all (waiting for a connection,
-- queued behind a busy resource). A client told "refused" may then act on
-- it (retry under a new key, give up) while that attempt commits. Storing
-- the refusal as the key's response makes the later attempt replay it
-- instead of executing; waiting on the key first makes an attempt in
-- flight finish before the refusal is decided.
--
-- With p_status NULL it only waits: for an attempt in flight, then returns
-- the key's stored response, if any, and stores nothing.
--
-- It returns one row (replayed, status, response): replayed false with the
-- refusal just stored, replayed true with the key's earlier response (a
-- completed write or an earlier refusal), or no row when it only waited
-- and the key has no response. It raises FG422 when the key was used for
-- a different request. Called by package fence (fence/idempotency.go).
CREATE OR REPLACE FUNCTION fencegw.settle_key(p_client text, p_operation text, p_key text, p_fingerprint bytea,
                                              p_retention interval, p_status int, p_response bytea)
RETURNS TABLE (replayed boolean, status int, response bytea)
LANGUAGE plpgsql AS $$
DECLARE
    v_fingerprint bytea;
    v_status      int;
    v_response    bytea;
BEGIN
    IF p_status IS NOT NULL THEN
        -- Waits for an attempt in flight holding the key, like claim_key.
        INSERT INTO fencegw.idempotency_keys AS k (client, operation, key, fingerprint, status, response)
        VALUES (p_client, p_operation, p_key, p_fingerprint, p_status, p_response)
        ON CONFLICT (client, operation, key) DO UPDATE
           SET fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status,
               response = EXCLUDED.response, created_at = now()
         WHERE k.created_at < now() - p_retention;
        IF FOUND THEN
            RETURN QUERY SELECT false, p_status, p_response;
            RETURN;
        END IF;
    ELSE
        BEGIN
            INSERT INTO fencegw.idempotency_keys (client, operation, key, fingerprint)
            VALUES (p_client, p_operation, p_key, p_fingerprint)
            ON CONFLICT DO NOTHING;
            RAISE EXCEPTION USING ERRCODE = 'FG000'; -- undo the insert: only the wait was wanted
        EXCEPTION WHEN SQLSTATE 'FG000' THEN
            NULL;
        END;
    END IF;
    -- FOR KEY SHARE writes WAL, so this transaction's commit waits for a
    -- synchronous standby as the key's did: the answer it returns is
    -- replayed only once it is as durable as an acknowledged commit (the
    -- key's own commit may have been answered with a warning, its wait
    -- for the standby cancelled, and so be on this server alone).
    SELECT k.fingerprint, k.status, k.response INTO v_fingerprint, v_status, v_response
      FROM fencegw.idempotency_keys k
     WHERE (k.client, k.operation, k.key) = (p_client, p_operation, p_key)
       AND k.created_at >= now() - p_retention AND k.response IS NOT NULL
       FOR KEY SHARE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF v_fingerprint <> p_fingerprint THEN
        RAISE EXCEPTION USING ERRCODE = 'FG422',
            MESSAGE = format('fencegw: idempotency key %s of %s was used with different arguments', p_key, p_operation);
    END IF;
    RETURN QUERY SELECT true, v_status, v_response;
END
$$;
