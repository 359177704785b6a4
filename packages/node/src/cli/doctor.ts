import type { Command } from 'commander';

import {
  createRenderers,
  renderersByFormat,
  RendererUnavailableError,
} from '../render/renderers.ts';
import { addClamdOptions, clamdConfigOf } from './_clamd.ts';
import type { ClamdFlags } from './_clamd.ts';
import { EXIT_CODES, UsageError } from './_exit-codes.ts';
import { addRendererOption } from './_renderers.ts';
import type { RendererFlags } from './_renderers.ts';
import { probeTools } from './_tools.ts';
import type { ToolReport } from './_tools.ts';
import type { CliContext } from './context.ts';

/** Flags of `disarm doctor`. */
interface DoctorFlags extends ClamdFlags, RendererFlags {
  readonly json?: true;
}

/** What `disarm doctor --json` prints. */
interface DoctorReport {
  /** False when the configuration is broken: some files would fail. */
  readonly ok: boolean;
  readonly tools: readonly ToolReport[];
  /** The renderer that draws each format returned as PDF, by extension. */
  readonly renderers: Readonly<Record<string, string>>;
  /** What is broken, one sentence each. */
  readonly problems: readonly string[];
}

/**
 * Adds `disarm doctor` to `program`: lists the external programs the engine uses, found or not,
 * with their versions, and which renderer draws each format returned as PDF. Exit status 0 when
 * every supported format can be processed (the built-in renderer always can), 2 when the
 * configuration is broken (a renderer named in `--renderers` is not ready, a fail-closed clamd
 * does not answer).
 */
export function registerDoctorCommand(program: Command, context: CliContext): void {
  const command = program
    .command('doctor')
    .summary('check the external programs disarm uses')
    .description(
      'List every external program the engine uses, found or not, with its version, and the ' +
        'renderer that draws each format returned as PDF (svg, html, htm, ods, odp) with the ' +
        'given --renderers and --clamd. Exit status 0 when every supported format can be ' +
        'processed, 2 when the configuration is broken.',
    )
    .option('--json', 'print one JSON object instead of text')
    .addHelpText('after', doctorHelpText())
    .action(async () => {
      try {
        context.exitCode = await doctor(command.opts<DoctorFlags>(), context);
      } catch (error) {
        if (error instanceof UsageError) {
          command.error(`error: ${error.message}`, { exitCode: EXIT_CODES.usage });
        }
        throw error;
      }
    });
  addRendererOption(command);
  addClamdOptions(command);
}

async function doctor(flags: DoctorFlags, context: CliContext): Promise<number> {
  const clamd = clamdConfigOf(flags);
  const problems: string[] = [];
  const [tools, renderers] = await Promise.all([
    probeTools(clamd),
    chosenRenderers(flags, problems),
  ]);
  const clamdReport = tools.find((tool) => tool.name === 'clamd');
  if (clamd !== undefined && clamd.failOpen !== true && clamdReport?.state !== 'found') {
    problems.push(
      `clamd at ${clamdReport?.path ?? 'its address'} does not answer (${clamdReport?.detail ?? 'no answer'}), so every file would fail`,
    );
  }
  const report: DoctorReport = { ok: problems.length === 0, tools, renderers, problems };
  context.stdout.write(flags.json === true ? `${JSON.stringify(report)}\n` : toText(report, flags));
  return report.ok ? EXIT_CODES.cleaned : EXIT_CODES.failed;
}

/**
 * The renderer of each format as the workers would choose it. A named renderer that is not ready
 * is a problem; the table then shows the ready ones, as far as the selection goes.
 */
async function chosenRenderers(
  flags: RendererFlags,
  problems: string[],
): Promise<Record<string, string>> {
  let renderers;
  try {
    renderers = await createRenderers({ selection: flags.renderers });
  } catch (error) {
    if (!(error instanceof RendererUnavailableError)) throw error;
    problems.push(`${error.message}, so the workers would fail every file`);
    const selection = flags.renderers;
    const ready = await createRenderers({ selection: 'auto' });
    renderers = ready.filter(
      (renderer) => selection === 'auto' || selection.includes(renderer.name),
    );
  }
  try {
    return renderersByFormat(await Promise.all(renderers.map((renderer) => renderer.status())));
  } finally {
    await Promise.all(renderers.map((renderer) => renderer.close()));
  }
}

function toText(report: DoctorReport, flags: RendererFlags): string {
  const width = Math.max(...report.tools.map((tool) => tool.name.length));
  const lines = ['Programs'];
  for (const tool of report.tools) {
    const facts = [tool.state, tool.version, tool.path, tool.detail].filter(
      (fact) => fact !== undefined,
    );
    lines.push(`  ${tool.name.padEnd(width)}  ${facts.join('  ')}`);
    lines.push(`  ${''.padEnd(width)}  ${tool.use}`);
  }
  const selection = flags.renderers === 'auto' ? 'auto' : flags.renderers.join(',');
  lines.push('', `Renderers (--renderers ${selection})`);
  for (const [format, renderer] of Object.entries(report.renderers)) {
    lines.push(`  ${format.padEnd(5)} ${renderer}`);
  }
  lines.push('');
  if (report.ok) {
    lines.push('OK: every supported format can be processed.');
  } else {
    for (const problem of report.problems) lines.push(`Problem: ${problem}.`);
  }
  return `${lines.join('\n')}\n`;
}

function doctorHelpText(): string {
  return `
Exit status:
  0   every supported format can be processed (the built-in renderer draws any
      format no installed renderer does, with less fidelity)
  2   the configuration is broken: a renderer named in --renderers is not ready,
      or clamd (without --clamd-fail-open) does not answer
  64  usage error

Examples:
  $ disarm doctor
  $ disarm doctor --json
  $ disarm doctor --renderers builtin --clamd /run/clamav/clamd.ctl
`;
}
