// Five-field cron schedules as Kubernetes parses a CronJob's (minute, hour,
// day of month, month, day of week): the XRD's pattern only counts fields,
// and a schedule the API server rejects must be refused before it is composed.

interface Field {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const FIELDS: readonly Field[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  {
    name: 'month',
    min: 1,
    max: 12,
    names: ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'],
  },
  { name: 'day of week', min: 0, max: 6, names: ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] },
];

function value(text: string, f: Field): number | undefined {
  const named = f.names?.indexOf(text.toUpperCase()) ?? -1;
  if (named >= 0) return named + f.min;
  return /^\d+$/.test(text) ? Number(text) : undefined;
}

/** Why one field is not valid, or undefined when it is. */
function fieldProblem(text: string, f: Field, wildcardOk: boolean): string | undefined {
  for (const part of text.split(',')) {
    const [range, step, extra] = part.split('/');
    if (extra !== undefined || range === undefined || range === '') return `"${part}" is not a ${f.name}`;
    if (step !== undefined && !(/^\d+$/.test(step) && Number(step) > 0))
      return `step "${step}" of the ${f.name} must be a positive number`;
    if (range === '*' || (range === '?' && wildcardOk)) continue;
    const [lo, hi, more] = range.split('-');
    if (more !== undefined) return `"${range}" is not a ${f.name}`;
    const a = value(lo!, f);
    const b = hi === undefined ? a : value(hi, f);
    if (a === undefined || b === undefined) return `"${range}" is not a ${f.name}`;
    if (a < f.min || b > f.max) return `${f.name} ${range} is outside ${f.min}-${f.max}`;
    if (a > b) return `${f.name} range ${range} runs backwards`;
  }
  return undefined;
}

/**
 * A Database's schedule is read on every reconcile (validated, then its
 * firings counted): its parse is remembered per text, in a bounded memo
 * cleared when full. What it holds is never changed after it is made.
 */
const memo = new Map<string, { problem: string | undefined; sets?: Sets }>();
function remembered(schedule: string): { problem: string | undefined; sets?: Sets } {
  let hit = memo.get(schedule);
  if (hit === undefined) {
    if (memo.size >= 256) memo.clear();
    const problem = parse(schedule);
    hit = problem === undefined ? { problem, sets: setsOf(schedule) } : { problem };
    memo.set(schedule, hit);
  }
  return hit;
}

/** Why a schedule would be rejected, or undefined when Kubernetes accepts it. */
export function cronProblem(schedule: string): string | undefined {
  return remembered(schedule).problem;
}

function parse(schedule: string): string | undefined {
  const fields = schedule.trim().split(/[ \t]+/);
  if (fields.length !== 5)
    return `it has ${fields.length} fields; a schedule has 5 (minute hour day-of-month month day-of-week)`;
  for (let i = 0; i < 5; i++) {
    const problem = fieldProblem(fields[i]!, FIELDS[i]!, i === 2 || i === 4);
    if (problem) return problem;
  }
  return undefined;
}

/** A valid schedule's allowed values per field, and whether day of month and day of week were both restricted. */
interface Sets {
  minute: Set<number>;
  hour: Set<number>;
  dom: Set<number>;
  month: Set<number>;
  dow: Set<number>;
  /** Kubernetes (robfig/cron) matches a day when either day field matches if neither starts with '*'; else both must. */
  eitherDay: boolean;
}

function expand(text: string, f: Field): Set<number> {
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const [range, step] = part.split('/');
    const by = step === undefined ? 1 : Number(step);
    let lo = f.min;
    let hi = f.max;
    if (range !== '*' && range !== '?') {
      const [a, b] = range!.split('-');
      lo = value(a!, f)!;
      // "5/15" runs from 5 to the end, as in Kubernetes.
      hi = b === undefined ? (step === undefined ? lo : f.max) : value(b, f)!;
    }
    for (let v = lo; v <= hi; v += by) out.add(v);
  }
  return out;
}

/** A schedule's sets; throws for an invalid one. */
function validSets(schedule: string): Sets {
  const { problem, sets } = remembered(schedule);
  if (problem !== undefined || sets === undefined) throw new Error(`schedule ${JSON.stringify(schedule)}: ${problem}`);
  return sets;
}

/** The sets of a schedule parse() accepted. */
function setsOf(schedule: string): Sets {
  const fields = schedule.trim().split(/[ \t]+/);
  const [minute, hour, dom, month, dow] = fields.map((t, i) => expand(t, FIELDS[i]!));
  // As robfig/cron (Kubernetes' parser) marks a field unrestricted: a '*' or '?' part without a step above 1.
  const starred = (t: string) =>
    t.split(',').some((part) => {
      const [range, step] = part.split('/');
      return (range === '*' || range === '?') && (step === undefined || Number(step) <= 1);
    });
  return {
    minute: minute!,
    hour: hour!,
    dom: dom!,
    month: month!,
    dow: dow!,
    eitherDay: !starred(fields[2]!) && !starred(fields[4]!),
  };
}

function dayMatches(s: Sets, day: Date): boolean {
  if (!s.month.has(day.getUTCMonth() + 1)) return false;
  const dom = s.dom.has(day.getUTCDate());
  const dow = s.dow.has(day.getUTCDay());
  return s.eitherDay ? dom || dow : dom && dow;
}

const MINUTE = 60_000;
const DAY = 1440 * MINUTE;

/**
 * The newest times the schedule fired at or before `now` (UTC, whole
 * minutes), newest first, at most `count`, looking back at most 400 days.
 */
export function firedAtOrBefore(schedule: string, now: Date, count: number): Date[] {
  const s = validSets(schedule);
  const hours = [...s.hour].sort((a, b) => b - a);
  const minutes = [...s.minute].sort((a, b) => b - a);
  const out: Date[] = [];
  const end = Math.floor(now.getTime() / MINUTE) * MINUTE;
  const today = Math.floor(end / DAY) * DAY;
  for (let day = today; day > today - 400 * DAY && out.length < count; day -= DAY) {
    if (!dayMatches(s, new Date(day))) continue;
    for (const h of hours) {
      for (const m of minutes) {
        const t = day + h * 3_600_000 + m * MINUTE;
        if (t > end) continue;
        out.push(new Date(t));
        if (out.length === count) return out;
      }
    }
  }
  return out;
}

/** The first time the schedule fires after `now`, looking ahead at most 400 days. */
export function nextFiring(schedule: string, now: Date): Date | undefined {
  const s = validSets(schedule);
  const hours = [...s.hour].sort((a, b) => a - b);
  const minutes = [...s.minute].sort((a, b) => a - b);
  const after = Math.floor(now.getTime() / MINUTE) * MINUTE;
  const today = Math.floor(after / DAY) * DAY;
  for (let day = today; day < today + 400 * DAY; day += DAY) {
    if (!dayMatches(s, new Date(day))) continue;
    for (const h of hours)
      for (const m of minutes) {
        const t = day + h * 3_600_000 + m * MINUTE;
        if (t > after) return new Date(t);
      }
  }
  return undefined;
}
