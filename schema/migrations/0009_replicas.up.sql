-- Each gateway replica says here, every few seconds, which policy it runs,
-- so that replicas sharing a database notice when they disagree (one
-- refusing an expired token another accepts). A row not refreshed for a
-- day is removed by the next announcement.
CREATE TABLE fencegw.replicas (
    name     text        PRIMARY KEY, -- host/pid/random, new on every start
    policy   text        NOT NULL,    -- SHA-256 of the policy file
    fences   text        NOT NULL,    -- the policy's fence settings, per resource kind
    started  timestamptz NOT NULL DEFAULT now(),
    seen_at  timestamptz NOT NULL DEFAULT now()
);
