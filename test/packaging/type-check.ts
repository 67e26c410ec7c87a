/**
 * Type-checks files of the blank app with the compiler's API, one program per module resolution
 * mode, as `tsc --noEmit` with `skipLibCheck: false` would: the app's files and every declaration
 * file of Ferry's packages are fully checked in every program.
 *
 * The compiler is the workspace's: where the compiler lives does not change how it resolves
 * modules (that starts from each importing file, here in the app), only which `lib.*.d.ts` it
 * brings, so the app need not install its own copy (23 MB less to unpack).
 */
import ts from 'typescript';

/** The outcome of one program. */
export interface TypeCheck {
  /** The errors, formatted as tsc prints them (empty when the program checks). */
  errors: string[];
  /** Every file of the program, declarations included. */
  files: string[];
}

/**
 * Options every program shares: a strict application, declarations checked (`skipLibCheck:
 * false`). No DOM library: on Node, globals come from `@types/node`, and DOM types would hide a
 * declaration that leans on browser-only globals.
 */
const COMMON: ts.CompilerOptions = { strict: true, noEmit: true, skipLibCheck: false, target: ts.ScriptTarget.ES2022, lib: ['lib.es2023.d.ts'] };

/** `module: nodenext`: `.mts` files are ES modules, `.cts` files CommonJS, each resolved with its own conditions. */
export const NODENEXT: ts.CompilerOptions = { ...COMMON, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext };

/** `module: esnext, moduleResolution: bundler`, `customConditions` unset as in a user's project. */
export const BUNDLER: ts.CompilerOptions = { ...COMMON, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler };

/**
 * Checks programs over the same installed packages. Parsed files are shared between programs (the
 * compiler's language service does the same), and a third-party declaration file checked in full
 * by one program is not checked again by the next, which would resolve it the same way: only
 * the app's files and Ferry's declarations depend on the resolution mode, and those are checked
 * in every program. TypeScript's own `lib.*.d.ts` are not checked (as `skipDefaultLibCheck`).
 */
export class DeclarationChecker {
  readonly #parsed = new Map<string, ts.SourceFile>();
  readonly #checkedElsewhere = new Set<string>();

  /**
   * @param rootNames - The app's files to check.
   * @param isOurs - Whether a file is the app's or Ferry's: checked in every program.
   */
  check(rootNames: readonly string[], options: ts.CompilerOptions, isOurs: (fileName: string) => boolean): TypeCheck {
    const host = ts.createCompilerHost(options);
    const parse = host.getSourceFile.bind(host);
    host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
      const key = `${fileName}\0${JSON.stringify(languageVersion)}`;
      let file = this.#parsed.get(key);
      if (!file) {
        file = parse(fileName, languageVersion, onError, shouldCreate);
        if (file) this.#parsed.set(key, file);
      }
      return file;
    };
    const program = ts.createProgram(rootNames, options, host);
    const diagnostics: ts.Diagnostic[] = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()];
    for (const file of program.getSourceFiles()) {
      if (program.isSourceFileDefaultLibrary(file)) continue;
      const ours = isOurs(file.fileName);
      if (!ours && this.#checkedElsewhere.has(file.fileName)) continue;
      diagnostics.push(...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file));
      if (!ours) this.#checkedElsewhere.add(file.fileName);
    }
    const formatHost: ts.FormatDiagnosticsHost = {
      getCanonicalFileName: (f) => f,
      getCurrentDirectory: () => host.getCurrentDirectory(),
      getNewLine: () => '\n',
    };
    return {
      errors: diagnostics.map((d) => ts.formatDiagnostic(d, formatHost).trim()),
      files: program.getSourceFiles().map((f) => f.fileName),
    };
  }
}

/**
 * The declaration file TypeScript picks for `specifier` imported from `fromFile` (an ES module
 * or a CommonJS one, by its extension under nodenext), or `undefined` when it finds none.
 */
export function resolvedTypes(specifier: string, fromFile: string, options: ts.CompilerOptions): string | undefined {
  const mode = ts.getImpliedNodeFormatForFile(fromFile as ts.Path, undefined, ts.sys, options);
  return ts.resolveModuleName(specifier, fromFile, options, ts.sys, undefined, undefined, mode).resolvedModule?.resolvedFileName;
}
