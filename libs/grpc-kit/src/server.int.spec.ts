import { dirname, join } from 'node:path';
import { credentials, loadPackageDefinition, type Client, type ClientDuplexStream, type ClientReadableStream, type GrpcObject, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { protoPath as healthProto } from 'grpc-health-check';
import { ServiceDefinitions, ServiceNames } from '@gpufleet/contracts';
import { GrpcServer } from './server';

type Status = { status: string };
type HealthClient = Client & {
  check(request: { service: string }, callback: (err: ServiceError | null, res?: Status) => void): void;
  watch(request: { service: string }): ClientReadableStream<Status>;
};

function healthClient(address: string): HealthClient {
  const pkg = loadPackageDefinition(loadSync(healthProto, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true }));
  const health = ((pkg.grpc as GrpcObject).health as GrpcObject).v1 as GrpcObject;
  const Ctor = health.Health as unknown as new (address: string, creds: ReturnType<typeof credentials.createInsecure>) => HealthClient;
  return new Ctor(address, credentials.createInsecure());
}

const check = (client: HealthClient, service: string) =>
  new Promise<string>((resolve, reject) => client.check({ service }, (err, res) => (err ? reject(err) : resolve(res?.status ?? ''))));

interface ReflectionResponse {
  listServicesResponse?: { service: { name: string }[] };
  fileDescriptorResponse?: { fileDescriptorProto: Buffer[] };
  errorResponse?: { errorCode: number };
}

type ReflectionClient = Client & { ServerReflectionInfo(): ClientDuplexStream<object, ReflectionResponse> };

/** A reflection client of `version` (v1, v1alpha) from @grpc/reflection's own .proto. */
function reflectionClient(version: 'v1' | 'v1alpha', address: string): ReflectionClient {
  const proto = join(dirname(require.resolve('@grpc/reflection')), `../proto/grpc/reflection/${version}/reflection.proto`);
  const pkg = loadPackageDefinition(loadSync(proto, { longs: String, enums: String, defaults: true, oneofs: true }));
  const reflection = ((pkg.grpc as GrpcObject).reflection as GrpcObject)[version] as GrpcObject;
  const Ctor = reflection.ServerReflection as unknown as new (address: string, creds: ReturnType<typeof credentials.createInsecure>) => ReflectionClient;
  return new Ctor(address, credentials.createInsecure());
}

/** One request on a fresh reflection stream, its one response. */
function ask(client: ReflectionClient, request: object): Promise<ReflectionResponse> {
  return new Promise((resolve, reject) => {
    const call = client.ServerReflectionInfo();
    call.once('data', (response: ReflectionResponse) => {
      call.end();
      resolve(response);
    });
    call.once('error', reject);
    call.write(request);
  });
}

describe('GrpcServer health (loaded on its first call)', () => {
  it('answers Check and Watch with the statuses set before and after it loaded', async () => {
    const server = new GrpcServer({
      host: '127.0.0.1',
      port: 0,
      services: [{ name: ServiceNames.capacity, definition: ServiceDefinitions.capacity, implementation: {} }],
      protoFiles: [],
    });
    const address = `127.0.0.1:${await server.start()}`;
    server.setServing(true); // before any health call: nothing is loaded yet
    const client = healthClient(address);
    try {
      expect(await check(client, '')).toBe('SERVING');
      expect(await check(client, ServiceNames.capacity)).toBe('SERVING');
      await expect(check(client, 'gpufleet.v1.NoSuchService')).rejects.toMatchObject({ code: 5 }); // NOT_FOUND

      const watch = client.watch({ service: '' });
      const seen: string[] = [];
      const notServing = new Promise<void>((resolve) =>
        watch.on('data', (s: Status) => {
          seen.push(s.status);
          if (s.status === 'SERVING') server.setServing(false);
          if (s.status === 'NOT_SERVING') resolve();
        }),
      );
      watch.on('error', () => undefined); // the cancel below
      await notServing;
      watch.cancel();
      expect(seen).toEqual(['SERVING', 'NOT_SERVING']);
      expect(await check(client, ServiceNames.capacity)).toBe('NOT_SERVING');
    } finally {
      client.close();
      await server.stop(100);
    }
  });
});

describe('GrpcServer reflection (loaded on its first call)', () => {
  let server: GrpcServer;
  let address: string;

  beforeAll(async () => {
    server = new GrpcServer({ host: '127.0.0.1', port: 0, services: [], protoFiles: ['gpufleet/v1/capacity.proto'] });
    address = `127.0.0.1:${await server.start()}`;
  });

  afterAll(() => server.stop(100));

  it.each(['v1', 'v1alpha'] as const)('lists the services of its .proto files and serves their descriptors over %s', async (version) => {
    const client = reflectionClient(version, address);
    try {
      const listed = await ask(client, { listServices: '' });
      expect(listed.listServicesResponse?.service.map((s) => s.name)).toContain('gpufleet.v1.CapacityService');

      const file = await ask(client, { fileContainingSymbol: 'gpufleet.v1.CapacityService' });
      expect(file.fileDescriptorResponse?.fileDescriptorProto.length).toBeGreaterThan(0);

      const unknown = await ask(client, { fileContainingSymbol: 'gpufleet.v1.NoSuchService' });
      expect(unknown.errorResponse?.errorCode).toBe(5); // NOT_FOUND
    } finally {
      client.close();
    }
  });
});
