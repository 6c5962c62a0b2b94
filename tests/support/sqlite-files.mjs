// Reads the SQLite files a Durable Object persist dir holds (Miniflare's `durableObjectsPersist`),
// through the `sqlite3` command line tool, read-only (`execSqlite` writes, for tests that
// damage a stopped agent's database). Owns: sqliteFiles, querySqlite, execSqlite, rowCount,
// storeTables, largestStoredValue.

import { existsSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** The per-object database files under `persistDir` (every class; not the metadata files). */
export async function sqliteFiles(persist) {
  // Miniflare keeps Durable Object databases under <persist>/do/.
  const persistDir = existsSync(join(persist, 'do')) ? join(persist, 'do') : persist;
  const out = [];
  for (const dir of await readdir(persistDir, { withFileTypes: true })) {
    if (!dir.isDirectory()) continue;
    for (const f of await readdir(join(persistDir, dir.name))) {
      if (f.endsWith('.sqlite') && f !== 'metadata.sqlite') out.push(join(persistDir, dir.name, f));
    }
  }
  return out;
}

/** Rows of `sql` on database `file`, as objects. */
export function querySqlite(file, sql) {
  const text = execFileSync('sqlite3', ['-readonly', '-json', file, sql], { maxBuffer: 64 * 1024 * 1024 }).toString();
  return text.trim() ? JSON.parse(text) : [];
}

/** Runs `sql` (statements that write) on database `file`; only while no runtime has it open. */
export function execSqlite(file, sql) {
  execFileSync('sqlite3', [file, sql]);
}

/** The rows of `table` in `file`; 0 when the table was never made (the store makes some of its
 * tables at their first write). */
export function rowCount(file, table) {
  const made = querySqlite(file, `SELECT name FROM sqlite_master WHERE type = 'table' AND name = '${table}'`).length > 0;
  return made ? querySqlite(file, `SELECT COUNT(*) AS n FROM "${table}"`)[0].n : 0;
}

/** The store's tables (`chat_…`) in `file`, by name. */
export function storeTables(file) {
  return querySqlite(file, "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 5) = 'chat_' ORDER BY name").map((r) => r.name);
}

/**
 * The largest value (in bytes) and the largest row (sum of its values) stored in any table of
 * `file`, with where they are.
 */
export function largestStoredValue(file) {
  let value = { bytes: 0, where: '' };
  let row = { bytes: 0, where: '' };
  const tables = querySqlite(file, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'");
  for (const { name } of tables) {
    const columns = querySqlite(file, `SELECT name FROM pragma_table_info('${name}')`).map((c) => c.name);
    const sizes = columns.map((c) => `COALESCE(length(CAST("${c}" AS BLOB)), 0)`);
    const maxValue = querySqlite(file, `SELECT MAX(MAX(${sizes.join(', ')}, 0)) AS n FROM "${name}"`)[0]?.n ?? 0;
    const maxRow = querySqlite(file, `SELECT MAX(${sizes.join(' + ')}) AS n FROM "${name}"`)[0]?.n ?? 0;
    if (maxValue > value.bytes) value = { bytes: maxValue, where: name };
    if (maxRow > row.bytes) row = { bytes: maxRow, where: name };
  }
  return { value, row };
}
