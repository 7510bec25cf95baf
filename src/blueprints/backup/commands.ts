// The shell that a backup Job runs, in two steps that never leave half a
// backup where a restore would find it:
//
//   dump    (the engine's own image, so the client matches the server's major
//            version) writes the dump to a shared emptyDir under a temporary
//            name and renames it only when the dump tool succeeded;
//   upload  (an S3 client image) copies it to a temporary key, copies that to
//            the final key (S3 copies are atomic: the final key holds the whole
//            dump or nothing), removes the temporary key, and reports the key
//            and size as the container's termination message.
//
// Both read everything from the environment (names below), so the tests run
// these very strings against real servers and an S3 API. A failure exits
// non-zero; the pod's termination message (FallbackToLogsOnError) is then the
// tail of what the tool said, which is what the DatabaseBackup reports.
import type { DatabaseSpec } from '../../generated/schemas.js';

/** Environment of the dump step: HOST, PORT, DB_USER, DB_PASSWORD, DB_NAME, and OUT, the file to write. */
export const DUMP_ENV = ['HOST', 'PORT', 'DB_USER', 'DB_PASSWORD', 'DB_NAME', 'OUT'] as const;
/** Environment of the upload step: the file IN, BUCKET, KEY, and for the client AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, S3_ENDPOINT (optional). */
export const UPLOAD_ENV = [
  'IN',
  'BUCKET',
  'KEY',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_REGION',
  'S3_ENDPOINT',
] as const;

/** The dump tool of each engine, writing one file a restore reads back. */
export function dumpScript(engine: DatabaseSpec['engine']): string {
  const tool =
    engine === 'postgres'
      ? // Custom format: compressed, and pg_restore can restore it selectively or in parallel.
        'PGPASSWORD="$DB_PASSWORD" pg_dump -h "$HOST" -p "$PORT" -U "$DB_USER" -d "$DB_NAME" -Fc --no-owner -f "$OUT.partial"'
      : // One consistent snapshot of InnoDB tables without locking them; routines and triggers too.
        'MYSQL_PWD="$DB_PASSWORD" mysqldump --single-transaction --routines --triggers -h "$HOST" -P "$PORT" -u "$DB_USER" "$DB_NAME" > "$OUT.partial"';
  return ['set -eu', `${tool}`, 'mv "$OUT.partial" "$OUT"', 'echo "dumped $(wc -c < "$OUT") bytes"'].join('\n');
}

/** The upload of a finished dump: to a temporary key, then copied into place. */
export function uploadScript(): string {
  return [
    'set -eu',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
    'ep=""; if [ -n "${S3_ENDPOINT:-}" ]; then ep="--endpoint-url $S3_ENDPOINT"; fi',
    'size=$(wc -c < "$IN" | tr -d " ")',
    'aws $ep s3 cp --only-show-errors "$IN" "s3://$BUCKET/$KEY.partial"',
    'aws $ep s3 cp --only-show-errors "s3://$BUCKET/$KEY.partial" "s3://$BUCKET/$KEY"',
    'aws $ep s3 rm --only-show-errors "s3://$BUCKET/$KEY.partial"',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
    'printf \'{"key":"%s","sizeBytes":%s}\' "$KEY" "$size" > "${TERMINATION_LOG:-/dev/termination-log}"',
    'echo "uploaded $size bytes to s3://$BUCKET/$KEY"',
  ].join('\n');
}

/** Retention's removal of a stored backup (BUCKET, KEY and the client's variables, as the upload): gone, or never there. */
export function removeScript(): string {
  return [
    'set -eu',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
    'ep=""; if [ -n "${S3_ENDPOINT:-}" ]; then ep="--endpoint-url $S3_ENDPOINT"; fi',
    'aws $ep s3 rm --only-show-errors "s3://$BUCKET/$KEY"',
    'echo "removed s3://$BUCKET/$KEY"',
  ].join('\n');
}

/** The object key of a backup: the prefix, the Database, the backup's name and the engine's extension. */
export function backupKey(
  prefix: string | undefined,
  database: string,
  backup: string,
  engine: DatabaseSpec['engine'],
): string {
  const p = (prefix ?? '').replace(/^\/+|\/+$/g, '');
  return `${p ? `${p}/` : ''}${database}/${backup}.${engine === 'postgres' ? 'dump' : 'sql'}`;
}
