-- Lock history: every grant, release, expiry, revoke and lock-delay of a
-- lease, and every fence advanced by an operator, so that "who held
-- account/acct-7 between 14:02 and 14:05, and how did each lease end?"
-- has an answer. Written off the write path by every replica; trimmed by
-- the janitor (fence.MaxHistory, fence.HistoryKeptFor).
--
-- Replicas that share a database all see every expiry (each watches etcd)
-- and may record it: a lease has at most one row of each event, and at
-- most one end (released, expired or revoked), so a repeat inserts
-- nothing. The token is E:R, never a signature: the row is evidence, not
-- a credential.
CREATE TABLE fencegw.lock_history (
    id        bigserial   PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    resource  text        NOT NULL,
    event     text        NOT NULL CHECK (event IN ('granted', 'released', 'expired', 'revoked', 'lock-delay', 'fence-advanced')),
    lease_id  text,       -- hex; NULL for a fence advanced
    client    text,       -- the lease's owner; NULL when authentication is off
    token     text,       -- the lease's token, or the fence advanced to, E:R
    actor     text,       -- who revoked or advanced: an operator's client, or the gateway itself
    reason    text        -- why, as the operator said it
);
CREATE UNIQUE INDEX lock_history_lease_event ON fencegw.lock_history (lease_id, event) WHERE lease_id IS NOT NULL;
CREATE UNIQUE INDEX lock_history_lease_end ON fencegw.lock_history (lease_id)
    WHERE lease_id IS NOT NULL AND event IN ('released', 'expired', 'revoked');
CREATE INDEX lock_history_resource_id ON fencegw.lock_history (resource, id);
