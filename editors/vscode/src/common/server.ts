/**
 * Start, stop and talk to `tether serve`.
 *
 * Why restarts are serialized: a settings change, a new API key and the Restart command can arrive
 * together; starting two servers on one workspace would race on its checkpoints. Like ruff-vscode,
 * at most one restart runs and at most one more is queued behind it.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  ResponseError,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
  TransportKind,
} from "vscode-languageclient/node";
import { API_KEY_ENV, API_KEY_SECRET, CLIENT_ID, COMMANDS, CONFIG_SECTION, EXTENSION_NAME } from "./constants";
import { createLog, logError, logInfo, logWarn } from "./log";
import type { AcceptResult, ServerCommand, StatusResult, TetherEvent } from "./protocol";
import { initializationOptions, resolveServerCommand, resolveSettings, serverEnvironment } from "./settings";
import type { StatusItem } from "./status";
import { which } from "./which";
import { cleanDocuments, saveAcceptedBuffer } from "./buffers";
import { type ApprovalAnswer, type ApprovalQuestion, answerFor, choicesFor, parseQuestion, questionDetail, questionTitle } from "./approve";

/** Notices already shown this session (file, setting, value): each repository override is named once. */
const shownNotices = new Set<string>();

/**
 * Answer `tether/approve` with a modal; Deny asks for an optional message for the model. A
 * malformed question, a closed modal or a cancelled request (the call was cancelled, or timed out
 * on the server) is a deny.
 */
async function askPerson(params: unknown, token: vscode.CancellationToken): Promise<ApprovalAnswer> {
  const question = parseQuestion(params);
  if (!question) {
    logWarn(`tether/approve with malformed params: ${JSON.stringify(params)}; answered deny`);
    return { choice: "deny" };
  }
  const cancelled = new Promise<undefined>((resolve) => token.onCancellationRequested(() => resolve(undefined)));
  const picked = await Promise.race([
    vscode.window.showWarningMessage(questionTitle(question), { modal: true, detail: questionDetail(question) }, ...choicesFor(question)),
    cancelled,
  ]);
  if (token.isCancellationRequested) return { choice: "deny" };
  let message: string | undefined;
  if (picked === "Deny") {
    message = await Promise.race([
      vscode.window.showInputBox({
        title: "Tether: tell the agent why (optional)",
        prompt: "Sent to the model with the denial, e.g. what to do instead. Escape sends none.",
        ignoreFocusOut: true,
      }),
      cancelled,
    ]);
  }
  return answerFor(picked, message?.trim() || undefined);
}

function isAcceptResult(value: unknown): value is AcceptResult {
  const v = value as Partial<AcceptResult> | null;
  return typeof v === "object" && v !== null && Array.isArray(v.applied) && typeof v.proposal?.uri === "string";
}

/** Raised when a command is used while the server cannot answer; the message says what to do. */
export class ServerUnavailable extends Error {}

/** A server command answered with an error (e.g. InvalidParams, a stale proposal). */
export class CommandFailed extends Error {
  constructor(
    readonly command: string,
    message: string,
  ) {
    super(message);
  }
}

export class TetherServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private restartPromise: Promise<void> | undefined;
  private restartQueued = false;
  private failure: string | undefined;
  private starting = false;
  private readonly events = new vscode.EventEmitter<TetherEvent>();
  private readonly disposables: vscode.Disposable[] = [];
  /** Permissions chosen with Set Permission Mode; survive restarts, not reloads. */
  sessionPermissions: string | undefined;

  /** Fired on every `tether/event` notification (tool calls, proposal changes, rollbacks). */
  readonly onEvent = this.events.event;
  private readonly turnUpdates = new vscode.EventEmitter<unknown>();
  /** Fired on every `tether/turn` notification (a running agent turn, piece by piece; the chat view). */
  readonly onTurn = this.turnUpdates.event;
  /**
   * Asks the person somewhere other than the modal (the chat view's card, while it is visible);
   * returns undefined to leave the question to the modal.
   */
  inlineApprover: ((question: ApprovalQuestion, token: vscode.CancellationToken) => Promise<ApprovalAnswer> | undefined) | undefined;

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly status: StatusItem,
  ) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** Restart (or first start), serialized: at most one in flight and one queued. */
  async restart(): Promise<void> {
    if (this.restartPromise) {
      this.restartQueued = true;
      return this.restartPromise;
    }
    this.restartPromise = (async () => {
      do {
        this.restartQueued = false;
        await this.stop();
        await this.start();
      } while (this.restartQueued);
    })().finally(() => {
      this.restartPromise = undefined;
    });
    return this.restartPromise;
  }

  private async start(): Promise<void> {
    this.failure = undefined;
    const trusted = vscode.workspace.isTrusted;
    if (!trusted) {
      logWarn("Restricted Mode: Tether runs read-only (previews, proposals, log, checkpoints); trust the workspace for more.");
    }
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder || folder.uri.scheme !== "file") {
      this.failure = "Tether needs a folder on disk: open one (File → Open Folder).";
      this.status.off(this.failure);
      return;
    }
    const config = vscode.workspace.getConfiguration(CONFIG_SECTION, folder.uri);
    const folderSettings = path.join(folder.uri.fsPath, ".vscode", "settings.json");
    const resolved = resolveSettings(config, {
      workspace: vscode.workspace.workspaceFile?.scheme === "file" ? vscode.workspace.workspaceFile.fsPath : folderSettings,
      folder: folderSettings,
    });
    const { settings, problems } = resolved;
    for (const problem of problems) {
      logWarn(problem);
      void vscode.window.showWarningMessage(`Tether: ${problem}`);
    }
    for (const notice of resolved.ignored) {
      const text = `Tether: ${notice.key} = ${JSON.stringify(notice.value)} in ${notice.file} is ignored: ${notice.message}.`;
      logWarn(text);
      const once = `${notice.file}\0${notice.key}\0${JSON.stringify(notice.value)}`;
      if (!shownNotices.has(once)) {
        shownNotices.add(once); // once per file and setting, not at every restart
        void vscode.window.showWarningMessage(text);
      }
    }
    const line = resolveServerCommand(settings, (name) => which(name));
    const apiKey = (await this.secrets.get(API_KEY_SECRET)) ?? process.env[API_KEY_ENV];
    const serverOptions: ServerOptions = {
      command: line.command,
      args: line.args,
      transport: TransportKind.stdio,
      options: { cwd: folder.uri.fsPath, env: serverEnvironment(process.env, apiKey) },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }],
      workspaceFolder: folder,
      outputChannel: createLog(),
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: initializationOptions(resolved, this.sessionPermissions, trusted),
      initializationFailedHandler: () => false,
      middleware: {
        // The server's own code lenses and quick fixes run `tether.accept` directly: give them the
        // same save-if-it-was-clean behaviour as the palette commands (buffers.ts).
        executeCommand: async (command, args, next) => {
          const clean = command === "tether.accept" ? cleanDocuments() : undefined;
          const result: unknown = await next(command, args);
          if (!clean) return result;
          if (isAcceptResult(result)) await saveAcceptedBuffer(result, clean);
          return result;
        },
      },
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => {
          // While starting, start()'s catch reports the failure: one message, not two.
          if (!this.starting) this.fail(`${EXTENSION_NAME}'s server stopped unexpectedly. Its last words are in the logs.`);
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };
    logInfo(`starting: ${line.command} ${line.args.join(" ")} (from ${line.origin}) in ${folder.uri.fsPath}`);
    this.status.busy("starting…");
    const client = new LanguageClient(CLIENT_ID, EXTENSION_NAME, serverOptions, clientOptions);
    this.client = client;
    client.onNotification("tether/event", (event: TetherEvent) => {
      this.events.fire(event);
    });
    client.onNotification("tether/turn", (update: unknown) => {
      this.turnUpdates.fire(update);
    });
    client.onRequest("tether/approve", (params: unknown, token: vscode.CancellationToken) => {
      const question = parseQuestion(params);
      return (question && this.inlineApprover?.(question, token)) ?? askPerson(params, token);
    });
    this.starting = true;
    try {
      await client.start();
    } catch (error) {
      const hint =
        line.origin === "tether.server.path"
          ? `Check the user setting tether.server.path (${line.command}).`
          : `Install Tether (pip install tether) or set tether.server.path in your user settings (tried ${line.command} ${line.args.join(" ")}).`;
      this.starting = false;
      this.fail(`Tether's server failed to start (${(error as Error).message}; the logs say why). ${hint}`);
      this.client = undefined;
      await client.dispose().catch(() => undefined);
      return;
    }
    this.starting = false;
    logInfo("server running");
    await this.refreshStatus();
  }

  private fail(message: string): void {
    if (this.failure === message) return;
    this.failure = message;
    logError(message);
    this.status.error(message);
    void vscode.window.showErrorMessage(message, "Show Logs", "Restart Server").then((choice) => {
      if (choice === "Show Logs") void vscode.commands.executeCommand(COMMANDS.showLogs);
      if (choice === "Restart Server") void vscode.commands.executeCommand(COMMANDS.restart);
    });
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    try {
      if (client.state !== State.Stopped) await client.stop(5000);
    } catch (error) {
      logWarn(`stopping the server: ${(error as Error).message}`);
    }
    await client.dispose().catch(() => undefined);
  }

  /** Ask `tether.status` and show it; failures only go to the log (the status item shows them). */
  async refreshStatus(): Promise<StatusResult | undefined> {
    if (!this.running) return undefined;
    try {
      const status = await this.send<StatusResult>("tether.status", {});
      this.status.ready(status);
      return status;
    } catch (error) {
      logWarn(`tether.status failed: ${(error as Error).message}`);
      return undefined;
    }
  }

  /**
   * Run a server command with its one JSON-object argument (docs/lsp.md). Errors become
   * {@link ServerUnavailable} (not running; says how to fix it) or {@link CommandFailed}.
   */
  async request<T>(command: ServerCommand, args: Record<string, unknown>, token?: vscode.CancellationToken): Promise<T> {
    // A command issued during a restart waits for the new server rather than failing.
    if (this.restartPromise) await this.restartPromise;
    return this.send<T>(command, args, token);
  }

  /** {@link request} without waiting for a restart (used by the restart itself). */
  private async send<T>(command: ServerCommand, args: Record<string, unknown>, token?: vscode.CancellationToken): Promise<T> {
    const client = this.client;
    if (!client || client.state !== State.Running) {
      throw new ServerUnavailable(this.failure ?? "Tether's server is not running. Run 'Tether: Restart Server', or open the logs.");
    }
    try {
      return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] }, token)) as T;
    } catch (error) {
      if (error instanceof ResponseError) throw new CommandFailed(command, error.message);
      throw error;
    }
  }

  dispose(): void {
    this.events.dispose();
    this.turnUpdates.dispose();
    this.disposables.forEach((d) => {
      d.dispose();
    });
    void this.stop();
  }
}
