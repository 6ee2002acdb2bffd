import { Command, InvalidArgumentError } from 'commander';
import { resolveHome, requireContext } from './context';
import { parseKind, runGet } from './commands/get';
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
  .description('list nodes, pools or instancetypes (kubectl-style)')
  .argument('<kind>', 'nodes | pools | instancetypes')
  .argument('[name]', 'one resource by name')
  .option('-o, --output <format>', 'table | wide | json | yaml', 'table')
  .option('-w, --watch', 'keep printing changes')
  .option('--pool <pool>', 'only this pool (nodes, instancetypes)')
  .option('--scheduler <host:port>', 'scheduler gRPC address (default: from the stack context)')
  .action(async (kind: string, name: string | undefined, o) => {
    const ctx = requireContext(resolveHome(program.opts().home), o.scheduler);
    await runGet({ scheduler: ctx.scheduler, kind: parseKind(kind), name, format: parseFormat(o.output), watch: Boolean(o.watch), pool: o.pool });
  });

program.parseAsync(process.argv).catch((err: Error & { details?: string }) => {
  process.stderr.write(`error: ${err.details ?? err.message}\n`);
  process.exit(1);
});
