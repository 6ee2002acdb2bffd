export { isValidLabelValue, MAX_LABEL_VALUE_LENGTH, toLabelValue } from './label-value';
export { computeNodeLabels, LABEL, type LabelSource, type NodeLabels } from './node-labels';
