// What a supervised process is, as data: its spec (command, environment, probe, restart policy)
// and the digest that says when it must be started anew, the environment that exposes its
// accelerators, and the status a supervisor reports. No processes, files or sockets here:
// @gpufleet/process-runtime runs these specs; @gpufleet/node-runtime-core plans them.
export * from './errors';
export * from './devices-env';
export * from './process-spec';
export * from './process-status';
export * from './sandbox-spec';
