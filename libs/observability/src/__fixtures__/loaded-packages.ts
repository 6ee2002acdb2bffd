// Run by tracing.spec.ts as its own process: imports the library as a service does, starts
// tracing without an endpoint (`off`) or with one (`otlp`, nothing listens there: the span
// processor only batches), and prints the @opentelemetry packages then loaded, as JSON.
import { startTracing } from '../index';

const stop = startTracing({
  serviceName: 'loaded-packages',
  otlpEndpoint: process.argv[2] === 'otlp' ? 'http://127.0.0.1:9/unused' : undefined,
});
const packages = new Set<string>();
for (const path of Object.keys(require.cache)) {
  const match = /node_modules\/(@opentelemetry\/[^/]+)\//.exec(path);
  if (match) packages.add(match[1]);
}
process.stdout.write(JSON.stringify([...packages].sort()));
void stop().then(() => process.exit(0));
