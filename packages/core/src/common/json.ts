/** Any JSON value; checkpoints and payloads are JSON. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object, the shape of every event payload. */
export type JsonObject = { [key: string]: JsonValue };
