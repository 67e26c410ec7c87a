import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { defineConnector } from './define.js';
import { PluginRegistry } from './registry.js';
import { Secret } from './secret.js';

const schema = Type.Object({ url: Type.Optional(Type.String()), signing_secret: Type.Optional(Secret(Type.String())), auth: Type.Optional(Type.Object({ token: Secret(Type.String()) })) });
const connector = (readableSecret?: string) => defineConnector({ type: 'hooks', version: '1.0.0', directions: ['source'], configSchema: schema, ...(readableSecret === undefined ? {} : { readableSecret }) });

describe('PluginRegistry', () => {
  it('registers a readable secret that is a top-level Secret() field', () => {
    expect(new PluginRegistry([connector('signing_secret')], []).connector('hooks')?.definition.readableSecret).toBe('signing_secret');
  });

  it('refuses a readable secret that is not a secret, is nested, or does not exist', () => {
    for (const field of ['url', 'auth', 'token', 'nope']) {
      expect(() => new PluginRegistry([connector(field)], []), field).toThrow(/readableSecret/);
    }
  });

  it('refuses a connector type registered twice', () => {
    expect(() => new PluginRegistry([connector(), connector()], [])).toThrow(/registered twice/);
  });
});
