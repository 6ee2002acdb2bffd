import { Inject, Injectable } from '@nestjs/common';
import {
  CapacityServiceServer,
  GetInstanceTypeRequest,
  GetNodeRequest,
  InstanceType,
  ListInstanceTypesRequest,
  ListNodesRequest,
  ListPoolsRequest,
  WatchEventType,
  WatchInstanceTypesRequest,
  WatchInstanceTypesResponse,
} from '@gpufleet/contracts';
import { invalidArgument, notFound, paginate, serverStream, unary, unavailable, watchSender } from '@gpufleet/grpc-kit';
import { SCHEDULER_CONFIG, type SchedulerConfig } from '../config';
import { CapacityStateService } from './capacity-state.service';

const NAME = /^[a-z0-9]([-a-z0-9_.]{0,251}[a-z0-9])?$/i;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** A unique sort key: pool, unit size (accelerators, zero-padded), name. */
function instanceTypeOrder(t: InstanceType): string {
  return `${t.pool}/${String(t.unit?.accelerators ?? 0).padStart(10, '0')}/${t.name}`;
}

function requireName(field: string, value: string): void {
  if (!value) throw invalidArgument(field, 'a non-empty name');
  if (!NAME.test(value)) throw invalidArgument(field, "a name of letters, digits, '-', '_' or '.'", value);
}

/** CapacityService over gRPC: validates each request and reads the live capacity model. */
@Injectable()
export class CapacityGrpc {
  constructor(
    private readonly state: CapacityStateService,
    @Inject(SCHEDULER_CONFIG) private readonly config: SchedulerConfig,
  ) {}

  private get model() {
    if (!this.state.ready) throw unavailable('capacity is still loading node records from the store; retry shortly');
    return this.state.model;
  }

  private requirePool(pool: string): void {
    if (!pool) return;
    requireName('pool', pool);
    if (!this.model.listPools().some((p) => p.name === pool)) {
      const known = this.model.listPools().map((p) => p.name);
      throw notFound('pool', pool, known.length ? `pools: ${known.join(', ')}` : 'no pools yet');
    }
  }

  readonly implementation: CapacityServiceServer = {
    listNodes: unary((req: ListNodesRequest) => {
      this.requirePool(req.pool);
      for (const key of Object.keys(req.labelSelector)) {
        if (!LABEL_KEY.test(key)) throw invalidArgument(`labelSelector["${key}"]`, 'a label key like "nvidia.com/gpu.product"');
      }
      const selector = Object.keys(req.labelSelector).length ? req.labelSelector : undefined;
      const all = this.model.listNodes({ pool: req.pool || undefined, labelSelector: selector });
      const page = paginate(all, (n) => n.name, req.pageSize, req.pageToken);
      return { nodes: page.items.map((n) => this.state.shownNode(n)), nextPageToken: page.nextPageToken };
    }),
    getNode: unary((req: GetNodeRequest) => {
      requireName('name', req.name);
      const node = this.model.getNode(req.name);
      if (!node) throw notFound('node', req.name, 'list nodes with `gpufleet get nodes`');
      return { node: this.state.shownNode(node) };
    }),
    listPools: unary((req: ListPoolsRequest) => {
      const page = paginate(this.model.listPools(), (p) => p.name, req.pageSize, req.pageToken);
      return { pools: page.items, nextPageToken: page.nextPageToken };
    }),
    listInstanceTypes: unary((req: ListInstanceTypesRequest) => {
      this.requirePool(req.pool);
      // Pages keep the model's order: by pool, then unit size (name order would put 16x before 2x).
      const page = paginate(this.model.listInstanceTypes(req.pool || undefined), instanceTypeOrder, req.pageSize, req.pageToken);
      return { instanceTypes: page.items, nextPageToken: page.nextPageToken };
    }),
    getInstanceType: unary((req: GetInstanceTypeRequest) => {
      requireName('name', req.name);
      const instanceType = this.model.getInstanceType(req.name);
      if (!instanceType) throw notFound('InstanceType', req.name, 'list them with `gpufleet get instancetypes`');
      return { instanceType };
    }),
    watchInstanceTypes: serverStream<WatchInstanceTypesRequest, WatchInstanceTypesResponse>((req, call) => {
      this.requirePool(req.pool);
      const matches = (ev: WatchInstanceTypesResponse) => !req.pool || ev.instanceType?.pool === req.pool;
      const sender = watchSender(call, { maxBuffered: this.config.WATCH_MAX_BUFFERED, what: 'instance types', onClose: () => stop() });
      // Register before the snapshot so no change between the two is lost.
      const stop = this.state.listen((ev) => {
        if (matches(ev)) sender.send(ev);
      });
      if (req.initial) {
        const snapshot = this.model.listInstanceTypes(req.pool || undefined);
        sender.allowSnapshot(snapshot.length);
        for (const instanceType of snapshot) sender.send({ type: WatchEventType.WATCH_EVENT_TYPE_ADDED, instanceType });
      }
    }),
  };
}
