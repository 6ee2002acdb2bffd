export { NodeLiveness, type PhaseTransition } from './node-liveness';
