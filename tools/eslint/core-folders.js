// @ts-check
/**
 * ESLint rule: keeps the feature folders of `@ferry/core` (engine/, pipelines/, events/, ...)
 * behind their doors. A file may import another folder's code only through that folder's
 * `index.ts`, which lists what the folder offers the rest of the engine; inside a folder (its
 * subfolders included) files import each other freely. The package entries at the root of `src`
 * (`index.ts`, `internal.ts`) follow the same rule.
 */
import path from 'node:path';
import { moduleSpecifiers } from './module-specifiers.js';

const CORE_SRC = 'packages/core/src';

/**
 * The feature folder a path of core's `src` belongs to, or null for the root files.
 * @param {string} rel - path relative to `packages/core/src`, with `/` separators
 */
function folderOf(rel) {
  const parts = rel.split('/');
  return parts.length > 1 ? parts[0] : null;
}

/** @type {import('eslint').Rule.RuleModule} */
const rule = {
  meta: {
    type: 'problem',
    docs: { description: "Forbid imports that reach past another core folder's index.ts." },
    messages: {
      pastIndex: 'Import "{{source}}" reaches into {{folder}}/ past its index; import "{{index}}" and export what you need from {{folder}}/index.ts.',
    },
    schema: [],
  },
  create(context) {
    const src = path.join(process.cwd(), CORE_SRC);
    const file = context.filename;
    const fromRel = path.relative(src, file).split(path.sep).join('/');
    if (fromRel.startsWith('..')) return {};
    const own = folderOf(fromRel);
    /** @param {any} node @param {string} source */
    function check(node, source) {
      if (!source.startsWith('.')) return;
      const targetRel = path.relative(src, path.resolve(path.dirname(file), source)).split(path.sep).join('/');
      if (targetRel.startsWith('..')) return;
      const folder = /** @type {string | null} */ (folderOf(targetRel));
      if (folder === null || folder === own) return;
      if (targetRel === `${folder}/index.js` || targetRel === `${folder}/index.ts`) return;
      let index = path.relative(path.dirname(file), path.join(src, folder, 'index.js')).split(path.sep).join('/');
      if (!index.startsWith('.')) index = `./${index}`;
      context.report({ node, messageId: 'pastIndex', data: { source, folder, index } });
    }
    return moduleSpecifiers(check);
  },
};

export default rule;
