import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The size of @ferry/core's two entries, types included. Every name of the public entry is a
 * promise to embedders and plugin authors; the budget keeps it to what they need. A name that
 * only Ferry's own packages use belongs in `@ferry/core/internal`.
 */
// A type that appears in a public signature (what `check` returns, what a clock's timer is) must
// be nameable from the public entry, or plugin authors spell it as ReturnType<...>. A record's
// enumerations are nameable through the record (`Pipeline['state']`, `Delivery['status']`, as
// `Connector['health']`), so they take no name of their own.
// Backfills added five (their service, record and input, and the two types a source's backfill
// code names): 95.
const BUDGET = { public: 95, internal: 140 };

function exportsOf(...files: string[]): string[][] {
  const paths = files.map((f) => fileURLToPath(new URL(f, import.meta.url)));
  const program = ts.createProgram(paths, { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, skipLibCheck: true, noEmit: true });
  const checker = program.getTypeChecker();
  return paths.map((path) => checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(path)!)!).map((s) => s.name));
}

describe('@ferry/core entries', () => {
  const [publicNames, internalNames] = exportsOf('./index.ts', './internal.ts') as [string[], string[]];

  it(`keeps the public entry within ${BUDGET.public} exports and the internal one within ${BUDGET.internal}`, () => {
    console.log(`@ferry/core: ${publicNames.length} exports; @ferry/core/internal: ${internalNames.length}`);
    expect(publicNames.length).toBeLessThanOrEqual(BUDGET.public);
    expect(internalNames.length).toBeLessThanOrEqual(BUDGET.internal);
  });

  it('gives every name one home: nothing is exported by both', () => {
    expect(publicNames.filter((n) => internalNames.includes(n))).toEqual([]);
  });

  it('keeps storage and repositories out of the public entry', () => {
    expect(publicNames.filter((n) => /Row$|Repo$|^Repositories$|^FerryStorage$|^openStorage$|^LeasedQueue$/.test(n))).toEqual([]);
  });
});
