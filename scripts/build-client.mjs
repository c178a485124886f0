// Builds packages/client/dist (CommonJS and declarations) from src/client.ts: the prepack of `npm run client:pack`.
// The native compiler (TypeScript 7, as scripts/build.mjs uses) when installed: a few seconds instead of half a
// minute; TypeScript 5.9 otherwise.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'packages', 'client');
const require = createRequire(import.meta.url);

function compiler() {
  for (const name of ['typescript-native', 'typescript']) {
    try {
      const dir = dirname(require.resolve(`${name}/package.json`));
      return { bin: join(dir, 'bin', 'tsc'), flags: name === 'typescript-native' ? ['--singleThreaded'] : [] };
    } catch {
      // not installed: the next one
    }
  }
  process.stderr.write('No TypeScript compiler in node_modules: run `npm install` in the repository.\n');
  process.exit(1);
}

const tsc = compiler();
// tsc never deletes: a moved source file's old output would otherwise be packed.
rmSync(join(packageDir, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [tsc.bin, '-p', join(packageDir, 'tsconfig.json'), ...tsc.flags], { stdio: 'inherit' });
