import { callUnary } from '@gpufleet/grpc-kit';
import { putSecretRequestFromFlags, type SecretFlags } from '../secrets/secret-flags';
import { connectClients } from './get';

type Out = (text: string) => void;

/** `gpufleet create secret NAME -n NS --from-literal K=V … --from-file K=PATH …`: creates it, or replaces its data. */
export async function runCreateSecret(scheduler: string, name: string, flags: SecretFlags, out: Out): Promise<void> {
  const request = putSecretRequestFromFlags(name, flags);
  const clients = connectClients(scheduler, request.namespace);
  try {
    const { secret, created } = await callUnary(clients.secrets, clients.secrets.putSecret, request);
    // Key names only: the values went to the scheduler and are never echoed.
    out(`secret/${request.namespace}/${name} ${created ? 'created' : 'replaced'} (keys: ${(secret?.keys ?? []).join(', ')}); use it with --env-secret VAR=${name}/KEY`);
  } finally {
    clients.close();
  }
}

export async function runDeleteSecret(scheduler: string, namespace: string, name: string, out: Out): Promise<void> {
  const clients = connectClients(scheduler, namespace);
  try {
    await callUnary(clients.secrets, clients.secrets.deleteSecret, { namespace, name });
    out(`secret/${namespace}/${name} deleted (running pods keep the values they started with; pods that start later fail with SECRET_NOT_FOUND)`);
  } finally {
    clients.close();
  }
}
