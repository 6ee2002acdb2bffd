/**
 * Vendor device providers (nvidia, amd, ascend) and the parsers of their tools' output.
 * Each provider implements DeviceProvider over an injected CommandRunner.
 */
export * from './nvidia';
export * from './amd';
export * from './ascend';
export { ToolOutputError } from './shared/tool-output';
