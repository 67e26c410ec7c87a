/**
 * @ferry/fastify: mount the Ferry /v2 API on a Fastify 5 app with {@link ferryPlugin}.
 * @packageDocumentation
 */
export { ferryPlugin, type FerryPluginOptions } from './ferry-plugin.js';
export type { HttpApiOptions } from '@ferry/http';
