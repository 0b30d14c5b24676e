DROP INDEX IF EXISTS fencegw.rejections_reason_id;
ALTER TABLE fencegw.rejections DROP COLUMN IF EXISTS suppressed;
