// AWS credentials from a Composition step's `credentials`, in the Secret
// format provider-upjet-aws reads (an INI `credentials` key with a default
// profile), or as plain keys. Nothing here is ever logged or echoed.
import type { RunFunctionRequest } from '@crossplane-org/function-sdk-typescript';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** An endpoint override (an emulator, a private endpoint), from the Secret's `endpoint` key. */
  endpoint?: string;
}

/** The name of the step credentials the function reads. */
export const AWS_CREDENTIALS = 'aws';

/** The default profile of an AWS shared-credentials INI text. */
function iniProfile(text: string, profile = 'default'): Record<string, string> {
  const out: Record<string, string> = {};
  let current = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[\s*(?:profile\s+)?([^\]]+?)\s*\]$/.exec(line);
    if (section) {
      current = section[1]!;
      continue;
    }
    const eq = line.indexOf('=');
    if (eq > 0 && current === profile) out[line.slice(0, eq).trim().toLowerCase()] = line.slice(eq + 1).trim();
  }
  return out;
}

/** The credentials named `aws`, if the step has them and they are usable. */
export function awsCredentials(req: RunFunctionRequest): AwsCredentials | undefined {
  const data = req.credentials?.[AWS_CREDENTIALS]?.credentialData?.data;
  if (!data) return undefined;
  const text = (key: string) => {
    const value = data[key];
    return value === undefined ? undefined : Buffer.from(value).toString('utf8').trim();
  };
  const ini = text('credentials');
  const fields: Record<string, string | undefined> = ini ? iniProfile(ini) : {};
  const accessKeyId = fields['aws_access_key_id'] ?? text('aws_access_key_id');
  const secretAccessKey = fields['aws_secret_access_key'] ?? text('aws_secret_access_key');
  if (!accessKeyId || !secretAccessKey) return undefined;
  const sessionToken = fields['aws_session_token'] ?? text('aws_session_token');
  const endpoint = text('endpoint') ?? fields['endpoint_url'];
  return { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}), ...(endpoint ? { endpoint } : {}) };
}

/** Removes every credential value from a text, in case an error message carried one. */
export function scrub(text: string, creds: AwsCredentials | undefined): string {
  let out = text;
  for (const secret of [creds?.secretAccessKey, creds?.sessionToken, creds?.accessKeyId]) {
    if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  }
  return out;
}
