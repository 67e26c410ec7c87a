import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import knexFactory from 'knex';
import { describe, expect, it } from 'vitest';
import { storageDialect } from './dialect.js';

const SRC = fileURLToPath(new URL('..', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('StorageDialect', () => {
  it('holds every dialect branch of the engine: no other file compares dialect names', () => {
    const branches = sources(SRC)
      .filter((file) => !file.endsWith(join('storage', 'dialect.ts')))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .map((line, i) => [relative(SRC, file), i + 1, line] as const)
          .filter(([, , line]) => /dialect(\.name)?\s*[!=]==|[!=]==\s*'(sqlite|postgres)'/.test(line)),
      );
    expect(branches).toEqual([]);
  });

  it('reads raw results, locks claims and picks variants per dialect', () => {
    const sqlite = storageDialect('sqlite');
    const postgres = storageDialect('postgres');
    expect([sqlite.inProcess, postgres.inProcess]).toEqual([true, false]);
    expect(sqlite.rows([{ a: 1 }])).toEqual([{ a: 1 }]);
    expect(postgres.rows({ rows: [{ a: 1 }] })).toEqual([{ a: 1 }]);
    expect([sqlite.pick({ sqlite: 1, postgres: 2 }), postgres.pick({ sqlite: 1, postgres: 2 })]).toEqual([1, 2]);
    const pg = knexFactory({ client: 'pg' });
    expect(postgres.lockForClaim(pg('runs').select('id')).toString()).toBe('select "id" from "runs" for update skip locked');
    const lite = knexFactory({ client: 'better-sqlite3', useNullAsDefault: true });
    expect(sqlite.lockForClaim(lite('runs').select('id')).toString()).toBe('select `id` from `runs`');
  });
});
