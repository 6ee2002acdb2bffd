import { randomUUID } from 'crypto';
import { Inject, Injectable } from '@nestjs/common';
import { status as GrpcStatus } from '@grpc/grpc-js';
import {
  ArtifactPhase,
  ModelArtifact,
  parseStoreKey,
  storeKey,
  workloadKey,
  type ModelDeliveryServiceServer,
  type WatchArtifactsResponse,
} from '@gpufleet/contracts';
import { GrpcError, invalidArgument, notFound, paginate, serverStream, unary, watchSender } from '@gpufleet/grpc-kit';
import { DELETE_ENTRY, RevisionConflictError } from '@gpufleet/messaging';
import { describeProblems, isDns1123Label } from '@gpufleet/scheduling-core';
import { DELIVERY_CONFIG, DeliveryConfig } from '../config';
import { ArtifactsStore, parseNodeCopyKey } from './artifacts.store';
import { manifestKey } from './manifests';
import { ResolutionService } from './resolution.service';
import { artifactSpecProblems } from './spec';

const HINT = 'list them with `gpufleet get artifacts`';

function requireLabel(field: string, value: string): void {
  if (!isDns1123Label(value)) throw invalidArgument(field, 'a DNS-1123 label (lower-case letters, digits and "-", at most 63)', value);
}

/** A compare-and-set write that kept losing: the caller retries, nothing was half-written. */
function aborted(id: string): (err: unknown) => never {
  return (err: unknown) => {
    if (err instanceof RevisionConflictError) throw new GrpcError(GrpcStatus.ABORTED, 'ABORTED', `artifact "${id}" kept changing while being written; retry`);
    throw err;
  };
}

/**
 * ModelDeliveryService: ModelArtifacts in the artifacts bucket. Create writes the record with a
 * RESOLVING status and the leader's resolution loop takes it from there; the spec never changes
 * afterwards (another revision is another artifact), so a manifest never moves under a workload.
 */
@Injectable()
export class ArtifactsGrpc {
  constructor(
    private readonly store: ArtifactsStore,
    private readonly resolution: ResolutionService,
    @Inject(DELIVERY_CONFIG) private readonly config: DeliveryConfig,
  ) {}

  readonly implementation: ModelDeliveryServiceServer = {
    createArtifact: unary(async (req) => {
      const spec = req.spec;
      const problems = artifactSpecProblems(spec, { huggingface: this.config.HF_ENDPOINT, modelscope: this.config.MODELSCOPE_ENDPOINT });
      if (!spec || problems.length > 0) throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, 'INVALID_ARGUMENT', describeProblems(problems), problems[0]?.field);
      const id = workloadKey(spec.namespace, spec.name);
      const artifact: ModelArtifact = {
        spec,
        status: { phase: ArtifactPhase.ARTIFACT_PHASE_RESOLVING, commit: '', manifestDigest: '', fileCount: 0, totalBytes: 0, reason: '', message: 'waiting to be resolved', resolvedAt: undefined, checkedAt: undefined, nodes: [], model: undefined, estimateError: '', modelDigest: '' },
        createdAt: new Date(),
        uid: randomUUID(),
      };
      try {
        await this.store.artifacts.store.create(storeKey(id), artifact);
      } catch (err) {
        if (err instanceof RevisionConflictError) {
          throw new GrpcError(GrpcStatus.ALREADY_EXISTS, 'ALREADY_EXISTS', `artifact "${id}" already exists; its spec cannot change: create another name for another revision or file set, or delete it first`);
        }
        throw err;
      }
      this.resolution.kick();
      return { artifact: this.store.shown(artifact) };
    }),

    getArtifact: unary(async (req) => {
      requireLabel('namespace', req.namespace);
      requireLabel('name', req.name);
      const id = workloadKey(req.namespace, req.name);
      const found = this.store.artifacts.get(storeKey(id));
      if (!found) throw notFound('artifact', id, HINT);
      return { artifact: this.store.shown(found.value) };
    }),

    listArtifacts: unary(async (req) => {
      if (req.namespace) requireLabel('namespace', req.namespace);
      const all = [...this.store.artifacts.entries.values()].map((e) => e.value).filter((a) => a.spec && (!req.namespace || a.spec.namespace === req.namespace));
      const page = paginate(all, (a) => workloadKey(a.spec!.namespace, a.spec!.name), req.pageSize, req.pageToken);
      return { artifacts: page.items.map((a) => this.store.shown(a)), nextPageToken: page.nextPageToken };
    }),

    deleteArtifact: unary(async (req) => {
      requireLabel('namespace', req.namespace);
      requireLabel('name', req.name);
      const id = workloadKey(req.namespace, req.name);
      let deleted: ModelArtifact | undefined;
      await this.store.artifacts.store
        .modify(storeKey(id), (current) => {
          if (!current) throw notFound('artifact', id, HINT);
          deleted = current.value;
          return DELETE_ENTRY;
        })
        .catch(aborted(id));
      // Node caches see the record go and drop their copy once no pod uses it; the manifest
      // stays (another artifact may resolve to the same digest).
      return { artifact: this.store.shown(deleted!) };
    }),

    getManifest: unary(async (req) => {
      requireLabel('namespace', req.namespace);
      requireLabel('name', req.name);
      const id = workloadKey(req.namespace, req.name);
      const found = this.store.artifacts.get(storeKey(id));
      if (!found) throw notFound('artifact', id, HINT);
      const digest = found.value.status?.manifestDigest ?? '';
      if (!digest) {
        const why = found.value.status?.reason ? `${found.value.status.reason}: ${found.value.status.message}` : 'it is still being resolved';
        throw new GrpcError(GrpcStatus.FAILED_PRECONDITION, 'FAILED_PRECONDITION', `artifact "${id}" has no manifest yet: ${why}`);
      }
      const manifest = await this.store.manifests.get(manifestKey(digest));
      if (!manifest) throw new GrpcError(GrpcStatus.FAILED_PRECONDITION, 'FAILED_PRECONDITION', `artifact "${id}" names manifest ${digest}, which is not stored (yet); retry`);
      return { manifest: manifest.value };
    }),

    watchArtifacts: serverStream((req, call) => {
      if (req.namespace) requireLabel('namespace', req.namespace);
      const matches = (a: ModelArtifact) => !req.namespace || a.spec?.namespace === req.namespace;
      const mirror = this.store.artifacts;
      const known = new Set(mirror.entries.keys());
      const sender = watchSender(call, { maxBuffered: this.config.WATCH_MAX_BUFFERED, what: 'artifacts', onClose: () => stop() });
      const stopRecords = mirror.listen((key, change) => {
        const added = change.kind === 'put' && !known.has(key);
        if (change.kind === 'put') known.add(key);
        else known.delete(key);
        const msg: WatchArtifactsResponse =
          change.kind === 'put'
            ? { type: added ? 'ADDED' : 'MODIFIED', artifact: this.store.shown(change.value) }
            : { type: 'DELETED', artifact: ModelArtifact.fromPartial({ spec: parseStoreKey(key) ?? {} }) };
        if (msg.artifact && matches(msg.artifact)) sender.send(msg);
      });
      // A node's progress is a change of the artifact as shown (status.nodes): sent as MODIFIED.
      const stopCopies = this.store.nodeCopies.listen((key) => {
        const parsed = parseNodeCopyKey(key);
        const record = parsed && mirror.get(storeKey(parsed.artifact));
        if (record && matches(record.value)) sender.send({ type: 'MODIFIED', artifact: this.store.shown(record.value) });
      });
      const stop = () => {
        stopRecords();
        stopCopies();
      };
      const snapshot = [...mirror.entries.values()].filter(({ value }) => matches(value));
      sender.allowSnapshot(snapshot.length);
      for (const { value } of snapshot) sender.send({ type: 'ADDED', artifact: this.store.shown(value) });
    }),
  };
}
