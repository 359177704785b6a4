/** A path pattern such as `/v1/documents/:id/download`. */
export interface CompiledPattern {
  readonly pattern: string;
  readonly match: (path: string) => Record<string, string> | undefined;
}

/** Compiles `pattern`; `:name` matches one non-empty segment. */
export function compilePattern(pattern: string): CompiledPattern {
  const names: string[] = [];
  const source = pattern
    .split('/')
    .map((segment) => {
      if (segment.startsWith(':')) {
        names.push(segment.slice(1));
        return '([^/]+)';
      }
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  const regex = new RegExp(`^${source}$`);
  return {
    pattern,
    match(path) {
      const found = regex.exec(path);
      if (!found) return undefined;
      const params: Record<string, string> = {};
      for (const [index, name] of names.entries()) {
        const raw = found[index + 1] ?? '';
        try {
          params[name] = decodeURIComponent(raw);
        } catch {
          // Not percent-encoding (`%ZZ`): the path is still this route's, and the segment an id
          // that names nothing, so the route answers (404 for it, 405 for a method it lacks)
          // rather than "no such path".
          params[name] = raw;
        }
      }
      return params;
    },
  };
}
