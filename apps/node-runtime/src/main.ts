// './instrument' must stay the first import: it validates configuration and starts tracing.
import { config, stopTracing } from './instrument';
import { bootstrapService } from '@gpufleet/service-kit';
import { AppModule } from './app.module';

// On SIGTERM the runtime detaches from its pods (they keep running) and the next runtime adopts them.
void bootstrapService({ service: 'node-runtime', config, module: AppModule.forRoot(config), stopTracing });
