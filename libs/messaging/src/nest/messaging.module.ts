import { DynamicModule, Global, Inject, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { NatsConnection } from 'nats';
import { LOGGER, type Logger } from '@gpufleet/observability';
import { connectNats, NatsSettings } from '../connection';
import { EventBus, ensureEventsStream } from '../events';

export const NATS_CONNECTION = Symbol('NATS_CONNECTION');

export interface MessagingModuleOptions {
  nats: NatsSettings;
  cluster: string;
  /** Create/update the GPUFLEET_EVENTS stream at start. */
  ensureStream?: boolean;
}

/**
 * Drains the connection on shutdown so buffered publishes reach the server (CONVENTIONS #7).
 * Logs connection changes through the service's LOGGER (ObservabilityModule).
 */
@Injectable()
class NatsLifecycle implements OnApplicationShutdown {
  constructor(
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    void this.watchStatus();
  }

  private async watchStatus(): Promise<void> {
    for await (const s of this.nc.status()) {
      const refused = s.permissionContext;
      if (refused) {
        // Creating a stream is refused to every identity but a bucket's owner, and tried only
        // while the owner has not created it yet (KvStore.open waits): expected at start-up.
        const expected = refused.operation === 'publish' && refused.subject.startsWith('$JS.API.STREAM.CREATE.');
        this.logger[expected ? 'debug' : 'warn'](
          { nats: 'permission', operation: refused.operation, subject: refused.subject },
          `nats refused ${refused.operation} to ${refused.subject}: this identity has no permission for it (docs/security.md)`,
        );
      } else if (s.type === 'disconnect' || s.type === 'reconnect' || s.type === 'error') {
        this.logger.info({ nats: s.type, server: String(s.data) }, `nats ${s.type}: ${String(s.data)}`);
      }
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.nc.isClosed()) await this.nc.drain().catch(() => this.nc.close());
  }
}

/** A /readyz check that fails while the NATS connection is down, draining or closed. */
export function natsReadiness(nc: NatsConnection): { name: string; check: () => void } {
  let connected = true;
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') connected = false;
      else if (s.type === 'reconnect') connected = true;
    }
  })();
  return {
    name: 'nats',
    check: () => {
      if (nc.isClosed()) throw new Error('connection closed');
      if (nc.isDraining()) throw new Error('draining');
      if (!connected) throw new Error('disconnected, reconnecting');
    },
  };
}

@Global()
@Module({})
export class MessagingModule {
  static forRoot(options: MessagingModuleOptions): DynamicModule {
    return {
      module: MessagingModule,
      providers: [
        {
          provide: NATS_CONNECTION,
          useFactory: async () => {
            const nc = await connectNats(options.nats);
            if (options.ensureStream !== false) await ensureEventsStream(await nc.jetstreamManager());
            return nc;
          },
        },
        {
          provide: EventBus,
          inject: [NATS_CONNECTION],
          useFactory: (nc: NatsConnection) => new EventBus(nc, options.cluster),
        },
        NatsLifecycle,
      ],
      exports: [NATS_CONNECTION, EventBus],
    };
  }
}
