/** What the cache tells its owner besides progress: for logs, metrics and the artifact's status conditions. */
export type CacheEvent =
  | {
      readonly type: 'SourceFailed';
      readonly path: string;
      readonly blob: string;
      /** scheme, host and path only */
      readonly source: string;
      readonly peer: boolean;
      readonly error: string;
      /** ms until this source is tried again for this blob (Infinity: not for this delivery) */
      readonly retryInMs: number;
    }
  | {
      readonly type: 'DigestMismatch';
      readonly path: string;
      readonly blob: string;
      readonly actual: string;
      /** sources that contributed bytes to the rejected file */
      readonly sources: readonly string[];
      /** Refetch: the partial file was deleted and the blob is fetched again, other sources first */
      readonly action: 'Refetch' | 'Fail';
    }
  | { readonly type: 'Resumed'; readonly path: string; readonly blob: string; readonly bytes: number }
  | { readonly type: 'BlobPublished'; readonly path: string; readonly blob: string; readonly size: number }
  | { readonly type: 'TreeEvicted'; readonly digest: string; readonly freedBytes: number };
