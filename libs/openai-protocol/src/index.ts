export * from './types';
export * from './errors';
export * from './validate';
export * from './tokenizer';
export * from './chat-template';
export * from './builders';
export * from './sse';
