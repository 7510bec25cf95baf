// The "candidate" of the benchmark (BENCH_IMPLS=…,candidate): function-platform
// as built, with the wire codec proposed in bench/wire.ts swapped in before it
// starts (node --import dist/bench/candidate.js dist/main.js). An experiment
// to measure a proposal end to end, not a way to run the product: it patches
// the SDK's codec objects in place, which src/ would do by passing
// decodeRunFunctionRequest / encodeRunFunctionResponse as the service's
// requestDeserialize / responseSerialize in src/server.ts instead.
import { FunctionRunnerServiceService, RunFunctionResponse } from '@crossplane-org/function-sdk-typescript';
import { decodeRunFunctionRequest, encodeRunFunctionResponse } from '../src/wire.js';

const method = FunctionRunnerServiceService.runFunction as { requestDeserialize: unknown; responseSerialize: unknown };
method.requestDeserialize = decodeRunFunctionRequest;
method.responseSerialize = encodeRunFunctionResponse;
// src/server.ts encodes answers itself with RunFunctionResponse.encode(rsp).finish().
(RunFunctionResponse as { encode: unknown }).encode = (m: RunFunctionResponse) => ({ finish: () => encodeRunFunctionResponse(m) });
