import { Command, InvalidArgumentError } from 'commander';
import { resolveHome, requireContext } from './context';
import { callUnary } from '@gpufleet/grpc-kit';
import { connectClients, parseKind, runGet } from './commands/get';
import { runDescribeWorkload } from './commands/describe';
import { runSubmit } from './commands/submit';
import { up } from './commands/up';
import { parseFormat } from './output/format';

function intArg(name: string) {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${name}: expected a non-negative integer, got "${value}"`);
    return n;
  };
}

const program = new Command('gpufleet')
  .description('gpufleet: discover accelerators, offer capacity, run workloads across a fleet')
  .option('--home <dir>', 'where the stack context and logs live (default $GPUFLEET_HOME or ~/.gpufleet)')
  .showHelpAfterError();

program
  .command('up')
  .description('start NATS, the scheduler and one device-discovery agent per node of a fleet file')
  .option('--fleet <file>', 'fleet file describing simulated nodes', 'examples/fleets/dev.yaml')
  .option('--nats-url <url>', 'use this NATS server instead of starting one')
  .option('--nats-port <port>', 'preferred port for the NATS server it starts', intArg('--nats-port'), 4222)
  .option('--scheduler-port <port>', 'preferred scheduler gRPC port', intArg('--scheduler-port'), 50051)
  .option('--scheduler-http-port <port>', 'preferred scheduler HTTP port (/healthz, /metrics)', intArg('--scheduler-http-port'), 8080)
  .option('--heartbeat-interval <s>', 'agent heartbeat interval, seconds', intArg('--heartbeat-interval'), 15)
  .option('--not-ready-timeout <s>', 'seconds without heartbeat before a node is NotReady', intArg('--not-ready-timeout'), 45)
  .option('--log-level <level>', 'service log level', 'info')
  .option('--keep-state', "keep the previous run's NATS state (nodes, workloads, queues) in this home")
  .action(async (o) => {
    const home = resolveHome(program.opts().home);
    const stack = await up({
      home,
      fleet: o.fleet,
      natsUrl: o.natsUrl,
      natsPort: o.natsPort,
      schedulerPort: o.schedulerPort,
      schedulerHttpPort: o.schedulerHttpPort,
      heartbeatIntervalS: o.heartbeatInterval,
      notReadyTimeoutS: o.notReadyTimeout,
      logLevel: o.logLevel,
      keepState: Boolean(o.keepState),
    });
    await new Promise<void>((resolve) => {
      const shutdown = (sig: string) => {
        process.stdout.write(`\n${sig}: stopping gpufleet...\n`);
        stack.stop().then(() => {
          process.stdout.write('stopped.\n');
          resolve();
        });
      };
      process.once('SIGINT', () => shutdown('SIGINT'));
      process.once('SIGTERM', () => shutdown('SIGTERM'));
    });
  });

program
  .command('get')
  .description('list nodes, pools, instancetypes, workloads, queues or localqueues (kubectl-style)')
  .argument('<kind>', 'nodes | pools | instancetypes | workloads | queues | localqueues')
  .argument('[name]', 'one resource by name')
  .option('-o, --output <format>', 'table | wide | json | yaml', 'table')
  .option('-w, --watch', 'keep printing changes')
  .option('--pool <pool>', 'only this pool (nodes, instancetypes)')
  .option('-n, --namespace <ns>', 'namespace of workloads and localqueues (default: all for lists, "default" for one)')
  .option('--scheduler <host:port>', 'scheduler gRPC address (default: from the stack context)')
  .action(async (kind: string, name: string | undefined, o) => {
    const ctx = requireContext(resolveHome(program.opts().home), o.scheduler);
    await runGet({
      scheduler: ctx.scheduler,
      kind: parseKind(kind),
      name,
      format: parseFormat(o.output),
      watch: Boolean(o.watch),
      pool: o.pool,
      namespace: o.namespace,
    });
  });

program
  .command('submit')
  .description('create or update the Workloads, ClusterQueues and LocalQueues of a YAML manifest')
  .requiredOption('-f, --file <file>', 'manifest (multi-document YAML; - for stdin)')
  .option('--scheduler <host:port>', 'scheduler gRPC address (default: from the stack context)')
  .action(async (o) => {
    const ctx = requireContext(resolveHome(program.opts().home), o.scheduler);
    await runSubmit(ctx.scheduler, o.file, (t) => process.stdout.write(t + '\n'));
  });

program
  .command('describe')
  .description('show a workload in detail, with why it is pending')
  .argument('<kind>', 'workload')
  .argument('<name>')
  .option('-n, --namespace <ns>', 'namespace', 'default')
  .option('--scheduler <host:port>', 'scheduler gRPC address (default: from the stack context)')
  .action(async (kind: string, name: string, o) => {
    if (parseKind(kind) !== 'workloads') throw new Error(`describe supports workloads, got "${kind}"`);
    const ctx = requireContext(resolveHome(program.opts().home), o.scheduler);
    await runDescribeWorkload(ctx.scheduler, o.namespace, name, (t) => process.stdout.write(t + '\n'));
  });

program
  .command('delete')
  .description('delete a workload (its devices and quota are released)')
  .argument('<kind>', 'workload')
  .argument('<name>')
  .option('-n, --namespace <ns>', 'namespace', 'default')
  .option('--scheduler <host:port>', 'scheduler gRPC address (default: from the stack context)')
  .action(async (kind: string, name: string, o) => {
    if (parseKind(kind) !== 'workloads') throw new Error(`delete supports workloads, got "${kind}"`);
    const ctx = requireContext(resolveHome(program.opts().home), o.scheduler);
    const clients = connectClients(ctx.scheduler);
    try {
      await callUnary(clients.scheduling, clients.scheduling.deleteWorkload, { namespace: o.namespace, name });
      process.stdout.write(`workload/${o.namespace}/${name} deleted\n`);
    } finally {
      clients.close();
    }
  });

program.parseAsync(process.argv).catch((err: Error & { details?: string }) => {
  process.stderr.write(`error: ${err.details ?? err.message}\n`);
  process.exit(1);
});
