/**
 * @ferry/express: mount the Ferry /v2 API on an Express 5 app with {@link ferryRouter}.
 * @packageDocumentation
 */
export { ferryRouter } from './ferry-router.js';
export type { HttpApiOptions } from '@ferry/http';
