import { isSecretField, type ConfigFields, type ConfigSchema } from './config';
import type { FieldSpec } from './fields';

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

function formatDefault(spec: FieldSpec<unknown>): string {
  if (!spec.hasDefault) return spec.required ? '**required**' : '—';
  const value = spec.defaultValue;
  const text = Array.isArray(value) ? value.join(',') : String(value);
  return `\`${text}\``;
}

function describe(name: string, spec: FieldSpec<unknown>): string {
  const notes = [spec.description];
  if (spec.requires.length > 0) notes.push(`Requires ${spec.requires.map((v) => `\`${v}\``).join(', ')}.`);
  if (spec.conflicts.length > 0) notes.push(`Not with ${spec.conflicts.map((v) => `\`${v}\``).join(', ')}.`);
  if (isSecretField(name, spec)) notes.push('Secret: redacted when printed.');
  return notes.join(' ');
}

/**
 * The schema as a markdown table (variable, type, default, description), for generating
 * the configuration section of a service's docs from the code.
 */
export function renderConfigMarkdown<F extends ConfigFields>(schema: ConfigSchema<F>): string {
  const rows = Object.entries(schema.fields).map(
    ([name, spec]) =>
      `| \`${name}\` | ${cell(spec.type)} | ${cell(formatDefault(spec))} | ${cell(describe(name, spec))} |`,
  );
  return ['| Variable | Type | Default | Description |', '| --- | --- | --- | --- |', ...rows].join('\n') + '\n';
}
