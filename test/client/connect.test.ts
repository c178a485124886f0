/**
 * The client package's settings (src/client/connect.ts): the service's variable names, the development key only
 * towards loopback, errors that name the variable and never a key. A plain module: no server needed.
 */
import {
  CLIENT_DEFAULTS,
  isLoopbackAddress,
  PaylaterClientConfigError,
  paylaterClientSettings,
  paylaterDataConverter,
} from '../../src/client/connect';
import { DEVELOPMENT_PAYLOAD_KEY_ID, ENCRYPTED_ENCODING, KEY_ID_METADATA_KEY } from '../../src/security/payload-codec';
import { TEST_PAYLOAD_ENCRYPTION_KEYS } from '../helpers/temporal';

const utf8 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');

describe('paylaterClientSettings', () => {
  it("with nothing set: npm start's embedded stack (localhost:7233, paylater, the development key)", () => {
    const settings = paylaterClientSettings({});
    expect(settings).toMatchObject({
      address: CLIENT_DEFAULTS.address,
      namespace: 'default',
      taskQueue: 'paylater',
      developmentKey: true,
    });
    expect(settings.payloadKeys.map((k) => k.id)).toEqual([DEVELOPMENT_PAYLOAD_KEY_ID]);
    expect(settings.apiKey).toBeUndefined();
  });

  it("reads the service's variable names; options win; empty counts as unset", () => {
    const env = {
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_NAMESPACE: 'payments',
      TEMPORAL_API_KEY: 'secret-api-key',
      TASK_QUEUE: 'paylater-eu',
      PAYLOAD_ENCRYPTION_KEYS: TEST_PAYLOAD_ENCRYPTION_KEYS,
    };
    expect(paylaterClientSettings(env)).toMatchObject({
      address: 'temporal.internal:7233',
      namespace: 'payments',
      apiKey: 'secret-api-key',
      taskQueue: 'paylater-eu',
      developmentKey: false,
      payloadKeys: [{ id: 'test-2' }, { id: 'test-1' }],
    });
    expect(paylaterClientSettings(env, { taskQueue: 'other', address: 'localhost:7000' })).toMatchObject({
      taskQueue: 'other',
      address: 'localhost:7000',
    });
    expect(paylaterClientSettings({ TASK_QUEUE: ' ', TEMPORAL_ADDRESS: '' })).toMatchObject({
      taskQueue: 'paylater',
      address: 'localhost:7233',
    });
  });

  it('refuses the development key towards any address that is not loopback, naming the variable', () => {
    for (const address of ['temporal.example:7233', '10.0.0.5:7233', 'my-namespace.tmprl.cloud:7233']) {
      expect(() => paylaterClientSettings({ TEMPORAL_ADDRESS: address })).toThrow(PaylaterClientConfigError);
      expect(() => paylaterClientSettings({ TEMPORAL_ADDRESS: address })).toThrow(
        /PAYLOAD_ENCRYPTION_KEYS is required/,
      );
    }
    for (const address of ['localhost:7233', '127.0.0.1:41749', '[::1]:7233']) {
      expect(isLoopbackAddress(address)).toBe(true);
      expect(paylaterClientSettings({ TEMPORAL_ADDRESS: address }).developmentKey).toBe(true);
    }
    expect(isLoopbackAddress('localhost.example.com:7233')).toBe(false);
  });

  it('names the variable of a malformed value, never a key', () => {
    expect(() => paylaterClientSettings({ TEMPORAL_ADDRESS: 'http://temporal:7233' })).toThrow(
      /^TEMPORAL_ADDRESS must be host:port/,
    );
    const secret = 'c2hvcnQta2V5';
    let message = '';
    try {
      paylaterClientSettings({ PAYLOAD_ENCRYPTION_KEYS: `k1:${secret}` });
    } catch (err) {
      expect(err).toBeInstanceOf(PaylaterClientConfigError);
      message = (err as Error).message;
    }
    expect(message).toMatch(/^PAYLOAD_ENCRYPTION_KEYS: key "k1" must be 32 bytes/);
    expect(message).not.toContain(secret);
  });
});

describe('paylaterDataConverter', () => {
  it("encrypts with the first key, as the workers' converter does, and carries their failure converter", async () => {
    const converter = paylaterDataConverter(TEST_PAYLOAD_ENCRYPTION_KEYS);
    const [codec] = converter.payloadCodecs!;
    const [encoded] = await codec!.encode([
      { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('{}') },
    ]);
    expect(utf8(encoded!.metadata!.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(utf8(encoded!.metadata![KEY_ID_METADATA_KEY])).toBe('test-2');
    expect(converter.failureConverterPath).toMatch(/shared[/\\]failure-converter/);
  });
});
