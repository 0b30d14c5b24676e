-- Without the table no session of the SQL front can fence: the front
-- refuses to start on a schema without it.
DROP FUNCTION IF EXISTS fencegw.fence_session(bytea, text[], bigint[], bigint[], boolean[]);
DROP FUNCTION IF EXISTS fencegw.refuse(text, text, text);
DROP TABLE fencegw.front_sessions;
