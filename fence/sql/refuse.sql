-- fencegw.refuse raises p_code with p_message (and p_detail): the SQL
-- front (package sqlfront) refuses a statement of an open transaction
-- with it (a token the authority refused, a COPY), so that PostgreSQL
-- aborts the transaction as it would for an error of its own, and
-- nothing of it commits. It does nothing else, and anyone may call it.
CREATE OR REPLACE FUNCTION fencegw.refuse(p_code text, p_message text, p_detail text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = p_code, MESSAGE = p_message, DETAIL = coalesce(p_detail, '');
END
$$;
