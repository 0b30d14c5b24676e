-- The schema of `fencegw bench`: 10,000 accounts, the resources acct/1 …
-- acct/10000 of testdata/bench/policy.yaml.
CREATE SCHEMA bench;

CREATE TABLE bench.accounts (
    id      int    PRIMARY KEY,
    balance bigint NOT NULL
);

INSERT INTO bench.accounts (id, balance)
SELECT i, 0 FROM generate_series(1, 10000) AS i;
