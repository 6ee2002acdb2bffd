import { Command } from 'commander';
import { loadAdminToken, loadCliToken } from './admin';
import { applyLoginTls, readLogin } from './login';
import { resolveHome, requireContext, requireDelivery, requireRouter } from './context';
import { callUnary } from '@gpufleet/grpc-kit';
import { Kind, connectClients, parseKind, runGet } from './commands/get';
import { runDescribeWorkload } from './commands/describe';
import { runSubmit } from './commands/submit';
import { DEFAULT_NODES_PER_PROCESS, up } from './commands/up';
import { runDeleteDeployment, runDeploy, runDescribeDeployment, runScale } from './commands/deployments';
import { runCreateInstance, runDeleteInstance, runDescribeInstance, runSetInstanceStopped } from './commands/instances';
import { runSsh } from './commands/ssh';
import { runCreateSecret, runDeleteSecret } from './commands/secrets';
import { runLogs } from './commands/logs';
import { DELIVERY_FLAG, isArtifactKind, runCreateArtifact, runDeleteArtifact, runDescribeArtifact, runGetArtifacts } from './commands/artifacts';
import { runKeysCreate, runKeysList, runKeysRevoke, runUsage } from './commands/keys';
import { registerAccessCommands } from './commands/access-commands';
import { SCHEDULER_FLAG, collect, intArg } from './flags';
import { KV_CACHE_DTYPES } from '@gpufleet/deployments-core';
import { parseFormat } from './output/format';

const out = (t: string) => process.stdout.write(t + '\n');

const program = new Command('gpufleet')
  .description('gpufleet: discover accelerators, offer capacity, run model deployments and GPU instances across a fleet')
  .option('--home <dir>', 'where the stack context and logs live (default $GPUFLEET_HOME or ~/.gpufleet)')
  .option('--tls-ca <file>', 'speak TLS to the scheduler and the router, trusting this CA (PEM; or $GPUFLEET_TLS_CA_FILE)')
  .option('--tls-cert <file>', 'client certificate (PEM) for mutual TLS (or $GPUFLEET_TLS_CERT_FILE)')
  .option('--tls-key <file>', 'its private key (PEM; or $GPUFLEET_TLS_KEY_FILE)')
  .showHelpAfterError()
  // Every command but `up` (which makes it) calls gRPC APIs with GPUFLEET_TOKEN, the token of
  // `gpufleet auth login`, or the admin token of the stack in --home: on the machine that runs
  // the stack the CLI is authenticated without anyone copying a token. `logs` sends the admin
  // token (what node runtimes check) to loopback URLs only.
  .hook('preAction', (_program, command) => {
    const { tlsCa, tlsCert, tlsKey } = program.opts<{ tlsCa?: string; tlsCert?: string; tlsKey?: string }>();
    if (tlsCa) process.env.GPUFLEET_TLS_CA_FILE = tlsCa;
    if (tlsCert) process.env.GPUFLEET_TLS_CERT_FILE = tlsCert;
    if (tlsKey) process.env.GPUFLEET_TLS_KEY_FILE = tlsKey;
    if (command.name() === 'up') return;
    const home = resolveHome(program.opts().home);
    // A saved login's TLS files when neither flags nor the environment name any (not for a new login).
    if (command.name() !== 'login') applyLoginTls(readLogin(home), process.env);
    const admin = loadAdminToken(home);
    if (admin) process.env.GPUFLEET_ADMIN_TOKEN = admin;
    const token = loadCliToken(home);
    if (token) process.env.GPUFLEET_TOKEN = token;
  })
  .addHelpText(
    'after',
    `
Examples:
  gpufleet up                                             start a simulated fleet (examples/fleets/dev.yaml)
  gpufleet get instancetypes                              what the fleet offers
  gpufleet deploy Qwen/Qwen2.5-0.5B-Instruct --wait       serve a model with vLLM on one accelerator
  gpufleet get deployments                                deployments with their phase, ready replicas, endpoints
  gpufleet logs qwen2-5-0-5b-instruct -f                  follow the log of replica 0
  gpufleet create instance dev --accelerators 2 --wait    an SSH-reachable instance with two accelerators
  gpufleet ssh dev -- nvidia-smi                          run a command on it (or no command: a login shell)
  curl http://127.0.0.1:8000/v1/models                    the models the router serves (OpenAI API)
  gpufleet keys create --name ci --rpm 600                an API key for the router, 600 requests per minute
  gpufleet usage --days 7                                 requests and tokens per day, key, deployment and model

See docs/cli.md for every command and flag.`,
  );

/** The scheduler address of the running stack, or --scheduler. */
const schedulerOf = (o: { scheduler?: string }) => requireContext(resolveHome(program.opts().home), o.scheduler).scheduler;
/** The router's KeyService address of the running stack, or --router. */
const routerOf = (o: { router?: string }) => requireRouter(resolveHome(program.opts().home), o.router).grpc;
/** Model delivery's address of the running stack, or --delivery. */
const deliveryOf = (o: { delivery?: string }) => requireDelivery(resolveHome(program.opts().home), o.delivery);
const ROUTER_FLAG = ['--router <host:port>', "inference-router's gRPC KeyService address (default: from the stack context)"] as const;
const NAMESPACE_FLAG = ['-n, --namespace <ns>', 'namespace', 'default'] as const;

/** The kinds a verb accepts, e.g. `delete` takes workloads, deployments and instances. */
function kindFor(verb: string, value: string, allowed: Kind[]): Kind {
  const kind = parseKind(value);
  if (!allowed.includes(kind)) throw new Error(`${verb} supports ${allowed.map((k) => k.replace(/s$/, '')).join(', ')}; got "${value}"`);
  return kind;
}

program
  .command('up')
  .description('start NATS, Redis, the scheduler, the inference router, and one device-discovery agent and one node runtime per node of a fleet file')
  .option('--fleet <file>', 'fleet file describing simulated nodes', 'examples/fleets/dev.yaml')
  .option('--nats-url <url>', 'use this NATS server instead of starting one')
  .option('--nats-port <port>', 'preferred port for the NATS server it starts', intArg('--nats-port'), 4222)
  .option('--scheduler-port <port>', 'preferred scheduler gRPC port', intArg('--scheduler-port'), 50051)
  .option('--scheduler-http-port <port>', 'preferred scheduler HTTP port (/healthz, /metrics)', intArg('--scheduler-http-port'), 8080)
  .option('--redis-url <url>', 'use this Redis (rate limits, usage counters) instead of starting one')
  .option('--redis-port <port>', 'preferred port for the Redis server it starts', intArg('--redis-port'), 6379)
  .option('--router-port <port>', "preferred port of the inference router's OpenAI API", intArg('--router-port'), 8000)
  .option('--router-auth', 'make the router require API keys (gpufleet keys create); by default requests without one are served')
  .option('--hf-endpoint <url>', 'the Hugging Face hub model artifacts are resolved against (a mirror, an air-gapped hub; default https://huggingface.co)')
  .option('--sample-hub', 'also start a local Hugging Face hub with sample repositories (sample/tiny-llama, sample/tiny-llama-gguf) and resolve artifacts against it: model delivery works offline')
  .option('--heartbeat-interval <s>', 'agent heartbeat interval, seconds', intArg('--heartbeat-interval'), 15)
  .option('--not-ready-timeout <s>', 'seconds without heartbeat before a node is NotReady', intArg('--not-ready-timeout'), 45)
  .option('--reschedule-after <s>', 'seconds a replica on a NotReady node waits before it is moved to another node', intArg('--reschedule-after'), 300)
  .option('--nodes-per-process <n>', 'nodes one agent process and one runtime process present (1: processes of its own for every node)', intArg('--nodes-per-process'), DEFAULT_NODES_PER_PROCESS)
  .option('--listen-host <address>', 'address every service listens on (0.0.0.0: every address; engines and instances follow only a concrete address)', '127.0.0.1')
  .option('--log-level <level>', 'service log level', 'info')
  .option('--keep-state', "keep the previous run's NATS state (nodes, workloads, queues) in this home")
  .option('--no-auth', 'run an open stack: no admin token, anyone who reaches a port may use every API (a throwaway stack only)')
  .option('--from-source', 'run the services from their TypeScript sources (@swc-node/register) instead of building dist/ first')
  .action(async (o) => {
    const home = resolveHome(program.opts().home);
    // Signals are handled from the start: one during start-up stops what was already started.
    let stopStack: (() => Promise<void>) | undefined;
    let stopped: Promise<void> | undefined;
    const shutdown = (sig: string) => {
      process.stdout.write(`\n${sig}: stopping gpufleet...\n`);
      stopped ??= (stopStack?.() ?? Promise.resolve()).then(() => {
        process.stdout.write('stopped.\n');
        process.exit(0);
      });
    };
    process.once('SIGINT', () => shutdown('SIGINT'));
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    try {
      await up({
        home,
        fleet: o.fleet,
        natsUrl: o.natsUrl,
        natsPort: o.natsPort,
        schedulerPort: o.schedulerPort,
        schedulerHttpPort: o.schedulerHttpPort,
        redisUrl: o.redisUrl,
        redisPort: o.redisPort,
        routerPort: o.routerPort,
        routerAuth: Boolean(o.routerAuth),
        hfEndpoint: o.hfEndpoint,
        sampleHub: Boolean(o.sampleHub),
        heartbeatIntervalS: o.heartbeatInterval,
        notReadyTimeoutS: o.notReadyTimeout,
        rescheduleAfterS: o.rescheduleAfter,
        logLevel: o.logLevel,
        nodesPerProcess: o.nodesPerProcess,
        listenHost: o.listenHost,
        auth: o.auth !== false,
        keepState: Boolean(o.keepState),
        fromSource: Boolean(o.fromSource),
        onStopReady: (stop) => (stopStack = stop),
      });
    } catch (err) {
      if (stopped) return stopped; // start-up failed because it was being stopped: not an error
      throw err;
    }
    await new Promise<never>(() => undefined); // until a signal stops the stack and exits
  });

program
  .command('get')
  .description('list nodes, pools, instancetypes, workloads, queues, localqueues, deployments, instances, secrets or artifacts (kubectl-style; secrets show key names, never values)')
  .argument('<kind>', 'nodes | pools | instancetypes | workloads | queues | localqueues | deployments | instances | secrets | artifacts')
  .argument('[name]', 'one resource by name')
  .option('-o, --output <format>', 'table | wide | json | yaml', 'table')
  .option('-w, --watch', 'keep printing changes')
  .option('--pool <pool>', 'only this pool (nodes, instancetypes)')
  .option('-n, --namespace <ns>', 'namespace of workloads, localqueues, deployments, instances, secrets and artifacts (default: all for lists, "default" for one)')
  .option(...SCHEDULER_FLAG)
  .option(...DELIVERY_FLAG)
  .action(async (kind: string, name: string | undefined, o) => {
    if (isArtifactKind(kind)) return runGetArtifacts(deliveryOf(o), { name, namespace: o.namespace, format: parseFormat(o.output), watch: Boolean(o.watch) }, out);
    await runGet({
      scheduler: schedulerOf(o),
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
  .description('create or update the Workloads, ClusterQueues, LocalQueues, ModelDeployments and GPUInstances of a YAML manifest')
  .requiredOption('-f, --file <file>', 'manifest (multi-document YAML; - for stdin)')
  .option(...SCHEDULER_FLAG)
  .action(async (o) => {
    await runSubmit(schedulerOf(o), o.file, out);
  });

program
  .command('deploy')
  .description('serve a model: create a ModelDeployment with one "server" role')
  .argument('[model]', 'model path or reference, e.g. /models/llama-3.1-8b or meta-llama/Llama-3.1-8B-Instruct (may be left out with --artifact)')
  .option('--artifact <name>', 'a ModelArtifact of the namespace: each node waits for its cached copy and the engine loads it (see `gpufleet get artifacts`)')
  .option('--name <name>', "deployment name (default: from the model's last path segment, DNS-1123, at most 40 characters)")
  .option(...NAMESPACE_FLAG)
  .option('--queue <localqueue>', 'LocalQueue the replicas enter (default: default)')
  .option('--engine <engine>', 'vllm | sglang | trtllm | llama-cpp | custom (default: vllm; custom when --command is given)')
  .option('--engine-version <version>', 'engine release, e.g. 0.11.0 (default: any)')
  .option('--mode <mode>', 'latency | throughput (default: throughput)')
  .option('--replicas <n>', 'replicas', intArg('--replicas'), 1)
  .option('--instance-type <type>', 'InstanceType of each pod (instead of --accelerators/--vcpu/--memory)')
  .option('--accelerators <n>', 'whole accelerators per pod (default 1; 0: CPU only)', intArg('--accelerators'))
  .option('--vcpu <n>', 'vCPUs per pod (default 8 per accelerator)', intArg('--vcpu'))
  .option('--memory <mib>', 'memory per pod, MiB (default 65536 per accelerator)', intArg('--memory'))
  .option('--size <pods>', 'pods per replica (one engine spread over several nodes)', intArg('--size'), 1)
  .option('--multi-node <mode>', 'vLLM with --size > 1: ray (default) or data-parallel')
  .option('--topology <level>', "the level a replica's pods must share: node, nvlink-domain, rack or zone")
  .option('--served-model-name <name>', 'the name clients put in "model" (default: the model\'s last path segment)')
  .option('--command <template>', 'custom engine command, with {{model_path}} {{port}} {{gpu_ids}} {{served_model_name}}')
  .option('--arg <arg>', 'extra engine argument, appended verbatim (repeatable)', collect)
  .option('--env <k=v>', 'engine environment variable (repeatable)', collect)
  .option('--env-secret <var=secret/key>', 'engine environment variable from a key of a Secret of the namespace (repeatable; see `gpufleet create secret`)', collect)
  .option('--speculative <method>', 'speculative decoding: eagle3 | mtp | ngram')
  .option('--draft-model <path>', 'draft head for --speculative eagle3')
  .option('--context-length <tokens>', "tokens of one sequence (vLLM --max-model-len); with --artifact also what the memory estimate sizes for (default: the model's own)", intArg('--context-length'))
  .option('--concurrency <n>', 'with --artifact: sequences of --context-length the KV cache must hold at once (default 1)', intArg('--concurrency'))
  .option('--gpu-memory-utilization <fraction>', "share of each GPU's memory the engine takes, in (0, 1] (default: the preset's)")
  .option('--kv-cache-dtype <dtype>', `KV cache dtype: ${KV_CACHE_DTYPES.join(' | ')} (default auto)`)
  .option('--auto-tensor-parallel', 'with --artifact and --instance-type: the smallest <pool>.<N>x of that family the model fits on')
  .option('--wait', 'wait until the deployment is Ready, printing progress')
  .option('--timeout <s>', 'with --wait: give up after this many seconds', intArg('--timeout'), 600)
  .option(...SCHEDULER_FLAG)
  .action(async (model: string | undefined, o) => {
    await runDeploy(schedulerOf(o), model ?? '', o, { wait: Boolean(o.wait), timeoutS: o.timeout }, out);
  });

program
  .command('scale')
  .description('set the replicas of a deployment (of one role)')
  .argument('<kind>', 'deployment')
  .argument('<name>')
  .requiredOption('--replicas <n>', 'desired replicas', intArg('--replicas'))
  .option('--role <role>', 'the role to scale (server, prefill or decode; needed when the deployment has several)')
  .option(...NAMESPACE_FLAG)
  .option(...SCHEDULER_FLAG)
  .action(async (kind: string, name: string, o) => {
    kindFor('scale', kind, ['deployments']);
    await runScale(schedulerOf(o), o.namespace, name, o.replicas, o.role, out);
  });

program
  .command('create')
  .description('create a GPU instance (allocated accelerators reached over SSH), a secret (created or replaced) or a model artifact (weights from a hub, a URL or a path)')
  .argument('<kind>', 'instance | secret | artifact')
  .argument('<name>', 'instance name (DNS-1123, at most 50 characters), secret or artifact name (DNS-1123)')
  .option(...NAMESPACE_FLAG)
  .option('--queue <localqueue>', 'LocalQueue it enters (default: default)')
  .option('--instance-type <type>', 'InstanceType to get')
  .option('--accelerators <n>', 'whole accelerators (default 1; 0: CPU only)', intArg('--accelerators'))
  .option('--mig-profile <profile>', 'one MIG partition, e.g. 1g.10gb')
  .option('--slice-memory <mib>', 'a slice of one accelerator: its memory, MiB (with --slice-cores)', intArg('--slice-memory'))
  .option('--slice-memory-percent <p>', 'a slice of one accelerator: percent of its memory (with --slice-cores)', intArg('--slice-memory-percent'))
  .option('--slice-cores <p>', "the slice's percent of the accelerator's compute", intArg('--slice-cores'))
  .option('--shared-tokens <n>', 'time-sliced share of one accelerator, 1-10 tokens', intArg('--shared-tokens'))
  .option('--vcpu <n>', 'vCPUs (default 8 per whole accelerator, else 4)', intArg('--vcpu'))
  .option('--memory <mib>', 'memory, MiB (default 65536 per whole accelerator, else 32768)', intArg('--memory'))
  .option('--ssh-key <file>', 'OpenSSH public key file that may log in (repeatable; default ~/.ssh/id_ed25519.pub, else ~/.ssh/id_rsa.pub)', collect)
  .option('--command <cmd>', 'long-running command started with the instance (e.g. a notebook server)')
  .option('--image <image>', 'container image (kubernetes runtime only)')
  .option('--env <k=v>', 'environment variable of its sessions and command (repeatable)', collect)
  .option('--env-secret <var=secret/key>', 'environment variable from a key of a Secret of the namespace (repeatable; see `gpufleet create secret`)', collect)
  .option('--from-literal <key=value>', 'secret: a key and its value (repeatable)', collect)
  .option('--from-file <key=path>', "secret: a key and the file holding its value; PATH alone takes the file's name as key (repeatable)", collect)
  .option('--hf <org/name>', 'artifact: a Hugging Face hub repository')
  .option('--modelscope <org/name>', 'artifact: a ModelScope repository')
  .option('--url <url>', 'artifact: one file at an http(s) URL')
  .option('--path <dir>', 'artifact: a directory already on every node')
  .option('--endpoint <url>', 'artifact: the hub (a mirror, an air-gapped hub; default: the public one)')
  .option('--revision <rev>', 'artifact: branch, tag or commit (default main)')
  .option('--allow <glob>', 'artifact: only files matching (repeatable)', collect)
  .option('--ignore <glob>', 'artifact: leave out files matching (repeatable)', collect)
  .option('--expected-digest <sha256:hex>', 'artifact: the manifest digest it must resolve to')
  .option('--token-secret <secret/key>', 'artifact: the hub token, from a key of a Secret of the namespace')
  .option('--pin', 'artifact: never evict it from a node cache')
  .option('--prefetch <node>', 'artifact: fetch it to this node as soon as it is resolved ("*": every node; repeatable)', collect)
  .option('--wait', 'wait until it is Running (an instance) or resolved (an artifact), printing progress')
  .option('--timeout <s>', 'with --wait: give up after this many seconds', intArg('--timeout'), 300)
  .option(...SCHEDULER_FLAG)
  .option(...DELIVERY_FLAG)
  .action(async (kind: string, name: string, o) => {
    if (isArtifactKind(kind)) return runCreateArtifact(deliveryOf(o), name, o, { wait: Boolean(o.wait), timeoutS: o.timeout }, out);
    if (kindFor('create', kind, ['instances', 'secrets']) === 'secrets') return runCreateSecret(schedulerOf(o), name, o, out);
    await runCreateInstance(schedulerOf(o), name, o, { wait: Boolean(o.wait), timeoutS: o.timeout }, out);
  });

for (const verb of ['stop', 'start'] as const) {
  const stop = verb === 'stop';
  const cmd = program
    .command(verb)
    .description(stop ? 'stop a GPU instance: its processes end and its devices are released; the record stays' : 'start a stopped GPU instance again')
    .argument('<kind>', 'instance')
    .argument('<name>')
    .option(...NAMESPACE_FLAG);
  if (!stop) {
    cmd.option('--wait', 'wait until it is Running, printing progress').option('--timeout <s>', 'with --wait: give up after this many seconds', intArg('--timeout'), 300);
  }
  cmd.option(...SCHEDULER_FLAG).action(async (kind: string, name: string, o) => {
    kindFor(verb, kind, ['instances']);
    await runSetInstanceStopped(schedulerOf(o), o.namespace, name, stop, { wait: Boolean(o.wait), timeoutS: o.timeout ?? 300 }, out);
  });
}

program
  .command('ssh')
  .description('open an SSH session on a Running GPU instance (its host key is verified); after --, a command to run instead of a shell')
  .argument('<instance>')
  .argument('[command...]', 'command to run (put -- before it when it has options)')
  .option('-i, --identity <file>', 'private key to log in with (only this key is offered)')
  .option('-t, --tty', 'force a terminal, e.g. for an interactive command')
  .option(...NAMESPACE_FLAG)
  .option(...SCHEDULER_FLAG)
  .action(async (instance: string, command: string[], o) => {
    const code = await runSsh({ scheduler: schedulerOf(o), namespace: o.namespace, name: instance, identityFile: o.identity, tty: Boolean(o.tty), command });
    process.exit(code);
  });

program
  .command('logs')
  .description("print the log of a deployment's replica or of an instance")
  .argument('<name>', 'deployment or instance')
  .option('--replica <ordinal>', 'replica ordinal (deployments; default 0)', intArg('--replica'))
  .option('--role <role>', 'replica role (deployments with several roles)')
  .option('--all', "every replica's log, each line prefixed with [role/ordinal]")
  .option('-f, --follow', 'keep printing as the log grows')
  .option('--tail <n>', 'the last N lines (default: the node runtime\'s, 200)', intArg('--tail'))
  .option('--sshd', "an instance's sshd log instead of its command's")
  .option(...NAMESPACE_FLAG)
  .option(...SCHEDULER_FLAG)
  .action(async (name: string, o) => {
    await runLogs({
      scheduler: schedulerOf(o),
      namespace: o.namespace,
      name,
      replica: o.replica,
      role: o.role,
      all: Boolean(o.all),
      follow: Boolean(o.follow),
      tail: o.tail,
      sshd: Boolean(o.sshd),
    });
  });

program
  .command('describe')
  .description('show a workload (with why it is pending), a deployment (with its replicas), an instance or an artifact (with every node\'s copy) in detail')
  .argument('<kind>', 'workload | deployment | instance | artifact')
  .argument('<name>')
  .option(...NAMESPACE_FLAG)
  .option(...SCHEDULER_FLAG)
  .option(...DELIVERY_FLAG)
  .action(async (kind: string, name: string, o) => {
    if (isArtifactKind(kind)) return runDescribeArtifact(deliveryOf(o), o.namespace, name, out);
    const k = kindFor('describe', kind, ['workloads', 'deployments', 'instances']);
    const scheduler = schedulerOf(o);
    if (k === 'deployments') await runDescribeDeployment(scheduler, o.namespace, name, out);
    else if (k === 'instances') await runDescribeInstance(scheduler, o.namespace, name, out);
    else await runDescribeWorkload(scheduler, o.namespace, name, out);
  });

program
  .command('delete')
  .description('delete a workload, deployment, instance (its processes stop, its devices and quota are released), secret or artifact')
  .argument('<kind>', 'workload | deployment | instance | secret | artifact')
  .argument('<name>')
  .option(...NAMESPACE_FLAG)
  .option(...SCHEDULER_FLAG)
  .option(...DELIVERY_FLAG)
  .action(async (kind: string, name: string, o) => {
    if (isArtifactKind(kind)) return runDeleteArtifact(deliveryOf(o), o.namespace, name, out);
    const k = kindFor('delete', kind, ['workloads', 'deployments', 'instances', 'secrets']);
    const scheduler = schedulerOf(o);
    if (k === 'secrets') return runDeleteSecret(scheduler, o.namespace, name, out);
    if (k === 'deployments') return runDeleteDeployment(scheduler, o.namespace, name, out);
    if (k === 'instances') return runDeleteInstance(scheduler, o.namespace, name, out);
    const clients = connectClients(scheduler);
    try {
      await callUnary(clients.scheduling, clients.scheduling.deleteWorkload, { namespace: o.namespace, name });
      out(`workload/${o.namespace}/${name} deleted`);
    } finally {
      clients.close();
    }
  });

registerAccessCommands(program, { schedulerOf, home: () => resolveHome(program.opts().home), out });

const keys = program.command('keys').description("API keys of the inference router's OpenAI API: create, list, revoke");

keys
  .command('create')
  .description('create an API key; the full key is printed this once')
  .option('--name <name>', 'a label for people, e.g. "team-a ci"')
  .option('--models <list>', 'served model names it may call, comma-separated, or all', 'all')
  .option('--expires <when>', 'when it stops working: a duration (30d, 12h, 90m, 3600s) or an ISO date (2027-01-31, 2027-01-31T12:00:00Z); default never')
  .option('--rpm <n>', 'requests per minute, per model (default unlimited)', intArg('--rpm'))
  .option('--tpm <n>', 'prompt plus completion tokens per minute, per model (default unlimited)', intArg('--tpm'))
  .option(...ROUTER_FLAG)
  .action(async (o) => {
    await runKeysCreate(routerOf(o), { name: o.name, models: o.models, expires: o.expires, rpm: o.rpm, tpm: o.tpm }, out);
  });

keys
  .command('list')
  .description('list API keys, oldest first (revoked ones with --all)')
  .option('--all', 'include revoked keys')
  .option('-o, --output <format>', 'table | json | yaml', 'table')
  .option(...ROUTER_FLAG)
  .action(async (o) => {
    await runKeysList(routerOf(o), Boolean(o.all), parseFormat(o.output), out);
  });

keys
  .command('revoke')
  .description('revoke an API key: every router replica refuses it within a second')
  .argument('<id>', 'key id: the 12 characters after gpufleet_')
  .option(...ROUTER_FLAG)
  .action(async (id: string, o) => {
    await runKeysRevoke(routerOf(o), id, out);
  });

program
  .command('usage')
  .description("requests and tokens the inference router metered, per UTC day, key, deployment and model")
  .option('--key <id>', 'only this key (anonymous: requests served without a key)')
  .option('--days <n>', 'UTC days to show, today included', intArg('--days'), 1)
  .option('--model <model>', 'only this served model name')
  .option('-o, --output <format>', 'table | json | yaml', 'table')
  .option(...ROUTER_FLAG)
  .action(async (o) => {
    await runUsage(routerOf(o), { key: o.key, days: o.days, model: o.model }, parseFormat(o.output), out);
  });

program.parseAsync(process.argv).catch((err: Error & { details?: string }) => {
  process.stderr.write(`error: ${err.details ?? err.message}\n`);
  process.exit(1);
});
