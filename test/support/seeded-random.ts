/**
 * A small deterministic generator of numbers in [0, 1), so that a failing run of a test with
 * random writers can be told apart from bad luck and run again the same way.
 */
export function seededRandom(seed: number): () => number {
  let state = seed * 2654435761;
  return () => {
    state = (state * 1664525 + 1013904223) % 4294967296;
    return state / 4294967296;
  };
}
