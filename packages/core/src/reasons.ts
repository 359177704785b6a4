/**
 * Why a file was rejected: the envelope's `reason` codes for a `rejected` document (`getDocument`).
 * A rejection is a final, billed answer about the file itself, never a fault of the service.
 */
export type RejectionReason =
  | 'threat_detected'
  | 'password_protected'
  | 'invalid_file'
  | 'unsupported_file_type'
  | 'policy_violation'
  | 'file_too_large';

/** Every {@link RejectionReason}, in the order the v1 API lists them. */
export const REJECTION_REASONS: readonly RejectionReason[] = [
  'threat_detected',
  'password_protected',
  'invalid_file',
  'unsupported_file_type',
  'policy_violation',
  'file_too_large',
];
