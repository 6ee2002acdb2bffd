// `npm run bench -- prefix-tree`: cost of one cache-aware routing decision (match + insert of
// ~4 KB prompts) in the router's prefix tree; see libs/routing-core/README.md.
export { run } from '../../libs/routing-core/src/prefix-tree.bench';
