// The VS Code extension of pinnspec: the .pinn language (its TextMate grammar, syntaxes/pinn.tmLanguage.json)
// and its language server, `pinnspec lsp`, started over stdin and stdout (the setting pinnspec.command says
// how to start it: the default runs `pinnspec` from the PATH).
'use strict';
const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

async function activate(context) {
  const [command, ...args] = vscode.workspace.getConfiguration('pinnspec').get('command');
  client = new LanguageClient('pinnspec', 'pinnspec', { command, args },
                              { documentSelector: [{ scheme: 'file', language: 'pinn' }, { scheme: 'untitled', language: 'pinn' }] });
  try {
    await client.start();
  } catch (err) {
    vscode.window.showErrorMessage(`pinnspec: could not start the language server with "${[command, ...args].join(' ')}" `
      + `(${err.message}). Install it (pip install 'pinnspec[lsp]') or set pinnspec.command to the pinnspec of your `
      + 'environment, e.g. ["/path/to/.venv/bin/pinnspec", "lsp"].');
  }
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
