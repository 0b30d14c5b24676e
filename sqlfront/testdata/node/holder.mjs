// Holder A of the seed's GC-pause timeline on node-postgres, for the SQL
// front's tests (sqlfront/holder_process_test.go): it runs each line of
// stdin as one statement (the test sends BEGIN and COMMIT itself), and
// answers "result" and the statement's SQLSTATE, 00000 for success.
import readline from 'node:readline';
import pg from 'pg';

const client = new pg.Client({ connectionString: process.argv[2] });
await client.connect();
for await (const line of readline.createInterface({ input: process.stdin })) {
  try {
    await client.query(line);
    console.log('result 00000');
  } catch (e) {
    console.log('result ' + (e.code ?? 'none'));
  }
}
await client.end();
