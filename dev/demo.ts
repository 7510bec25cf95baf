// npm run demo: the product on its embedded examples, no cluster needed.
// Starts the real gRPC server on loopback, sends every scenario of
// examples/scenarios.yaml through it as Crossplane would on successive
// reconciles, and prints what each call composed and what the user would see.
import * as grpc from '@grpc/grpc-js';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  FunctionRunnerServiceService,
  type RunFunctionRequest,
  type RunFunctionResponse,
  Severity,
} from '@crossplane-org/function-sdk-typescript';
import { parse } from 'yaml';
import { record, str } from '../src/kube.js';
import { assemble, buildRequest, readYamlObjects, runWithRequirements } from '../src/render.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const examples = join(root, 'examples');

interface Scenario {
  xr: string;
  observed: string[];
  required?: string;
}

/** Starts dist/main.js on a free loopback port and resolves with that port. */
function startFunction(): Promise<{ port: number; stop: () => void }> {
  const child = spawn(process.execPath, [join(root, 'dist', 'main.js'), '--insecure', '--address', '127.0.0.1:0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let buffered = '';
    child.once('exit', (code) => reject(new Error(`the function exited with ${code} before listening`)));
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const match = /"port":(\d+)/.exec(buffered);
      if (match) {
        child.stdout.removeAllListeners('data');
        child.stdout.resume();
        resolve({ port: Number(match[1]), stop: () => child.kill('SIGTERM') });
      }
    });
  });
}

type Caller = (req: RunFunctionRequest) => Promise<RunFunctionResponse>;

function client(port: number): { call: Caller; close: () => void } {
  const Client = grpc.makeGenericClientConstructor(FunctionRunnerServiceService, 'FunctionRunnerService');
  const c = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as grpc.Client &
    Record<string, (...args: unknown[]) => unknown>;
  return {
    call: (req) =>
      new Promise((resolve, reject) =>
        c['runFunction']!(req, (err: Error | null, rsp: RunFunctionResponse) => (err ? reject(err) : resolve(rsp))),
      ),
    close: () => c.close(),
  };
}

function cell(text: string, width: number): string {
  return text.length > width ? `${text.slice(0, width - 1)}…` : text.padEnd(width);
}

async function main(): Promise<void> {
  const scenarios = parse(readFileSync(join(examples, 'scenarios.yaml'), 'utf8')) as Scenario[];
  const fn = await startFunction();
  const { call, close } = client(fn.port);
  const widths = [24, 20, 44, 6];
  const header = `${['OBJECT', 'OBSERVED', 'COMPOSED', 'READY'].map((h, i) => cell(h, widths[i]!)).join(' ')} MESSAGE`;
  process.stdout.write(
    `function-platform demo: gRPC server on 127.0.0.1:${fn.port}, ${scenarios.length} scenarios from examples/\n\n${header}\n`,
  );
  let failures = 0;
  try {
    for (const scenario of scenarios) {
      const [xr] = readYamlObjects(join(examples, scenario.xr));
      const required = scenario.required ? readYamlObjects(join(examples, scenario.required)) : [];
      for (const observedFile of scenario.observed) {
        const observed = readYamlObjects(join(examples, observedFile));
        const rsp = await runWithRequirements(call, buildRequest(xr!, observed), required);
        const rendered = assemble(xr!, rsp);
        const status = record(rendered.xr, 'status') ?? {};
        const composed = rendered.resources
          .map((r) => str(r, 'metadata', 'annotations', 'crossplane.io/composition-resource-name'))
          .join(', ');
        const fatal = rsp.results.find((r) => r.severity === Severity.SEVERITY_FATAL);
        if (fatal) failures++;
        const row = [
          cell(`${str(xr, 'kind')}/${str(xr, 'metadata', 'name')}`, widths[0]!),
          cell(
            observedFile
              .split('/')
              .pop()!
              .replace(/\.yaml$/, ''),
            widths[1]!,
          ),
          cell(composed || '-', widths[2]!),
          cell(fatal ? 'FATAL' : String(status['ready'] ?? false), widths[3]!),
        ];
        process.stdout.write(`${row.join(' ')} ${fatal ? fatal.message : String(status['message'] ?? '')}\n`);
      }
    }
  } finally {
    close();
    fn.stop();
  }
  process.stdout.write(
    `\nEach row is one RunFunction call over gRPC. Render one yourself:\n  node dist/src/cli.js render examples/widget/seed.yaml --observed-resources examples/widget/observed/ready.yaml -r\n`,
  );
  if (failures > 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
