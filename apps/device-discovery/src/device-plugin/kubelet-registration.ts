import * as grpc from '@grpc/grpc-js';
import { DEVICE_PLUGIN_API_VERSION, deviceplugin } from '@gpufleet/contracts/kubelet';

/** The RegisterRequest the kubelet expects of a plugin serving `resource` on `socketName` (relative to the device-plugins dir). */
export function registerRequest(resource: string, socketName: string): deviceplugin.RegisterRequest {
  return {
    version: DEVICE_PLUGIN_API_VERSION,
    endpoint: socketName,
    resourceName: resource,
    options: { preStartRequired: false, getPreferredAllocationAvailable: true },
  };
}

/** Registration.Register on the kubelet's socket; rejects with the kubelet's refusal or when it does not answer in time. */
export async function registerWithKubelet(kubeletSocket: string, request: deviceplugin.RegisterRequest, timeoutMs = 5000): Promise<void> {
  const client = new deviceplugin.RegistrationClient(`unix:${kubeletSocket}`, grpc.credentials.createInsecure());
  try {
    await new Promise<void>((resolve, reject) =>
      client.register(request, new grpc.Metadata(), { deadline: Date.now() + timeoutMs }, (err) => (err ? reject(err) : resolve())),
    );
  } finally {
    client.close();
  }
}
