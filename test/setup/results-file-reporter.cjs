// Writes the run's results, as `jest --json` writes them, to the file PAYLATER_TEST_RESULTS names (jest.config.js
// adds this reporter only then): .ci/run runs the README's `npm test` exactly as written and still adds its tests
// up in the closing line (scripts/ci-summary.mjs).
const { mkdirSync, writeFileSync } = require('node:fs');
const { dirname } = require('node:path');

class ResultsFileReporter {
  constructor(_globalConfig, options) {
    this.file = options.file;
  }

  onRunComplete(_contexts, results) {
    mkdirSync(dirname(this.file), { recursive: true });
    // The per-test details stay in jest's own output: the counts are what the closing line needs.
    const { testResults: _files, ...counts } = results;
    writeFileSync(this.file, `${JSON.stringify(counts, null, 2)}\n`);
  }
}

module.exports = ResultsFileReporter;
