import { Injectable } from '@nestjs/common';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { storeKey, workloadKey, type Secret, type SecretServiceServer } from '@gpufleet/contracts';
import { GrpcError, invalidArgument, notFound, paginate, unary } from '@gpufleet/grpc-kit';
import { DELETE_ENTRY, RevisionConflictError } from '@gpufleet/messaging';
import { secretMetadata, validateSecret } from '@gpufleet/deployments-core';
import { describeProblems, isDns1123Label } from '@gpufleet/scheduling-core';
import { SecretsStore } from './secrets.store';

const HINT = 'list them with `gpufleet get secrets`';

function requireLabel(field: string, value: string): void {
  if (!isDns1123Label(value)) throw invalidArgument(field, 'a DNS-1123 label (lower-case letters, digits and "-", at most 63)', value);
}

/** A compare-and-set write that kept losing: the caller retries, nothing was half-written. */
function aborted(id: string): (err: unknown) => never {
  return (err: unknown) => {
    if (err instanceof RevisionConflictError) throw new GrpcError(GrpcStatus.ABORTED, 'ABORTED', `secret "${id}" kept changing while being written; retry`);
    throw err;
  };
}

/**
 * SecretService: namespaced Secrets in the secrets bucket. Values go in through PutSecret and
 * come out only to node runtimes starting a pod that refers to them: every answer here is
 * metadata and key names (secretMetadata), and no value is logged or quoted in an error.
 */
@Injectable()
export class SecretsGrpc {
  constructor(private readonly secrets: SecretsStore) {}

  readonly implementation: SecretServiceServer = {
    putSecret: unary(async (req) => {
      const problems = validateSecret(req.namespace, req.name, req.data);
      if (problems.length > 0) throw new GrpcError(GrpcStatus.INVALID_ARGUMENT, 'INVALID_ARGUMENT', describeProblems(problems), problems[0].field);
      const id = workloadKey(req.namespace, req.name);
      const now = new Date();
      let created = false;
      const written = await this.secrets.store
        .modify(storeKey(id), (current) => {
          created = current === undefined;
          const before = current?.value;
          const next: Secret = {
            name: req.name,
            namespace: req.namespace,
            data: { ...req.data },
            createdAt: before?.createdAt ?? now,
            updatedAt: now,
            generation: (before?.generation ?? 0) + 1,
          };
          return next;
        })
        .catch(aborted(id));
      return { secret: secretMetadata(written!.value), created };
    }),

    getSecret: unary(async (req) => {
      requireLabel('namespace', req.namespace);
      requireLabel('name', req.name);
      const id = workloadKey(req.namespace, req.name);
      const found = await this.secrets.store.get(storeKey(id));
      if (!found) throw notFound('secret', id, HINT);
      return { secret: secretMetadata(found.value) };
    }),

    listSecrets: unary(async (req) => {
      if (req.namespace) requireLabel('namespace', req.namespace);
      const all = (await this.secrets.store.list()).map((e) => e.value).filter((s) => !req.namespace || s.namespace === req.namespace);
      const page = paginate(all, (s) => workloadKey(s.namespace, s.name), req.pageSize, req.pageToken);
      return { secrets: page.items.map(secretMetadata), nextPageToken: page.nextPageToken };
    }),

    deleteSecret: unary(async (req) => {
      requireLabel('namespace', req.namespace);
      requireLabel('name', req.name);
      const id = workloadKey(req.namespace, req.name);
      let deleted: Secret | undefined;
      await this.secrets.store
        .modify(storeKey(id), (current) => {
          if (!current) throw notFound('secret', id, HINT);
          deleted = current.value;
          return DELETE_ENTRY;
        })
        .catch(aborted(id));
      // Pods that run with its values keep them; a pod started after this fails with SECRET_NOT_FOUND.
      return { secret: secretMetadata(deleted!) };
    }),
  };
}
