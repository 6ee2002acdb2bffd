import { GPUInstanceSpec } from '@gpufleet/contracts';
import { checkDnsLabel, parseEnvPairs, parseSecretRefs } from '../flags';
import { PodShapeFlags, podShapeFromFlags } from '../pod-shape';

/** GPUInstanceSpec.name: a DNS-1123 label of at most this many characters. */
export const INSTANCE_NAME_MAX = 50;

/** The flags of `gpufleet create instance NAME`, as commander hands them over. */
export interface InstanceFlags extends PodShapeFlags {
  namespace?: string;
  queue?: string;
  command?: string;
  image?: string;
  env?: string[];
  /** `VAR=SECRET/KEY`, repeatable. */
  envSecret?: string[];
}

/**
 * `gpufleet create instance NAME [flags]` as the CreateInstance spec. The public keys come from
 * `sshPublicKeys` (the caller reads --ssh-key files), asked for after every other flag is checked.
 */
export function instanceSpecFromFlags(name: string, f: InstanceFlags, sshPublicKeys: string[] | (() => string[])): GPUInstanceSpec {
  checkDnsLabel(name, INSTANCE_NAME_MAX, 'NAME');
  const namespace = checkDnsLabel(f.namespace ?? 'default', 63, '--namespace');
  const localQueue = checkDnsLabel(f.queue ?? 'default', 63, '--queue');
  const shape = podShapeFromFlags(f);
  const env = parseEnvPairs(f.env, '--env');
  const envFromSecret = parseSecretRefs(f.envSecret, '--env-secret', env);
  const keys = typeof sshPublicKeys === 'function' ? sshPublicKeys() : sshPublicKeys;
  if (keys.length === 0) throw new Error('--ssh-key: an instance needs at least one SSH public key');
  return {
    name,
    namespace,
    localQueue,
    priority: 0,
    instanceType: shape.instanceType,
    resources: shape.resources,
    command: f.command ?? '',
    image: f.image ?? '',
    env,
    envFromSecret,
    sshPublicKeys: keys,
    stop: false,
    labels: {},
  };
}
