// The shell that a backup Job runs, in two steps that never leave half a
// backup where a restore would find it:
//
//   dump    (the engine's own image, so the client matches the server's major
//            version) writes the dump to a shared emptyDir under a temporary
//            name and renames it only when the dump tool succeeded;
//   upload  (an S3 client image) copies it to a temporary key with its
//            SHA-256 as object metadata, copies that to the final key (S3
//            copies are atomic: the final key holds the whole dump or
//            nothing), removes the temporary key, and reports the key and size
//            as the container's termination message.
//
// A restore runs the other way: download (checked against that SHA-256),
// then restore into an empty database, which a failed restore leaves empty.
//
// Every step reads everything from the environment, so the tests run these
// very strings against real servers and an S3 API:
//   dump, restore         HOST, PORT, DB_USER, DB_PASSWORD, DB_NAME; OUT or IN
//   upload, download,     BUCKET, KEY (and IN for upload and download);
//   remove                AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
//                         S3_ENDPOINT (optional, for S3-compatible stores)
// A failure exits
// non-zero; the pod's termination message (FallbackToLogsOnError) is then the
// tail of what the tool said, which is what the DatabaseBackup reports.
import type { DatabaseSpec } from '../../generated/schemas.js';

// The S3 client's endpoint flag, empty for AWS itself.
// biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
const ENDPOINT = 'ep=""; if [ -n "${S3_ENDPOINT:-}" ]; then ep="--endpoint-url $S3_ENDPOINT"; fi';

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
    ENDPOINT,
    'size=$(wc -c < "$IN" | tr -d " ")',
    // Stored with the object, so a restore can tell a backup damaged at rest from a whole one.
    'sum=$(sha256sum "$IN" | cut -d " " -f 1)',
    // The temporary key: PARTIAL, where two uploads to one key may meet (the last dumps of two pods).
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
    'tmp="${PARTIAL:-$KEY.partial}"',
    'aws $ep s3 cp --only-show-errors --metadata "sha256=$sum" "$IN" "s3://$BUCKET/$tmp"',
    'aws $ep s3 cp --only-show-errors --metadata-directive COPY "s3://$BUCKET/$tmp" "s3://$BUCKET/$KEY"',
    'aws $ep s3 rm --only-show-errors "s3://$BUCKET/$tmp"',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
    'printf \'{"key":"%s","sizeBytes":%s}\' "$KEY" "$size" > "${TERMINATION_LOG:-/dev/termination-log}"',
    'echo "uploaded $size bytes to s3://$BUCKET/$KEY"',
  ].join('\n');
}

/**
 * The last dump's two steps, in a pod that waits (never a Job): the stop
 * signal, sent when the pod is deleted with its Database, is the signal to
 * dump, not to stop. It is the image's STOPSIGNAL: TERM by default, INT in
 * the official postgres image (so both are trapped). The dump step then runs
 * dumpScript once; the upload step, which ignores both, waits for the
 * finished dump (or the mark of a failed one) and runs uploadScript. Both run
 * within the pod's grace period, while Crossplane's Usages keep the server
 * and its Service up.
 */
export function standbyDumpScript(engine: DatabaseSpec['engine']): string {
  return [
    'rm -f "$OUT" "$OUT.partial" "$OUT.failed"',
    "term=''",
    "trap 'term=1' TERM INT",
    // wait, unlike sleep, returns as soon as a trapped signal comes; one that comes just before it is seen
    // within the five seconds of the sleep.
    'while [ -z "$term" ]; do sleep 5 & s=$!; wait "$s" || true; done',
    'kill "$s" 2> /dev/null || true',
    'echo "deleted: taking the last dump"',
    // A subshell of its own, outside any condition: there, `set -e` would be ignored.
    `(\n${dumpScript(engine)}\n)`,
    'rc=$?',
    '[ "$rc" = 0 ] && exit 0',
    'touch "$OUT.failed"',
    'echo "the last dump failed; nothing is uploaded" >&2',
    'exit 1',
  ].join('\n');
}

/**
 * The upload step of the last dump: see standbyDumpScript. Once signalled, it
 * gives up when the dump step ends without a word (killed for memory): the
 * dump no longer grows for ten minutes. Otherwise it would hold the server
 * until the grace period ends, for nothing.
 */
export function standbyUploadScript(): string {
  return [
    "sig=''",
    "trap 'sig=1' TERM INT",
    'last=-1; still=0',
    'while [ ! -e "$IN" ] && [ ! -e "$IN.failed" ]; do',
    '  sleep 1',
    '  [ -n "$sig" ] || continue',
    '  size=$(wc -c < "$IN.partial" 2> /dev/null || echo -1)',
    '  if [ "$size" = "$last" ]; then still=$((still + 1)); else still=0; last=$size; fi',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
    '  if [ "$still" -ge "${STALL_SECONDS:-600}" ]; then echo "the last dump has not grown for $still s: its step ended without a word (killed for memory?); nothing is uploaded" >&2; exit 1; fi',
    'done',
    '[ -e "$IN" ] || exit 1',
    `(\n${uploadScript()}\n)`,
  ].join('\n');
}

/** The download of a stored backup, in the S3 client image, to the file IN, checked against the checksum stored with it. */
export function downloadScript(): string {
  return [
    'set -eu',
    ENDPOINT,
    'want=$(aws $ep s3api head-object --bucket "$BUCKET" --key "$KEY" --query Metadata.sha256 --output text)',
    'aws $ep s3 cp --only-show-errors "s3://$BUCKET/$KEY" "$IN"',
    'got=$(sha256sum "$IN" | cut -d " " -f 1)',
    // A dump not made by the backup Job carries no checksum: it is restored on the restore step's own checks.
    'if [ "$want" != None ] && [ "$want" != "$got" ]; then',
    '  echo "s3://$BUCKET/$KEY does not match the checksum stored with it (damaged at rest); nothing was restored" >&2',
    '  exit 5',
    'fi',
    'echo "downloaded $(wc -c < "$IN" | tr -d " ") bytes from s3://$BUCKET/$KEY (sha256 $got)"',
  ].join('\n');
}

/**
 * The restore of the dump IN into DB_NAME, in the engine's own image. It
 * refuses a database that holds anything (a restore never overwrites data),
 * checks the dump is whole before touching the database, and leaves the
 * database as empty as it found it when the restore fails half-way:
 * PostgreSQL restores in one transaction; MySQL's DDL cannot roll back, so
 * what was created is dropped again.
 */
export function restoreScript(engine: DatabaseSpec['engine']): string {
  const refuse = (what: string, code: number) => `{ echo "${what}" >&2; exit ${code}; }`;
  if (engine === 'postgres') {
    return [
      'set -eu',
      'export PGPASSWORD="$DB_PASSWORD"',
      'conn="-h $HOST -p $PORT -U $DB_USER -d $DB_NAME"',
      `pg_restore --list "$IN" > /dev/null 2>&1 || ${refuse('the backup is not a readable pg_dump archive (corrupt or truncated); nothing was restored', 2)}`,
      `held=$(psql $conn -tAc "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r','p','v','m','S','f') AND n.nspname NOT IN ('pg_catalog','information_schema') AND n.nspname NOT LIKE 'pg_toast%'")`,
      `[ "$held" = 0 ] || ${refuse('database $DB_NAME already holds $held relations: a restore never overwrites data; nothing was restored', 3)}`,
      `pg_restore $conn --no-owner --exit-on-error --single-transaction "$IN" || ${refuse('the restore failed and was rolled back: database $DB_NAME is as empty as before', 4)}`,
      'echo "restored $(wc -c < "$IN" | tr -d " ") bytes into $DB_NAME"',
    ].join('\n');
  }
  return [
    'set -eu',
    'export MYSQL_PWD="$DB_PASSWORD"',
    'conn="-h $HOST -P $PORT -u $DB_USER"',
    // mysqldump ends every complete dump with this line.
    `tail -c 200 "$IN" | grep -q -- '-- Dump completed' || ${refuse('the backup is incomplete (it does not end with the Dump completed line every mysqldump writes: truncated); nothing was restored', 2)}`,
    `held=$(mysql $conn -N -e "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '$DB_NAME'")`,
    `[ "$held" = 0 ] || ${refuse('database $DB_NAME already holds $held tables: a restore never overwrites data; nothing was restored', 3)}`,
    'if ! mysql $conn "$DB_NAME" < "$IN"; then',
    // Views, tables (their triggers with them) and routines: whatever the dump had made.
    `  drops=$(mysql $conn -N -e "SELECT CONCAT('DROP ', IF(table_type = 'VIEW', 'VIEW', 'TABLE'), ' IF EXISTS \\\`', table_name, '\\\`;') FROM information_schema.tables WHERE table_schema = '$DB_NAME' ORDER BY table_type = 'VIEW' DESC; SELECT CONCAT('DROP ', routine_type, ' IF EXISTS \\\`', routine_name, '\\\`;') FROM information_schema.routines WHERE routine_schema = '$DB_NAME'")`,
    '  mysql $conn "$DB_NAME" -e "SET FOREIGN_KEY_CHECKS=0; $drops" || true',
    `  left=$(mysql $conn -N -e "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = '$DB_NAME'")`,
    `  [ "$left" = 0 ] || ${refuse('the restore failed, and $left tables or views it made could not be dropped from $DB_NAME', 4)}`,
    `  ${refuse('the restore failed; what it had created was dropped: database $DB_NAME is as empty as before', 4)}`,
    'fi',
    'echo "restored $(wc -c < "$IN" | tr -d " ") bytes into $DB_NAME"',
  ].join('\n');
}

/** PostgreSQL: its tables (partitions are tables of their own; their parents hold none) and their rows, exactly. */
const COUNT_TABLES_AND_ROWS =
  "SELECT count(*), coalesce(sum((xpath('/row/c/text()', query_to_xml(format('SELECT count(*) AS c FROM %I.%I', n.nspname, c.relname), false, true, '')))[1]::text::bigint), 0) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'";

/** MySQL: the schemas the server keeps for itself, never counted. */
const MYSQL_OWN_SCHEMAS = "('mysql', 'information_schema', 'performance_schema', 'sys')";

/**
 * The count of a scratch server a drill made from a backup (a CloudNativePG
 * Cluster bootstrapped by recovery, an RDS instance made from a snapshot),
 * in the engine's own image, at HOST:PORT as DB_USER (its superuser, or
 * RDS's master user): the tables and rows of every database it holds
 * (whatever the live one is called now, whoever owns them) but `skip` (a
 * PostgreSQL database the server keeps closed, as RDS's rdsadmin), to the
 * termination message as {"tables","rows","seconds"}. It writes nothing.
 * Not let in within five minutes, or the count failing, exits 1: no verdict
 * on the backup, which was restored.
 */
export function countScript(engine: DatabaseSpec['engine'] = 'postgres', skip: readonly string[] = []): string {
  const head = [
    'set -eu',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
    'out="${TERMINATION_LOG:-/dev/termination-log}"',
    'started=$(date +%s)',
    'fail() { printf %s "$1" > "$out"; echo "$1" >&2; exit "$2"; }',
    // Only the first line of the client's error, quoted values masked: never a statement, a row or a password.
    `said() { grep -m 1 -E 'ERROR|FATAL|error:' "$WORK/count.log" | sed -e "s/'[^']*'/'…'/g" | cut -c 1-300; }`,
  ];
  const tail = [
    'printf \'{"tables":%s,"rows":%s,"seconds":%s}\' "$tables" "$rows" "$(( $(date +%s) - started ))" > "$out"',
    'echo "counted on the scratch server: $tables tables, $rows rows"',
  ];
  // Serving, and the password set (CloudNativePG's instance manager and RDS both set it apart from readiness).
  const wait = (probe: string) =>
    `i=0; until ${probe} > /dev/null 2> "$WORK/count.log"; do i=$((i + 1)); [ $i -lt 60 ] || fail "the scratch server at $HOST did not let the count in within 5 minutes: $(said)" 1; sleep 5; done`;
  if (engine === 'mysql') {
    const mine = `table_type = 'BASE TABLE' AND table_schema NOT IN ${MYSQL_OWN_SCHEMAS}`;
    return [
      ...head,
      // The password in a client option file of the pod's own, not on a command line another process can read.
      'umask 077',
      'printf \'[client]\\nhost="%s"\\nport=%s\\nuser="%s"\\npassword="%s"\\n\' "$HOST" "$PORT" "$DB_USER" "$(printf %s "$DB_PASSWORD" | sed -e \'s/\\\\/\\\\\\\\/g\' -e \'s/"/\\\\"/g\')" > "$WORK/client.cnf"',
      // Raw: names come back as they are, not escaped as batch mode escapes them.
      'q() { mysql --defaults-file="$WORK/client.cnf" -N -B -r "$@"; }',
      wait('q -e "SELECT 1"'),
      `tables=$(q -e "SELECT COUNT(*) FROM information_schema.tables WHERE ${mine}" 2> "$WORK/count.log") || fail "the tables of the scratch server could not be listed: $(said)" 1`,
      // Exact counts (information_schema's are estimates for InnoDB), one statement for all tables, read from a
      // file: thousands of tables make it longer than one command-line argument may be. Backticks in a name doubled.
      `q -e "SET SESSION group_concat_max_len = 1073741824; SELECT CONCAT('SELECT COALESCE(SUM(c), 0) FROM (', COALESCE(GROUP_CONCAT(CONCAT('SELECT COUNT(*) AS c FROM ', CHAR(96), REPLACE(table_schema, CHAR(96), REPEAT(CHAR(96), 2)), CHAR(96), '.', CHAR(96), REPLACE(table_name, CHAR(96), REPEAT(CHAR(96), 2)), CHAR(96)) SEPARATOR ' UNION ALL '), 'SELECT 0 AS c'), ') t') FROM information_schema.tables WHERE ${mine}" > "$WORK/count.sql" 2> "$WORK/count.log" || fail "the tables of the scratch server could not be listed: $(said)" 1`,
      'rows=$(q < "$WORK/count.sql" 2> "$WORK/count.log") || fail "the count on the scratch server failed: $(said)" 1',
      ...tail,
    ].join('\n');
  }
  const skipped = skip.map((d) => ` AND datname <> '${d}'`).join('');
  return [
    ...head,
    'export PGPASSWORD="$DB_PASSWORD"',
    'conn="-h $HOST -p $PORT -U $DB_USER"',
    wait('psql $conn -d postgres -tAc "SELECT 1"'),
    `psql $conn -d postgres -v ON_ERROR_STOP=1 -tA -c "SELECT datname FROM pg_database WHERE datallowconn AND NOT datistemplate${skipped} ORDER BY datname" > "$WORK/databases" 2> "$WORK/count.log" || fail "the databases of the scratch server could not be listed: $(said)" 1`,
    'tables=0; rows=0',
    'while IFS= read -r db; do',
    '  [ -n "$db" ] || continue',
    `  counts=$(psql $conn -d "$db" -v ON_ERROR_STOP=1 -tA -F " " -c "${COUNT_TABLES_AND_ROWS}" 2> "$WORK/count.log") || fail "the count of database $db on the scratch server failed: $(said)" 1`,
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
    '  tables=$((tables + ${counts%% *})); rows=$((rows + ${counts##* }))',
    'done < "$WORK/databases"',
    ...tail,
  ].join('\n');
}

/**
 * A restore drill of the dump IN, in the engine's own image: a scratch
 * server is made in WORK (the pod's own emptyDir, reachable by socket only),
 * the dump restored into it, and its tables and rows counted; the pod's end
 * takes the scratch server with it. The counts go to the termination message
 * as {"tables","rows","expected","seconds"}; a failure says why there, and
 * exits non-zero. Nothing outside the pod is touched: no live server, no store.
 */
export function verifyScript(engine: DatabaseSpec['engine']): string {
  const head = [
    'set -eu',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
    'out="${TERMINATION_LOG:-/dev/termination-log}"',
    'started=$(date +%s)',
    'fail() { printf %s "$1" > "$out"; echo "$1" >&2; exit "$2"; }',
    // What a failed tool said, as a user may read it: its first error line only (not the statement it ran, nor
    // its context or detail, where a password or a row can stand), quoted values masked.
    `said() { grep -m 1 "$2" "$1" | sed -e "s/'[^']*'/'…'/g" | cut -c 1-300; }`,
  ];
  const tail = [
    'printf \'{"tables":%s,"rows":%s,"expected":%s,"seconds":%s}\' "$tables" "$rows" "$expected" "$(( $(date +%s) - started ))" > "$out"',
    'echo "restored into a scratch server: $tables tables, $rows rows"',
  ];
  if (engine === 'postgres') {
    return [
      ...head,
      'pg_restore --list "$IN" > "$WORK/toc" 2> /dev/null || fail "the backup is not a readable pg_dump archive (corrupt or truncated)" 2',
      // The tables the dump holds data for, by its table of contents.
      'expected=$(grep -c " TABLE DATA " "$WORK/toc" || true)',
      'export PGDATA="$WORK/scratch"',
      'initdb -U verify -A trust --no-sync -D "$PGDATA" > "$WORK/initdb.log" 2>&1 || fail "the scratch server could not be made: $(tail -c 300 "$WORK/initdb.log")" 6',
      'pg_ctl -w -l "$WORK/server.log" -o "-c listen_addresses= -c unix_socket_directories=$WORK -c fsync=off -c shared_buffers=32MB" start > /dev/null || fail "the scratch server did not start: $(tail -c 300 "$WORK/server.log")" 6',
      'conn="-h $WORK -U verify"',
      'createdb $conn check',
      // Without owners and privileges: the scratch server has none of the live one's roles, and a GRANT to one
      // is not what a drill judges.
      'pg_restore $conn -d check --no-owner --no-privileges --exit-on-error "$IN" 2> "$WORK/restore.log" || fail "the restore into a scratch server failed: $(said "$WORK/restore.log" "error")" 4',
      // Each table's rows counted (partitions are tables of their own; their parents hold none).
      `counts=$(psql $conn -d check -v ON_ERROR_STOP=1 -tA -F " " -c "${COUNT_TABLES_AND_ROWS}")`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
      'tables=${counts%% *}; rows=${counts##* }',
      'pg_ctl -m immediate stop > /dev/null',
      '[ "$tables" -ge "$expected" ] || fail "the dump holds data for $expected tables, but $tables were restored" 7',
      ...tail,
    ].join('\n');
  }
  return [
    ...head,
    `tail -c 200 "$IN" | grep -q -- '-- Dump completed' || fail "the backup is incomplete (it does not end with the Dump completed line every mysqldump writes: truncated)" 2`,
    'expected=$(grep -c "^CREATE TABLE" "$IN" || true)',
    'data="$WORK/scratch"; sock="$WORK/mysqld.sock"; mkdir -p "$data"',
    // MariaDB makes its data directory with its installer; MySQL with --initialize.
    'if command -v mariadb-install-db > /dev/null 2>&1; then',
    '  mariadb-install-db --no-defaults --datadir="$data" --auth-root-authentication-method=normal --skip-test-db > "$WORK/init.log" 2>&1 || fail "the scratch server could not be made: $(tail -c 300 "$WORK/init.log")" 6',
    'else',
    '  mysqld --no-defaults --initialize-insecure --datadir="$data" > "$WORK/init.log" 2>&1 || fail "the scratch server could not be made: $(tail -c 300 "$WORK/init.log")" 6',
    'fi',
    'mysqld --no-defaults --datadir="$data" --socket="$sock" --skip-networking --pid-file="$WORK/mysqld.pid" --skip-log-bin --innodb-buffer-pool-size=32M > "$WORK/server.log" 2>&1 &',
    'i=0; until mysqladmin --no-defaults -S "$sock" -u root ping > /dev/null 2>&1; do i=$((i + 1)); [ $i -lt 120 ] || fail "the scratch server did not start: $(tail -c 300 "$WORK/server.log")" 6; sleep 0.5; done',
    'q() { mysql --no-defaults -S "$sock" -u root -N "$@"; }',
    'q -e "CREATE DATABASE verify_check"',
    'q verify_check < "$IN" 2> "$WORK/restore.log" || { mysqladmin --no-defaults -S "$sock" -u root shutdown || true; fail "the restore into a scratch server failed: $(said "$WORK/restore.log" "ERROR")" 4; }',
    `tables=$(q -e "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'verify_check' AND table_type = 'BASE TABLE'")`,
    // Exact counts (information_schema's row counts are estimates for InnoDB), one query for all tables.
    // (GROUP_CONCAT's limit raised first: by default it cuts the statement at 1024 bytes, some 17 tables.)
    `sum=$(q -e "SET SESSION group_concat_max_len = 16777216; SELECT COALESCE(GROUP_CONCAT(CONCAT('SELECT COUNT(*) AS c FROM verify_check.', CHAR(96), table_name, CHAR(96)) SEPARATOR ' UNION ALL '), 'SELECT 0 AS c') FROM information_schema.tables WHERE table_schema = 'verify_check' AND table_type = 'BASE TABLE'")`,
    'rows=$(q -e "SELECT COALESCE(SUM(c), 0) FROM ($sum) t")',
    'mysqladmin --no-defaults -S "$sock" -u root shutdown > /dev/null 2>&1 || true',
    '[ "$tables" -ge "$expected" ] || fail "the dump creates $expected tables, but $tables were restored" 7',
    ...tail,
  ].join('\n');
}

/** Retention's removal of a stored backup (BUCKET, KEY and the client's variables, as the upload): gone, or never there. */
export function removeScript(): string {
  return [
    'set -eu',
    ENDPOINT,
    'aws $ep s3 rm --only-show-errors "s3://$BUCKET/$KEY"',
    'echo "removed s3://$BUCKET/$KEY"',
  ].join('\n');
}

/** The folder a store's prefix names: the prefix without slashes at its ends, then one; empty for none. */
export function prefixFolder(prefix: string | undefined): string {
  const p = (prefix ?? '').replace(/^\/+|\/+$/g, '');
  return p ? `${p}/` : '';
}

/** The folder of a Database's backups in its store: the prefix's folder, then the Database. */
export function databaseFolder(prefix: string | undefined, database: string): string {
  return `${prefixFolder(prefix)}${database}/`;
}

/** The object key of a backup: the Database's folder, the backup's name and the engine's extension. */
export function backupKey(
  prefix: string | undefined,
  database: string,
  backup: string,
  engine: DatabaseSpec['engine'],
): string {
  return `${databaseFolder(prefix, database)}${backup}.${engine === 'postgres' ? 'dump' : 'sql'}`;
}

type ObjectStore = NonNullable<DatabaseSpec['backup']['objectStore']>;

/** Where a Database's backups go in its object store: every dump key and CloudNativePG's files are below it. */
export function storePath(store: ObjectStore, database: string): string {
  return `s3://${store.bucket}/${databaseFolder(store.prefix, database)}`;
}
