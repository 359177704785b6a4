/** One problem with one request value, as listed in a ValidationFailed `errors` member. */
export interface FieldError {
  /** Where the value is: `query.waitSeconds`, `body.uploadId`, `header.Idempotency-Key`, `form.file`. */
  readonly field: string;
  readonly message: string;
}

/** Thrown by request parsing; the router answers it with `ValidationFailed` and `errors`. */
export class ValidationError extends Error {
  readonly errors: readonly FieldError[];

  constructor(errors: readonly FieldError[]) {
    super(errors.map((error) => `${error.field}: ${error.message}`).join('; '));
    this.name = 'ValidationError';
    this.errors = errors;
  }
}

/** Collects field errors and throws them together. */
export class FieldErrors {
  readonly #errors: FieldError[] = [];

  add(field: string, message: string): void {
    this.#errors.push({ field, message });
  }

  get empty(): boolean {
    return this.#errors.length === 0;
  }

  throwIfAny(): void {
    if (this.#errors.length > 0) throw new ValidationError(this.#errors);
  }
}

/** Parses an RFC 8941-ish boolean query or form value: `true`/`false`/`1`/`0`. */
export function parseBoolean(value: string): boolean | undefined {
  switch (value.trim().toLowerCase()) {
    case 'true':
    case '1':
      return true;
    case 'false':
    case '0':
      return false;
    default:
      return undefined;
  }
}

/** Parses a non-negative int32 written in decimal digits only. */
export function parseNonNegativeInt32(value: string): number | undefined {
  if (!/^\d{1,10}$/.test(value.trim())) return undefined;
  const parsed = Number(value.trim());
  return parsed <= 2_147_483_647 ? parsed : undefined;
}
