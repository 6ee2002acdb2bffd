// './instrument' must stay the first import: it validates configuration and starts tracing.
import { config, stopTracing } from './instrument';
import { bootstrapService } from '@gpufleet/service-kit';
import { routerService } from './bootstrap';

void bootstrapService(routerService(config, stopTracing));
