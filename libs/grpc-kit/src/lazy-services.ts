// gRPC services whose implementation library is loaded on their first call. The standard health
// (grpc-health-check) and reflection (@grpc/reflection) services load @grpc/proto-loader and
// protobufjs and parse .proto files when they are constructed: about 2 MiB of heap and tens of
// milliseconds in every process, for calls that only probes and grpcurl-like tools make (the
// charts probe over HTTP). The methods are registered at once with their real paths and stream
// shapes; their codecs and handlers are the library's own, captured from its `addToServer` when
// the first call (or its first message) arrives.
import type {
  MethodDefinition,
  Server,
  ServiceDefinition,
  UntypedHandleCall,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';

/** One method as the library will register it. */
export interface LazyMethod {
  /** Fully-qualified service name, e.g. `grpc.health.v1.Health`. */
  readonly service: string;
  /** Method name as in the .proto file, e.g. `Check`. */
  readonly method: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
}

/** What a library's `addToServer` is given: only `addService` is called. */
export type ServiceRegistry = Pick<Server, 'addService'>;

type AnyMethod = MethodDefinition<unknown, unknown>;
type AnyHandler = (...args: unknown[]) => unknown;

/**
 * Registers `methods` on `server`; `register` is called once, on the first call of any of them,
 * and must add services covering every one of them to the registry it is given.
 */
export function addLazyServices(server: Server, methods: readonly LazyMethod[], register: (registry: ServiceRegistry) => void): void {
  let loaded: Map<string, { definition: AnyMethod; handler: AnyHandler }> | undefined;
  const load = (path: string) => {
    if (!loaded) {
      const captured = new Map<string, { definition: AnyMethod; handler: AnyHandler }>();
      register({
        addService(service: ServiceDefinition, implementation: UntypedServiceImplementation) {
          for (const [name, definition] of Object.entries(service) as [string, AnyMethod][]) {
            const handler = implementation[name] ?? implementation[definition.originalName ?? ''];
            if (handler) captured.set(definition.path, { definition, handler: handler as AnyHandler });
          }
        },
      });
      loaded = captured;
    }
    const entry = loaded.get(path);
    if (!entry) throw new Error(`the lazily loaded service registered no ${path}`);
    return entry;
  };

  const byService = new Map<string, { definition: Record<string, AnyMethod>; implementation: UntypedServiceImplementation }>();
  for (const m of methods) {
    const path = `/${m.service}/${m.method}`;
    const definition: AnyMethod = {
      path,
      requestStream: m.requestStream,
      responseStream: m.responseStream,
      requestSerialize: (value) => load(path).definition.requestSerialize(value),
      requestDeserialize: (bytes) => load(path).definition.requestDeserialize(bytes),
      responseSerialize: (value) => load(path).definition.responseSerialize(value),
      responseDeserialize: (bytes) => load(path).definition.responseDeserialize(bytes),
    };
    const handler = ((...args: unknown[]) => load(path).handler(...args)) as UntypedHandleCall;
    const entry = byService.get(m.service) ?? { definition: {}, implementation: {} };
    entry.definition[m.method] = definition;
    entry.implementation[m.method] = handler;
    byService.set(m.service, entry);
  }
  for (const { definition, implementation } of byService.values()) server.addService(definition, implementation);
}
