-- The gateway's own state. Every business write of a fenced resource runs in
-- the same transaction as the advance of that resource's row here.
CREATE SCHEMA IF NOT EXISTS fencegw;

CREATE TABLE fencegw.fences (
    resource   text        PRIMARY KEY,
    epoch      bigint      NOT NULL CHECK (epoch > 0),
    token      bigint      NOT NULL CHECK (token > 0),  -- the etcd revision part of the token
    writes     bigint      NOT NULL DEFAULT 1,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The token authority as this database knows it: which epoch is current and
-- the highest etcd revision seen in it (rollback detection builds on this).
CREATE TABLE fencegw.authority (
    epoch        bigint      PRIMARY KEY CHECK (epoch > 0),
    cluster_id   text,
    max_revision bigint      NOT NULL DEFAULT 0,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
INSERT INTO fencegw.authority (epoch) VALUES (1);

-- A bounded audit of refused writes; the gateway prunes old rows.
CREATE TABLE fencegw.rejections (
    id        bigserial   PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    resource  text        NOT NULL,
    operation text        NOT NULL,
    reason    text        NOT NULL,
    presented text,
    current   text
);

-- fence advances the fence of p_resource to (p_epoch, p_token) with ONE
-- conditional statement, or raises SQLSTATE FG409 when the token is older
-- than the fence (or equal, in strict mode). Raising aborts the whole
-- transaction, so nothing of the operation that follows can commit. The
-- row lock taken by the upsert serialises writers of one resource.
CREATE FUNCTION fencegw.fence(p_resource text, p_epoch bigint, p_token bigint, p_strict boolean)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_writes bigint;
    v_epoch  bigint;
    v_token  bigint;
BEGIN
    -- Guard triggers read this to tell gateway writes from bypass writes.
    PERFORM set_config('fencegw.resource', p_resource, true);

    INSERT INTO fencegw.fences AS f (resource, epoch, token)
    VALUES (p_resource, p_epoch, p_token)
    ON CONFLICT (resource) DO UPDATE
       SET epoch = EXCLUDED.epoch, token = EXCLUDED.token,
           writes = f.writes + 1, updated_at = now()
     WHERE (f.epoch, f.token) < (EXCLUDED.epoch, EXCLUDED.token)
        OR (NOT p_strict AND (f.epoch, f.token) = (EXCLUDED.epoch, EXCLUDED.token))
    RETURNING f.writes INTO v_writes;

    IF NOT FOUND THEN
        -- The upsert locked the conflicting row even though it did not
        -- update it, so this read sees the fence that refused us.
        SELECT f.epoch, f.token INTO v_epoch, v_token
          FROM fencegw.fences f WHERE f.resource = p_resource;
        RAISE EXCEPTION USING
            ERRCODE = 'FG409',
            MESSAGE = format('fencegw: stale token %s:%s for %s', p_epoch, p_token, p_resource),
            DETAIL  = format('%s:%s', v_epoch, v_token);
    END IF;
    RETURN v_writes;
END
$$;

-- expect_rows raises SQLSTATE FG412 when a statement of an operation did
-- not affect the number of rows its policy expects (e.g. a debit that
-- would overdraw), aborting the transaction like a stale token does.
CREATE FUNCTION fencegw.expect_rows(p_got bigint, p_want bigint, p_operation text, p_statement int)
RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    IF p_got <> p_want THEN
        RAISE EXCEPTION USING
            ERRCODE = 'FG412',
            MESSAGE = format('fencegw: operation %s statement %s affected %s row(s), expected %s',
                             p_operation, p_statement, p_got, p_want),
            DETAIL  = format('%s', p_got);
    END IF;
    RETURN p_got;
END
$$;
