// The live edge of a call: the pure pipeline (src/function.ts), with the
// outside facts a blueprint asks for found first. Only a step with AWS
// credentials asks AWS anything; whatever goes wrong reading facts, the call
// is answered (AWS trouble is a warning, src/aws/facts.ts).
import type { RunFunctionRequest, RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { AWS_CREDENTIALS, awsCredentials } from './aws/credentials.js';
import type { AwsFactsSource } from './aws/facts.js';
import type { ExternalFacts } from './facts.js';
import { type Answered, answer, chooseBlueprint, failure, type Log, prepare, queryOf, runCall } from './function.js';
import { namesOperation } from './operations/index.js';

/** One call, the outside asked first where the blueprint wants to know; with the blueprint that served it. */
export async function answerLive(req: RunFunctionRequest, aws: AwsFactsSource, log?: Log): Promise<Answered> {
  // Most calls have no AWS credentials: they take the pure path at once.
  // Nor do an Operation's steps: they read no outside facts.
  if (!req.credentials?.[AWS_CREDENTIALS] || namesOperation(req)) return runCall(req, log);
  const chosen = chooseBlueprint(req);
  const name = chosen ? { blueprint: chosen.name } : {};
  try {
    const prepared = prepare(req, chosen);
    const question = queryOf(prepared)?.aws;
    const credentials = question ? awsCredentials(req) : undefined;
    let facts: ExternalFacts | undefined;
    if (question && credentials) {
      const endpoint = prepared.input?.awsEndpoint ?? credentials.endpoint;
      facts = { aws: await aws.gather({ ...question, credentials, ...(endpoint ? { endpoint } : {}) }) };
    }
    return { rsp: answer(prepared, facts, log), ...name };
  } catch (err) {
    return { rsp: failure(req, err, log), ...name };
  }
}

export async function runFunctionLive(
  req: RunFunctionRequest,
  aws: AwsFactsSource,
  log?: Log,
): Promise<RunFunctionResponse> {
  return (await answerLive(req, aws, log)).rsp;
}
