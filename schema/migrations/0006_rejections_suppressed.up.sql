-- The rejection audit under a flood: a refusal recorded for a client and
-- kind that is past its rate stands, in a summary row, for itself and the
-- refusals not recorded since the last row of that client and kind.
ALTER TABLE fencegw.rejections ADD COLUMN suppressed bigint NOT NULL DEFAULT 0 CHECK (suppressed >= 0);
-- The janitor trims each reason apart, newest first.
CREATE INDEX rejections_reason_id ON fencegw.rejections (reason, id);
