/**
 * How a chat request becomes prompt tokens: a ChatML-like template, deterministic, so that two
 * requests sharing their first messages share their first tokens (and so their prefix-cache
 * blocks), as with a real chat template.
 *
 *     [tools preamble]  <|im_start|>system\n{json of tools}<|im_end|>\n   (when tools are given)
 *     per message       <|im_start|>{role}\n{content}<|im_end|>\n
 *     generation cue    <|im_start|>assistant\n
 *
 * `<|im_start|>` and `<|im_end|>` are one special token each; an image part costs IMAGE_TOKENS
 * tokens; an assistant message's tool calls are rendered as `name(arguments)` text.
 */
import { encode, IMAGE_TOKENS, SPECIAL_TOKENS } from './tokenizer';
import type { ChatMessage } from './types';

const NEWLINE = encode('\n');

function pushAll(into: number[], ids: readonly number[]): void {
  for (const id of ids) into.push(id);
}

function renderTurn(into: number[], role: string, render: () => void): void {
  into.push(SPECIAL_TOKENS.IM_START);
  encode(role, into);
  pushAll(into, NEWLINE);
  render();
  into.push(SPECIAL_TOKENS.IM_END);
  pushAll(into, NEWLINE);
}

function renderContent(into: number[], message: ChatMessage): void {
  const content = message.content;
  if (typeof content === 'string') encode(content, into);
  else if (content) {
    content.forEach((part, i) => {
      if (i > 0) pushAll(into, NEWLINE);
      if (part.type === 'text') encode(part.text, into);
      else for (let k = 0; k < IMAGE_TOKENS; k++) into.push(SPECIAL_TOKENS.IMAGE);
    });
  }
  for (const call of message.tool_calls ?? []) {
    pushAll(into, NEWLINE);
    encode(`${call.function.name}(${call.function.arguments})`, into);
  }
}

/** The prompt token ids of a chat request. */
export function chatPromptTokenIds(messages: readonly ChatMessage[], tools?: readonly unknown[]): number[] {
  const ids: number[] = [];
  if (tools && tools.length > 0) renderTurn(ids, 'system', () => encode(JSON.stringify(tools), ids));
  for (const message of messages) renderTurn(ids, message.role, () => renderContent(ids, message));
  ids.push(SPECIAL_TOKENS.IM_START);
  encode('assistant', ids);
  pushAll(ids, NEWLINE);
  return ids;
}
