// './instrument' must stay the first import: it validates configuration and starts tracing.
import { config, stopTracing } from './instrument';
import { startRouter } from './bootstrap';

void startRouter(config, stopTracing).catch(() => process.exit(1));
