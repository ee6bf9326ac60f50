/**
 * How this build loads its own modules in a new process or thread: the TypeScript sources
 * through tsx (a checkout), or the JavaScript `npm run build` compiled them to (the images, which
 * hold no TypeScript compiler: docs/architecture.md §1). Told apart by this file's own name.
 */
export const COMPILED = import.meta.url.endsWith('.js');

/** The module named `source` in the sources (`./worker.ts`), relative to the module at `base`, as this build has it. */
export function sourceModule(source: string, base: string): URL {
  const url = new URL(source, base);
  if (COMPILED) url.pathname = url.pathname.replace(/\.ts$/, '.js');
  return url;
}

/** tsx's loader for `node --import` in a new process; none when compiled. */
export function typescriptLoader(): string | undefined {
  return COMPILED ? undefined : import.meta.resolve('tsx');
}

/** tsx's API, whose `register()` a new worker thread calls before its entry; none when compiled. */
export function typescriptApi(): string | undefined {
  return COMPILED ? undefined : import.meta.resolve('tsx/esm/api');
}
