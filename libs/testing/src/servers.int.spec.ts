import { connect, StringCodec } from 'nats';
import Redis from 'ioredis';
import { startNats, startRedis } from './servers';
import { requireBinary } from '@gpufleet/process-kit';

describe('test harness servers', () => {
  it('starts a JetStream nats-server on a free port and keeps streams across a restart', async () => {
    const nats = await startNats();
    try {
      let nc = await connect({ servers: nats.url });
      const jsm = await nc.jetstreamManager();
      await jsm.streams.add({ name: 'T', subjects: ['t.>'] });
      await nc.jetstream().publish('t.a', StringCodec().encode('x'));
      await nc.close();
      await nats.restart();
      nc = await connect({ servers: nats.url });
      const info = await (await nc.jetstreamManager()).streams.info('T');
      expect(info.state.messages).toBe(1);
      await nc.close();
    } finally {
      await nats.dispose();
    }
  });

  it('starts a redis-server on a free port', async () => {
    const redis = await startRedis();
    const client = new Redis(redis.url, { disableClientInfo: true, lazyConnect: true });
    try {
      await client.connect();
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
      await redis.dispose();
    }
  });

  it('names the install command when a binary is missing', () => {
    expect(() => requireBinary('no-such-server-gpufleet')).toThrow(/not installed; install it with/);
  });
});
