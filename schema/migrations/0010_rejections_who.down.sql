ALTER TABLE fencegw.rejections
    DROP COLUMN IF EXISTS remote_addr,
    DROP COLUMN IF EXISTS request_id,
    DROP COLUMN IF EXISTS client;
