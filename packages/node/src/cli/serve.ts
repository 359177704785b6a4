import { availableParallelism } from 'node:os';

import { EXTERNAL_ALGORITHMS } from '@disarm/protocol/oauth';
import type { ExternalAlgorithm } from '@disarm/protocol/oauth';
import { InvalidArgumentError, Option } from 'commander';
import type { Command } from 'commander';
import { pino } from 'pino';
import type { Logger as PinoLogger } from 'pino';

import { FAILPOINT_ENV, parseFailpoint } from '../failpoints/index.ts';
import type { FailpointStep } from '../failpoints/index.ts';
import { openBlobStore } from '../blobs/open-blob-store.ts';
import type { ClamdConfig } from '../pool/types.ts';
import type { DemoAccount } from '../serve/_demo.ts';
import type { EmbeddedOAuthOptions } from '../serve/create-embedded-disarm.ts';
import {
  DEFAULT_API_PORT,
  DEFAULT_GRACE_SECONDS,
  DEFAULT_HOST,
  DEFAULT_STORAGE_PORT,
  DEFAULT_SYNC_WAIT_SECONDS,
  hashAdminToken,
  startServer,
} from '../serve/start-server.ts';
import type { RunningDisarm } from '../serve/start-server.ts';
import { startWorkerNode } from '../serve/start-worker-node.ts';
import { DATABASE_URL_ENV, describeDatabase, parseDatabaseUrl } from '../state/open-state.ts';
import { batchLogLines } from './_log-lines.ts';
import { EXIT_CODES, parseSwitchEnv, UsageError } from './_exit-codes.ts';
import { parseBaseUrl, parsePort, parsePositiveInteger } from './_parse.ts';
import type { CliContext } from './context.ts';
import { addClamdOptions, clamdConfigOf } from './_clamd.ts';
import type { ClamdFlags } from './_clamd.ts';
import { addRendererOption } from './_renderers.ts';
import type { RendererFlags } from './_renderers.ts';

/** Where state lives unless told otherwise: relative to the working directory. */
export const DEFAULT_DATA_DIR = './.data';
/** Environment variable that selects test mode (`1` or `true`). */
export const TEST_MODE_ENV = 'DISARM_TEST_MODE';
/** Read by hand, not by commander, which would turn the switch on for any value, `0` included. */
const EXTERNAL_ALLOW_ADMIN_ENV = 'DISARM_OAUTH_EXTERNAL_ALLOW_ADMIN';
/** Shortest admin token accepted: a guessable token would open the admin routes. */
const MIN_ADMIN_TOKEN_CHARS = 24;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/**
 * What one `disarm serve` process runs: `api` the HTTP API and storage origin (documents are
 * queued for workers), `worker` the processing of queued documents (no port), `all` both.
 */
const ROLES = ['all', 'api', 'worker'] as const;

/** IPC message a parent sends a `--test-mode` server to move its clock. */
export interface AdvanceClockMessage {
  readonly type: 'disarm:advance-clock';
  readonly id: number;
  readonly milliseconds: number;
}

/** The server's answer to an {@link AdvanceClockMessage}. */
export interface ClockMessage {
  readonly type: 'disarm:clock';
  readonly id: number;
  /** ISO time after the move, or absent with `error`. */
  readonly now?: string;
  readonly error?: string;
}

/** IPC message a parent sends a `--test-mode` server to arm a failpoint (README "Crash safety"). */
export interface ArmFailpointMessage {
  readonly type: 'disarm:arm-failpoint';
  readonly id: number;
  /** One of the failpoint steps (`DISARM_FAILPOINT`). */
  readonly step: string;
}

/** The server's answer to an {@link ArmFailpointMessage}. */
export interface FailpointArmedMessage {
  readonly type: 'disarm:failpoint-armed';
  readonly id: number;
  /** Present when the step was not armed (an unknown step). */
  readonly error?: string;
}

/** Flags of `disarm serve`, as commander parses them (environment already applied). */
interface ServeFlags extends ClamdFlags, RendererFlags {
  readonly port: number;
  readonly storagePort: number;
  readonly host: string;
  readonly dataDir: string;
  readonly database?: string;
  readonly role: (typeof ROLES)[number];
  readonly blobs?: string;
  readonly publicBaseUrl?: string;
  readonly storageBaseUrl?: string;
  readonly syncWaitSeconds: number;
  readonly workers?: number;
  readonly graceSeconds: number;
  readonly adminToken?: string;
  readonly metricsToken?: string;
  readonly testMode?: true;
  readonly logLevel: (typeof LOG_LEVELS)[number];
  readonly demo: boolean;
  readonly processing: boolean;
  readonly oauthIssuer?: string;
  readonly oauthAudience?: string;
  readonly oauthExternalIssuer?: string;
  readonly oauthExternalJwksUrl?: string;
  readonly oauthExternalAudience?: string;
  readonly oauthExternalOrgClaim?: string;
  readonly oauthExternalAlgorithms?: readonly ExternalAlgorithm[];
  readonly oauthExternalAllowAdmin?: true;
}

/**
 * Adds `disarm serve` to `program`: the embedded service (API, storage origin, workers,
 * sweeper) in one process until SIGTERM or SIGINT. Every flag also reads an environment variable;
 * a flag given on the command line wins.
 */
export function registerServeCommand(program: Command, context: CliContext): void {
  const command = program
    .command('serve')
    .summary('run the v1 HTTP service')
    .description(
      'Run the embedded disarm service: the v1 API, the storage origin for signed links on its ' +
        'own port, a pool of worker processes and the retention sweeper, with state in a SQLite ' +
        'file under --data-dir or the PostgreSQL database of --database, and blobs under ' +
        '--data-dir. --role api or worker splits it over several hosts. JSON logs go to stdout, ' +
        'one line per request. On first ' +
        'start with an empty store a demo organisation and API key are created and printed once ' +
        'to stderr. Stops gracefully on SIGTERM or SIGINT.',
    )
    .addOption(
      new Option('--port <port>', 'API port; 0 picks a free one')
        .env('DISARM_PORT')
        .default(DEFAULT_API_PORT)
        .argParser(parsePort),
    )
    .addOption(
      new Option('--storage-port <port>', 'storage-origin port (signed links); 0 picks a free one')
        .env('DISARM_STORAGE_PORT')
        .default(DEFAULT_STORAGE_PORT)
        .argParser(parsePort),
    )
    .addOption(
      new Option('--host <address>', 'address to bind; anything but loopback exposes the service')
        .env('DISARM_HOST')
        .default(DEFAULT_HOST),
    )
    .addOption(
      new Option('--data-dir <dir>', 'folder for disarm.sqlite, blobs/ and secrets/ (keep private)')
        .env('DISARM_DATA_DIR')
        .default(DEFAULT_DATA_DIR),
    )
    .addOption(
      new Option(
        '--database <url>',
        'state store and queue: postgres://user@host:port/db for several nodes, or sqlite:<path> ' +
          '(default: sqlite:<data-dir>/disarm.sqlite)',
      ).env(DATABASE_URL_ENV),
    )
    .addOption(
      new Option(
        '--role <role>',
        'api: HTTP only, documents queued for workers; worker: process queued documents, no port; all: both',
      )
        .env('DISARM_ROLE')
        .default('all')
        .choices(ROLES),
    )
    .addOption(
      new Option(
        '--blobs <url>',
        's3://bucket/prefix: keep blobs in an S3-compatible bucket (AWS_* environment) instead of ' +
          '<data-dir>/blobs',
      )
        .env('DISARM_BLOBS')
        .argParser(parseBlobsUrl),
    )
    .addOption(
      new Option(
        '--public-base-url <url>',
        'URL clients reach the API at (default: http://localhost:<port>)',
      )
        .env('DISARM_PUBLIC_BASE_URL')
        .argParser(parseBaseUrl),
    )
    .addOption(
      new Option(
        '--storage-base-url <url>',
        'URL clients reach the storage origin at (default: http://localhost:<storage-port>)',
      )
        .env('DISARM_STORAGE_BASE_URL')
        .argParser(parseBaseUrl),
    )
    .addOption(
      new Option('--sync-wait-seconds <n>', 'longest sync wait (wait=true) in seconds')
        .env('DISARM_SYNC_WAIT_SECONDS')
        .default(DEFAULT_SYNC_WAIT_SECONDS)
        .argParser(parsePositiveInteger),
    )
    .addOption(
      new Option('--workers <n>', 'worker processes (default: the available CPUs)')
        .env('DISARM_WORKERS')
        .argParser(parsePositiveInteger),
    )
    .addOption(
      new Option(
        '--grace-seconds <n>',
        'how long a delete-after-download file stays after its first download',
      )
        .env('DISARM_GRACE_SECONDS')
        .default(DEFAULT_GRACE_SECONDS)
        .argParser(parsePositiveInteger),
    )
    .addOption(
      new Option(
        '--admin-token <token>',
        `bootstrap bearer token for the admin routes (at least ${MIN_ADMIN_TOKEN_CHARS} characters; ` +
          'only its SHA-256 is kept). Prefer the environment: a flag shows in process lists',
      ).env('DISARM_ADMIN_TOKEN'),
    )
    .addOption(
      new Option(
        '--metrics-token <token>',
        `bearer token GET /metrics requires (at least ${MIN_ADMIN_TOKEN_CHARS} characters); ` +
          'without it the metrics are public. Prefer the environment',
      ).env('DISARM_METRICS_TOKEN'),
    )
    .option(
      '--test-mode',
      `manual clock that POST /v1/admin/clock moves; never in production (env: ${TEST_MODE_ENV}=1)`,
    )
    .addOption(
      new Option('--log-level <level>', 'least severe level logged')
        .env('DISARM_LOG_LEVEL')
        .default('info')
        .choices(LOG_LEVELS),
    )
    .option('--no-demo', 'do not create the demo organisation on an empty store')
    .addOption(
      new Option(
        '--no-processing',
        'serve the API and storage only: documents are queued for another process to clean',
      ),
    )
    .addOption(
      new Option(
        '--oauth-issuer <iss>',
        'iss of the access tokens POST /connect/token issues (default: the public base URL)',
      ).env('DISARM_OAUTH_ISSUER'),
    )
    .addOption(
      new Option(
        '--oauth-audience <aud>',
        'aud of the access tokens issued and required (default: <public base URL>/v1)',
      ).env('DISARM_OAUTH_AUDIENCE'),
    )
    .addOption(
      new Option(
        '--oauth-external-issuer <iss>',
        'also accept access tokens of this identity provider (exact iss); needs --oauth-external-jwks-url',
      ).env('DISARM_OAUTH_EXTERNAL_ISSUER'),
    )
    .addOption(
      new Option(
        '--oauth-external-jwks-url <url>',
        "the identity provider's JWKS (https; http only for loopback)",
      ).env('DISARM_OAUTH_EXTERNAL_JWKS_URL'),
    )
    .addOption(
      new Option(
        '--oauth-external-audience <aud>',
        "aud the provider's tokens must carry (default: --oauth-audience)",
      ).env('DISARM_OAUTH_EXTERNAL_AUDIENCE'),
    )
    .addOption(
      new Option(
        '--oauth-external-org-claim <claim>',
        "claim holding the caller's organisation id (default: org_id)",
      ).env('DISARM_OAUTH_EXTERNAL_ORG_CLAIM'),
    )
    .addOption(
      new Option(
        '--oauth-external-algorithms <list>',
        `comma-separated algorithms the provider signs with (default: RS256,ES256; any of ${EXTERNAL_ALGORITHMS.join(',')})`,
      )
        .env('DISARM_OAUTH_EXTERNAL_ALGORITHMS')
        .argParser(parseAlgorithms),
    )
    .addOption(
      new Option(
        '--oauth-external-allow-admin',
        `honour cdr.admin in the provider's tokens: it then runs the whole platform (env: ${EXTERNAL_ALLOW_ADMIN_ENV}=1)`,
      ),
    )
    .addHelpText('after', serveHelpText())
    .action(async () => {
      try {
        context.exitCode = await serve(command.opts<ServeFlags>(), context);
      } catch (error) {
        if (error instanceof UsageError) {
          command.error(`error: ${error.message}`, { exitCode: EXIT_CODES.usage });
        }
        throw error;
      }
    });
  addClamdOptions(command);
  addRendererOption(command);
}

async function serve(flags: ServeFlags, context: CliContext): Promise<number> {
  if (flags.role === 'worker' && !flags.processing) {
    throw new UsageError('--role worker processes documents: it cannot take --no-processing');
  }
  try {
    parseDatabaseUrl(flags.database, flags.dataDir);
  } catch (error) {
    throw new UsageError(`--database: ${error instanceof Error ? error.message : String(error)}`);
  }
  const testMode = flags.testMode === true || parseSwitchEnv(TEST_MODE_ENV);
  const failpoint = failpointOf(process.env[FAILPOINT_ENV], testMode);
  // Read once: worker processes inherit the environment, and must not see it.
  delete process.env.DISARM_FAILPOINT;
  const { adminToken, metricsToken } = flags;
  // Worker processes inherit the environment and handle hostile files: they get no token.
  delete process.env.DISARM_ADMIN_TOKEN;
  delete process.env.DISARM_METRICS_TOKEN;
  if (adminToken !== undefined && adminToken.length < MIN_ADMIN_TOKEN_CHARS) {
    throw new UsageError(`--admin-token must be at least ${MIN_ADMIN_TOKEN_CHARS} characters`);
  }
  // As guessable a token would open the metrics to anyone who can reach the API port.
  if (metricsToken !== undefined && metricsToken.length < MIN_ADMIN_TOKEN_CHARS) {
    throw new UsageError(`--metrics-token must be at least ${MIN_ADMIN_TOKEN_CHARS} characters`);
  }
  const oauth = oauthOptions(flags);
  const clamd = clamdConfigOf(flags);
  const lines = batchLogLines(context.stdout);
  const logger = pino({ level: flags.logLevel, timestamp: pino.stdTimeFunctions.isoTime }, lines);
  // A forced exit (a second signal) still writes the lines of its last turn.
  process.on('exit', lines.flush);
  try {
    return await serveWith(logger, lines.flush, flags, context, testMode, adminToken, {
      oauth,
      clamd,
      failpoint,
    });
  } finally {
    process.off('exit', lines.flush);
    lines.flush();
  }
}

async function serveWith(
  logger: PinoLogger,
  flushLogs: () => void,
  flags: ServeFlags,
  context: CliContext,
  testMode: boolean,
  adminToken: string | undefined,
  {
    oauth,
    clamd,
    failpoint,
  }: {
    oauth: EmbeddedOAuthOptions;
    clamd: ClamdConfig | undefined;
    failpoint: FailpointStep | undefined;
  },
): Promise<number> {
  if (flags.role === 'worker') {
    return serveWorker(logger, flushLogs, flags, context, { testMode, clamd, failpoint });
  }
  let server: RunningDisarm;
  try {
    const blobs = flags.blobs === undefined ? undefined : await openBlobStore(flags.blobs, logger);
    server = await startServer({
      dataDir: flags.dataDir,
      ...(flags.database === undefined ? {} : { database: flags.database }),
      ...(blobs === undefined ? {} : { blobs }),
      port: flags.port,
      storagePort: flags.storagePort,
      host: flags.host,
      ...(flags.publicBaseUrl === undefined ? {} : { publicBaseUrl: flags.publicBaseUrl }),
      ...(flags.storageBaseUrl === undefined ? {} : { storageBaseUrl: flags.storageBaseUrl }),
      syncWaitSeconds: flags.syncWaitSeconds,
      workers: flags.workers ?? Math.max(1, availableParallelism()),
      graceSeconds: flags.graceSeconds,
      adminTokenHashes: adminToken === undefined ? [] : [hashAdminToken(adminToken)],
      ...(flags.metricsToken === undefined ? {} : { metricsToken: flags.metricsToken }),
      testMode,
      demo: flags.demo,
      processing: flags.processing && flags.role === 'all',
      oauth,
      ...(clamd === undefined ? {} : { clamd }),
      renderers: flags.renderers,
      ...(failpoint === undefined ? {} : { failpoint }),
      logger,
    });
  } catch (error) {
    logger.error({ err: error }, 'disarm serve could not start');
    context.stderr.write(
      `disarm serve: cannot start: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 1;
  }

  // Signal handlers first: whoever reads the lines below may signal us at once.
  const stopped = untilStopped(server, logger, context, testMode);
  logger.info(
    {
      apiUrl: server.apiUrl,
      storageUrl: server.storageUrl,
      apiPort: server.apiPort,
      storagePort: server.storagePort,
      testMode,
    },
    'disarm serve listening',
  );
  // Whoever reads the lines below on stderr finds the line above already on stdout.
  flushLogs();
  context.stderr.write(
    `disarm: API on ${server.apiUrl}, storage on ${server.storageUrl}` +
      `${testMode ? ' (TEST MODE: manual clock)' : ''}\n`,
  );
  if (server.demo) context.stderr.write(demoText(server.demo, server.apiUrl));

  await stopped;
  return 0;
}

/**
 * `disarm serve --role worker`: leases and processes queued documents until SIGTERM, which
 * drains (no new lease; documents in flight finish within the grace).
 */
async function serveWorker(
  logger: PinoLogger,
  flushLogs: () => void,
  flags: ServeFlags,
  context: CliContext,
  {
    testMode,
    clamd,
    failpoint,
  }: { testMode: boolean; clamd: ClamdConfig | undefined; failpoint: FailpointStep | undefined },
): Promise<number> {
  let worker: Stoppable;
  try {
    const blobs = flags.blobs === undefined ? undefined : await openBlobStore(flags.blobs, logger);
    worker = await startWorkerNode({
      dataDir: flags.dataDir,
      ...(flags.database === undefined ? {} : { database: flags.database }),
      ...(blobs === undefined ? {} : { blobs }),
      renderers: flags.renderers,
      workers: flags.workers ?? Math.max(1, availableParallelism()),
      graceSeconds: flags.graceSeconds,
      testMode,
      ...(clamd === undefined ? {} : { clamd }),
      ...(failpoint === undefined ? {} : { failpoint }),
      logger,
    });
  } catch (error) {
    logger.error({ err: error }, 'disarm serve could not start');
    context.stderr.write(
      `disarm serve: cannot start: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return 1;
  }
  const stopped = untilStopped(worker, logger, context, testMode);
  const database = describeDatabase(parseDatabaseUrl(flags.database, flags.dataDir));
  logger.info({ role: 'worker', database, testMode }, 'disarm serve processing');
  flushLogs();
  context.stderr.write(
    `disarm: worker processing documents of ${database}${testMode ? ' (TEST MODE: manual clock)' : ''}\n`,
  );
  await stopped;
  return 0;
}

/** What a signal stops: a server or a worker node. */
type Stoppable = Pick<RunningDisarm, 'close' | 'advanceClock' | 'armFailpoint'>;

/** Resolves once a signal (or, in test mode, the parent going away) has shut the server down. */
function untilStopped(
  server: Stoppable,
  logger: PinoLogger,
  context: CliContext,
  testMode: boolean,
): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const stop = (why: string): void => {
      if (stopping) {
        context.stderr.write('disarm: forced exit\n');
        process.exit(1);
      }
      stopping = true;
      logger.info({ why }, 'shutting down');
      server
        .close()
        .catch((error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
        })
        .finally(() => {
          process.off('SIGTERM', onTerm);
          process.off('SIGINT', onInt);
          process.off('message', onMessage);
          process.off('disconnect', onDisconnect);
          logger.info({}, 'stopped');
          resolve();
        });
    };
    const onTerm = (): void => {
      stop('SIGTERM');
    };
    const onInt = (): void => {
      stop('SIGINT');
    };
    const onDisconnect = (): void => {
      stop('the parent process went away');
    };
    const onMessage = (message: unknown): void => {
      if (isArmFailpointMessage(message)) {
        try {
          server.armFailpoint(parseFailpoint(message.step));
          reply({ type: 'disarm:failpoint-armed', id: message.id });
        } catch (error) {
          reply({ type: 'disarm:failpoint-armed', id: message.id, error: String(error) });
        }
        return;
      }
      if (!isAdvanceClockMessage(message)) return;
      server.advanceClock(message.milliseconds).then(
        (now) => {
          reply({ type: 'disarm:clock', id: message.id, now: now.toISOString() });
        },
        (error: unknown) => {
          reply({ type: 'disarm:clock', id: message.id, error: String(error) });
        },
      );
    };
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onInt);
    // A test harness drives the clock (and arms failpoints) over IPC, and its server must not
    // outlive it.
    if (testMode && process.send) {
      process.on('message', onMessage);
      process.on('disconnect', onDisconnect);
    }
  });
}

function reply(message: ClockMessage | FailpointArmedMessage): void {
  process.send?.(message, undefined, undefined, () => undefined);
}

function isAdvanceClockMessage(message: unknown): message is AdvanceClockMessage {
  if (typeof message !== 'object' || message === null) return false;
  const candidate = message as Partial<AdvanceClockMessage>;
  return (
    candidate.type === 'disarm:advance-clock' &&
    typeof candidate.id === 'number' &&
    typeof candidate.milliseconds === 'number'
  );
}

/**
 * The failpoint `DISARM_FAILPOINT` names (README "Crash safety"), refused outside test mode: it
 * makes the process kill itself.
 * @throws {UsageError} outside test mode, or for an unknown step.
 */
function failpointOf(value: string | undefined, testMode: boolean): FailpointStep | undefined {
  if (value === undefined || value === '') return undefined;
  if (!testMode) {
    throw new UsageError(
      `${FAILPOINT_ENV} is only honoured with --test-mode (or ${TEST_MODE_ENV}=1): it makes the process kill itself`,
    );
  }
  try {
    return parseFailpoint(value);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function isArmFailpointMessage(message: unknown): message is ArmFailpointMessage {
  if (typeof message !== 'object' || message === null) return false;
  const candidate = message as Partial<ArmFailpointMessage>;
  return (
    candidate.type === 'disarm:arm-failpoint' &&
    typeof candidate.id === 'number' &&
    typeof candidate.step === 'string'
  );
}

/** The OAuth options the flags describe. */
function oauthOptions(flags: ServeFlags): EmbeddedOAuthOptions {
  const allowAdmin =
    flags.oauthExternalAllowAdmin === true || parseSwitchEnv(EXTERNAL_ALLOW_ADMIN_ENV);
  const external = flags.oauthExternalIssuer;
  const jwksUrl = flags.oauthExternalJwksUrl;
  if ((external === undefined) !== (jwksUrl === undefined)) {
    throw new UsageError('--oauth-external-issuer and --oauth-external-jwks-url go together');
  }
  if (
    external === undefined &&
    (flags.oauthExternalAudience !== undefined ||
      flags.oauthExternalOrgClaim !== undefined ||
      flags.oauthExternalAlgorithms !== undefined ||
      allowAdmin)
  ) {
    throw new UsageError('--oauth-external-* options need --oauth-external-issuer');
  }
  return {
    ...(flags.oauthIssuer === undefined ? {} : { issuer: flags.oauthIssuer }),
    ...(flags.oauthAudience === undefined ? {} : { audience: flags.oauthAudience }),
    ...(external === undefined || jwksUrl === undefined
      ? {}
      : {
          external: {
            issuer: external,
            jwksUrl,
            ...(flags.oauthExternalAudience === undefined
              ? {}
              : { audience: flags.oauthExternalAudience }),
            ...(flags.oauthExternalOrgClaim === undefined
              ? {}
              : { organisationClaim: flags.oauthExternalOrgClaim }),
            ...(flags.oauthExternalAlgorithms === undefined
              ? {}
              : { algorithms: flags.oauthExternalAlgorithms }),
            ...(allowAdmin ? { scopes: ['cdr.api', 'cdr.admin'] } : {}),
          },
        }),
  };
}

/** Commander parser: an `s3://` location (its bucket and prefix are checked when opened). */
function parseBlobsUrl(value: string): string {
  if (!value.startsWith('s3://')) throw new InvalidArgumentError('expected s3://bucket/prefix');
  return value;
}

/** Commander parser: comma-separated asymmetric JWS algorithms. */
function parseAlgorithms(value: string): ExternalAlgorithm[] {
  const names = value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const algorithms = names.filter((name): name is ExternalAlgorithm =>
    (EXTERNAL_ALGORITHMS as readonly string[]).includes(name),
  );
  if (names.length === 0 || algorithms.length !== names.length) {
    throw new InvalidArgumentError(
      `expected some of ${EXTERNAL_ALGORITHMS.join(', ')} (never none or HS*)`,
    );
  }
  return algorithms;
}

function demoText(demo: DemoAccount, apiUrl: string): string {
  return `
disarm: created the demo organisation ${demo.organisationId} (plan internal: not metered)
and an API key. The key is shown only now; it is not stored anywhere you can read it back:

  ${demo.apiKey}

Try it:

  curl -H "X-Api-Key: ${demo.apiKey}" -F file=@photo.png "${apiUrl}/v1/documents?wait=true"

`;
}

function serveHelpText(): string {
  return `
Environment (a flag given on the command line wins):
  DISARM_PORT, DISARM_STORAGE_PORT, DISARM_HOST, DISARM_DATA_DIR, ${DATABASE_URL_ENV},
  DISARM_ROLE, DISARM_BLOBS, DISARM_PUBLIC_BASE_URL, DISARM_STORAGE_BASE_URL,
  DISARM_SYNC_WAIT_SECONDS, DISARM_WORKERS, DISARM_GRACE_SECONDS, DISARM_ADMIN_TOKEN,
  DISARM_METRICS_TOKEN, ${TEST_MODE_ENV}=1, DISARM_LOG_LEVEL, DISARM_OAUTH_ISSUER,
  DISARM_OAUTH_AUDIENCE, DISARM_OAUTH_EXTERNAL_ISSUER, DISARM_OAUTH_EXTERNAL_JWKS_URL,
  DISARM_OAUTH_EXTERNAL_AUDIENCE, DISARM_OAUTH_EXTERNAL_ORG_CLAIM,
  DISARM_OAUTH_EXTERNAL_ALGORITHMS, DISARM_OAUTH_EXTERNAL_ALLOW_ADMIN, DISARM_CLAMD,
  DISARM_CLAMD_FAIL_OPEN, DISARM_RENDERERS, ${FAILPOINT_ENV}=<step> (test mode only: the process
  kills itself at that step; see README "Crash safety")

Data folder (--data-dir):
  disarm.sqlite                 organisations, key hashes, documents, the queue, charges
                                (synchronous = FULL: on disk before a request is answered)
  disarm.sqlite-counters        per-minute rate-limit counters (synchronous = NORMAL: a power
                                cut may forget the last moments of counts, never a charge)
  blobs/                        submitted and cleaned files, staged uploads (unless --blobs)

Blobs in S3 (--blobs s3://bucket/prefix): credentials, region and endpoint come from the AWS
  environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL_S3 or
  AWS_ENDPOINT_URL for an S3-compatible service, addressed path-style). Links are presigned by
  the bucket; the storage port then serves nothing.
  secrets/link-signing.key      HMAC secret of the storage links (made on first start, 0600)
  secrets/token-signing.kek     AES-256-GCM key sealing the OAuth signing keys (same; every
                                process sharing disarm.sqlite needs the same file)

OAuth:
  POST /connect/token issues one-hour ES256 access tokens to clients made with
  disarm admin client create; GET /.well-known/jwks.json publishes their keys.

Examples:
  $ disarm serve
  $ DISARM_ADMIN_TOKEN=$(openssl rand -hex 32) disarm serve --data-dir /var/lib/disarm --workers 4
  $ disarm serve --port 0 --storage-port 0 --test-mode
  $ disarm serve --clamd /run/clamav/clamd.ctl
  $ disarm serve --role api --database postgres://disarm@db.internal/disarm
  $ disarm serve --role worker --database postgres://disarm@db.internal/disarm
  $ AWS_ENDPOINT_URL=http://127.0.0.1:9000 disarm serve --blobs s3://cdr-blobs/prod
  $ disarm serve --oauth-external-issuer https://login.example.com/ \\
      --oauth-external-jwks-url https://login.example.com/.well-known/jwks.json
`;
}
