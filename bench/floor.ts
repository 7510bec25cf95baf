#!/usr/bin/env node
// The floor of the benchmark: a composition function that does nothing, built
// on the same SDK (@crossplane-org/function-sdk-typescript) and the same gRPC
// library as function-platform. It answers every call with the desired state
// it was given (the SDK's `to(req)`), so what it costs per call is what the
// SDK and gRPC cost by themselves: HTTP/2, decoding the request's protobuf
// Structs, encoding the response.
//
//   node dist/bench/floor.js --insecure --address 127.0.0.1:9443
import { serve } from '@crossplane-org/function-sdk-typescript';

serve((_req, rsp) => rsp, { name: 'function-floor' });
