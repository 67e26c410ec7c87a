// The baseline of serve.bench.ts: the least a server of this kind does before it answers a
// health check. Fastify and better-sqlite3, a SQLite file in WAL mode with one table, and
// GET /healthz answering after `select 1`. Prints "serving on <url>" once it listens.
import Database from 'better-sqlite3';
import Fastify from 'fastify';

const db = new Database(process.argv[2]);
db.pragma('journal_mode = WAL');
db.exec('create table if not exists items (id text primary key, body text)');
const ping = db.prepare('select 1 as ok');
const app = Fastify({ logger: false });
app.get('/healthz', async () => ({ ok: ping.get().ok === 1 }));
await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`serving on http://127.0.0.1:${app.server.address().port}`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
