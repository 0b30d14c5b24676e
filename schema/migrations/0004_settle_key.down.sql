DROP FUNCTION IF EXISTS fencegw.settle_key(text, text, text, bytea, interval, int, bytea);
