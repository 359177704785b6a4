/** What a command needs from its process: output streams, and where to leave its exit status. */
export interface CliContext {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown; readonly isTTY?: boolean };
  /** Set by the command that ran; see `EXIT_CODES`. */
  exitCode: number;
}
