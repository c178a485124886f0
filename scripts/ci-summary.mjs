#!/usr/bin/env node
// CI's closing line: the tests of every jest run of .ci/run added up, from the JSON results each run wrote with
// `--json --outputFile` (one file per run), as one plain line, "tests: N passed, N failed, N skipped". Jest's own
// summary ("Tests: 1 failed, 1331 passed, 1334 total") is not in a form CI's log readers take, and tools that print
// pytest-style lines (Schemathesis) could otherwise be read as the run's result. Exits 1 if a file is missing or
// unreadable, or a run failed.
import { readFileSync } from 'node:fs';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node scripts/ci-summary.mjs RESULTS.json [...]');
  process.exit(2);
}
let passed = 0;
let failed = 0;
let skipped = 0;
let suitesFailed = 0;
for (const file of files) {
  let results;
  try {
    results = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    console.error(`ci-summary: cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
  passed += results.numPassedTests;
  failed += results.numFailedTests;
  skipped += results.numPendingTests + (results.numTodoTests ?? 0);
  // A file that failed to run (a syntax error, a hook that threw) has no failed test but a failed suite.
  suitesFailed += results.numRuntimeErrorTestSuites ?? 0;
  console.log(
    `ci-summary: ${file}: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${results.numPendingTests} skipped in ${results.numTotalTestSuites} files`,
  );
}
failed += suitesFailed;
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
