import { Module } from '@nestjs/common';
import { SecretsGrpc } from './secrets.grpc';
import { SecretsStore } from './secrets.store';

/** SecretService and the secrets bucket it writes. */
@Module({
  providers: [SecretsStore, SecretsGrpc],
  exports: [SecretsGrpc],
})
export class SecretsModule {}
