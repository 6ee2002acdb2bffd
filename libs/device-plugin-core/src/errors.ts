/** Why a device-plugin call was refused; each maps to one gRPC status in the agent. */
export type DevicePluginErrorReason = 'UNKNOWN_DEVICE' | 'UNKNOWN_RESOURCE' | 'INVALID_ARGUMENT';

/** A refused device-plugin call: a machine-readable reason and a sentence a user can act on. */
export class DevicePluginError extends Error {
  override readonly name = 'DevicePluginError';

  constructor(
    readonly reason: DevicePluginErrorReason,
    sentence: string,
  ) {
    super(`${reason}: ${sentence}`);
  }
}
