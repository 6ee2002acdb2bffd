// `npm run bench -- <name>` runs tools/bench/<name>.bench.ts.
// Each benchmark prints its figures, compares against a baseline measured in the same run,
// and ends with its headline figures, one `name: value` per line.
import { existsSync, readdirSync } from 'fs';
import { join } from 'path';

async function main(): Promise<void> {
  const name = process.argv[2];
  const available = readdirSync(__dirname)
    .filter((f) => f.endsWith('.bench.ts'))
    .map((f) => f.replace(/\.bench\.ts$/, ''));
  if (!name || !available.includes(name)) {
    console.error(`usage: npm run bench -- <name>   (available: ${available.join(', ') || 'none'})`);
    process.exit(2);
  }
  const file = join(__dirname, `${name}.bench.ts`);
  if (!existsSync(file)) throw new Error(`benchmark file missing: ${file}`);
  const mod = (await import(file)) as { run: (args: string[]) => Promise<void> };
  await mod.run(process.argv.slice(3));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
