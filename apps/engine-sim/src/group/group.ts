/**
 * The engine group as engine-sim simulates it: what a multi-node engine does at its rendezvous
 * (torch.distributed's TCP store, Ray's GCS), reduced to what a cluster manager can observe.
 * The leader listens on the port of --dist-init-addr; every other rank connects and says who it
 * is; once every rank has joined the group is formed and the leader serves. After that, losing
 * any member is fatal to the others, as a lost rank is to NCCL: the leader exits when a worker
 * disconnects, a worker when the leader does. Messages are JSON lines.
 */
import { createServer, connect, type Server, type Socket } from 'net';

export interface GroupIdentity {
  readonly nnodes: number;
  readonly rank: number;
  /** Every rank must load the same model. */
  readonly model: string;
}

interface Hello {
  readonly hello: GroupIdentity;
}

/** A peer sends a line or two; a longer one is not a group member. */
const MAX_LINE_BYTES = 4096;

export function parseAddress(address: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(address);
  if (!match) throw new Error(`DIST_INIT_ADDR: expected host:port, got ${JSON.stringify(address)}`);
  return { host: match[1] ?? match[2], port: Number(match[3]) };
}

/** Reads JSON lines from a socket, at most MAX_LINE_BYTES each; a longer line or bad JSON ends the socket. */
function onLines(socket: Socket, handle: (message: Record<string, unknown>) => void): void {
  let buffered = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      try {
        handle(JSON.parse(line) as Record<string, unknown>);
      } catch {
        socket.destroy();
        return;
      }
    }
    if (buffered.length > MAX_LINE_BYTES) socket.destroy();
  });
}

function send(socket: Socket, message: unknown): void {
  socket.write(`${JSON.stringify(message)}\n`);
}

/** Why a hello cannot join, or undefined when it can. */
export function refusalOf(leader: GroupIdentity, hello: unknown, joined: ReadonlySet<number>): string | undefined {
  const h = (hello as Partial<Hello> | undefined)?.hello;
  if (!h || typeof h.rank !== 'number' || typeof h.nnodes !== 'number' || typeof h.model !== 'string') return 'expected {"hello":{"rank","nnodes","model"}}';
  if (h.nnodes !== leader.nnodes) return `the leader's group has ${leader.nnodes} nodes, this rank was started with --nnodes ${h.nnodes}`;
  if (!Number.isInteger(h.rank) || h.rank < 1 || h.rank >= leader.nnodes) return `rank ${h.rank} is not a worker rank of a ${leader.nnodes}-node group (1..${leader.nnodes - 1})`;
  if (h.model !== leader.model) return `the leader serves ${leader.model}, this rank loads ${h.model}`;
  if (joined.has(h.rank)) return `rank ${h.rank} has joined already`;
  return undefined;
}

export interface GroupLeaderOptions {
  readonly identity: GroupIdentity;
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;
  /** A formed group lost a member, or it did not form in time: the engine cannot go on. */
  readonly onFatal: (reason: string) => void;
  readonly onJoined?: (rank: number, joined: number) => void;
}

/** Rank 0: accepts the other ranks and knows whether the group is complete. */
export class GroupLeader {
  private readonly server: Server;
  private readonly members = new Map<number, Socket>();
  private formed = false;
  private timer: NodeJS.Timeout | undefined;
  private closing = false;

  constructor(private readonly options: GroupLeaderOptions) {
    this.server = createServer((socket) => this.accept(socket));
    // The group never holds more than its own ranks; a few extra for sockets still saying hello.
    this.server.maxConnections = options.identity.nnodes + 4;
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port, this.options.host, () => resolve());
    });
    this.timer = setTimeout(() => {
      if (!this.formed) this.options.onFatal(`the group did not form within ${this.options.timeoutMs / 1000} s: ${this.waiting()}`);
    }, this.options.timeoutMs);
    this.timer.unref();
    return (this.server.address() as { port: number }).port;
  }

  /** Undefined once every rank has joined; else what it waits for. */
  waiting(): string | undefined {
    if (this.formed) return undefined;
    const missing: number[] = [];
    for (let rank = 1; rank < this.options.identity.nnodes; rank++) if (!this.members.has(rank)) missing.push(rank);
    return `${this.members.size + 1} of ${this.options.identity.nnodes} ranks joined (waiting for rank ${missing.join(', ')})`;
  }

  close(): void {
    this.closing = true;
    if (this.timer) clearTimeout(this.timer);
    for (const socket of this.members.values()) socket.destroy();
    this.server.close();
  }

  private accept(socket: Socket): void {
    socket.setNoDelay(true);
    let rank: number | undefined;
    onLines(socket, (message) => {
      if (rank !== undefined) return;
      const refusal = refusalOf(this.options.identity, message, new Set(this.members.keys()));
      if (refusal) {
        send(socket, { refused: refusal });
        socket.end();
        return;
      }
      rank = (message as unknown as Hello).hello.rank;
      this.members.set(rank, socket);
      send(socket, { welcome: { joined: this.members.size + 1, nnodes: this.options.identity.nnodes } });
      this.options.onJoined?.(rank, this.members.size + 1);
      if (this.members.size + 1 === this.options.identity.nnodes) this.formed = true;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (rank === undefined || this.members.get(rank) !== socket) return;
      this.members.delete(rank);
      // Before the group formed a rank may come and go; after, its shard of the model is gone.
      if (this.formed && !this.closing) this.options.onFatal(`rank ${rank} left the group; its shard of the model is gone`);
    });
  }
}

export interface GroupWorkerOptions {
  readonly identity: GroupIdentity;
  readonly leader: { host: string; port: number };
  readonly timeoutMs: number;
  readonly retryMs?: number;
  readonly onJoined: (joined: number) => void;
  readonly onFatal: (reason: string) => void;
}

/** Ranks 1…n−1: connect to the leader (retrying until it listens), then live and die with it. */
export class GroupWorker {
  private socket: Socket | undefined;
  private closing = false;
  private readonly deadline: number;

  constructor(private readonly options: GroupWorkerOptions) {
    this.deadline = Date.now() + options.timeoutMs;
  }

  start(): void {
    const { host, port } = this.options.leader;
    const socket = connect({ host, port });
    this.socket = socket;
    let joined = false;
    socket.setNoDelay(true);
    socket.on('connect', () => send(socket, { hello: this.options.identity }));
    onLines(socket, (message) => {
      if (typeof message.refused === 'string') {
        this.options.onFatal(`the leader at ${host}:${port} refused rank ${this.options.identity.rank}: ${message.refused}`);
        return;
      }
      const welcome = message.welcome as { joined?: number } | undefined;
      if (welcome && !joined) {
        joined = true;
        this.options.onJoined(welcome.joined ?? 0);
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      if (this.closing) return;
      if (joined) {
        this.options.onFatal(`the leader at ${host}:${port} left the group`);
        return;
      }
      if (Date.now() >= this.deadline) {
        this.options.onFatal(`no leader at ${host}:${port} within ${this.options.timeoutMs / 1000} s`);
        return;
      }
      // Not unref'd: a worker serves nothing else, this timer is what keeps it waiting.
      setTimeout(() => {
        if (!this.closing) this.start();
      }, this.options.retryMs ?? 250);
    });
  }

  close(): void {
    this.closing = true;
    this.socket?.destroy();
  }
}
