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

/** Why a schedule would be rejected, or undefined when Kubernetes accepts it. */
export function cronProblem(schedule: string): string | undefined {
  const fields = schedule.trim().split(/[ \t]+/);
  if (fields.length !== 5)
    return `it has ${fields.length} fields; a schedule has 5 (minute hour day-of-month month day-of-week)`;
  for (let i = 0; i < 5; i++) {
    const problem = fieldProblem(fields[i]!, FIELDS[i]!, i === 2 || i === 4);
    if (problem) return problem;
  }
  return undefined;
}
