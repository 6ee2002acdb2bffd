import { statSync } from 'node:fs';
import { join } from 'node:path';
import { KUBELET_SOCKET } from '@gpufleet/contracts/kubelet';
import { socketNameOf, type DevicePluginState } from '@gpufleet/device-plugin-core';
import type { Logger } from '@gpufleet/observability';
import { DevicePluginServer } from './device-plugin.server';
import { registerRequest, registerWithKubelet } from './kubelet-registration';

export interface RegistrationBackoff {
  /** First retry after a failed Register, ms; doubles per failure. */
  readonly initialMs: number;
  readonly maxMs: number;
  /** Failed attempts after which the plugin waits for kubelet.sock to be created again. */
  readonly maxAttempts: number;
}

export interface DevicePluginsOptions {
  /** The kubelet's device-plugins directory. */
  readonly dir: string;
  readonly state: DevicePluginState;
  readonly logger: Logger;
  /** How often kubelet.sock and the plugins' sockets are checked, ms. */
  readonly watchIntervalMs?: number;
  readonly backoff?: RegistrationBackoff;
  readonly registerTimeoutMs?: number;
}

const DEFAULT_BACKOFF: RegistrationBackoff = { initialMs: 500, maxMs: 30_000, maxAttempts: 10 };

interface Plugin {
  readonly server: DevicePluginServer;
  registered: boolean;
  failures: number;
  nextAttemptAt: number;
}

/**
 * The device plugins of the node: one DevicePluginServer per resource of the state, each
 * registered with the kubelet. The directory is watched: when the kubelet restarts it deletes
 * the plugins' sockets and creates kubelet.sock anew, and every plugin then serves a new socket
 * and registers again (with backoff, a bounded number of times per kubelet start).
 */
export class DevicePlugins {
  private readonly plugins = new Map<string, Plugin>();
  private readonly watchIntervalMs: number;
  private readonly backoff: RegistrationBackoff;
  private timer: NodeJS.Timeout | undefined;
  private kubeletIncarnation: string | undefined;
  private checking: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly options: DevicePluginsOptions) {
    this.watchIntervalMs = options.watchIntervalMs ?? 1000;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
  }

  get kubeletSocket(): string {
    return join(this.options.dir, KUBELET_SOCKET);
  }

  /** Resources served and whether the kubelet accepted their registration. */
  status(): { resource: string; socket: string; registered: boolean }[] {
    return [...this.plugins.values()].map((p) => ({ resource: p.server.resource, socket: p.server.socketPath, registered: p.registered }));
  }

  async start(): Promise<void> {
    await this.sync(new Set());
    await this.check();
    this.timer = setInterval(() => void this.check(), this.watchIntervalMs);
    this.timer.unref();
  }

  /**
   * After the state changed (`changed`: resources whose device list changed): new resources get
   * a server and a registration, resources gone are stopped, the rest stream their new list.
   */
  async sync(changed: ReadonlySet<string>): Promise<void> {
    const wanted = new Set(this.options.state.resources().map((r) => r.name));
    for (const [name, plugin] of this.plugins) {
      if (wanted.has(name)) continue;
      this.plugins.delete(name);
      await plugin.server.stop();
      this.options.logger.info({ resource: name }, `device plugin ${name} stopped: the node no longer offers it`);
    }
    for (const name of wanted) {
      const existing = this.plugins.get(name);
      if (existing) {
        if (changed.has(name)) existing.server.notify();
        continue;
      }
      const server = new DevicePluginServer(name, join(this.options.dir, socketNameOf(name)), this.options.state, this.options.logger);
      await server.start();
      this.plugins.set(name, { server, registered: false, failures: 0, nextAttemptAt: 0 });
    }
    if (this.timer) await this.check();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.checking;
    for (const plugin of this.plugins.values()) await plugin.server.stop();
    this.plugins.clear();
  }

  /** One look at the directory; concurrent calls share the pass in progress. */
  check(): Promise<void> {
    this.checking ??= this.checkOnce().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async checkOnce(): Promise<void> {
    if (this.stopped) return;
    const kubelet = statOrUndefined(this.kubeletSocket);
    if (!kubelet) {
      if (this.kubeletIncarnation !== undefined) this.options.logger.warn({ socket: this.kubeletSocket }, `kubelet socket ${this.kubeletSocket} is gone; registering again once it is back`);
      this.kubeletIncarnation = undefined;
      for (const plugin of this.plugins.values()) plugin.registered = false;
      return;
    }
    const incarnation = `${kubelet.ino}:${kubelet.ctimeMs}`;
    const kubeletRestarted = incarnation !== this.kubeletIncarnation;
    this.kubeletIncarnation = incarnation;
    for (const plugin of this.plugins.values()) {
      if (this.stopped) return;
      const socketGone = !statOrUndefined(plugin.server.socketPath);
      if (socketGone) {
        // The kubelet removes every plugin socket when it starts: serve a new one.
        await plugin.server.stop();
        await plugin.server.start();
      }
      if (kubeletRestarted || socketGone) {
        plugin.registered = false;
        plugin.failures = 0;
        plugin.nextAttemptAt = 0;
      }
      if (plugin.registered || plugin.failures >= this.backoff.maxAttempts || Date.now() < plugin.nextAttemptAt) continue;
      await this.register(plugin);
    }
  }

  private async register(plugin: Plugin): Promise<void> {
    const { resource, socketPath } = plugin.server;
    try {
      await registerWithKubelet(this.kubeletSocket, registerRequest(resource, socketNameOf(resource)), this.options.registerTimeoutMs);
      plugin.registered = true;
      plugin.failures = 0;
      this.options.logger.info({ resource, socket: socketPath }, `device plugin ${resource} registered with the kubelet`);
    } catch (err) {
      plugin.failures++;
      const delay = Math.min(this.backoff.initialMs * 2 ** (plugin.failures - 1), this.backoff.maxMs);
      plugin.nextAttemptAt = Date.now() + delay;
      const last = plugin.failures >= this.backoff.maxAttempts;
      this.options.logger[last ? 'error' : 'warn'](
        { resource, attempt: plugin.failures, err },
        last
          ? `device plugin ${resource} could not register with the kubelet after ${plugin.failures} attempts (${(err as Error).message}); it tries again when ${this.kubeletSocket} is created anew`
          : `device plugin ${resource} could not register with the kubelet (${(err as Error).message}); retrying in ${delay} ms`,
      );
    }
  }
}

function statOrUndefined(path: string): { ino: number; ctimeMs: number } | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}
