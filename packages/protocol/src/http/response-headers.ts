/**
 * Adds `fields` to `response`'s headers: `overwrite` replaces a field the response already has,
 * otherwise the response's own value wins. Headers of a `Response` built by the API are mutable,
 * so they are changed in place (no second `Response` and body hand-over per request); a response
 * whose headers are immutable (`Response.redirect`, a fetched one) is copied.
 */
export function addResponseHeaders(
  response: Response,
  fields: Iterable<readonly [string, string]>,
  overwrite: boolean,
): Response {
  try {
    apply(response.headers, fields, overwrite);
    return response;
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    const headers = new Headers(response.headers);
    apply(headers, fields, overwrite);
    return new Response(response.body, {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  }
}

function apply(
  headers: Headers,
  fields: Iterable<readonly [string, string]>,
  overwrite: boolean,
): void {
  for (const [name, value] of fields) {
    if (overwrite || !headers.has(name)) headers.set(name, value);
  }
}
