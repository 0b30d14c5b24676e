#!/bin/sh
# Run by the postgres image once, when it initialises its data directory
# (/docker-entrypoint-initdb.d): the role fencegw serve connects as. It owns
# nothing and is granted nothing here; the compose file's one-shot grants
# service (`fencegw grants --apply`) then gives it exactly what the policy's
# statements need. Safe to run again: the role is made once, its password
# set each time. No password is built in: the compose file passes
# FENCEGW_GATEWAY_PASSWORD, and without it the role is not made.
set -eu
psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}" \
	-v password="${FENCEGW_GATEWAY_PASSWORD:?set FENCEGW_GATEWAY_PASSWORD: no password is built in}" <<'EOSQL'
SELECT 'CREATE ROLE fencegw_gateway LOGIN' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'fencegw_gateway') \gexec
ALTER ROLE fencegw_gateway PASSWORD :'password';
EOSQL
