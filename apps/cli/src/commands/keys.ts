import { status, type ServiceError } from '@grpc/grpc-js';
import { ApiKey, KeyServiceClient } from '@gpufleet/contracts';
import { callUnary } from '@gpufleet/grpc-kit';
import { adminMetadata, cliChannelCredentials, cliClientOptions } from '../admin';
import { KEY_FIELD_FLAGS, KeyCreateFlags, UsageFlags, checkKeyId, createKeyRequestFromFlags, usageRequestFromFlags } from '../keys/key-flags';
import { OutputFormat, renderStructured, renderTable } from '../output/format';
import { createdKeyLines, keyColumns, usageColumns, usageRowJson } from '../output/keys';

type Out = (text: string) => void;

/**
 * Runs `call` against the router's KeyService at `address` with the CLI's credential (KeyService
 * needs the admin role). A router that does not answer, or a request field it refuses, is
 * reported in terms of the CLI's flags.
 */
async function withKeyService<T>(address: string, call: (client: KeyServiceClient) => Promise<T>): Promise<T> {
  const client = new KeyServiceClient(address, cliChannelCredentials(), cliClientOptions());
  try {
    return await call(client);
  } catch (err) {
    throw explain(err as ServiceError, address);
  } finally {
    client.close();
  }
}

function explain(err: ServiceError, address: string): Error {
  if (err.code === status.UNAVAILABLE && !err.details?.startsWith('UNAVAILABLE:')) {
    const why = (err.details ?? '').replace(/\.? Resolution note:.*$/, '');
    return new Error(`UNAVAILABLE: the router's KeyService at ${address} does not answer (${why}); is the stack up (\`gpufleet up\`)? Or pass --router HOST:PORT`);
  }
  if (err.code === status.INVALID_ARGUMENT) {
    // "INVALID_ARGUMENT: days: expected …" becomes "INVALID_ARGUMENT: --days: expected …".
    const field = String(err.metadata?.get('gpufleet-field')[0] ?? '');
    const flag = KEY_FIELD_FLAGS[field.replace(/\[\d+\]$/, '')];
    const prefix = `INVALID_ARGUMENT: ${field}: `;
    if (flag && err.details?.startsWith(prefix)) return new Error(`INVALID_ARGUMENT: ${flag}: ${err.details.slice(prefix.length)}`);
    if (flag) return new Error(`${flag}: ${err.details}`);
  }
  return err;
}

/** `gpufleet keys create`: the full key is printed this once. */
export async function runKeysCreate(address: string, flags: KeyCreateFlags, out: Out): Promise<void> {
  const request = createKeyRequestFromFlags(flags, new Date());
  const created = await withKeyService(address, (c) => callUnary(c, c.createKey, request, { metadata: adminMetadata() }));
  for (const line of createdKeyLines(created.key ?? ApiKey.fromPartial({}), created.fullKey)) out(line);
}

/** `gpufleet keys list [--all]`. */
export async function runKeysList(address: string, includeRevoked: boolean, format: OutputFormat, out: Out): Promise<void> {
  const { keys } = await withKeyService(address, (c) => callUnary(c, c.listKeys, { includeRevoked }, { metadata: adminMetadata() }));
  if (format === 'json' || format === 'yaml') return out(renderStructured(keys.map((k) => ApiKey.toJSON(k)), format, false));
  if (keys.length === 0) return out(`No keys found${includeRevoked ? '' : ' (revoked ones are listed with --all)'}; create one with \`gpufleet keys create\`.`);
  out(renderTable(keys, keyColumns, format === 'wide'));
}

/** `gpufleet keys revoke ID`: idempotent, says when the key was revoked already. */
export async function runKeysRevoke(address: string, id: string, out: Out): Promise<void> {
  checkKeyId(id, 'ID');
  await withKeyService(address, async (c) => {
    const { key: before } = await callUnary(c, c.getKey, { id }, { metadata: adminMetadata() }).catch((err: ServiceError) => {
      throw err.code === status.NOT_FOUND ? new Error(`NOT_FOUND: there is no API key ${id} (list them with \`gpufleet keys list --all\`)`) : err;
    });
    if (before?.revoked) return out(`key/${id} was already revoked${before.revokedAt ? ` at ${before.revokedAt.toISOString()}` : ''}`);
    await callUnary(c, c.revokeKey, { id }, { metadata: adminMetadata() });
    out(`key/${id} revoked: every router replica refuses it within a second`);
  });
}

/** `gpufleet usage`: metered requests and tokens per day, key, deployment and model. */
export async function runUsage(address: string, flags: UsageFlags, format: OutputFormat, out: Out): Promise<void> {
  const request = usageRequestFromFlags(flags);
  const { rows } = await withKeyService(address, (c) => callUnary(c, c.getUsage, request, { metadata: adminMetadata() }));
  if (format === 'json' || format === 'yaml') return out(renderStructured(rows.map(usageRowJson), format, false));
  if (rows.length === 0) {
    const of = [request.keyId && `key ${request.keyId}`, request.model && `model ${request.model}`].filter(Boolean).join(', ');
    return out(`No usage recorded${of ? ` for ${of}` : ''} ${request.days === 1 ? 'today (UTC)' : `in the last ${request.days} days (UTC)`}.`);
  }
  out(renderTable(rows, usageColumns, false));
}
