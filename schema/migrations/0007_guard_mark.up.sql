-- The guard's mark becomes one a writing role cannot forge. Until now the
-- triggers trusted fencegw.resource, a setting any session may set. Now a
-- row passes only if this very transaction advanced the fence of the row's
-- resource: fencegw.fence stamps the fence row with the transaction's ID, and
-- the triggers look for that stamp. Writing fencegw.fences takes privileges
-- on the fencegw schema that only the gateway's role holds, so a role that
-- may write the business tables, and nothing in fencegw, cannot pass.
--
-- fencegw.resource stays: it narrows the rows a write may touch to its own
-- resources (a batch advances many fences, each write touches its own).
--
-- A transaction ID is unique within one cluster but restarts in a copy
-- restored with pg_dump; its start time, which updated_at holds, does not
-- repeat with it. The stamp is both.
ALTER TABLE fencegw.fences ADD COLUMN xact xid8;

-- fencegw.fence and fencegw.stamp_unfenced stamp it, fencegw.guard_row
-- looks for the stamp: fence/sql, guard/sql.
