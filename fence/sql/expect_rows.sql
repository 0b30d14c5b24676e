-- fencegw.expect_rows raises SQLSTATE FG412 when a statement of an
-- operation did not affect the number of rows its policy expects (e.g. a
-- debit that would overdraw), aborting the transaction like a stale token
-- does. The policy's compiled statements call it (policy/compile.go).
CREATE OR REPLACE FUNCTION fencegw.expect_rows(p_got bigint, p_want bigint, p_operation text, p_statement int)
RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    IF p_got <> p_want THEN
        RAISE EXCEPTION USING
            ERRCODE = 'FG412',
            MESSAGE = format('fencegw: operation %s statement %s affected %s row(s), expected %s',
                             p_operation, p_statement, p_got, p_want),
            DETAIL  = format('%s', p_got);
    END IF;
    RETURN p_got;
END
$$;
