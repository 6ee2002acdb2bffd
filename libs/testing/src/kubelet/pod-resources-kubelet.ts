// The kubelet's pod-resources API for tests: a PodResourcesLister on kubelet.sock in a temporary
// pod-resources dir, answering List, Get and GetAllocatableResources from what the test set.
// CPU, memory and DRA fields are served as set, nothing is derived.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { KUBELET_SOCKET, podresources } from '@gpufleet/contracts/kubelet';

export class PodResourcesKubelet {
  pods: podresources.PodResources[] = [];
  allocatable: podresources.ContainerDevices[] = [];
  private server: grpc.Server | undefined;

  private constructor(readonly dir: string) {}

  static async start(dir = mkdtempSync(join(tmpdir(), 'gpufleet-pod-resources-'))): Promise<PodResourcesKubelet> {
    const kubelet = new PodResourcesKubelet(dir);
    const server = new grpc.Server();
    const implementation: podresources.PodResourcesListerServer = {
      list: (_call, callback) => callback(null, { podResources: kubelet.pods }),
      getAllocatableResources: (_call, callback) => callback(null, { devices: kubelet.allocatable, cpuIds: [], memory: [] }),
      get: (call, callback) => {
        const pod = kubelet.pods.find((p) => p.name === call.request.podName && p.namespace === call.request.podNamespace);
        if (!pod) callback({ code: grpc.status.NOT_FOUND, details: `pod ${call.request.podNamespace}/${call.request.podName} not found` });
        else callback(null, { podResources: pod });
      },
    };
    server.addService(podresources.PodResourcesListerService, implementation);
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix:${join(dir, KUBELET_SOCKET)}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    kubelet.server = server;
    return kubelet;
  }

  get socketPath(): string {
    return join(this.dir, KUBELET_SOCKET);
  }

  /** Assigns devices to one container of a pod, as the kubelet records an Allocate. */
  assign(namespace: string, pod: string, container: string, resourceName: string, deviceIds: string[]): void {
    let p = this.pods.find((x) => x.name === pod && x.namespace === namespace);
    if (!p) this.pods.push((p = { name: pod, namespace, containers: [], cpuIds: [], memory: [] }));
    let c = p.containers.find((x) => x.name === container);
    if (!c) p.containers.push((c = { name: container, devices: [], cpuIds: [], memory: [], dynamicResources: [] }));
    c.devices.push({ resourceName, deviceIds, topology: undefined });
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    rmSync(this.dir, { recursive: true, force: true });
  }
}
