import 'reflect-metadata';
import { container as rootContainer, type DependencyContainer, type InjectionToken } from 'tsyringe';
import type { EngineContext } from './engine-context.js';
import type { EngineHooks } from './services/engine-hooks.js';
import { ApiKeysService } from './services/api-keys-service.js';
import { ConnectorsService } from './services/connectors-service.js';
import { EventsService } from './services/events-service.js';
import { IdempotencyService } from './services/idempotency-service.js';
import { IngestService } from './services/ingest-service.js';
import { PipelinesService } from './services/pipelines-service.js';
import { WebhooksService } from './services/webhooks-service.js';
import { WorkspacesService } from './services/workspaces-service.js';

/** Injection tokens of one engine's container. */
export const TOKENS = {
  context: Symbol('ferry.context') as InjectionToken<EngineContext>,
  hooks: Symbol('ferry.hooks') as InjectionToken<EngineHooks>,
} as const;

/**
 * Wires one engine: a child container of its own (two engines in one process share nothing),
 * every service registered as a singleton through an explicit factory. Factories rather than
 * decorators because esbuild-compiled code carries no constructor metadata, and because the
 * whole graph then reads in one place.
 */
export function createEngineContainer(context: EngineContext, hooks: EngineHooks): DependencyContainer {
  const c = rootContainer.createChildContainer();
  c.registerInstance(TOKENS.context, context);
  c.registerInstance(TOKENS.hooks, hooks);
  // Every service takes the context, and those that tell the workers of changes the hooks too.
  const singleton = <T>(token: new (ctx: EngineContext, hooks: EngineHooks) => T) => {
    let instance: T | undefined;
    c.register(token, { useFactory: (dc) => (instance ??= new token(dc.resolve(TOKENS.context), dc.resolve(TOKENS.hooks))) });
  };
  singleton(WorkspacesService);
  singleton(ApiKeysService);
  singleton(ConnectorsService);
  singleton(PipelinesService);
  singleton(EventsService);
  singleton(WebhooksService);
  singleton(IngestService);
  singleton(IdempotencyService);
  return c;
}
