// @ts-check
/**
 * Visitors that call `check` with every module specifier a file names: imports, re-exports and
 * `import()` of a literal.
 * @param {(node: any, source: string) => void} check
 * @returns {import('eslint').Rule.RuleListener}
 */
export function moduleSpecifiers(check) {
  return {
    ImportDeclaration(node) { check(node.source, String(node.source.value)); },
    ExportNamedDeclaration(node) { if (node.source) check(node.source, String(node.source.value)); },
    ExportAllDeclaration(node) { check(node.source, String(node.source.value)); },
    ImportExpression(node) {
      if (node.source.type === 'Literal' && typeof node.source.value === 'string') check(node.source, node.source.value);
    },
  };
}
