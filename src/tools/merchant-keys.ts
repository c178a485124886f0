// `npm run merchant-keys -- <command>` and `npm run erase-merchant -- <merchant> --confirm <merchant>`: the merchants'
// payload keys (docs/operations.md#erasing-a-merchant, docs/decisions/0048-per-merchant-payload-keys.md), in the store
// MERCHANT_KEY_STORE names, with the same .env as the other processes.
import '../entry/supported-node';
import '../entry/load-env-file';
import { userInfo } from 'node:os';
import { loadConfig, type Config } from '../config';
import { openAuditLogWriter } from '../audit/open';
import { AUDIT_LOG, describeAuditLogSetting } from '../audit/setting';
import { openMerchantPayloadKeys } from '../keys/payload-codec';
import { MERCHANT_ID_PATTERN } from '../shared/ids';
import { connectClient } from '../temporal/connection';
import { createDataConverter } from '../temporal/data-converter';
import { eraseMerchant } from '../temporal/merchant-erasure';

export const MERCHANT_KEYS_USAGE = `usage: npm run merchant-keys -- <command>
  list                                   every merchant in the key store: its key generations, or when it was erased
  rotate <merchant>                      a new key generation: new payloads use it, older ones keep theirs
  erase <merchant> --confirm <merchant>  terminate the merchant's open workflows, record the erasure in the audit
                                         trail (AUDIT_LOG) and destroy its keys: none of its payloads can be read
                                         again, by anyone (also: npm run erase-merchant -- <merchant> --confirm <merchant>)`;

export type MerchantKeysArgs =
  { command: 'list' } | { command: 'rotate'; merchantId: string } | { command: 'erase'; merchantId: string };

/** Parses the command line; a usage problem is an Error whose message is shown with MERCHANT_KEYS_USAGE. */
export function parseMerchantKeysArgs(argv: string[]): MerchantKeysArgs {
  const [command, merchantId, ...rest] = argv;
  if (command === 'list') {
    if (merchantId !== undefined) throw new Error(`unexpected argument ${merchantId}`);
    return { command };
  }
  if (command !== 'rotate' && command !== 'erase')
    throw new Error(command ? `unknown command ${command}` : 'a command is required');
  if (merchantId === undefined || !MERCHANT_ID_PATTERN.test(merchantId))
    throw new Error(`${command} needs a merchant id (${String(MERCHANT_ID_PATTERN)})`);
  if (command === 'rotate') {
    if (rest.length > 0) throw new Error(`unexpected argument ${rest[0]}`);
    return { command, merchantId };
  }
  // The merchant's id twice: an erasure cannot be undone, so it is never one word away.
  if (rest[0] !== '--confirm' || rest[1] !== merchantId || rest.length !== 2)
    throw new Error(`erase cannot be undone: repeat the merchant's id as --confirm ${merchantId}`);
  return { command, merchantId };
}

function osUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'unknown'; // no passwd entry (a container's arbitrary uid)
  }
}

async function main(argv: string[]): Promise<number> {
  let args: MerchantKeysArgs;
  try {
    args = parseMerchantKeysArgs(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${MERCHANT_KEYS_USAGE}\n`);
    return 2;
  }
  const config = loadConfig(process.env);
  const keys = await openMerchantPayloadKeys(config);
  try {
    if (args.command === 'list') {
      for (const record of await keys.store.list())
        process.stdout.write(
          record.erasure
            ? `${record.merchantId}: erased on ${record.erasure.at} by ${record.erasure.by}\n`
            : `${record.merchantId}: generations ${record.keys.map((k) => k.generation).join(', ')} (newest encrypts)\n`,
        );
      return 0;
    }
    if (args.command === 'rotate') {
      const generation = await keys.ring.rotate(args.merchantId);
      process.stdout.write(
        `${args.merchantId}: generation ${generation} encrypts from now on (other processes within MERCHANT_KEY_CACHE_TTL)\n`,
      );
      return 0;
    }
    return await erase(config, keys, args.merchantId);
  } finally {
    await keys.close();
  }
}

async function erase(
  config: Config,
  keys: Awaited<ReturnType<typeof openMerchantPayloadKeys>>,
  merchantId: string,
): Promise<number> {
  let audit;
  try {
    audit = await openAuditLogWriter(config.audit);
  } catch (err) {
    throw new Error(
      `${AUDIT_LOG} (${describeAuditLogSetting(config.audit)}) cannot be opened, so nothing was erased: ${(err as Error).message}`,
    );
  }
  const address = config.temporal.address ?? `127.0.0.1:${config.temporal.devServer.port}`;
  const { client, connection } = await connectClient(
    { address, namespace: config.temporal.namespace, env: config.env },
    { dataConverter: createDataConverter(keys.codec) },
  );
  try {
    const erased = await eraseMerchant(
      { client, ring: keys.ring, audit },
      { merchantId, actor: { kind: 'tool', name: 'erase-merchant' }, via: 'tool', details: { osAccount: osUser() } },
    );
    process.stdout.write(
      `audit record ${erased.audit.sequence} (${erased.audit.hash.slice(0, 12)})\n` +
        `terminated ${erased.terminated.length} open workflow(s)${erased.terminated.length ? `: ${erased.terminated.join(', ')}` : ''}\n` +
        `merchant ${merchantId}: keys ${erased.alreadyErased ? 'were already erased' : 'erased'} on ${erased.erasedAt}; ` +
        'its payloads can no longer be decoded (API and workers forget the keys within MERCHANT_KEY_CACHE_TTL)\n',
    );
    return 0;
  } finally {
    await connection.close();
    await audit.close();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`merchant-keys: ${(err as Error).message ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
