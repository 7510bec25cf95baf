#!/usr/bin/env node
// npm run bench: function-platform against the SDK's floor and a Go peer,
// over real gRPC on loopback. bench/README.md says what is measured and how;
// config.ts lists the knobs.
import { refuseOldNode } from '../src/node-version.js';
import { readConfig } from './config.js';
import { coldStarts, prepare, runCases } from './orchestrate.js';
import {
  machine,
  printAwsPath,
  printColdStarts,
  printFigures,
  printHeader,
  printLoadgenHeadroom,
  printProfiles,
  printRatios,
  printTransport,
  ratios,
  writeFiles,
} from './report.js';
import { runSizes } from './sizes.js';
import { judgeTargets, printTargets } from './targets.js';

async function main(): Promise<void> {
  // `node dist/bench/run.js` on an older system Node would measure that Node, silently.
  refuseOldNode('npm run bench');
  const started = Date.now();
  const { config, paths } = readConfig();
  const setup = await prepare(config, paths);
  const m = machine();
  let run: Awaited<ReturnType<typeof runCases>>;
  let starts: Record<string, number[]>;
  let sizes: Awaited<ReturnType<typeof runSizes>>;
  try {
    printHeader(started, m, setup, config, paths);
    starts = await coldStarts(setup, config, paths);
    run = await runCases(setup, config, paths, starts);
    sizes = await runSizes(setup, config, paths);
  } finally {
    await setup.aws?.stop();
  }
  const { results, profiledPids } = run;

  printFigures(setup, results);
  printLoadgenHeadroom(setup, results);
  printAwsPath(results);
  printTransport(setup, results);
  // Ratios and targets for function-platform, and for the candidate when it ran.
  const subjects = (['ours', 'bundle', 'candidate'] as const).filter((id) => setup.order.includes(id));
  const rs = ratios(subjects, setup, config, results);
  printRatios(rs, setup);
  const targets = judgeTargets(subjects, results, rs, starts, sizes);
  printTargets(targets, setup.impls, subjects);
  printColdStarts(setup, starts);
  writeFiles({ started, machine: m, setup, config, paths }, starts, results, rs, targets, sizes);
  printProfiles(paths, profiledPids);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
