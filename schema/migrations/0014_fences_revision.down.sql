-- Back to the older name. The functions stay this binary's (they read
-- revision) until an older binary's `migrate up` defines its own.
ALTER TABLE fencegw.fences RENAME COLUMN revision TO token;
