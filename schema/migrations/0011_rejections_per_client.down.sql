CREATE INDEX IF NOT EXISTS rejections_reason_id ON fencegw.rejections (reason, id);
DROP INDEX IF EXISTS fencegw.rejections_reason_client_id;
