// The Prompty language server in VS Code: runs `prompty lsp` (stdio) for `.prompty` documents,
// restarts it when `prompty.server.path` changes, and stops it with the editor.
'use strict';

const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

/** @type {LanguageClient | undefined} */
let client;

/** @param {vscode.FileSystemWatcher} watcher */
async function start(watcher) {
  const command = vscode.workspace.getConfiguration('prompty').get('server.path') || 'prompty';
  // `transport: stdio` makes the client add `--stdio`, which `prompty lsp` accepts.
  const serverOptions = { command, args: ['lsp'], transport: TransportKind.stdio };
  const clientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'prompty' },
      { scheme: 'untitled', language: 'prompty' },
    ],
    // Children, `${file:}` targets and OpenAPI documents a prompt reads are checked again when
    // they change on disk.
    synchronize: { fileEvents: watcher },
  };
  client = new LanguageClient('prompty', 'Prompty', serverOptions, clientOptions);
  await client.start();
}

async function stop() {
  if (client) {
    const running = client;
    client = undefined;
    await running.stop();
  }
}

/** @param {vscode.ExtensionContext} context */
async function activate(context) {
  const watcher = vscode.workspace.createFileSystemWatcher('**/*.{prompty,json,yaml,yml,md,txt}');
  context.subscriptions.push(
    watcher,
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration('prompty.server.path')) {
        await stop();
        await start(watcher);
      }
    }),
  );
  await start(watcher);
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };
