// A chaos round: a long process started, the moment of it waited for, the
// fault injected there, then the loop left to run until the round converges
// (within CONVERGE_BOUND_MS) and what it must hold is checked. The
// invariants (invariants.ts) are checked the whole time besides.
import { setTimeout as sleep } from 'node:timers/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import type { Json } from '../support/apiserver.js';
import {
  CROSSPLANE_TIMEOUT_MS,
  containerCommands,
  containerId,
  functionStopped,
  killAndRestart,
  killContainer,
  objectStoreUnreachable,
  runningContainer,
  statusWriteLost,
} from '../support/chaos.js';
import {
  type EndpointsMonitor,
  type HoldersMonitor,
  type Ledger,
  parseDump,
  type RowsMonitor,
  type TrafficMonitor,
} from './invariants.js';
import type { RoundPlan } from './plan.js';
import { DATABASE, NS, WIDGET, WIDGET_SIZE, type World } from './world.js';

/** The longest a round may take to converge after its fault, before it counts as not converging. */
export const CONVERGE_BOUND_MS = 10 * 60_000;
/** The longest the harness waits for a moment to come before it injects anyway. */
const MOMENT_WAIT_MS = 180_000;

/** What the rounds share: the world, its monitors, and what the rounds have done to it. */
export interface Harness {
  w: World;
  ledger: Ledger;
  s3: S3Client;
  endpoints: EndpointsMonitor;
  traffic: TrafficMonitor;
  holders: HoldersMonitor;
  rows: RowsMonitor;
  color: string;
  storageGB: number;
  restores: number;
  upgrades: number;
  /** The writer's configuration file of the Database. */
  config: string;
}

export interface RoundResult {
  index: number;
  seed: number;
  moment: string;
  at: string;
  fault: string;
  /** Whether the moment was there when the fault came (false: the process had passed it, the fault came anyway). */
  reached: boolean;
  /** Whether the fault found something to act on (false: the Job's step had ended, no answer came to lose). */
  acted: boolean;
  /** From the fault to convergence, ms. */
  convergeMs: number;
  /** From the start of the process to convergence, ms. */
  totalMs: number;
  /** How long the fault itself lasted (down, unreachable, stopped), ms. */
  faultMs: number;
  outcome: string;
  violations: number;
}

/** What a moment found to act on: the pod of a Job at work, the composite of the process. */
interface Context {
  xr?: string;
  pod?: Json;
  container?: string;
  backup?: string;
  restore?: string;
  generation?: number;
  database?: string;
  outcome?: string;
  [k: string]: unknown;
}

interface MomentImpl {
  prepare?(h: Harness, plan: RoundPlan, ctx: Context): Promise<void>;
  trigger(h: Harness, plan: RoundPlan, ctx: Context): Promise<void>;
  reach(h: Harness, plan: RoundPlan, ctx: Context): Promise<boolean>;
  converge(h: Harness, plan: RoundPlan, ctx: Context): Promise<void>;
  after?(h: Harness, plan: RoundPlan, ctx: Context): Promise<void>;
}

/** Waits for `probe`, answering false when it does not come within `ms`. */
async function within(
  h: Harness,
  what: string,
  probe: () => Promise<boolean>,
  ms = MOMENT_WAIT_MS,
  every = 50,
): Promise<boolean> {
  try {
    await h.w.until(what, async () => ((await probe()) ? true : undefined), ms, every);
    return true;
  } catch {
    h.w.say(`  (the moment passed: ${what})`);
    return false;
  }
}

/** The running pod of a Job whose pods carry `selector`, at `container` with `process` running in it. */
async function jobAt(
  h: Harness,
  selector: string,
  namePrefix: string,
  container: string,
  process: RegExp,
  ctx: Context,
): Promise<boolean> {
  return within(h, `${namePrefix}: ${container} running`, async () => {
    const pods = (await h.w.list('v1', 'Pod', selector)).filter((p) =>
      String(p['metadata']?.['labels']?.['batch.kubernetes.io/job-name'] ?? '').startsWith(namePrefix),
    );
    for (const pod of pods) {
      if (runningContainer(pod) !== container) continue;
      const id = containerId(pod, container);
      if (id && containerCommands(id).some((c) => process.test(c))) {
        ctx.pod = pod;
        ctx.container = container;
        return true;
      }
    }
    return false;
  });
}

const TOOLS: Record<string, RegExp> = {
  dump: /pg_dump|mysqldump/,
  upload: /\baws\b/,
  download: /\baws\b/,
  restore: /pg_restore|\bmysql\b/,
};

async function databaseReady(h: Harness, name: string): Promise<Json | undefined> {
  const d = await h.w.claim('Database', name);
  return d?.['status']?.['phase'] === 'Ready' && d['status']['ready'] === true ? d : undefined;
}

/** The server pod of the Database's live instance. */
async function livePod(h: Harness, db: string): Promise<Json | undefined> {
  const d = await h.w.claim('Database', db);
  const instance = d?.['status']?.['instance'] ?? `${db}-db`;
  return h.w.get('v1', 'Pod', `${instance}-0`);
}

/** UTC YYYYMMDDHHMM, as the Database names a slot's backup. */
const slotName = (t: Date) => t.toISOString().replace(/[-:T]/g, '').slice(0, 12);

const MOMENTS: Record<RoundPlan['moment'], MomentImpl> = {
  cutover: {
    async trigger(h, _plan, ctx) {
      ctx['from'] = h.color;
      h.color = h.color === 'blue' ? 'green' : 'blue';
      h.traffic.expected = h.color;
      ctx.xr = await h.w.composite('Widget', WIDGET);
      await h.w.apply(h.w.widgetYaml(h.color));
    },
    async reach(h, plan, ctx) {
      const to = h.color;
      const from = String(ctx['from']);
      const selected = async () =>
        (await h.w.get('v1', 'Service', WIDGET))?.['spec']?.['selector']?.['function-platform.dev/color'];
      if (plan.at === 'starting') return true;
      if (plan.at === 'before-switch')
        return within(h, `Deployment ${WIDGET}-${to} available, Service on ${from}`, async () => {
          const d = await h.w.get('apps/v1', 'Deployment', `${WIDGET}-${to}`);
          return (d?.['status']?.['availableReplicas'] ?? 0) >= WIDGET_SIZE && (await selected()) === from;
        });
      return within(h, `Service on ${to}, Deployment ${WIDGET}-${from} still there`, async () => {
        return (await selected()) === to && Boolean(await h.w.get('apps/v1', 'Deployment', `${WIDGET}-${from}`));
      });
    },
    async converge(h) {
      await h.w.until(
        `Widget ${WIDGET} on ${h.color}`,
        async () => {
          const c = await h.w.claim('Widget', WIDGET);
          const s = c?.['status'] ?? {};
          if (s['ready'] !== true || s['activeColor'] !== h.color || s['availableReplicas'] !== WIDGET_SIZE)
            return undefined;
          const pods = await h.w.list('v1', 'Pod', `app.kubernetes.io/instance=${WIDGET}`);
          if (pods.some((p) => p['metadata']['labels']['function-platform.dev/color'] !== h.color)) return undefined;
          return h.endpoints.lastColor === h.color ? true : undefined;
        },
        CONVERGE_BOUND_MS,
      );
    },
  },

  'scheduled-backup': {
    async trigger(h, _plan, ctx) {
      // The schedule set to a minute at least 15 s ahead (daily at it), as a user may set it; once the slot has
      // come, the Database is nudged rather than left to Crossplane's next poll.
      const slot = new Date(Math.ceil((Date.now() + 15_000) / 60_000) * 60_000);
      h.w.schedule = `${slot.getUTCMinutes()} ${slot.getUTCHours()} * * *`;
      ctx.backup = `${DATABASE}-db-${slotName(slot)}`;
      ctx.database = DATABASE;
      ctx.xr = await h.w.composite('Database', DATABASE);
      await h.w.apply(h.w.databaseYaml(DATABASE, { storageGB: h.storageGB }));
      await sleep(Math.max(0, slot.getTime() - Date.now() + 1000));
      await h.w.nudge('Database', DATABASE);
    },
    reach: (h, plan, ctx) =>
      jobAt(h, 'app.kubernetes.io/name=database-backup', ctx.backup!, plan.at, TOOLS[plan.at]!, ctx),
    async converge(h, _plan, ctx) {
      await backupDone(h, ctx, DATABASE);
    },
    async after(h, _plan, ctx) {
      await checkBackup(h, ctx.backup!);
    },
  },

  'restore-before-switch': restoreMoment(),
  'restore-after-switch': restoreMoment(),

  'volume-growth': {
    async trigger(h, _plan, ctx) {
      h.storageGB++;
      ctx.xr = await h.w.composite('Database', DATABASE);
      const d = await h.w.claim('Database', DATABASE);
      ctx['claim'] = `data-${d?.['status']?.['instance'] ?? `${DATABASE}-db`}-0`;
      await h.w.apply(h.w.databaseYaml(DATABASE, { storageGB: h.storageGB }));
    },
    async reach(h, plan, ctx) {
      if (plan.at === 'asked') return true;
      return within(h, `claim ${String(ctx['claim'])} resizing`, async () => {
        const c = await h.w.get('v1', 'PersistentVolumeClaim', String(ctx['claim']));
        return (
          c?.['spec']?.['resources']?.['requests']?.['storage'] === `${h.storageGB}Gi` &&
          c?.['status']?.['capacity']?.['storage'] !== `${h.storageGB}Gi`
        );
      });
    },
    async converge(h, _plan, ctx) {
      await h.w.until(
        `Database ${DATABASE} grown to ${h.storageGB} GB`,
        async () => {
          const d = await databaseReady(h, DATABASE);
          const c = await h.w.get('v1', 'PersistentVolumeClaim', String(ctx['claim']));
          return d?.['status']?.['storage']?.['capacityGB'] === h.storageGB &&
            c?.['status']?.['capacity']?.['storage'] === `${h.storageGB}Gi`
            ? true
            : undefined;
        },
        CONVERGE_BOUND_MS,
      );
    },
  },

  'upgrade-behind-backup': {
    async prepare(h, _plan, ctx) {
      h.upgrades++;
      const name = `upg-${h.upgrades}`;
      ctx.database = name;
      await h.w.apply(h.w.databaseYaml(name, { engine: 'mysql', version: '8.0', policy: 'Delete' }));
      await h.w.until(`Database ${name} Ready`, () => databaseReady(h, name), 300_000, 1000);
      const config = await h.w.until(`Database ${name}'s connection`, () => h.w.connection(name, 'mysql'), 60_000);
      ctx['config'] = h.w.writeConfig(name, config);
      const values = Array.from({ length: 50 }, (_, i) => `(${i + 1})`).join(',');
      await h.w.retry(
        'rows into the MySQL Database',
        () =>
          h.w.sql(
            String(ctx['config']),
            `CREATE TABLE IF NOT EXISTS chaos_rows (id bigint PRIMARY KEY); INSERT IGNORE INTO chaos_rows VALUES ${values}`,
          ),
        120_000,
      );
    },
    async trigger(h, _plan, ctx) {
      const name = ctx.database!;
      ctx.backup = `${name}-db-pre-8-4`;
      ctx.xr = await h.w.composite('Database', name);
      await h.w.apply(h.w.databaseYaml(name, { engine: 'mysql', version: '8.4', policy: 'Delete' }));
    },
    reach: (h, plan, ctx) =>
      jobAt(h, 'app.kubernetes.io/name=database-backup', ctx.backup!, plan.at, TOOLS[plan.at]!, ctx),
    async converge(h, _plan, ctx) {
      const name = ctx.database!;
      await backupDone(h, ctx, name);
      await h.w.until(
        `Database ${name} on 8.4, or its upgrade blocked`,
        async () => {
          const d = await databaseReady(h, name);
          if (!d) return undefined;
          if (ctx.outcome === 'Completed') return d['status']?.['version']?.['running'] === '8.4' ? true : undefined;
          return /waits: its backup .* failed/.test(String(d['status']?.['message'])) ? true : undefined;
        },
        CONVERGE_BOUND_MS,
      );
    },
    async after(h, _plan, ctx) {
      const name = ctx.database!;
      if (ctx.outcome === 'Completed') {
        const b = await h.w.claim('DatabaseBackup', ctx.backup!);
        const rows = parseDump(await h.w.stored(h.s3, String(b!['status']['location'])));
        h.holders.completedBackup(String(b!['status']['location']), ctx.backup!);
        const missing = Array.from({ length: 50 }, (_, i) => i + 1).filter((id) => !rows.has(id));
        h.ledger.check(
          'rows',
          missing.length === 0,
          () => `the backup before the upgrade of ${name} lacks ${missing.length} of its 50 rows`,
        );
        const count = await h.w.retry(
          'count',
          () => h.w.sql(String(ctx['config']), 'SELECT COUNT(*) FROM chaos_rows'),
          60_000,
        );
        h.ledger.check('rows', count === '50', () => `Database ${name} holds ${count} rows after its upgrade, not 50`);
      }
      // Its data may go with it: it was made with deletionPolicy Delete.
      h.holders.allow(
        `what Database ${name} (deletionPolicy Delete) holds`,
        (x) => x.database === name || x.name.startsWith(`${name}-db`) || x.name.startsWith(`data-${name}-db`),
      );
      await h.w.retry('delete', () => h.w.kubectl(['delete', 'database', name, '-n', NS, '--wait=false']));
      await h.w.until(
        `Database ${name} gone`,
        async () => ((await h.w.claim('Database', name)) ? undefined : true),
        300_000,
        1000,
      );
    },
  },

  'retain-deletion': {
    async trigger(h, _plan, ctx) {
      ctx.xr = await h.w.composite('Database', DATABASE);
      ctx['served'] = h.rows.current;
      h.rows.expectReopen();
      await h.w.retry('delete', () => h.w.kubectl(['delete', 'database', DATABASE, '-n', NS, '--wait=false']));
    },
    reach: async () => true,
    async converge(h, _plan, ctx) {
      await h.w.until(
        `Database ${DATABASE} gone`,
        async () => ((await h.w.claim('Database', DATABASE)) ? undefined : true),
        CONVERGE_BOUND_MS,
        500,
      );
      await h.w.until(
        `the pods of ${DATABASE} gone`,
        async () =>
          (await h.w.list('v1', 'Pod', `app.kubernetes.io/name=database,app.kubernetes.io/instance=${DATABASE}`))
            .length === 0
            ? true
            : undefined,
        CONVERGE_BOUND_MS,
        500,
      );
      const claims = (await h.w.list('v1', 'PersistentVolumeClaim')).filter((c) =>
        String(c['metadata']['name']).startsWith(`data-${DATABASE}-db`),
      );
      const credentials = await h.w.get('v1', 'Secret', `${DATABASE}-db-credentials`);
      h.ledger.check(
        'holders',
        claims.length > 0 && Boolean(credentials),
        () =>
          `deleted under Retain, ${DATABASE} kept ${claims.length} claims and ${credentials ? 'its' : 'no'} credentials`,
      );
      // Created again: it must open what it last served (invariants.ts: the rows monitor sees which instance answers).
      const since = Date.now();
      await h.w.apply(h.w.databaseYaml(DATABASE, { storageGB: h.storageGB }));
      await h.w.until(`Database ${DATABASE} Ready again`, () => databaseReady(h, DATABASE), CONVERGE_BOUND_MS, 500);
      await h.w.until(
        'the application writes again',
        async () => (h.rows.lastOk() > since ? true : undefined),
        CONVERGE_BOUND_MS,
      );
      h.rows.reopened();
      h.ledger.check(
        'rows',
        h.rows.current === ctx['served'],
        () =>
          `created again, ${DATABASE} serves instance ${h.rows.current}, not ${String(ctx['served'])}, which it served before it was deleted`,
      );
    },
  },
};

/** A DatabaseRestore of the Database from its newest backup whose rows are known, before or after its switch. */
function restoreMoment(): MomentImpl {
  return {
    async prepare(h, _plan, ctx) {
      ctx.backup = await newestBackup(h);
    },
    async trigger(h, _plan, ctx) {
      h.restores++;
      ctx.restore = `${DATABASE}-undo-${h.restores}`;
      ctx.xr = await h.w.composite('Database', DATABASE);
      const svc = await h.w.get('v1', 'Service', `${DATABASE}-db`);
      ctx['role'] = svc?.['spec']?.['selector']?.['function-platform.dev/role'];
      const d = await h.w.claim('Database', DATABASE);
      ctx['instance'] = d?.['status']?.['instance'];
      h.rows.expectRestore(ctx.backup!);
      await h.w.apply(`apiVersion: example.com/v1
kind: DatabaseRestore
metadata: {name: ${ctx.restore}, namespace: ${NS}}
spec: {databaseRef: {name: ${DATABASE}}, fromBackup: {name: ${ctx.backup}}}
`);
      await h.w.nudge('Database', DATABASE);
    },
    async reach(h, plan, ctx) {
      if (plan.at === 'building')
        return within(h, 'the restored instance starting', async () => {
          const sets = await h.w.list('apps/v1', 'StatefulSet', `app.kubernetes.io/instance=${DATABASE}`);
          const fresh = sets.find(
            (s) =>
              s['metadata']['name'] !== ctx['instance'] &&
              Date.parse(s['metadata']['creationTimestamp']) >= Date.now() - 120_000 &&
              (s['status']?.['readyReplicas'] ?? 0) < 1,
          );
          return Boolean(fresh);
        });
      if (plan.at === 'download' || plan.at === 'restore')
        return jobAt(h, 'app.kubernetes.io/name=database-restore', `${DATABASE}-db-r`, plan.at, TOOLS[plan.at]!, ctx);
      return within(h, `Service ${DATABASE}-db switched`, async () => {
        const svc = await h.w.get('v1', 'Service', `${DATABASE}-db`);
        return svc?.['spec']?.['selector']?.['function-platform.dev/role'] !== ctx['role'];
      });
    },
    async converge(h, _plan, ctx) {
      const r = await h.w.until(
        `DatabaseRestore ${ctx.restore} Switched or Failed`,
        async () => {
          const c = await h.w.claim('DatabaseRestore', ctx.restore!);
          const phase = c?.['status']?.['phase'];
          return phase === 'Switched' || (phase === 'Failed' && c?.['status']?.['message']) ? c : undefined;
        },
        CONVERGE_BOUND_MS,
      );
      ctx.outcome = String(r['status']['phase']);
      if (ctx.outcome === 'Failed') {
        h.rows.cancelRestore();
        h.w.say(`  restore failed: ${String(r['status']['message'])}`);
        // The user deletes the request: the attempt is handed over.
        await h.w.retry('delete', () =>
          h.w.kubectl(['delete', 'databaserestore', ctx.restore!, '-n', NS, '--wait=false']),
        );
      }
      // Ready on the instance expected, with nothing left being built or handed over.
      await h.w.until(
        `Database ${DATABASE} Ready on its instance, the rest handed over`,
        async () => {
          const d = await databaseReady(h, DATABASE);
          if (!d) return undefined;
          const instance = d['status']['instance'];
          if (ctx.outcome === 'Switched' ? instance === ctx['instance'] : instance !== ctx['instance'])
            return undefined;
          const sets = await h.w.list('apps/v1', 'StatefulSet', `app.kubernetes.io/instance=${DATABASE}`);
          return sets.length === 1 && sets[0]!['metadata']['name'] === instance ? true : undefined;
        },
        CONVERGE_BOUND_MS,
        500,
      );
    },
    async after(h) {
      // The user deletes a claim the Database lists as kept, as it says how; the list must follow.
      const d = await h.w.claim('Database', DATABASE);
      const kept = (d?.['status']?.['kept'] ?? []) as string[];
      const claim = kept.map((k) => /kubectl delete pvc (\S+) -n/.exec(k)?.[1]).find(Boolean);
      if (!claim) return;
      const pvc = await h.w.get('v1', 'PersistentVolumeClaim', claim);
      const volume = pvc?.['spec']?.['volumeName'];
      h.holders.allow(
        `claim ${claim} (the user deletes it, as status.kept says)`,
        (x) => x.name === claim || x.name === volume,
      );
      // Already gone is as good: a round before may have deleted it when status still listed it.
      await h.w.retry('delete', () =>
        h.w.kubectl(['delete', 'pvc', claim, '-n', NS, '--wait=false', '--ignore-not-found']),
      );
      await h.w.nudge('Database', DATABASE);
      const pruned = await h.w
        .until(
          `status.kept without ${claim}`,
          async () => {
            const k = ((await h.w.claim('Database', DATABASE))?.['status']?.['kept'] ?? []) as string[];
            return k.some((s) => s.includes(`pvc ${claim} `)) ? undefined : true;
          },
          180_000,
          1000,
        )
        .then(() => true)
        .catch(() => false);
      h.ledger.check('converge', pruned, () => `status.kept still lists claim ${claim} after the user deleted it`);
    },
  };
}

/** The DatabaseBackup of the context: Completed, or Failed with its reason; the Database Ready. */
async function backupDone(h: Harness, ctx: Context, db: string): Promise<void> {
  const b = await h.w.until(
    `DatabaseBackup ${ctx.backup} Completed or Failed`,
    async () => {
      const c = await h.w.claim('DatabaseBackup', ctx.backup!);
      const phase = c?.['status']?.['phase'];
      return phase === 'Completed' || (phase === 'Failed' && c?.['status']?.['failureReason']) ? c : undefined;
    },
    CONVERGE_BOUND_MS,
  );
  ctx.outcome = String(b['status']['phase']);
  if (ctx.outcome === 'Failed') h.w.say(`  backup failed: ${String(b['status']['failureReason'])}`);
  await h.w.until(`Database ${db} Ready`, () => databaseReady(h, db), CONVERGE_BOUND_MS);
}

/** A Completed backup of the Database: its object kept from now on, and every row committed before it started in it. */
async function checkBackup(h: Harness, name: string): Promise<void> {
  const b = await h.w.claim('DatabaseBackup', name);
  if (b?.['status']?.['phase'] !== 'Completed') return;
  const location = String(b['status']['location']);
  h.holders.completedBackup(location, name);
  await h.rows.checkBackup(name, String(b['status']['startedAt']), await h.w.stored(h.s3, location));
}

/** The newest Completed backup of the Database whose rows are known; one is taken now when there is none. */
async function newestBackup(h: Harness): Promise<string> {
  const backups = await h.w.list('example.com/v1', 'DatabaseBackup');
  const known = backups
    .filter(
      (b) =>
        b['spec']?.['databaseRef']?.['name'] === DATABASE &&
        b['status']?.['phase'] === 'Completed' &&
        h.rows.backups.has(b['metadata']['name']),
    )
    .sort((a, b) => Date.parse(b['status']['completedAt']) - Date.parse(a['status']['completedAt']));
  if (known[0]) return String(known[0]['metadata']['name']);
  const name = `${DATABASE}-now-${Date.now().toString(36)}`;
  await h.w.apply(`apiVersion: example.com/v1
kind: DatabaseBackup
metadata: {name: ${name}, namespace: ${NS}}
spec: {databaseRef: {name: ${DATABASE}}}
`);
  await h.w.until(
    `DatabaseBackup ${name} Completed`,
    async () => ((await h.w.claim('DatabaseBackup', name))?.['status']?.['phase'] === 'Completed' ? true : undefined),
    300_000,
    1000,
  );
  await checkBackup(h, name);
  return name;
}

/**
 * Injects the round's fault, as its plan says; resolves when the fault is over
 * (what it stopped runs again), saying what was done, and whether the fault
 * found something to act on (a Job's step may have ended meanwhile).
 */
async function inject(h: Harness, plan: RoundPlan, ctx: Context): Promise<{ said: string; acted: boolean }> {
  const said = await injectFault(h, plan, ctx);
  return { said: said.text, acted: said.acted };
}

async function injectFault(h: Harness, plan: RoundPlan, ctx: Context): Promise<{ text: string; acted: boolean }> {
  const cp = h.w.cp;
  const component: Record<string, string> = {
    'function-kill': 'function',
    'crossplane-kill': 'crossplane',
    'apiserver-kill': 'kube-apiserver',
    'controller-manager-kill': 'kube-controller-manager',
    'kubelet-kill': 'kubelet',
    'containerd-kill': 'containerd',
  };
  switch (plan.fault) {
    case 'function-kill':
    case 'crossplane-kill':
    case 'apiserver-kill':
    case 'controller-manager-kill':
    case 'kubelet-kill':
    case 'containerd-kill':
      await killAndRestart(cp, component[plan.fault]!, plan.downMs);
      return { text: `${component[plan.fault]} killed, started again ${plan.downMs} ms later`, acted: true };
    case 'database-kill': {
      // The instance being restored into, while it is; else the live one (the upgrade's Database at its moment).
      const db = ctx.database ?? DATABASE;
      const restoring =
        plan.moment === 'restore-before-switch'
          ? (await h.w.list('v1', 'Pod', `app.kubernetes.io/name=database,app.kubernetes.io/instance=${db}`)).find(
              (p) => p['metadata']['name'] !== `${ctx['instance']}-0`,
            )
          : undefined;
      const pod = restoring ?? (await livePod(h, db));
      const pid = pod ? killContainer(pod, 'db') : undefined;
      return pid
        ? { text: `the server of ${pod!['metadata']['name']} killed (pid ${pid})`, acted: true }
        : { text: 'no database server running to kill', acted: false };
    }
    case 'job-pod-kill': {
      if (!ctx.pod) return { text: 'no Job pod at work to kill', acted: false };
      const pid = killContainer(ctx.pod, ctx.container!);
      return pid
        ? { text: `${ctx.container} of ${ctx.pod['metadata']['name']} killed (pid ${pid})`, acted: true }
        : { text: `${ctx.container} had ended`, acted: false };
    }
    case 'object-store-unreachable':
      await objectStoreUnreachable(cp, plan.downMs);
      return { text: `the object store unreachable from the node for ${plan.downMs} ms`, acted: true };
    case 'function-slow':
      await functionStopped(cp, CROSSPLANE_TIMEOUT_MS + 5000);
      return {
        text: `the function stopped for ${CROSSPLANE_TIMEOUT_MS + 5000} ms, longer than Crossplane waits`,
        acted: true,
      };
    case 'status-write-lost': {
      // With the composite's watch circuit open, its next reconcile may wait for a probe or a poll (a minute).
      const lost = ctx.xr ? await statusWriteLost(cp, ctx.xr, plan.delayMs, 150_000) : undefined;
      if (lost)
        return {
          text: `Crossplane killed ${lost.afterMs} ms after the function's answer for ${ctx.xr}, with the function`,
          acted: true,
        };
      await killAndRestart(cp, 'crossplane', 0);
      return {
        text: `no answer for ${ctx.xr ?? 'the composite'} came within 150 s: Crossplane killed anyway`,
        acted: false,
      };
    }
  }
}

/** One round: process, moment, fault, convergence, checks. */
export async function runRound(h: Harness, plan: RoundPlan, index: number): Promise<RoundResult> {
  h.ledger.round = index;
  const before = h.ledger.violations.length;
  const ctx: Context = {};
  h.w.say(
    `round ${index} seed 0x${plan.seed.toString(16)}: ${plan.moment} at ${plan.at} × ${plan.fault} (after ${plan.delayMs} ms; down ${plan.downMs} ms)`,
  );
  const impl = MOMENTS[plan.moment];
  await impl.prepare?.(h, plan, ctx);
  const t0 = Date.now();
  await impl.trigger(h, plan, ctx);
  const reached = await impl.reach(h, plan, ctx);
  if (plan.fault !== 'status-write-lost') await sleep(plan.delayMs);
  const window: { round: number; fault: string; from: number; to?: number } = {
    round: index,
    fault: plan.fault,
    from: Date.now(),
  };
  h.ledger.windows.push(window);
  const { said, acted } = await inject(h, plan, ctx);
  window.to = Date.now();
  h.w.say(`  fault: ${said}`);
  let converged = true;
  try {
    await impl.converge(h, plan, ctx);
  } catch (e) {
    converged = false;
    h.w.say(`  ${(e as Error).message}`);
  }
  const done = Date.now();
  h.ledger.check(
    'converge',
    converged,
    () => `${plan.moment} × ${plan.fault} did not converge within ${CONVERGE_BOUND_MS / 60_000} minutes`,
  );
  if (converged) {
    await impl.after?.(h, plan, ctx);
    // The application reaches what its connection Secret names.
    const answered = await h.w
      .until('the Database answers its application', async () => (h.rows.lastOk() > done ? true : undefined), 60_000)
      .then(() => true)
      .catch(() => false);
    h.ledger.check(
      'host',
      answered,
      () => `the host in the connection Secret of ${DATABASE} does not answer a minute after the round converged`,
    );
  }
  const result: RoundResult = {
    index,
    seed: plan.seed,
    moment: plan.moment,
    at: plan.at,
    fault: plan.fault,
    reached,
    acted,
    convergeMs: done - window.to,
    totalMs: done - t0,
    faultMs: window.to - window.from,
    outcome: [ctx.outcome, said].filter(Boolean).join('; '),
    violations: h.ledger.violations.length - before,
  };
  h.w.say(
    `  converged ${((done - window.to) / 1000).toFixed(1)} s after the fault (${((done - t0) / 1000).toFixed(1)} s in all)${ctx.outcome ? `: ${ctx.outcome}` : ''}`,
  );
  return result;
}
