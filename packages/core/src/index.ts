export { disarm, disarmToFile } from './disarm.ts';
export type { DisarmOptions, DisarmSource } from './disarm.ts';
export type {
  CleanedFileOutcome,
  CleanedOutcome,
  FileOutcome,
  Modification,
  Outcome,
  RejectedOutcome,
} from './outcome.ts';
export { mediaTypeOf } from './outcome.ts';
export { DisarmError, isDisarmError } from './errors.ts';
export type { DisarmErrorCode } from './errors.ts';
export { REJECTION_REASONS } from './reasons.ts';
export type { RejectionReason } from './reasons.ts';
export { FINDING_KINDS, MAX_FINDING_LOCATIONS, MAX_LOCATION_CHARS } from './findings.ts';
export type { Finding, FindingKind, FindingLocation } from './findings.ts';
export type { Policy, PolicyAction } from './policy.ts';
export { DEFAULT_LIMITS, resolveLimits } from './limits.ts';
export type { Limits } from './limits.ts';
export {
  FORMATS,
  extensionOf,
  formatForFileName,
  isSupportedFileName,
  outputFileName,
} from './formats.ts';
export type { ContentKind, FormatFamily, FormatRow, SupportedExtension } from './formats.ts';
export { builtinScanner, EICAR_THREAT_NAME, isEicar } from './scan/eicar.ts';
export type { ScanContext, ScanFile, Scanner } from './scan/scanner.ts';
export type {
  RenderInput,
  RenderKind,
  RenderOptions,
  Renderer,
  RendererStatus,
} from './render/renderer.ts';
export { BUILTIN_RENDERER_NAME, builtinRenderer } from './render/builtin/index.ts';
export {
  createClamdScanner,
  DEFAULT_CLAMD_CONNECT_TIMEOUT_MS,
  DEFAULT_CLAMD_MAX_CONNECTIONS,
  DEFAULT_CLAMD_PORT,
  DEFAULT_CLAMD_READ_TIMEOUT_MS,
} from './scan/clamd.ts';
export type { ClamdScanner, ClamdScannerOptions } from './scan/clamd.ts';
