-- The fence floor: the fence of every resource that has no fence row.
-- fencegw.fence refuses a token at or below it when it makes a new row, so
-- a row at or below the floor refuses nothing the floor does not, and the
-- janitor may delete it (fencegw.prune_fences): fencegw.fences stays as
-- big as the resources written since the floor, not every resource ever
-- written. The janitor raises the floor (fencegw.raise_fence_floor) below
-- every token a live lease holds or may still be granted; it never goes
-- down. One row; (1, 0) refuses nothing.
CREATE TABLE fencegw.fence_floor (
    singleton boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    epoch     bigint      NOT NULL CHECK (epoch > 0),
    revision  bigint      NOT NULL CHECK (revision >= 0),
    raised_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO fencegw.fence_floor (epoch, revision) VALUES (1, 0);

-- fencegw.fence reads it, fencegw.raise_fence_floor and
-- fencegw.prune_fences keep it: fence/sql.
