-- fencegw.not_after refuses a write that reaches PostgreSQL after its
-- business deadline (the Fencing-Not-After header): a write prepared for a
-- window, a settlement cut-off or a job's slot, must not apply after it,
-- whatever the lease says (the seed's §9.7.1, check 5). The database's clock
-- decides, at the write's fence, inside its transaction: no gateway's clock
-- can let a late write through. It raises SQLSTATE FG410, which aborts the
-- write (in a transaction of several, its savepoint), with the database's
-- time as DETAIL.
--
-- Called by package fence (fence/pipeline.go), after the write's fences.
CREATE OR REPLACE FUNCTION fencegw.not_after(p_deadline timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_now timestamptz := clock_timestamp();
BEGIN
    IF v_now > p_deadline THEN
        RAISE EXCEPTION USING
            ERRCODE = 'FG410',
            MESSAGE = format('fencegw: the write''s deadline %s has passed', p_deadline),
            DETAIL  = v_now::text;
    END IF;
END
$$;
