ALTER TABLE fencegw.authority DROP COLUMN identity;
