// Run by tracing.spec.ts as its own process, the way a service's main.ts starts: tracing first,
// NestJS and node:http only after it (CONVENTIONS #1). Prints the finished spans and log lines
// as one JSON line on stdout.
import { startInMemoryTracing } from '../index';

const { exporter, stop } = startInMemoryTracing('traced-service', { instrumentations: true });

async function main(): Promise<void> {
  const { runTracedApp } = require('./traced-app') as typeof import('./traced-app');
  const logs = await runTracedApp();
  const spans = exporter.getFinishedSpans().map((span) => ({
    name: span.name,
    kind: span.kind,
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    attributes: span.attributes,
    service: span.resource.attributes['service.name'],
    node: span.resource.attributes['k8s.node.name'],
  }));
  await stop();
  process.stdout.write(`${JSON.stringify({ spans, logs })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
