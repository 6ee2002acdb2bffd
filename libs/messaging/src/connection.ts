import { readFileSync } from 'fs';
import {
  Authenticator,
  ConnectionOptions,
  NatsConnection,
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  nkeys,
} from 'nats';
import { inboxPrefixOf } from './permissions';

/** How to reach NATS; built from the validated service configuration (NATS_* variables). */
export interface NatsSettings {
  servers: string[];
  /** Client name shown by the server's monitoring, e.g. "scheduler@host-1". */
  name: string;
  credsFile?: string;
  nkeySeedFile?: string;
  user?: string;
  password?: string;
  token?: string;
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
}

export function natsConnectionOptions(settings: NatsSettings): ConnectionOptions {
  if (settings.servers.length === 0) throw new Error('NATS_URL: expected at least one nats:// URL');
  const authenticators: Authenticator[] = [];
  if (settings.credsFile) authenticators.push(credsAuthenticator(readFileSync(settings.credsFile)));
  let inboxPrefix: string | undefined;
  if (settings.nkeySeedFile) {
    const seed = new TextEncoder().encode(readFileSync(settings.nkeySeedFile, 'utf8').trim());
    authenticators.push(nkeyAuthenticator(seed));
    // Replies come to an inbox named after the identity, so its permissions can allow its own
    // replies alone (natsPermissions) instead of every client's `_INBOX.>`.
    inboxPrefix = inboxPrefixOf(nkeyPublicKey(seed));
  }
  // `tls://` means TLS or no connection: without options nats.js would follow the server, and
  // talk plain text to a server (or a man in the middle) that does not offer TLS.
  const wantsTls = settings.servers.some((s) => /^tls:\/\//i.test(s));
  const files = settings.tls && (settings.tls.caFile || settings.tls.certFile);
  const tls = files
    ? { caFile: settings.tls!.caFile, certFile: settings.tls!.certFile, keyFile: settings.tls!.keyFile }
    : wantsTls
      ? {}
      : undefined;
  return {
    servers: settings.servers,
    name: settings.name,
    user: settings.user,
    pass: settings.password,
    token: settings.token,
    authenticator: authenticators.length > 0 ? authenticators : undefined,
    inboxPrefix,
    tls,
    // A service must outlive any NATS outage: reconnect forever, and buffer while away.
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    waitOnFirstConnect: true,
    pingInterval: 10_000,
  };
}

/** The subset of nats.js's untyped `nkeys` module used here. */
interface NkeyPair {
  getPublicKey(): string;
  getSeed(): Uint8Array;
}
const nkeyModule = nkeys as { createUser(): NkeyPair; fromSeed(seed: Uint8Array): NkeyPair };

/** The public key (U…) of a user's nkey seed (SU…); throws on anything else. */
export function nkeyPublicKey(seed: Uint8Array): string {
  return nkeyModule.fromSeed(seed).getPublicKey();
}

/** A fresh nkey user: the seed is the client's secret, the public key goes in the server's configuration. */
export function createNkeyUser(): { seed: string; publicKey: string } {
  const pair = nkeyModule.createUser();
  return { seed: new TextDecoder().decode(pair.getSeed()), publicKey: pair.getPublicKey() };
}

export function connectNats(settings: NatsSettings): Promise<NatsConnection> {
  return connect(natsConnectionOptions(settings));
}

/** The NATS_* variables of a validated service configuration, as connection settings. */
export function natsSettingsFromConfig(
  config: {
    NATS_URL: readonly string[];
    NATS_CREDS_FILE?: string;
    NATS_NKEY_SEED_FILE?: string;
    NATS_USER?: string;
    NATS_PASSWORD?: string;
    NATS_TOKEN?: string;
    NATS_TLS_CA_FILE?: string;
    NATS_TLS_CERT_FILE?: string;
    NATS_TLS_KEY_FILE?: string;
  },
  name: string,
): NatsSettings {
  return {
    servers: [...config.NATS_URL],
    name,
    credsFile: config.NATS_CREDS_FILE,
    nkeySeedFile: config.NATS_NKEY_SEED_FILE,
    user: config.NATS_USER,
    password: config.NATS_PASSWORD,
    token: config.NATS_TOKEN,
    tls: { caFile: config.NATS_TLS_CA_FILE, certFile: config.NATS_TLS_CERT_FILE, keyFile: config.NATS_TLS_KEY_FILE },
  };
}
