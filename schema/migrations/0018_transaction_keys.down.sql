-- A client that named its transactions can no longer ask what became of
-- them.
DROP FUNCTION IF EXISTS fencegw.transaction_key(text);
DROP FUNCTION IF EXISTS fencegw.transaction_committed(text);
DROP TABLE fencegw.transaction_keys;
