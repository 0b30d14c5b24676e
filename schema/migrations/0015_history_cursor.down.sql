-- Without the cursor, a gateway's watch of lease ends starts from now, as
-- before: nothing else reads it.
DROP TABLE fencegw.history_cursor;
