// The TCP sockets a set of processes listens on, read from /proc as `ss -ltnp` does: each
// process's socket inodes (its /proc/<pid>/fd links), matched against the LISTEN rows of
// /proc/net/tcp and /proc/net/tcp6. What is checked is where the kernel says they are bound.
import { readdirSync, readFileSync, readlinkSync } from 'fs';

export interface Listener {
  pid: number;
  /** The process's command line, for messages. */
  command: string;
  address: string;
  port: number;
}

const TCP_LISTEN = '0A';

/** `0100007F:1F90` (little-endian IPv4) or the 32-hex-digit IPv6 form → address and port. */
function decode(hex: string): { address: string; port: number } {
  const [addr, port] = hex.split(':');
  if (addr.length === 8) {
    const bytes = addr.match(/../g)!.map((b) => parseInt(b, 16)).reverse();
    return { address: bytes.join('.'), port: parseInt(port, 16) };
  }
  // IPv6: four 32-bit words, each little-endian.
  const words = addr.match(/.{8}/g)!.map((w) => w.match(/../g)!.reverse().join(''));
  const groups = words.join('').match(/.{4}/g)!.map((g) => parseInt(g, 16).toString(16));
  return { address: groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::'), port: parseInt(port, 16) };
}

function listeningInodes(): Map<string, { address: string; port: number }> {
  const byInode = new Map<string, { address: string; port: number }>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.trim().split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === TCP_LISTEN) byInode.set(f[9], decode(f[1]));
    }
  }
  return byInode;
}

/** Every TCP listener of `pids`. */
export function listenersOf(pids: readonly number[]): Listener[] {
  const inodes = listeningInodes();
  const found: Listener[] = [];
  for (const pid of pids) {
    let fds: string[] = [];
    let command = '';
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
      continue; // gone, or not ours
    }
    for (const fd of fds) {
      let link = '';
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
      const where = inode ? inodes.get(inode) : undefined;
      if (where) found.push({ pid, command, ...where });
    }
  }
  return found;
}
