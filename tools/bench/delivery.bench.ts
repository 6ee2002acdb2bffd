// Model delivery benchmark (issue 15): the node cache against curl on the same files, and a fan-out
// to 8 node caches with and without peer sync.
//
//   npm run bench -- delivery [--gib 4 | --mib 4096] [--files 4] [--nodes 8] [--rounds 2]
//                             [--fanout-gib N | --fanout-mib N] [--streams 8] [--dir /tmp]
//
// BENCH_DELIVERY_MIB and BENCH_DELIVERY_FANOUT_MIB give the sizes when no flag does (a small run:
// BENCH_DELIVERY_MIB=256 npm run bench -- delivery).
//
// The origin is the hub simulator (libs/testing) in a child process, serving one repository of
// `--files` generated weight files (real bytes from a seed, hashed once and kept by the hub) plus
// a config.json, over loopback. The artifact is resolved with the real resolver
// (libs/model-artifacts), so both sides download through the hub's resolve URL and its 302 to
// the CDN route.
//
// Throughput, `--rounds` times, the two sides alternating, every file durable and verified:
//   curl:  every file at once, one `curl -sfL -o FILE URL && openssl dgst -sha256 -r FILE && sync
//          FILE` each (coreutils sha256sum here lacks SHA-NI and hashes at about 130 MiB/s, so
//          the fastest hasher on the machine is the baseline's), the digest compared with the
//          manifest's; also timed without the final sync.
//   cache: ModelCache.ensure() of the manifest into an empty root (8 ranged streams, hashing while
//          it writes, 16 MiB chunks made durable by group commits, rename into blobs/).
// Fan-out: `--nodes` caches, each with its peer server, in this process; every node ensure()s at
// once, as the service starts every node that prefetches an artifact when it is resolved. Each
// cache has a capacity of its own (twice the artifact: `capacityBytes`), as nodes have disks of
// their own; the log lists requests that failed and trees evicted, by node.
//   no peers: every node from the origin.
//   peers:    the nodes share one LocalSwarm (libs/model-cache): the facts the service keeps in
//             artifact-nodes records (who holds a file verified, who fetches it from the origin),
//             seen by every node at once. A file goes to the origin once; the others take it from
//             a peer once it is verified.
// Ends with throughput_ratio_vs_curl (cache MiB/s over curl's, durable) and
// origin_bytes_ratio_peer (origin bytes of the peer fan-out over the artifact's size).
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildManifest, resolveArtifact } from '@gpufleet/model-artifacts';
import { LocalSwarm, ModelCache, servePeerBlobs, type CacheEvent, type CacheManifest, type DeliveryResult, type PeerServer } from '@gpufleet/model-cache';
import { positiveIntOptions } from './support/options';
import { cpuSpent, procCpu, type ProcCpu } from './support/proc-cpu';
import type { HubOriginMessage, HubOriginRequest, HubOriginSpec } from './support/hub-origin';
import { REPO_ROOT } from './support/http-load';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const PEER_TOKEN = 'bench-delivery-peer-token-0123456789';
/** disk left free beyond what the bench writes, for everyone else on the machine */
const DISK_MARGIN = 4 * GiB;

interface Options {
  readonly artifactBytes: number;
  readonly fanoutBytes: number;
  readonly fanoutReduced: boolean;
  readonly files: number;
  readonly nodes: number;
  readonly rounds: number;
  readonly streams: number;
  readonly dir: string;
}

export async function run(args: string[]): Promise<void> {
  const o = options(args);
  const work = await fs.mkdtemp(join(o.dir, 'gpufleet-bench-delivery-'));
  // Ctrl-C must not leave tens of GiB behind
  const onSignal = (): void => {
    rmSync(work, { recursive: true, force: true });
    process.exit(130);
  };
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  const repos = [{ id: 'bench/delivery', bytes: o.artifactBytes }];
  if (o.fanoutBytes !== o.artifactBytes) repos.push({ id: 'bench/delivery-fanout', bytes: o.fanoutBytes });
  const t0 = performance.now();
  const origin = await HubOrigin.start({ repos: repos.map((r) => ({ id: r.id, files: weightFiles(r.bytes, o.files) })) });
  try {
    console.log(`origin: hub simulator in process ${origin.pid} at ${origin.url}, ready in ${((performance.now() - t0) / 1000).toFixed(1)} s (hashes cached after the first run)`);
    const [artifact, fanoutArtifact] = await Promise.all(repos.map((r) => resolve(origin.url, r.id)));
    console.log(`artifact: ${artifact.files.length} files, ${mib(total(artifact))} MiB; work directory ${work} (${gib(freeBytes(o.dir))} GiB free)`);

    const { cacheMibS, curlMibS, curlNoSyncMibS } = await throughput(o, origin, artifact, work);
    const ratio = cacheMibS / curlMibS;
    console.log(`throughput: cache ${cacheMibS.toFixed(1)} MiB/s, curl ${curlMibS.toFixed(1)} MiB/s (${curlNoSyncMibS.toFixed(1)} without the final sync): ${ratio.toFixed(2)}x curl (${(cacheMibS / curlNoSyncMibS).toFixed(2)}x unsynced curl)`);

    const fan = fanoutArtifact ?? artifact;
    const fanRepo = repos[repos.length - 1].id;
    if (o.fanoutReduced) console.log(`fan-out: ${mib(total(fan))} MiB per node instead of ${mib(total(artifact))}: ${gib(freeBytes(o.dir))} GiB free is not enough for ${o.nodes} copies of the artifact`);
    const alone = await fanout(o, origin, fanRepo, fan, work, false);
    const peers = await fanout(o, origin, fanRepo, fan, work, true);
    const size = total(fan);
    console.log('\nfan-out      nodes   MiB/node   wall s   origin MiB   origin/artifact   peer MiB');
    for (const [name, f] of [['no peers', alone], ['peers', peers]] as const) {
      console.log(`${name.padEnd(13)}${String(o.nodes).padStart(5)}${mib(size).padStart(11)}${f.wallS.toFixed(1).padStart(9)}${mib(f.originBytes).padStart(13)}${(f.originBytes / size).toFixed(2).padStart(18)}${mib(f.peerBytes).padStart(11)}`);
    }
    for (const line of alone.log) console.log(`  no peers: ${line}`);
    for (const line of peers.log) console.log(`  peers: ${line}`);
    console.log('');
    console.log(`goal: throughput >= 0.9x curl (${ratio.toFixed(2)}x): ${ratio >= 0.9 ? 'met' : 'not met'}`);
    console.log(`goal: origin bytes <= 1.2x the artifact for ${o.nodes} nodes with peers (${(peers.originBytes / size).toFixed(2)}x): ${peers.originBytes <= 1.2 * size ? 'met' : 'not met'}`);
    console.log(`throughput_mib_s_cache: ${cacheMibS.toFixed(1)}`);
    console.log(`throughput_mib_s_curl: ${curlMibS.toFixed(1)}`);
    console.log(`fanout_wall_s_no_peers: ${alone.wallS.toFixed(1)}`);
    console.log(`fanout_wall_s_peers: ${peers.wallS.toFixed(1)}`);
    console.log(`origin_bytes_ratio_no_peers: ${(alone.originBytes / size).toFixed(2)}`);
    console.log(`throughput_ratio_vs_curl: ${ratio.toFixed(2)}`);
    console.log(`origin_bytes_ratio_peer: ${(peers.originBytes / size).toFixed(2)}`);
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    origin.stop();
    await fs.rm(work, { recursive: true, force: true });
  }
}

function options(args: string[]): Options {
  // sizes are given in GiB or MiB; the option parser takes MiB
  const rest: string[] = [];
  const sizes: Record<string, number> = {};
  let dir = tmpdir();
  for (let i = 0; i < args.length; i += 2) {
    const [flag, value] = [args[i], args[i + 1]];
    if (flag === '--dir') {
      if (!value) throw new Error('--dir needs a directory');
      dir = value;
    } else if (flag === '--gib' || flag === '--fanout-gib') {
      const n = Number(value);
      if (!Number.isInteger(n) || n <= 0) throw new Error(`${flag} needs a positive integer, got ${value}`);
      sizes[flag === '--gib' ? 'mib' : 'fanoutMib'] = n * 1024;
    } else rest.push(flag, value);
  }
  const envMib = envSize('BENCH_DELIVERY_MIB');
  const envFanoutMib = envSize('BENCH_DELIVERY_FANOUT_MIB');
  const parsed = positiveIntOptions(rest, { mib: envMib ?? 4096, fanoutMib: envFanoutMib ?? 4096, files: 4, nodes: 8, rounds: 2, streams: 8 });
  const mibTotal = sizes.mib ?? parsed.mib;
  // without a fan-out size, the fan-out uses the artifact itself
  const asked = sizes.fanoutMib ?? (rest.includes('--fanout-mib') || envFanoutMib !== undefined ? parsed.fanoutMib : mibTotal);
  const artifactBytes = mibTotal * MiB;
  if (artifactBytes % parsed.files !== 0 || (artifactBytes / parsed.files) % 4096 !== 0) throw new Error(`--mib ${mibTotal} does not split into ${parsed.files} files of whole 4 KiB pages`);
  // the fan-out holds every node's copy at once; the throughput phase holds one copy at a time
  const free = freeBytes(dir);
  if (free < artifactBytes + DISK_MARGIN) throw new Error(`${dir} has ${gib(free)} GiB free; the throughput phase needs ${gib(artifactBytes + DISK_MARGIN)} (--mib, --dir)`);
  const fitsPerNode = Math.floor((free - DISK_MARGIN) / parsed.nodes / (parsed.files * 4096)) * parsed.files * 4096;
  const fanoutBytes = Math.min(asked * MiB, fitsPerNode);
  if (fanoutBytes < parsed.files * MiB) throw new Error(`${dir} has ${gib(free)} GiB free: not enough for ${parsed.nodes} node caches`);
  return { artifactBytes, fanoutBytes, fanoutReduced: fanoutBytes < asked * MiB, files: parsed.files, nodes: parsed.nodes, rounds: parsed.rounds, streams: parsed.streams, dir };
}

/** A size in MiB from the environment (flags win over it); undefined when unset. */
function envSize(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name}: expected a positive integer of MiB, got ${JSON.stringify(raw)}`);
  return n;
}

function weightFiles(bytes: number, files: number): HubOriginSpec['repos'][number]['files'] {
  const pad = (n: number) => String(n).padStart(5, '0');
  return Array.from({ length: files }, (_, i) => ({ path: `model-${pad(i + 1)}-of-${pad(files)}.safetensors`, seed: `bench-delivery-${bytes}-${i}`, size: bytes / files }));
}

/** The hub simulator in a child process, asked for its byte counters over IPC. */
class HubOrigin {
  private next = 0;
  private readonly waiting = new Map<number, (bytes: number) => void>();

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {
    child.on('message', (m: HubOriginMessage) => {
      if ('id' in m) {
        this.waiting.get(m.id)?.(m.bytes);
        this.waiting.delete(m.id);
      }
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  static async start(spec: HubOriginSpec): Promise<HubOrigin> {
    const child = fork(join(__dirname, 'support/hub-origin.ts'), [JSON.stringify(spec)], {
      cwd: REPO_ROOT,
      execArgv: ['-r', '@swc-node/register'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    try {
      const url = await new Promise<string>((ok, fail) => {
        // hashing 4 GiB the first time takes about 15 s here; 10 min bounds a wedged child
        const timer = setTimeout(() => fail(new Error('hub origin: not ready in 600 s')), 600_000);
        child.once('exit', (code, signal) => fail(new Error(`hub origin exited (${signal ?? code}) before it was ready`)));
        child.on('message', (m: HubOriginMessage) => {
          if ('kind' in m) {
            clearTimeout(timer);
            if (m.kind === 'ready') ok(m.url);
            else fail(new Error(`hub origin failed: ${m.message}`));
          }
        });
      });
      return new HubOrigin(child, url);
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
  }

  bytesServed(repo: string): Promise<number> {
    const id = this.next++;
    return new Promise((ok, fail) => {
      const timer = setTimeout(() => fail(new Error('hub origin: no answer to bytesServed in 10 s')), 10_000);
      this.waiting.set(id, (bytes) => {
        clearTimeout(timer);
        ok(bytes);
      });
      this.child.send({ id, kind: 'bytesServed', repo } satisfies HubOriginRequest);
    });
  }

  stop(): void {
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

async function resolve(hubUrl: string, repo: string): Promise<CacheManifest> {
  const outcome = await resolveArtifact({ source: { kind: 'huggingface', repo, endpoint: hubUrl }, allowPatterns: [], ignorePatterns: [] });
  if (!outcome.ok) throw new Error(`resolving ${repo}: ${outcome.message}`);
  const { resolution } = outcome;
  // the resolver's own manifest digest, checked against the files it lists
  if (buildManifest(resolution.files).digest !== resolution.manifest.digest) throw new Error(`resolving ${repo}: manifest digest does not match its files`);
  return {
    digest: resolution.manifest.digest,
    files: resolution.files.map((f) => {
      const [alg, hex] = f.digest.split(':') as ['sha256' | 'gitsha1', string];
      return { path: f.path, size: f.size, digest: { alg, hex }, sources: [{ url: f.download.url, headers: f.download.headers }] };
    }),
  };
}

async function throughput(o: Options, origin: HubOrigin, m: CacheManifest, work: string): Promise<{ cacheMibS: number; curlMibS: number; curlNoSyncMibS: number }> {
  const bytes = total(m);
  let cacheS = 0;
  let curlS = 0;
  let curlNoSyncS = 0;
  // CPU seconds per GiB of the downloader (this process for the cache; curl, openssl and sync for
  // curl) and of the origin: on a machine of few cores, a side that needs more CPU per byte than
  // the cores left by the origin cannot keep up, however well it overlaps its work
  const gibs = bytes / (1024 * MiB);
  console.log('\nround   side    seconds   MiB/s   CPU s/GiB: downloader   origin');
  for (let r = 0; r < o.rounds; r++) {
    // alternate who goes first, so the machine's drift is shared
    for (const side of r % 2 === 0 ? (['curl', 'cache'] as const) : (['cache', 'curl'] as const)) {
      const dir = join(work, `throughput-${side}-${r}`);
      await fs.mkdir(dir);
      await syncDisk();
      const cpu = (spent: number, originSpent: number): string => `${(spent / gibs).toFixed(2).padStart(25)}${(originSpent / gibs).toFixed(2).padStart(9)}`;
      const originCpu = (): ProcCpu | undefined => (origin.pid ? procCpu(origin.pid) : undefined);
      const [selfBefore, originBefore] = [procCpu('self'), originCpu()];
      if (side === 'curl') {
        const { seconds, noSyncSeconds } = await curlFiles(m, dir);
        const [spent, originSpent] = [cpuSpent(selfBefore, procCpu('self')), cpuSpent(originBefore, originCpu())];
        curlS += seconds;
        curlNoSyncS += noSyncSeconds;
        console.log(`${String(r + 1).padEnd(8)}curl ${seconds.toFixed(2).padStart(10)}${(bytes / MiB / seconds).toFixed(1).padStart(8)}${cpu(spent.children, originSpent.self)}   (${(bytes / MiB / noSyncSeconds).toFixed(1)} MiB/s before the sync)`);
      } else {
        const cache = await ModelCache.open({ root: dir, streams: o.streams });
        const t = performance.now();
        const elu = performance.eventLoopUtilization();
        const result = await cache.ensure(m);
        const seconds = (performance.now() - t) / 1000;
        // the share of the time the event loop was busy: near 1, the one thread is the limit
        const busy = performance.eventLoopUtilization(elu).utilization;
        const [spent, originSpent] = [cpuSpent(selfBefore, procCpu('self')), cpuSpent(originBefore, originCpu())];
        await cache.close();
        expectReady(result, 'throughput');
        if (result.originBytes !== bytes) throw new Error(`throughput: the cache fetched ${result.originBytes} bytes from the origin for a ${bytes}-byte artifact`);
        cacheS += seconds;
        console.log(`${String(r + 1).padEnd(8)}cache${seconds.toFixed(2).padStart(10)}${(bytes / MiB / seconds).toFixed(1).padStart(8)}${cpu(spent.self, originSpent.self)}   (${(spent.system / gibs).toFixed(2)} of it in the kernel; event loop busy ${(busy * 100).toFixed(0)} %)`);
      }
      await fs.rm(dir, { recursive: true, force: true });
    }
  }
  return { cacheMibS: (bytes * o.rounds) / MiB / cacheS, curlMibS: (bytes * o.rounds) / MiB / curlS, curlNoSyncMibS: (bytes * o.rounds) / MiB / curlNoSyncS };
}

/** Every file at once: curl to disk, hash, compare, fsync; seconds to the last durable file and to the last verified one. */
async function curlFiles(m: CacheManifest, dir: string): Promise<{ seconds: number; noSyncSeconds: number }> {
  const t = performance.now();
  let verified = 0;
  await Promise.all(
    m.files.map(async (f, i) => {
      const out = join(dir, `f${i}`);
      await exec('curl', ['-sfL', '--max-redirs', '5', '-o', out, f.sources[0].url]);
      const digest = f.digest.alg === 'sha256' ? (await exec('openssl', ['dgst', '-sha256', '-r', out])).split(' ')[0] : gitBlobSha1(await fs.readFile(out));
      if (digest !== f.digest.hex) throw new Error(`curl: ${f.path} hashed to ${digest}, the manifest says ${f.digest.hex}`);
      verified = Math.max(verified, performance.now());
      await exec('sync', [out]);
    }),
  );
  return { seconds: (performance.now() - t) / 1000, noSyncSeconds: (verified - t) / 1000 };
}

function gitBlobSha1(b: Buffer): string {
  // small files kept in git (config.json): their manifest digest is the git blob id
  return createHash('sha1').update(`blob ${b.length}\0`).update(b).digest('hex');
}

interface FanoutResult {
  readonly wallS: number;
  readonly originBytes: number;
  readonly peerBytes: number;
  readonly log: string[];
}

async function fanout(o: Options, origin: HubOrigin, repo: string, m: CacheManifest, work: string, withPeers: boolean): Promise<FanoutResult> {
  const base = join(work, withPeers ? 'fanout-peers' : 'fanout-alone');
  await fs.mkdir(base);
  await syncDisk();
  const swarm = new LocalSwarm();
  // Each node gets a disk of its own, as on a cluster: twice the artifact. Measured on the shared
  // filesystem, 8 copies could push it past the high watermark, and a node that finished first
  // would evict its (unused) tree while its peers still read from it: 404, and the chunk goes to
  // the origin. That was the cache doing its job on a full disk, not peer sync failing.
  const capacityBytes = 2 * total(m);
  const nodes: Array<{ name: string; cache: ModelCache; server?: PeerServer }> = [];
  const log: string[] = [];
  // sources that failed, by node: a peer that failed sends the chunk to the next source (the origin)
  const failures = new Map<string, { count: number; first: string }>();
  const onEvent = (name: string) => (e: CacheEvent) => {
    if (e.type === 'TreeEvicted') log.push(`${name}: evicted tree ${e.digest.slice(0, 19)}`);
    if (e.type !== 'SourceFailed') return;
    const f = failures.get(name) ?? { count: 0, first: `${e.peer ? 'peer' : 'origin'} ${e.source}: ${e.error} (retry in ${e.retryInMs} ms)` };
    f.count++;
    failures.set(name, f);
  };
  try {
    for (let i = 0; i < o.nodes; i++) {
      const name = `node-${i + 1}`;
      if (!withPeers) {
        nodes.push({ name, cache: await ModelCache.open({ root: join(base, name), streams: o.streams, capacityBytes, onEvent: onEvent(name) }) });
        continue;
      }
      // the peer server reads the cache, the cache's directory names the server: the cache is reached through `opened`
      const opened: { cache?: ModelCache } = {};
      const server = await servePeerBlobs({ cache: { verifiedBlob: (d) => opened.cache?.verifiedBlob(d) }, token: PEER_TOKEN });
      const cache = (opened.cache = await ModelCache.open({ root: join(base, name), streams: o.streams, peers: swarm.join(name, { url: server.url, token: PEER_TOKEN }), capacityBytes, onEvent: onEvent(name) }));
      nodes.push({ name, cache, server });
    }
    const before = await origin.bytesServed(repo);
    const t = performance.now();
    const at = () => ((performance.now() - t) / 1000).toFixed(1);
    const results = await Promise.all(
      nodes.map(async (n) => {
        const r = await n.cache.ensure(m);
        if (r.state === 'Ready') log.push(`${at()} s: ${n.name} Ready (origin ${mib(r.originBytes)} MiB, peers ${mib(r.peerBytes)} MiB)`);
        return r;
      }),
    );
    const wallS = (performance.now() - t) / 1000;
    for (const [name, f] of failures) log.push(`${name}: ${f.count} failed requests; the first: ${f.first}`);
    for (const r of results) expectReady(r, withPeers ? 'fan-out with peers' : 'fan-out without peers');
    const originBytes = (await origin.bytesServed(repo)) - before;
    const peerBytes = results.reduce((n, r) => n + r.peerBytes, 0);
    // the origin's own counter, not the caches' word for it
    const counted = results.reduce((n, r) => n + r.originBytes, 0);
    if (counted !== originBytes) log.push(`note: the caches counted ${counted} origin bytes, the origin sent ${originBytes}`);
    return { wallS, originBytes, peerBytes, log };
  } finally {
    for (const n of nodes) {
      await n.server?.close();
      await n.cache.close();
    }
    await fs.rm(base, { recursive: true, force: true });
  }
}

function expectReady(r: DeliveryResult, what: string): void {
  if (r.state !== 'Ready') throw new Error(`${what}: ${r.reason}: ${r.message}`);
}

function exec(command: string, args: string[]): Promise<string> {
  return new Promise((ok, fail) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-4096)));
    child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4096)));
    child.on('error', (e) => fail(new Error(`${command}: ${e.message}`)));
    // 'close', not 'exit': only then has stdout been read to its end
    child.on('close', (code, signal) => (code === 0 ? ok(out) : fail(new Error(`${command} ${args.join(' ')}: exit ${signal ?? code}: ${err.trim()}`))));
  });
}

/** Writes of an earlier phase must not be flushed on the next one's time. */
function syncDisk(): Promise<void> {
  return exec('sync', []).then(() => undefined);
}

function total(m: CacheManifest): number {
  return m.files.reduce((n, f) => n + f.size, 0);
}

function freeBytes(dir: string): number {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

const mib = (b: number): string => (b / MiB).toFixed(0);
const gib = (b: number): string => (b / GiB).toFixed(1);
