#!/usr/bin/env node
// function-platform render XR.yaml [--observed-resources FILE] [--function-credentials FILE] [-e FILE] [--input FILE] [-r] [-o yaml|json]
//
// Runs the function in-process on one XR, the way `crossplane render` runs a
// pipeline, with no cluster, no Docker and no Go.
import { parseArgs } from 'node:util';
import { format, readYamlObjects, renderLive } from './render.js';

const USAGE = `Usage: function-platform render XR.yaml [flags]

Renders the resources function-platform composes for one XR, in-process.

Flags:
  --observed-resources FILE     observed composed resources (multi-document YAML,
                                each with a crossplane.io/composition-resource-name annotation)
  --function-credentials FILE   Secrets passed as pipeline credentials, by name; a single
                                Secret is also the step's "aws" credentials
  -e, --required-resources FILE objects the function may ask for (multi-document YAML)
  --input FILE                  the Composition step's input (e.g. blueprint: widget)
  -r, --include-function-results   print results (events) after the resources
  -o, --output yaml|json        output format (default yaml)
  -h, --help                    show this help
`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'observed-resources': { type: 'string' },
      'function-credentials': { type: 'string' },
      'required-resources': { type: 'string', short: 'e' },
      input: { type: 'string' },
      'include-function-results': { type: 'boolean', short: 'r', default: false },
      output: { type: 'string', short: 'o', default: 'yaml' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const [command, xrPath, ...rest] = positionals;
  if (command !== 'render' || !xrPath || rest.length > 0) {
    process.stderr.write(USAGE);
    return 2;
  }
  if (values.output !== 'yaml' && values.output !== 'json') {
    process.stderr.write(`--output must be yaml or json, not ${JSON.stringify(values.output)}\n`);
    return 2;
  }
  const xrs = readYamlObjects(xrPath);
  if (xrs.length !== 1) {
    process.stderr.write(`${xrPath}: expected exactly one composite resource, found ${xrs.length}\n`);
    return 2;
  }
  const observed = values['observed-resources'] ? readYamlObjects(values['observed-resources']) : [];
  const credentials = values['function-credentials'] ? readYamlObjects(values['function-credentials']) : [];
  const input = values.input ? readYamlObjects(values.input)[0] : undefined;
  const required = values['required-resources'] ? readYamlObjects(values['required-resources']) : [];
  const rendered = await renderLive(xrs[0]!, observed, credentials, input, required);
  if (rendered.fatal !== undefined) {
    process.stderr.write(`function-platform: fatal result: ${rendered.fatal}\n`);
    if (values['include-function-results'])
      process.stdout.write(format({ ...rendered, resources: [] }, { results: true, output: values.output }));
    return 1;
  }
  process.stdout.write(
    format(rendered, { results: values['include-function-results'] ?? false, output: values.output }),
  );
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`function-platform: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
  },
);
