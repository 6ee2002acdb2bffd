// Compiles an app to JavaScript under dist/, mirroring the repository layout:
//
//   npx nx build <app>                                  # node -r @swc-node/register tools/build/build.ts <app>
//   npx nx run-many -t build                            # every app
//   node -r @swc-node/register tools/build/build.ts scheduler node-runtime
//   node -r @swc-node/register tools/build/build.ts --all
//
// The build itself: buildApp in libs/process-kit/src/build.ts.
import { buildApp, listApps } from '@gpufleet/process-kit';

async function main(argv: string[]): Promise<void> {
  const apps = argv.includes('--all') ? listApps() : argv;
  if (apps.length === 0) {
    console.error(`usage: node -r @swc-node/register tools/build/build.ts <app…> | --all   (apps: ${listApps().join(', ')})`);
    process.exit(2);
  }
  for (const app of apps) await buildApp(app, { log: (line) => console.log(line) });
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
