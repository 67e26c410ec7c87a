import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { generateSecretKey } from '@ferry/core';
import { SettingsError, type DatabaseSetting } from './settings.js';

/** Where the generated key of a SQLite database is kept: beside it, `<database>.key`. */
export function secretKeyPath(filename: string): string {
  return `${filename}.key`;
}

/**
 * The key-encryption key to run with (docs/operations.md, The secret key): `FERRY_SECRET_KEY` when set; for a
 * SQLite file, else the key kept beside it, generated on first start with mode 0600 (created
 * exclusively, so two servers starting at once cannot write different keys); for Postgres it is
 * required, since several servers must share it.
 */
export function resolveSecretKey(database: DatabaseSetting, given: string | undefined): { key: string | undefined; source: 'env' | 'file' | 'generated' | 'none' } {
  if (given !== undefined) return { key: given, source: 'env' };
  if (database.kind === 'postgres') {
    throw new SettingsError('FERRY_SECRET_KEY is required with Postgres: every server on the database must share it. Generate one with `ferry secret-key`.');
  }
  if (database.filename === ':memory:') return { key: undefined, source: 'none' };
  const path = secretKeyPath(database.filename);
  if (!existsSync(path)) {
    try {
      writeFileSync(path, generateSecretKey() + '\n', { mode: 0o600, flag: 'wx' });
      chmodSync(path, 0o600);
      return { key: readFileSync(path, 'utf8').trim(), source: 'generated' };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return { key: readFileSync(path, 'utf8').trim(), source: 'file' };
}
