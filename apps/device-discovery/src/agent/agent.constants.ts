/** Injection token of the PresentedNodes (presented-nodes.ts): read once, before NATS connects. */
export const PRESENTED_NODES = Symbol('PRESENTED_NODES');
