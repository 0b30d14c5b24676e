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

-- The functions on these tables (fencegw.fence, fencegw.expect_rows) are
-- defined in fence/sql, applied after the migrations.
