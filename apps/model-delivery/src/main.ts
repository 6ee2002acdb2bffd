// './instrument' must stay the first import: it validates configuration and starts tracing.
import { config, stopTracing } from './instrument';
import { bootstrapService } from '@gpufleet/service-kit';
import { AppModule } from './app.module';

void bootstrapService({ service: 'model-delivery', config, module: AppModule.forRoot(config), stopTracing });
