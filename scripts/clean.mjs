#!/usr/bin/env node
// Removes the given output folders before tsc compiles into them (dist-tools, package.json's dev:tools): tsc never
// deletes, and the output of a moved source (src/config.ts → src/config/) would shadow its new place.
import { rmSync } from 'node:fs';

for (const dir of process.argv.slice(2)) rmSync(dir, { recursive: true, force: true });
