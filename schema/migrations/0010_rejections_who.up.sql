-- The rejection audit names who was refused: the client (its policy name,
-- or 'anonymous' when authentication is off or failed), the request's id
-- (X-Request-Id, the access log's request_id, the problem's instance) and
-- the remote address (the peer's, or what a trusted proxy said it was).
-- Rows recorded before this migration have none of them (NULL).
ALTER TABLE fencegw.rejections
    ADD COLUMN client      text,
    ADD COLUMN request_id  text,
    ADD COLUMN remote_addr text;
