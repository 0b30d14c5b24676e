-- Guard triggers installed by `fencegw guard install` depend on these
-- functions: take them off first (`fencegw guard remove`), or this fails
-- and leaves the version dirty.
DROP FUNCTION IF EXISTS fencegw.guard_truncate();
DROP FUNCTION IF EXISTS fencegw.guard_row();
DROP FUNCTION IF EXISTS fencegw.bypassed();
DROP FUNCTION IF EXISTS fencegw.bypass(text);
DROP TABLE IF EXISTS fencegw.bypass_log;
