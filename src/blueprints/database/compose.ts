// What a Database composes on a call: its placement's resources (its
// instances, what serves them, the secrets), and what every Database
// composes whatever its placement: the Job that restores a dump into a new
// Database, the connection Secret, its scheduled DatabaseBackups and the
// backups its upgrades wait behind. The placement composes from what resolve
// decided (index.ts); nothing here asks which placement it is.
import type { ExternalFacts } from '../../facts.js';
import type { Plan } from '../blueprint.js';
import { CONNECTION_KEY, DBNAME_ANNOTATION, instanceMeta, keyOf } from '../lifecycle/instances.js';
import { planAlerts } from './alerts.js';
import type { Resolution } from './status.js';
import { checkFacts } from './rules.js';

export function composeDatabase(r: Resolution, facts: ExternalFacts | undefined): Plan {
  checkFacts(facts);
  const { placement, instances, cutover, restore, backups, growth, gate } = r;
  const input = facts ? { ...r.input, facts } : r.input;
  const { live } = instances;
  const target = cutover.target;
  // The restored generation takes the connection once it holds the data and is ready.
  const serving = target && cutover.progress?.state === 'ready' ? target.generation : live;
  // The database inside: the one an instance made from another Database's data came with.
  const database =
    instanceMeta(input.observed.get(keyOf(placement.instanceKey, live))).annotations[DBNAME_ANNOTATION] ??
    restore.creation?.database;
  const own = placement.compose({
    input,
    instances,
    ...(target ? { target } : {}),
    serving,
    release: cutover.release,
    restore: {
      // Applications connect once the data is back, not to the empty server before it.
      connect: restore.state === 'none' || restore.state === 'done' || input.observed.has(CONNECTION_KEY),
      ...(restore.creation ? { creation: restore.creation } : {}),
      ...(database ? { database } : {}),
      ...(restore.annotations ? { annotations: restore.annotations } : {}),
    },
    ...(growth ? { growth } : {}),
  });
  const resources = [...own.resources];
  const requirements: NonNullable<Plan['requirements']> = { ...cutover.requirements, ...own.requirements };
  if (restore.requirement) requirements[restore.requirement.name] = restore.requirement.requirement;
  // Its own status tells how a restore goes: the Job does not hold readiness by itself.
  if (restore.job) resources.push({ ...restore.job, independent: true });
  if (own.connection) resources.push(own.connection);
  // The store made for backups, and the Secret read to know its key is there.
  if (r.store) {
    resources.push(...r.store.resources);
    Object.assign(requirements, r.store.requirements);
  }
  if (backups) {
    resources.push(...backups.resources);
    Object.assign(requirements, backups.requirements);
  }
  resources.push(...gate.backups);
  // The alerts, where the Prometheus Operator is installed.
  const alerts = planAlerts(r);
  resources.push(...alerts.resources);
  Object.assign(requirements, alerts.requirements);
  return { resources, requirements, retiring: backups?.retiring ?? [], releasing: own.releasing };
}
