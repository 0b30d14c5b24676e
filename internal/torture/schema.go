package torture

// schemaSQL is the torture application: one row per applied write. The ID
// is drawn inside the transaction that holds the resource's fence row lock,
// so per resource it is the commit order the checker reads. No uniqueness
// on intent: a write applied twice must show up, not be refused.
const schemaSQL = `
CREATE SCHEMA IF NOT EXISTS torture;
CREATE TABLE IF NOT EXISTS torture.log (
    id       bigserial PRIMARY KEY,
    resource text      NOT NULL,
    epoch    bigint    NOT NULL,
    revision bigint    NOT NULL,
    intent   text      NOT NULL,
    worker   int       NOT NULL,
    at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS log_resource ON torture.log (resource, id);
`

// policyYAML: one operation appending to the log under res/{r}'s fence;
// %t is the coalesce setting.
const policyYAML = `
resources:
  res:
    key: "res/{r}"
    coalesce: %t
operations:
  append:
    resource: res
    args:
      r: {type: string, max_length: 32}
      intent: {type: string, max_length: 64}
      worker: {type: integer, min: 0, max: 10000}
    statements:
      - sql: |
          INSERT INTO torture.log (resource, epoch, revision, intent, worker)
          VALUES (:_resource, :_epoch, :_revision, :intent, :worker)
`
