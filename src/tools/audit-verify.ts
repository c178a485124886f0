// `npm run audit:verify [-- --expect <sequence>:<hash>]`: checks the audit trail AUDIT_LOG names (docs/operations.md
// "The audit trail"). Exit 0: the chain holds; 1: a record is missing, moved or changed (named); 2: it cannot be read.
import '../entry/supported-node';
import '../entry/load-env-file';
import { ConfigError, loadConfig } from '../config';
import { openAuditLogReader } from '../audit/open';
import { AUDIT_LOG, describeAuditLogSetting } from '../audit/setting';
import type { AuditHead, AuditVerdict } from '../security/audit-chain';

export const AUDIT_VERIFY_USAGE = `usage: npm run audit:verify [-- --expect <sequence>:<hash>]
  checks the hash chain of the audit trail AUDIT_LOG names (default: the embedded stack's file)
  --expect  a head kept elsewhere (a log line "audit record appended", an earlier run's output): the trail must
            reach it, so records cut from its end are found too`;

/** Parses the command line; a usage problem is an Error whose message is shown with AUDIT_VERIFY_USAGE. */
export function parseAuditVerifyArgs(argv: string[]): { expect?: AuditHead } {
  if (argv.length === 0) return {};
  if (argv[0] !== '--expect' || argv.length !== 2) throw new Error(`unexpected argument ${argv[0]}`);
  const match = /^(\d+):([0-9a-f]{64})$/.exec(argv[1]!);
  if (!match) throw new Error('--expect needs <sequence>:<64 hex digits>');
  return { expect: { sequence: Number(match[1]), hash: match[2]! } };
}

/** The report's lines and the exit code. */
export function formatVerdict(where: string, verdict: AuditVerdict): { text: string; code: number } {
  if (verdict.ok)
    return {
      text:
        `audit trail ${where}: ok, ${verdict.records} record(s); head ${verdict.head.sequence}:${verdict.head.hash}\n` +
        '(keep the head elsewhere: --expect finds records later cut from the end)\n',
      code: 0,
    };
  return {
    text:
      `audit trail ${where}: BROKEN at record ${verdict.sequence}` +
      `${verdict.position !== undefined ? ` (position ${verdict.position} in the store)` : ''}: ${verdict.problem}\n` +
      `the chain holds up to record ${verdict.lastGood.sequence}\n`,
    code: 1,
  };
}

async function main(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseAuditVerifyArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${AUDIT_VERIFY_USAGE}\n`);
    return 2;
  }
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
    throw err;
  }
  const where = describeAuditLogSetting(config.audit);
  const log = openAuditLogReader(config.audit);
  try {
    const { text, code } = formatVerdict(where, await log.verify(args.expect));
    (code === 0 ? process.stdout : process.stderr).write(text);
    return code;
  } catch (err) {
    process.stderr.write(`audit trail ${where} cannot be read (${AUDIT_LOG}): ${(err as Error).message}\n`);
    return 2;
  } finally {
    await log.close().catch(() => undefined);
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`audit:verify: ${(err as Error).message ?? String(err)}\n`);
      process.exit(2);
    },
  );
}
