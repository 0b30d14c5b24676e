-- The leader example's schema: what the leader of each group decides.
CREATE SCHEMA leader;

-- One row per write a leader got through the fence. The fence's row lock
-- serialises the writers of one group from the fence check to COMMIT, so
-- ids of one group are in commit order: tokens must never go backwards
-- along them.
CREATE TABLE leader.decisions (
    id         bigserial   PRIMARY KEY,
    group_name text        NOT NULL,
    who        text        NOT NULL,   -- the leader's name, as it told itself
    epoch      bigint      NOT NULL,   -- its token, as the fence accepted it
    revision   bigint      NOT NULL,
    n          bigint      NOT NULL,   -- the write's number in its term
    at         timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE INDEX decisions_group_id ON leader.decisions (group_name, id);
