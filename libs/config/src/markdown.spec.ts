import { defineConfig } from './config';
import { list, port, str } from './fields';
import { renderConfigMarkdown } from './markdown';

describe('renderConfigMarkdown', () => {
  it('renders one row per variable with type, default and description', () => {
    const schema = defineConfig({
      GRPC_PORT: port({ default: 50051, desc: 'Port of the gRPC server.' }),
      NODE_NAME: str({ desc: 'Kubernetes node name.' }),
      LOG_LEVEL: str({ choices: ['info', 'debug'], default: 'info', desc: 'Log level.' }),
      PEERS: list({ optional: true, desc: 'Peers.' }),
      API_TOKEN: str({ optional: true, desc: 'Token.' }),
    });
    expect(renderConfigMarkdown(schema)).toBe(
      [
        '| Variable | Type | Default | Description |',
        '| --- | --- | --- | --- |',
        '| `GRPC_PORT` | integer 1-65535 | `50051` | Port of the gRPC server. |',
        '| `NODE_NAME` | string | **required** | Kubernetes node name. |',
        '| `LOG_LEVEL` | info \\| debug | `info` | Log level. |',
        '| `PEERS` | list of string | — | Peers. |',
        '| `API_TOKEN` | string | — | Token. Secret: redacted when printed. |',
        '',
      ].join('\n'),
    );
  });
});
