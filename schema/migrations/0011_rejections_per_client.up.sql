-- The janitor trims the rejection audit per reason and per client (a
-- flood pushes out only its own client's rows), newest first.
CREATE INDEX rejections_reason_client_id ON fencegw.rejections (reason, client, id);
DROP INDEX IF EXISTS fencegw.rejections_reason_id;
