import type { Engine } from '@ferry/core';
import type { HttpApi, HttpApiOptions } from './types.js';

/** Builds the /v2 surface of an engine. (Implementation in progress.) */
export function createHttpApi(engine: Engine, options: HttpApiOptions = {}): HttpApi {
  void engine;
  void options;
  throw new Error('not implemented yet');
}
