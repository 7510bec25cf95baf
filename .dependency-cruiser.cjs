// The architecture as rules `npm run check` holds the code to (dependency-cruiser):
// what may import what in src/. CONTRIBUTING.md draws the layers.
const BLUEPRINT_FOLDERS = '(database|backup|restore)';
/** The ground floor: what every layer may stand on, standing on nothing above it. */
const GROUND = '^src/(kinds/|kube\\.ts$|names\\.ts$|quantity\\.ts$|errors\\.ts$|clock\\.ts$|passwords\\.ts$|facts\\.ts$|spec/|generated/)';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import circle in src/: each module stands on the ones below it.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'no-cross-blueprint',
      comment:
        'A blueprint never imports another blueprint\'s files: what database/, backup/ and restore/ share is in blueprints/lifecycle/.',
      severity: 'error',
      from: { path: `^src/blueprints/${BLUEPRINT_FOLDERS}/` },
      to: {
        path: [`^src/blueprints/${BLUEPRINT_FOLDERS}/`, '^src/blueprints/widget\\.ts$'],
        pathNot: '^src/blueprints/$1/',
      },
    },
    {
      name: 'widget-alone',
      comment: 'The Widget blueprint imports no other blueprint, nor the Database\'s lifecycle layer.',
      severity: 'error',
      from: { path: '^src/blueprints/widget\\.ts$' },
      to: { path: [`^src/blueprints/${BLUEPRINT_FOLDERS}/`, '^src/blueprints/lifecycle/'] },
    },
    {
      name: 'lifecycle-below-blueprints',
      comment:
        'The lifecycle layer (instances, hand-over, Jobs, the named Database, restore sources, placements) is used by the blueprints and uses none of them.',
      severity: 'error',
      from: { path: '^src/blueprints/lifecycle/' },
      to: {
        path: [`^src/blueprints/${BLUEPRINT_FOLDERS}/`, '^src/blueprints/(widget|dispatch)\\.ts$'],
      },
    },
    {
      name: 'ground-floor',
      comment: 'src/kinds/ and the ground-floor modules (kube.ts, names.ts, quantity.ts, ...) import nothing above them.',
      severity: 'error',
      from: { path: GROUND },
      to: { path: '^src/', pathNot: GROUND },
    },
    {
      name: 'operations-beside-blueprints',
      comment:
        'An Operation step (src/operations/) builds what it applies itself: it imports no blueprint and no placement (only the contract\'s types in blueprint.ts and the shared facts of lifecycle/database.ts and engine.ts), and no blueprint imports it.',
      severity: 'error',
      from: { path: '^src/operations/' },
      to: {
        path: '^src/blueprints/',
        pathNot: '^src/blueprints/(blueprint\\.ts|lifecycle/(database|engine)\\.ts)$',
      },
    },
    {
      name: 'blueprints-know-no-operations',
      comment: 'The blueprints compose for a composite; what an Operation does is not theirs to reach.',
      severity: 'error',
      from: { path: '^src/blueprints/' },
      to: { path: '^src/operations/' },
    },
    {
      name: 'pure-call',
      comment:
        'The pure call (function.ts and all it reaches) reaches no I/O edge: no gRPC, no AWS SDK, no filesystem or network, none of the edge modules.',
      severity: 'error',
      from: { path: '^src/function\\.ts$' },
      to: {
        reachable: true,
        path: [
          '(^|/)node_modules/(@grpc|@aws-sdk|@smithy|pino)/',
          '^(node:)?(fs|fs/promises|net|http|http2|https|tls|dgram|child_process|worker_threads)$',
          '^src/(main|cli|server|grpc-call|grpc-http2|grpc-frames|tls|live|metrics|events|address|render|file-clock|node-version)\\.ts$',
          '^src/h2/',
          '^src/aws/',
        ],
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    tsConfig: { fileName: 'tsconfig.json' },
    // TypeScript 7's compiler has no API dependency-cruiser can use yet: swc parses the sources
    // (type-only imports count too).
    parser: 'swc',
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
