// Tokenizes .pinn files with the grammar of this extension, as VS Code does (vscode-textmate on the
// oniguruma regular expressions), and prints, per file, each token as [line, start, end, scope]: 1-based
// line, 0-based start and end in code points, the token's innermost scope.
//
//   node test/tokenize.js FILE.pinn ...    (tests/editor/test_textmate.py runs it on every spec)
'use strict';
const fs = require('fs');
const path = require('path');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const grammarPath = path.join(__dirname, '..', 'syntaxes', 'pinn.tmLanguage.json');
const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
const onigLib = oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength)).then(() => ({
  createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
  createOnigString: (text) => new oniguruma.OnigString(text),
}));
const registry = new vsctm.Registry({
  onigLib,
  loadGrammar: async (scopeName) => scopeName === 'source.pinn'
    ? vsctm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath) : null,
});

const codePoints = (text) => Array.from(text).length;

registry.loadGrammar('source.pinn').then((grammar) => {
  const out = {};
  for (const file of process.argv.slice(2)) {
    const tokens = [];
    let stack = vsctm.INITIAL;
    fs.readFileSync(file, 'utf8').split(/\r?\n/).forEach((line, i) => {
      const result = grammar.tokenizeLine(line, stack);
      for (const t of result.tokens) {
        const end = Math.min(t.endIndex, line.length);
        if (t.startIndex < end) {
          tokens.push([i + 1, codePoints(line.slice(0, t.startIndex)), codePoints(line.slice(0, end)),
                       t.scopes[t.scopes.length - 1]]);
        }
      }
      stack = result.ruleStack;
    });
    out[file] = tokens;
  }
  process.stdout.write(JSON.stringify(out));
}).catch((err) => { console.error(err); process.exit(1); });
