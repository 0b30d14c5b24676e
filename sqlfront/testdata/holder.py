# Holder A of the seed's GC-pause timeline on psycopg2, for the SQL
# front's tests (sqlfront/holder_process_test.go): it runs each line of
# stdin as one statement, in autocommit mode (the test sends BEGIN and
# COMMIT itself), and answers "result" and the statement's SQLSTATE,
# 00000 for success.
import sys

import psycopg2

conn = psycopg2.connect(sys.argv[1])
conn.autocommit = True
for line in sys.stdin:
    try:
        conn.cursor().execute(line.rstrip("\n"))
        print("result 00000", flush=True)
    except psycopg2.Error as e:
        print("result", e.pgcode, flush=True)
