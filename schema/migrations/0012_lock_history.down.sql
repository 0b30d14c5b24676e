DROP TABLE IF EXISTS fencegw.lock_history;
