import { credentials, Server, ServerCredentials, status, type ServerWritableStream } from '@grpc/grpc-js';
import { CapacityServiceClient, CapacityServiceService, InstanceType, WatchEventType, type WatchInstanceTypesRequest, type WatchInstanceTypesResponse } from '@gpufleet/contracts';
import { watchSender } from './watch-sender';

// A real grpc-js server and client: a watcher that stops reading is cut at the bound with
// RESOURCE_EXHAUSTED instead of the server buffering every change for it.
describe('watchSender', () => {
  let server: Server;
  let address: string;
  let publish: ((ev: WatchInstanceTypesResponse) => void) | undefined;
  let unsubscribed = 0;

  beforeAll(async () => {
    server = new Server();
    server.addService(CapacityServiceService, {
      watchInstanceTypes: (call: ServerWritableStream<WatchInstanceTypesRequest, WatchInstanceTypesResponse>) => {
        const sender = watchSender(call, { maxBuffered: 50, what: 'instance type', onClose: () => void unsubscribed++ });
        publish = (ev) => sender.send(ev);
      },
    } as never);
    const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))));
    address = `127.0.0.1:${port}`;
  });
  afterAll(() => server.forceShutdown());

  const event = (i: number): WatchInstanceTypesResponse => ({
    type: WatchEventType.WATCH_EVENT_TYPE_MODIFIED,
    instanceType: InstanceType.fromJSON({ name: `it-${i}-${'x'.repeat(2000)}` }),
  });

  it('ends the watch of a client that does not read, once the bound is passed, and unsubscribes once', async () => {
    const client = new CapacityServiceClient(address, credentials.createInsecure());
    const stream = client.watchInstanceTypes({ pool: '', initial: false });
    const ended = new Promise<{ code: number; details: string }>((resolve) => stream.on('error', (err: { code: number; details: string }) => resolve(err)));
    stream.pause(); // reads nothing from now on
    while (!publish) await new Promise((r) => setTimeout(r, 10));
    let sent = 0;
    for (; sent < 20_000 && unsubscribed === 0; sent++) {
      publish(event(sent));
      if (sent % 100 === 0) await new Promise((r) => setImmediate(r));
    }
    expect(unsubscribed).toBe(1);
    expect(sent).toBeLessThan(20_000);
    stream.resume();
    const err = await ended;
    expect(err.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(err.details).toMatch(/^RESOURCE_EXHAUSTED: this instance type watch fell \d+ messages behind \(WATCH_MAX_BUFFERED 50\)/);
    client.close();
  });
});
