-- The functions that stamp and read the column are left as they are: they
-- are this binary's, which needs the latest version (README: schema).
ALTER TABLE fencegw.fences DROP COLUMN xact;
