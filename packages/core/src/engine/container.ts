import 'reflect-metadata';
import { container as rootContainer, type DependencyContainer, type InjectionToken } from 'tsyringe';
import type { EngineContext, EngineHooks } from '../context/index.js';
import { ApiKeysService, IdempotencyService, WorkspacesService } from '../access/index.js';
import { BackfillsService } from '../backfills/index.js';
import { ConnectorsService } from '../connectors/index.js';
import { EventsService, IngestService } from '../events/index.js';
import { PipelinesService } from '../pipelines/index.js';
import { WebhooksService } from '../webhooks/index.js';

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
  singleton(BackfillsService);
  singleton(IdempotencyService);
  return c;
}
