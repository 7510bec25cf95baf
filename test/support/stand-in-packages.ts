// Stand-in provider packages for the local control plane. The Configuration
// depends on provider packages that cannot be fetched here; for each one a
// package of the same name is built that carries the provider's real CRDs
// (../shared/crds, or provider-kubernetes's own as its install script copied
// them) and nothing else: no controller image. Crossplane's package manager
// resolves the Configuration's dependencies to them, installs them and their
// managed resources' CRDs as it would the real ones; with the External
// runtime nothing runs them (the stand-in runtime of stand-ins.ts reports
// them healthy). Their description says what they are.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { SHARED_CRDS } from '../../dev/infra/paths.js';

export interface ProviderDependency {
  /** The package's source, as the Configuration names it (xpkg.crossplane.io/crossplane-contrib/provider-aws-rds). */
  source: string;
  /** Its last path element: the package's name. */
  name: string;
  /** The lowest version the Configuration's constraint accepts: the stand-in's tag. */
  version: string;
}

/** The Provider dependencies a Configuration package declares. */
export function providerDependencies(configurationRoot: string): ProviderDependency[] {
  const meta = parse(readFileSync(join(configurationRoot, 'crossplane.yaml'), 'utf8')) as {
    spec: { dependsOn?: Array<{ kind?: string; package?: string; provider?: string; version: string }> };
  };
  return (meta.spec.dependsOn ?? [])
    .filter((d) => d.kind === 'Provider' || d.provider)
    .map((d) => {
      const source = d.package ?? d.provider!;
      const version = /^>=\s*(v\d+\.\d+\.\d+)$/.exec(d.version.trim())?.[1];
      if (!version) throw new Error(`${source}: version constraint ${d.version} is not ">=vX.Y.Z"`);
      return { source, name: source.slice(source.lastIndexOf('/') + 1), version };
    });
}

/** Which real CRDs each stand-in carries. */
function crdFilesFor(name: string, providerKubernetesCrds: string): string[] {
  const under = (dir: string, keep: (f: string) => boolean) =>
    readdirSync(dir)
      .filter((f) => f.endsWith('.yaml') && keep(f))
      .sort()
      .map((f) => join(dir, f));
  const upjet = join(SHARED_CRDS, 'provider-upjet-aws');
  switch (name) {
    case 'provider-aws-rds':
      return under(upjet, (f) => f.startsWith('rds.aws.'));
    case 'provider-aws-s3':
      return under(upjet, (f) => f.startsWith('s3.aws.'));
    case 'provider-aws-iam':
      return under(upjet, (f) => f.startsWith('iam.aws.'));
    case 'provider-kubernetes':
      // The CRDs of the provider-kubernetes that claims mode runs, when built; else the shared schemas.
      return existsSync(providerKubernetesCrds)
        ? under(providerKubernetesCrds, () => true)
        : under(join(SHARED_CRDS, 'provider-kubernetes'), () => true);
    default:
      throw new Error(`no stand-in for the provider package ${name}: add its CRDs to stand-in-packages.ts`);
  }
}

/** Writes the stand-in package's root (crossplane.yaml and the CRDs) under `dir`; returns it. */
export function writeStandInProvider(dep: ProviderDependency, dir: string, providerKubernetesCrds: string): string {
  const root = join(dir, `stand-in-${dep.name}`);
  mkdirSync(root, { recursive: true });
  const meta = {
    apiVersion: 'meta.pkg.crossplane.io/v1',
    kind: 'Provider',
    metadata: {
      name: dep.name,
      annotations: {
        'meta.crossplane.io/maintainer': 'function-platform tests',
        'meta.crossplane.io/description': `STAND-IN for ${dep.source}: its real CRDs only, no controller (function-platform's local control plane)`,
      },
    },
  };
  writeFileSync(join(root, 'crossplane.yaml'), stringify(meta));
  for (const file of crdFilesFor(dep.name, providerKubernetesCrds))
    copyFileSync(file, join(root, file.slice(file.lastIndexOf('/') + 1)));
  return root;
}
