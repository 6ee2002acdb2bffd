export { isValidLabelValue, MAX_LABEL_VALUE_LENGTH, toLabelValue } from './label-value';
export { computeNodeLabels, LABEL, type LabelSource, type NodeLabels } from './node-labels';
export {
  isValidLabelKey,
  NFD_FEATURE_NS,
  NFD_NODE_NAME_LABEL,
  nfdAcceptsNamespace,
  NODE_FEATURE_API_VERSION,
  NODE_FEATURE_KIND,
  nodeFeatureFor,
  nodeFeatureName,
  toNfdLabels,
  type NfdLabelSplit,
  type NodeFeatureObject,
} from './node-feature';
