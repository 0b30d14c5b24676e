-- fencegw.fences.token held only the revision of a token (its epoch is
-- the column beside it): named for what it holds, like
-- fencegw.fence_floor.revision. The functions that read it are
-- definitions (fence/sql), applied after this by the same `migrate up`.
ALTER TABLE fencegw.fences RENAME COLUMN token TO revision;
