import { connect } from 'nats';
import { startNats, type RunningServer } from '@gpufleet/testing';
import { natsConnectionOptions } from './connection';

// `tls://` is a promise of TLS: against a real nats-server that offers none, no connection.
describe('NATS connection options', () => {
  let nats: RunningServer;
  beforeAll(async () => {
    nats = await startNats();
  });
  afterAll(async () => nats?.dispose());

  it('insist on TLS for a tls:// URL, and follow the server for nats://', () => {
    expect(natsConnectionOptions({ servers: ['tls://n1:4222'], name: 'x' }).tls).toEqual({});
    expect(natsConnectionOptions({ servers: ['nats://n1:4222', 'TLS://n2:4222'], name: 'x' }).tls).toEqual({});
    expect(natsConnectionOptions({ servers: ['nats://n1:4222'], name: 'x' }).tls).toBeUndefined();
    expect(natsConnectionOptions({ servers: ['tls://n1:4222'], name: 'x', tls: { caFile: '/ca.pem' } }).tls).toEqual({ caFile: '/ca.pem', certFile: undefined, keyFile: undefined });
  });

  it('refuse to talk plain text to a server reached through tls://', async () => {
    const url = nats.url.replace(/^nats:/, 'tls:');
    const options = { ...natsConnectionOptions({ servers: [url], name: 'tls-check' }), waitOnFirstConnect: false, maxReconnectAttempts: 0 };
    await expect(connect(options)).rejects.toThrow(/tls/i);
    // The same server through nats:// is fine.
    const plain = await connect({ ...natsConnectionOptions({ servers: [nats.url], name: 'plain' }), waitOnFirstConnect: false });
    await plain.close();
  });
});
