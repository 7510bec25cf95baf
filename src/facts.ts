// Facts from outside the cluster that a blueprint may ask for before it
// composes, described as data: the blueprint says what it wants to know
// (a query), the live edge (src/live.ts) finds out, and the pure pipeline
// hands the answer back. Today the outside is AWS.

/** What a Database on AWS wants to know about its RDS instance. */
export interface AwsQuestion {
  /** One cache entry per composite. */
  cacheKey: string;
  region: string;
  /** The instance does not exist yet: check that it can be ordered. */
  beforeCreation: boolean;
  identifier: string;
  engine: string;
  version: string;
  instanceClass: string;
  /** The spec field the instance class came from, for the message. */
  instanceClassField: string;
}

export interface AwsAnswer {
  /** Set only on a definite answer from AWS that the instance cannot be ordered. */
  notOrderable?: { field: string; message: string };
  instance?: {
    dbInstanceStatus?: string;
    engineVersion?: string;
    latestRestorableTime?: string;
    earliestRestorableTime?: string;
  };
  /** When these facts were read from AWS (ISO 8601). */
  observedAt: string;
  /** Calls that failed, already free of any credential. */
  warnings: string[];
}

export interface ExternalQuery {
  aws?: AwsQuestion;
}

export interface ExternalFacts {
  aws?: AwsAnswer;
}

/**
 * The earliest time RDS can restore an instance to: its automated backups
 * reach back the retention period, and not before the instance existed.
 */
export function earliestRestorable(
  created: Date | undefined,
  retentionDays: number | undefined,
  now: Date,
): { earliestRestorableTime?: string } {
  if (!created || !retentionDays) return {};
  const earliest = Math.max(new Date(created).getTime(), now.getTime() - retentionDays * 86_400_000);
  return { earliestRestorableTime: new Date(earliest).toISOString() };
}
