// The live edge of a call: the pure pipeline (src/function.ts), with the
// outside facts a blueprint asks for found first. Only a step with AWS
// credentials asks AWS anything; whatever goes wrong reading facts, the call
// is answered (AWS trouble is a warning, src/aws/facts.ts).
import type { RunFunctionRequest, RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { AWS_CREDENTIALS, awsCredentials } from './aws/credentials.js';
import type { AwsFactsSource } from './aws/facts.js';
import type { ExternalFacts } from './facts.js';
import { answer, failure, type Log, prepare, queryOf, runFunction } from './function.js';
import { stepInput } from './request.js';

export async function runFunctionLive(
  req: RunFunctionRequest,
  aws: AwsFactsSource,
  log?: Log,
): Promise<RunFunctionResponse> {
  // Most calls have no AWS credentials: they take the pure path at once.
  if (!req.credentials?.[AWS_CREDENTIALS]) return runFunction(req, log);
  try {
    const prepared = prepare(req);
    const question = queryOf(prepared)?.aws;
    const credentials = question ? awsCredentials(req) : undefined;
    let facts: ExternalFacts | undefined;
    if (question && credentials) {
      const endpoint = stepInput(req)?.awsEndpoint ?? credentials.endpoint;
      facts = { aws: await aws.gather({ ...question, credentials, ...(endpoint ? { endpoint } : {}) }) };
    }
    return answer(prepared, facts, log);
  } catch (err) {
    return failure(req, err, log);
  }
}
