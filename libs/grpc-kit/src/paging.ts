import { invalidArgument } from './errors';

/** The largest page a List* method returns; a bigger page_size means this many. */
export const MAX_PAGE_SIZE = 1000;

export interface Page<T> {
  items: T[];
  /** Empty on the last page. */
  nextPageToken: string;
}

/**
 * One page of `items` (any order: they are sorted here by `sortKey`, which must be unique and
 * stable). The token names the last key served, not a position, so items added or removed
 * between two calls neither repeat nor shift the pages. page_size 0 returns everything (what a
 * List* did before it paged).
 */
export function paginate<T>(items: readonly T[], sortKey: (item: T) => string, pageSize: number, pageToken: string): Page<T> {
  if (!Number.isInteger(pageSize) || pageSize < 0) throw invalidArgument('page_size', `an integer 0-${MAX_PAGE_SIZE} (0: everything at once)`, pageSize);
  const after = pageToken === '' ? undefined : decodeToken(pageToken);
  const keyed = items.map((item) => ({ key: sortKey(item), item })).sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const rest = after === undefined ? keyed : keyed.filter((k) => k.key > after);
  if (pageSize === 0) return { items: rest.map((k) => k.item), nextPageToken: '' };
  const size = Math.min(pageSize, MAX_PAGE_SIZE);
  const page = rest.slice(0, size);
  return { items: page.map((k) => k.item), nextPageToken: rest.length > size ? encodeToken(page[page.length - 1].key) : '' };
}

function encodeToken(key: string): string {
  return Buffer.from(JSON.stringify({ after: key }), 'utf8').toString('base64url');
}

function decodeToken(token: string): string {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { after?: unknown };
    if (typeof parsed.after === 'string') return parsed.after;
  } catch {
    // falls through to the error
  }
  throw invalidArgument('page_token', 'the next_page_token of a previous page of the same list (or empty)', token.length > 40 ? `${token.slice(0, 40)}…` : token);
}
