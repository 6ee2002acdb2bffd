import { execFileSync } from 'child_process';
import { writeFileSync } from 'fs';
import { join } from 'path';

export interface TestCertificates {
  /** CA certificate (PEM) to trust. */
  ca: string;
  /** Server certificate (PEM) for 127.0.0.1 and localhost, signed by the CA, and its key. */
  cert: string;
  key: string;
}

/** A throwaway CA and a server certificate for 127.0.0.1/localhost, made with the real openssl in `dir`. */
export function makeTestCertificates(dir: string): TestCertificates {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=gpufleet test CA', '-keyout', 'ca.key', '-out', 'ca.pem');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=gpufleet test server', '-keyout', 'server.key', '-out', 'server.csr');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-extfile', 'san.ext', '-out', 'server.pem');
  return { ca: join(dir, 'ca.pem'), cert: join(dir, 'server.pem'), key: join(dir, 'server.key') };
}
